#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_plan
short_description: Decide whether and how a Jetson should use vLLM speculative decoding
version_added: 0.1.0
description:
  - Pure decision, runs anywhere and changes nothing. From the Jetson facts (M(jetson_llm.vllm.jetson_facts)), the
    target model and the baseline service settings, decide whether to add C(--speculative-config) to the
    C(vllm serve) command, with which method (EAGLE-3, draft model or n-gram prompt lookup), which JSON, which
    C(num_speculative_tokens) and which lowered C(--gpu-memory-utilization).
  - "Families: Jetson Thor and AGX Orin may speculate. Orin NX and Orin Nano never use EAGLE-3 and use a draft
    model (or n-gram) only with O(allow_small_devices=true). Xavier, unidentified devices and non-Jetson hosts are
    refused."
  - "Concurrency: up to O(max_good_concurrency) (2) is good; above it and below O(refuse_concurrency) (8) is
    allowed with a warning; O(refuse_concurrency) and more is refused."
  - "Method V(auto): EAGLE-3 when a head is given (O(eagle3_head)) or published for the target (the catalogue), else
    a draft model (O(draft_model) or a catalogued same-family draft), else refused: no published EAGLE-3 head and
    no draft, do not train one ad hoc. V(ngram) is used only when asked for explicitly."
  - "Runtime: Thor needs upstream (or validated native) vLLM 0.20+ and never the NVIDIA-AI-IOT Orin image; Orin on
    L4T r39+ needs upstream vLLM 0.20+; older Orin uses the NVIDIA-AI-IOT image; V(draft_model) needs vLLM 0.15+;
    any speculation needs vLLM 0.10+ (the JSON form and EAGLE-3). An unknown vLLM version gives a warning."
  - "Memory: the new C(gpu_memory_utilization) is the baseline minus O(gpu_memory_utilization_step) (0.05),
    rounded to 2 decimals; refused below O(min_gpu_memory_utilization), when the baseline is at or above
    O(gpu_memory_utilization_ceiling) (0.90), or when free memory minus the draft size would be below
    O(min_free_memory_after_draft_mb) (2048 MB). V(ngram) loads no draft, so these checks do not apply to it."
  - "C(num_speculative_tokens): 5 on Thor, 3 on Orin. A larger O(num_speculative_tokens) is used only when
    O(measured_acceptance_rate) is above O(min_acceptance_for_more_tokens) (0.6); otherwise it is clamped to the
    default with a warning, or the task fails when O(strict=true)."
  - A refusal is a normal result (RV(enable=false) with RV(reasons) and a RV(handoff)), so fleets go on. Invalid
    input (wrong types, out-of-range numbers, unsafe model ids, unknown SpeculativeConfig keys) fails the task.
  - Every rule, with its default and its test, is listed in C(docs/decision-rules.md).
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
attributes:
  check_mode:
    description: Can run in check mode; the decision is the same and nothing is changed.
    support: full
  diff_mode:
    description: Returns no diff; the module never changes anything.
    support: none
  idempotent:
    description: The same input always gives the same decision; C(changed) is always false.
    support: full
  platform:
    description: Pure Python decision; runs on any target (or on the controller with C(delegate_to=localhost)).
    support: full
    platforms: posix
