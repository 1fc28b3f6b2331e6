#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: jetson_facts
short_description: Identify an NVIDIA Jetson and the vLLM runtime and speculative decoding it supports
version_added: 0.1.0
description:
  - Sets C(ansible_facts.jetson) describing an NVIDIA Jetson, that is its family (Thor, AGX Orin, Orin NX, Orin Nano, Xavier), exact module variant,
    L4T / JetPack / CUDA releases, memory, current power mode, the vLLM runtime path the device must use and which speculative
    decoding methods its family supports.
  - The module is classified from the device-tree C(compatible) module part number and chip (C(tegra264), C(tegra234), C(tegra194)).
    The model string is only a label and a last resort (custom carrier boards report arbitrary names).
    Thor T5000 and T4000 are told apart by part number and C(/etc/nv_boot_control.conf) (boot control wins when they disagree,
    as in NVIDIA's detect_jetson.sh, with a warning), then the model string (C(T5000), C(T4000)), then MemTotal. AGX Orin
    Industrial is also read from the model string when the part number does not tell.
  - The L4T release comes from the first line of C(/etc/nv_tegra_release), else from the C(nvidia-l4t-core) package in the dpkg status
    file. JetPack and CUDA come from a release table; releases the table does not know are reported as C(unknown), never an error.
  - The power mode comes from C(nvpmodel -q) when O(root) is C(/) and C(nvpmodel) is on E(PATH), otherwise from
    C(/var/lib/nvpmodel/status) named through C(/etc/nvpmodel.conf).
  - A host that is not a Jetson (no device tree, or no C(nvidia,tegra) compatible entry, such as x86 servers, DGX Spark or GH200) is
    not an error. The module reports RV(ansible_facts.jetson.is_jetson=false) with a reason, so mixed fleets can be gathered in one play.
  - The module reads files and changes nothing.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
options:
  root:
    description:
      - Directory holding the target's root filesystem. Every file is read below it instead of C(/).
      - Use it for offline root filesystems (an SD card image mounted on a workstation), containers and tests.
      - Symbolic links are resolved inside O(root); an absolute link target is taken relative to O(root).
      - Commands (C(nvpmodel)) only run when O(root) is C(/).
      - The module fails when O(root) does not exist or is not a directory. A directory without Jetson files is a non-Jetson host.
      - Only regular files are read, up to a size limit (4096 bytes for device-tree files, 64 KiB for other text files, 64 MiB
        for the dpkg status file). A FIFO, device node, socket or directory where a file is expected, or a larger file, is not
        read; the fact is then unknown and a warning names the file.
    type: path
    default: /
  run_nvpmodel:
    description:
      - Run C(nvpmodel -q) to read the power mode when O(root) is C(/) and C(nvpmodel) is on E(PATH).
      - When false, or when the command fails, the power mode is read from C(/var/lib/nvpmodel/status) and C(/etc/nvpmodel.conf).
    type: bool
    default: true
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.facts
notes:
  - The classification rules, precedence and the release table are described in C(docs/jetson_facts.md) of the collection.
  - Warnings an operator must act on (power mode not MAXN, unreadable release file, a file under O(root) that is not a
    regular file or is too large, boot control disagreeing with the part number) are also emitted as Ansible warnings;
    every other remark stays in RV(ansible_facts.jetson.warnings).
seealso:
  - name: NVIDIA Jetson Linux (L4T) release notes
    description: L4T releases and the JetPack versions they belong to.
    link: https://developer.nvidia.com/embedded/jetson-linux-archive
'''

EXAMPLES = r'''
- name: Gather Jetson facts from the running system
  jetson_llm.vllm.jetson_facts:

- name: Show what was detected
  ansible.builtin.debug:
    msg: "{{ ansible_facts.jetson.sku }} on L4T {{ ansible_facts.jetson.l4t.version }} -> {{ ansible_facts.jetson.vllm_runtime.path }}"
  when: ansible_facts.jetson.is_jetson

- name: Inspect an offline root filesystem (a mounted SD card image)
  jetson_llm.vllm.jetson_facts:
    root: /mnt/jetson-rootfs
  delegate_to: localhost

- name: Refuse to benchmark below the maximum power mode
  ansible.builtin.assert:
    that:
      - ansible_facts.jetson.power.max_performance | bool
    fail_msg: "power mode {{ ansible_facts.jetson.power.mode_name }} is not MAXN"
  when: ansible_facts.jetson.is_jetson
'''

RETURN = r'''
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    jetson:
      description: What is known about the device.
      returned: always
      type: dict
      contains:
        is_jetson:
          description: Whether the host is an NVIDIA Jetson (device-tree compatible names an C(nvidia,tegra) chip).
          type: bool
          returned: always
          sample: true
        reason:
          description: Why the host is not a Jetson, or why the module could not be identified; null when identified.
          type: str
          returned: always
          sample: null
        generation:
          description: Chip generation.
          type: str
          returned: always
          choices: [thor, orin, xavier, unknown]
          sample: orin
        product_line:
          description: Product line.
          type: str
          returned: always
          choices: [thor-agx, orin-agx, orin-nx, orin-nano, xavier-agx, xavier-nx, unknown]
          sample: orin-agx
        variant:
          description: Exact module variant.
          type: str
          returned: always
          choices: [thor-t5000, thor-t4000, orin-agx-64gb, orin-agx-32gb, orin-agx-industrial, orin-nx-16gb, orin-nx-8gb,
                    orin-nano-8gb, orin-nano-4gb, xavier-agx, xavier-nx, unknown]
          sample: orin-agx-64gb
        variant_source:
          description:
            - Which evidence decided the variant.
            - C(compatible-part) (module part number), C(nv_boot_control), C(memtotal), or C(model-string) (possibly combined, for
              example C(model-string+memtotal)); null when the variant is unknown.
          type: str
          returned: always
          sample: compatible-part
        module_part:
          description: Module part number from the compatible list.
          type: str
          returned: always
          sample: p3701-0005
        carrier_part:
          description: Carrier board part number from the compatible list.
          type: str
          returned: always
          sample: p3737-0000
        soc:
          description: Chip name.
          type: str
          returned: always
          sample: tegra234
        super_mode:
          description:
            - Orin Nano and Orin NX only, true when the JetPack 6.2 "Super" power modes are available, that is when the model string says
              C(Super), nvpmodel knows a C(MAXN_SUPER) mode, or L4T is 36.4.3 or newer. Always false for other devices.
          type: bool
          returned: always
          sample: false
        model:
          description: Device-tree model string (a label only; custom carriers report arbitrary names).
          type: str
          returned: always
          sample: NVIDIA Jetson AGX Orin Developer Kit
        compatible:
          description: Device-tree compatible entries.
          type: list
          elements: str
          returned: always
          sample: ["nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234", "nvidia,tegra23x"]
        sku:
          description:
            - Human (marketing) label of the module (null when unknown or not a Jetson).
            - Not the benchmark contract's C(sku); that is RV(ansible_facts.jetson.sku_bucket).
          type: str
          returned: always
          sample: Jetson AGX Orin 64GB
        sku_bucket:
          description:
            - The legacy bucket of NVIDIA's detect_jetson.sh, C(thor), C(orin-agx), C(orin-nx), C(orin-nano) or
              C(unknown) (Xavier, unidentified and non-Jetson hosts). M(jetson_llm.vllm.vllm_benchmark) writes it as
              C(sku), which jetson-inference-mem-tune's recommend.py reads.
          type: str
          returned: always
          sample: orin-agx
        l4t:
          description: L4T (Jetson Linux) release.
          type: dict
          returned: always
          contains:
            version:
              description: Version such as C(36.4.4); null when unknown.
              type: str
              sample: 36.4.4
            major:
              description: Major release (C(R36) -> 36).
              type: int
              sample: 36
            minor:
              description: Minor release.
              type: int
              sample: 4
            patch:
              description: Patch release.
              type: int
              sample: 4
            source:
              description: Where the version was read, C(nv_tegra_release) or C(dpkg); null when unknown.
              type: str
              sample: nv_tegra_release
        jetpack:
          description:
            - JetPack release from the L4T release table (for example C(6.2.1), C(7.2 EA), C(5.1.x) for a 35.x release between known ones).
            - Taken from the C(nvidia-jetpack) package when the table does not know the L4T release; otherwise C(unknown).
          type: str
          returned: always
          sample: 6.2.1
        cuda:
          description: CUDA release from the L4T release table, or C(unknown).
          type: str
          returned: always
          sample: '12.6'
        memory:
          description: Memory in MB (kB // 1024) from C(/proc/meminfo); values are null when unknown.
          type: dict
          returned: always
          contains:
            total_mb:
              description: MemTotal (the unified CPU+GPU pool).
              type: int
              sample: 62817
            available_mb:
              description: MemAvailable (not MemFree).
              type: int
              sample: 58120
            swap_total_mb:
              description: SwapTotal.
              type: int
              sample: 31408
            swap_free_mb:
              description: SwapFree.
              type: int
              sample: 31408
        power:
          description: Current nvpmodel power mode (all null when unknown or not a Jetson).
          type: dict
          returned: always
          contains:
            mode_name:
              description: Mode name, for example C(MAXN), C(MAXN_SUPER), C(MODE_30W).
              type: str
              sample: MAXN
            mode_id:
              description: Mode id (ids differ per board; id 0 is not always the maximum).
              type: int
              sample: 0
            source:
              description: C(nvpmodel) (the command) or C(nvpmodel-status) (C(/var/lib/nvpmodel/status)).
              type: str
              sample: nvpmodel
            max_performance:
              description: True for C(MAXN) and C(MAXN_*); null when the mode name is unknown.
              type: bool
              sample: true
        clocks:
          description:
            - Whether the clocks are locked as C(jetson_clocks) locks them, read from sysfs (no root needed). All null
              when unknown (no cpufreq under C(/sys/devices/system/cpu)) or not a Jetson.
            - A baseline measured with locked clocks says nothing about dynamic ones, so the speculative_decoding role
              puts RV(ansible_facts.jetson.clocks.locked) in the baseline's fingerprint.
          type: dict
          returned: always
          contains:
            locked:
              description: True when every online CPU and (where it has a devfreq device) the GPU run at a fixed
                frequency (C(scaling_min_freq) = C(scaling_max_freq), devfreq C(min_freq) = C(max_freq)).
              type: bool
              sample: false
            cpu_locked:
              description: Every online CPU's C(scaling_min_freq) equals its C(scaling_max_freq).
              type: bool
              sample: false
            gpu_locked:
              description: The GPU's devfreq C(min_freq) equals its C(max_freq); null without a GPU devfreq device.
              type: bool
              sample: false
            source:
              description: C(sysfs), or null when nothing was read.
              type: str
              sample: sysfs
        vllm_runtime:
          description: The vLLM runtime path the device must use for serving and speculative decoding.
          type: dict
          returned: always
          contains:
            path:
              description:
                - C(upstream) (vLLM 0.20+, C(vllm/vllm-openai:latest)) for Thor and for Orin on L4T r39+.
                - C(nvidia-ai-iot) (C(ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin)) for Orin before r39, and for Orin with an
                  unknown L4T release (with a warning).
                - C(unsupported) for Xavier, unidentified Jetsons and non-Jetson hosts.
                - C(native) is never chosen by this module; the notes say when a native install is valid.
              type: str
              choices: [upstream, native, nvidia-ai-iot, unsupported]
              sample: nvidia-ai-iot
            image:
              description: Container image for that path; null when unsupported.
              type: str
              sample: ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin
            min_vllm_version:
              description: Minimum vLLM version (C(0.20) on the upstream path), null otherwise.
              type: str
              sample: '0.20'
            forbidden_images:
              description: Images that must never be used on this device (the Orin image on Thor).
              type: list
              elements: str
              sample: []
            notes:
              description: Plain sentences explaining the choice.
              type: list
              elements: str
        speculation:
          description: Which speculative decoding methods the family may use.
          type: dict
          returned: always
          contains:
            eagle3_supported:
              description: EAGLE-3 allowed (Thor and AGX Orin only).
              type: bool
              sample: true
            draft_model_supported:
              description: Draft-model speculation allowed by default (Thor and AGX Orin; Orin NX/Nano lack the memory).
              type: bool
              sample: true
            default_num_speculative_tokens:
              description: Starting num_speculative_tokens (5 on Thor, 3 on AGX Orin, null elsewhere).
              type: int
              sample: 3
            reasons:
              description: Plain sentences explaining the support.
              type: list
              elements: str
        warnings:
          description: Everything that degraded the result (missing files, unknown releases, not at MAXN...).
          type: list
          elements: str
          returned: always
          sample: []
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.facts import (
    JetsonFactsError,
    gather,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            run_nvpmodel=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )

    def run_command(argv):
        return module.run_command(argv, check_rc=False)

    try:
        facts, alerts = gather(root=module.params['root'], run_command=run_command,
                               run_nvpmodel=module.params['run_nvpmodel'], which=module.get_bin_path)
    except JetsonFactsError as exc:
        root = module.params['root']
        module.fail_json(msg=str(exc), root=root if len(root) <= 1024 else root[:1024] + '...')

    for alert in alerts:
        module.warn(alert)
    module.exit_json(changed=False, ansible_facts={'jetson': facts})


if __name__ == '__main__':
    main()