options:
  jetson:
    description:
      - The Jetson facts, that is C(ansible_facts.jetson) from M(jetson_llm.vllm.jetson_facts).
      - Used keys are C(is_jetson), C(reason), C(generation), C(product_line), C(variant), C(l4t.major),
        C(vllm_runtime) (C(path), C(min_vllm_version), C(forbidden_images), C(notes)) and C(memory.available_mb).
        Missing keys count as unknown and lead to a refusal with a reason, not to a failure.
    type: dict
    required: true
  target_model:
    description:
      - The model the baseline service serves, as a Hugging Face repo id (C(owner/name)) or an absolute path.
      - "Quotes, whitespace, line breaks, C(%), C($) and shell or systemd characters are refused: the value is
        written into a unit file."
      - Catalogue matching is case-insensitive; absolute paths never match the catalogue.
    type: str
    required: true
  method:
    description:
      - V(auto) picks EAGLE-3, then a draft model, as described above.
      - V(eagle3) and V(draft_model) force the method (refused when no head or draft is known).
      - V(ngram) (prompt lookup, no draft weights) needs C(prompt_lookup_max) in O(extra_config).
    type: str
    choices: [auto, eagle3, draft_model, ngram]
    default: auto
  eagle3_head:
    description:
      - An EAGLE-3 head for exactly this target (repo id or absolute path). Overrides the catalogue.
    type: str
  draft_model:
    description:
      - A small draft model of the same family, sharing the target's tokenizer and vocabulary size (repo id or
        absolute path). Overrides the catalogue.
    type: str
  num_speculative_tokens:
    description:
      - Override of the number of speculative tokens (default 5 on Thor, 3 on Orin).
      - A value above the default needs O(measured_acceptance_rate) > O(min_acceptance_for_more_tokens).
    type: int
  measured_acceptance_rate:
    description:
      - A measured draft acceptance rate (0 to 1), for example C(deltas.acceptance_rate) from a previous
        M(jetson_llm.vllm.speculative_verdict).
    type: float
  strict:
    description:
      - Fail instead of clamping when O(num_speculative_tokens) is above the default without a high enough
        O(measured_acceptance_rate).
    type: bool
    default: false
  expected_concurrency:
    description:
      - How many requests the service usually handles at once (at least 1).
    type: int
    required: true
  baseline_gpu_memory_utilization:
    description:
      - The C(--gpu-memory-utilization) of the baseline (non-speculative) service, above 0 and at most 1.
    type: float
    required: true
  vllm_version:
    description:
      - The vLLM version of the baseline runtime as a string, for example C("0.20.1"), C("v0.20.1"),
        C("0.32.0+cpu") or C("0.15.0rc2") (pre-releases compare as their release, with a warning).
      - Omitted, empty, V(unknown) or not a version number means unknown, which gives a warning; version-gated
        SpeculativeConfig keys are then refused.
      - Quote it in YAML; an unquoted C(0.20) is the number 0.2 and is refused.
    type: raw
  runtime_image:
    description:
      - The container image of the baseline service, for the runtime checks. Omit for a native install.
    type: str
  free_memory_mb:
    description:
      - Free memory in MB with the baseline service running. Defaults to C(jetson.memory.available_mb).
    type: int
  draft_size_mb:
    description:
      - Memory the EAGLE-3 head or draft model needs, in MB. Without it the headroom check is skipped with a warning.
    type: int
  extra_config:
    description:
      - Further SpeculativeConfig keys, validated against what vLLM accepts for the chosen method and version.
      - "Allowed for V(eagle3) and V(draft_model): C(draft_tensor_parallel_size) (1 or O(tensor_parallel_size)),
        C(quantization), C(max_model_len), C(revision), C(code_revision); for V(ngram): C(prompt_lookup_max)
        (required), C(prompt_lookup_min) (at most C(prompt_lookup_max)), C(max_model_len); for every method from
        vLLM 0.30: C(num_speculative_tokens_per_batch_size)."
      - C(method), C(model) and C(num_speculative_tokens) come from the options above; C(tensor_parallel_size)
        is refused with vLLM's own hint (pass C(draft_tensor_parallel_size)); unknown keys are refused with the
        allowed list (vLLM 0.20+ rejects them at startup and older versions silently drop them).
    type: dict
    default: {}
  allow_small_devices:
    description:
      - Allow draft-model or n-gram speculation on Orin NX and Orin Nano (EAGLE-3 stays refused there).
    type: bool
    default: false
  catalogue:
    description:
      - Extra or replacement catalogue entries, target repo id -> C({eagle3_head, draft_model}). An entry
        replaces the shipped one for that target; a null value means "none".
    type: dict
  tensor_parallel_size:
    description:
      - Tensor parallel size of the target; C(draft_tensor_parallel_size) may be 1 or this value.
    type: int
    default: 1
  max_good_concurrency:
    description: Concurrency up to this value is good for speculation.
    type: int
    default: 2
  refuse_concurrency:
    description: Concurrency from this value on is refused (continuous batching already wins).
    type: int
    default: 8
  gpu_memory_utilization_step:
    description: How much to lower C(gpu_memory_utilization) from the baseline to make room for the draft.
    type: float
    default: 0.05
  min_gpu_memory_utilization:
    description: Refuse when the lowered C(gpu_memory_utilization) would fall below this floor.
    type: float
    default: 0.5
  gpu_memory_utilization_ceiling:
    description: Refuse when the baseline is at or above this value (memory tuning already pushed it near the ceiling).
    type: float
    default: 0.9
  min_free_memory_after_draft_mb:
    description: Refuse when free memory minus the draft size would be below this many MB.
    type: int
    default: 2048
  min_acceptance_for_more_tokens:
    description: Acceptance rate that must be exceeded before O(num_speculative_tokens) may go above the default.
    type: float
    default: 0.6
seealso:
  - module: jetson_llm.vllm.jetson_facts
  - module: jetson_llm.vllm.speculative_verdict
  - module: jetson_llm.vllm.vllm_benchmark
notes:
  - Speculation helps decode-heavy, low-concurrency workloads; it does not reduce TTFT-dominated latency.
  - Acceptance rate and draft overhead are model specific; the benchmark decides (M(jetson_llm.vllm.speculative_verdict)).
'''

EXAMPLES = r'''
- name: Gather the Jetson facts
  jetson_llm.vllm.jetson_facts:

# Thor, Llama 3.1 8B: the catalogue has a published EAGLE-3 head -> EAGLE-3, 5 tokens, 0.75 -> 0.70
- name: Plan speculative decoding
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    runtime_image: vllm/vllm-openai:latest
    draft_size_mb: 1000
  register: spec_plan

- name: Show the flag to add to vllm serve
  ansible.builtin.debug:
    msg: "--speculative-config '{{ spec_plan.speculative_config_json }}' --gpu-memory-utilization {{ spec_plan.gpu_memory_utilization }}"
  when: spec_plan.enable

# AGX Orin on JetPack 6 (L4T r36), a model with no published head: small same-family draft, 3 tokens
- name: Plan with a draft model
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: Qwen/Qwen3-8B
    method: draft_model
    draft_model: Qwen/Qwen3-0.6B
    expected_concurrency: 2
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.15.1"
    runtime_image: ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin
    draft_size_mb: 1500

# High-concurrency server: refused (enable false), the fleet goes on
- name: Plan for a busy endpoint
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 16
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
  register: busy_plan

- name: Report why and what to try next
  ansible.builtin.debug:
    msg: "{{ busy_plan.reasons + [busy_plan.handoff.summary] }}"
  when: not busy_plan.enable

# Memory tuning pushed the baseline to 0.92: refused, free >= 2 GB first (hand-off to memory tuning)
- name: Plan near the memory ceiling
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: Qwen/Qwen3-8B
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.92
    vllm_version: "0.20.1"

# More speculative tokens only after a measured acceptance rate > 0.6
- name: Raise num_speculative_tokens after a good verdict
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    num_speculative_tokens: 6
    measured_acceptance_rate: "{{ spec_verdict.deltas.acceptance_rate }}"
    strict: true

# n-gram prompt lookup (no draft weights), only when asked for explicitly
- name: Plan prompt-lookup speculation
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: /opt/models/my-finetune
    method: ngram
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.8
    vllm_version: "0.20.1"
    extra_config:
      prompt_lookup_max: 4
      prompt_lookup_min: 2
'''

RETURN = r'''
enable:
  description: Whether to add C(--speculative-config). False is a refusal, not a failure.
  returned: always
  type: bool
  sample: true
reasons:
  description: Plain sentences. When RV(enable) is true, why speculation fits; when false, every rule that refused.
  returned: always
  type: list
  elements: str
  sample: ["Jetson AGX Thor (thor-t5000) may speculate (Thor has memory for the target plus an EAGLE-3 head or a draft)."]
refused_by:
  description: Identifiers of the rules that refused (V(family), V(method), V(concurrency), V(runtime), V(memory)); empty when enabled.
  returned: always
  type: list
  elements: str
  sample: [concurrency]
decision_warnings:
  description:
    - Plain sentences worth an operator's attention that did not refuse (also emitted as Ansible warnings).
  returned: always
  type: list
  elements: str
  sample: ["Expected concurrency 4 is above 2: speculation usually loses as concurrency grows; the benchmark at concurrency 8 decides."]
method:
  description: The chosen method (V(eagle3), V(draft_model), V(ngram)), or null when none could be chosen.
  returned: always
  type: str
  sample: eagle3
model:
  description: The EAGLE-3 head or draft model (null for V(ngram) and when refused for lack of one).
  returned: always
  type: str
  sample: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
model_source:
  description: Where RV(model) came from, V(option) or V(catalogue) (null when there is none).
  returned: always
  type: str
  sample: catalogue
speculative_config:
  description: The SpeculativeConfig as a dictionary; empty when RV(enable) is false.
  returned: always
  type: dict
  sample: {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}
speculative_config_json:
  description:
    - RV(speculative_config) as compact JSON with sorted keys, the value of C(--speculative-config); empty when
      RV(enable) is false.
    - It contains no whitespace, single quotes, C(%), C($) or backslashes, so it can go into a single-quoted
      systemd C(ExecStart) or a compose command list as is.
  returned: always
  type: str
  sample: '{"draft_tensor_parallel_size":1,"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":5}'
gpu_memory_utilization:
  description: The C(--gpu-memory-utilization) to use with speculation (the baseline when refused or for V(ngram)).
  returned: always
  type: float
  sample: 0.7
baseline_gpu_memory_utilization:
  description: The baseline value the plan started from.
  returned: always
  type: float
  sample: 0.75
num_speculative_tokens:
  description: Speculative tokens per step (null when refused).
  returned: always
  type: int
  sample: 5
default_num_speculative_tokens:
  description: The family default (5 on Thor, 3 on Orin; null for other devices).
  returned: always
  type: int
  sample: 5
handoff:
  description: What to try next when refused; empty actions when enabled.
  returned: always
  type: dict
  contains:
    actions:
      description:
        - Ordered action ids from V(fix_facts), V(lower_concurrency), V(provide_draft_model), V(upgrade_vllm),
          V(change_runtime), V(free_memory), V(memory_tuning), V(smaller_draft), V(smaller_model),
          V(better_quantisation), V(no_speculation).
      type: list
      elements: str
      sample: [free_memory, memory_tuning, smaller_draft, no_speculation]
    summary:
      description: The same as one sentence for an operator (empty when enabled).
      type: str
      sample: >-
        Next: free at least 2 GB (stop other services, lower --max-model-len); hand off to memory tuning;
        use a smaller draft; keep serving without speculation.
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._speculative import (
    METHODS, PLAN_DEFAULTS, SpeculativeInputError, plan)


def main():
    argument_spec = dict(
        jetson=dict(type='dict', required=True),
        target_model=dict(type='str', required=True),
        method=dict(type='str', choices=list(METHODS), default='auto'),
        eagle3_head=dict(type='str'),
        draft_model=dict(type='str'),
        num_speculative_tokens=dict(type='int', no_log=False),
        measured_acceptance_rate=dict(type='float'),
        strict=dict(type='bool', default=False),
        expected_concurrency=dict(type='int', required=True),
        baseline_gpu_memory_utilization=dict(type='float', required=True),
        vllm_version=dict(type='raw'),
        runtime_image=dict(type='str'),
        free_memory_mb=dict(type='int'),
        draft_size_mb=dict(type='int'),
        extra_config=dict(type='dict', default={}),
        allow_small_devices=dict(type='bool', default=False),
        catalogue=dict(type='dict'),
        tensor_parallel_size=dict(type='int', default=1),
        max_good_concurrency=dict(type='int', default=PLAN_DEFAULTS['max_good_concurrency']),
        refuse_concurrency=dict(type='int', default=PLAN_DEFAULTS['refuse_concurrency']),
        gpu_memory_utilization_step=dict(type='float', default=PLAN_DEFAULTS['gpu_memory_utilization_step']),
        min_gpu_memory_utilization=dict(type='float', default=PLAN_DEFAULTS['min_gpu_memory_utilization']),
        gpu_memory_utilization_ceiling=dict(type='float', default=PLAN_DEFAULTS['gpu_memory_utilization_ceiling']),
        min_free_memory_after_draft_mb=dict(type='int', default=PLAN_DEFAULTS['min_free_memory_after_draft_mb']),
        min_acceptance_for_more_tokens=dict(type='float', default=PLAN_DEFAULTS['min_acceptance_for_more_tokens'], no_log=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = plan(**module.params)
    except SpeculativeInputError as exc:
        module.fail_json(msg=str(exc))
    warnings = result.pop('warnings')
    for text in warnings:
        module.warn(text)
    module.exit_json(changed=False, decision_warnings=warnings, **result)


if __name__ == '__main__':
    main()
