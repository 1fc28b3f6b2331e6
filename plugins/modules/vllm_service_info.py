#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: vllm_service_info
short_description: Read the vLLM service deployed on a host, on disk and as it runs, and whether they drift apart
version_added: 0.1.0
description:
  - Reads, on the target, the vLLM service as it really is. It reads the systemd unit (with its drop-ins and
    environment files) or the Docker Compose file on disk, and the command line of the running process
    (C(/proc/<MainPID>/cmdline)) or of the running container (C(docker inspect)).
  - Both command lines are parsed into structured C(vllm serve) arguments (model, served model names, host, port,
    C(--gpu-memory-utilization), C(--max-model-len), C(--speculative-config) as a dictionary, the rest as a list),
    with the image, the runtime (container or native) and the state (active, restarts, since).
  - RV(service.drift) is true when the file differs from what runs (changed but not restarted), or when systemd
    reports C(NeedDaemonReload). RV(service.drift_reasons) says what differs.
  - "Recognised command lines: C(vllm serve MODEL ...) (also C(/venv/bin/vllm serve) and the console script as
    C(/proc) shows it, C(python3 /venv/bin/vllm serve)), C(python3 -m vllm.entrypoints.openai.api_server --model X ...),
    C(docker run [options] IMAGE [command]) (podman and nerdctl too) whose command is one of those or only
    arguments for the image's entry point, and C(sh -c '...') wrapping one of those."
  - "systemd rules followed: line continuations, comments inside them, quotes, C escapes, specifiers (C(%%), C(%n),
    C(%N), C(%p), C(%i), C(%I), C(%S)...; unknown ones are kept and reported), C($VAR) and C(${VAR}) from
    C(Environment=) and C(EnvironmentFile=), the prefixes C(-@:+!), drop-ins C(<unit>.d/*.conf) and an empty
    C(ExecStart=) resetting the list."
  - "Compose: C(command) and C(entrypoint) as a list or a string, C(image), C(env_file), C(environment); variables
    are interpolated from the project's C(.env) (C($$) is a literal C($)). The file is loaded with
    C(docker compose config --no-interpolate) when Docker Compose v2 runs on the target, else with PyYAML when it
    is installed, else as JSON."
  - Secrets never appear in the result. C(--api-key) and other token values are replaced by C(********), the values
    of C(Environment=), of environment files and of the container's environment are never returned, only the
    paths of environment files.
  - Files are read only when they are regular files (a FIFO or a device is refused without blocking), up to 1 MiB.
  - Every command (C(systemctl), C(docker)) runs without a shell, under a 30 s C(timeout) when coreutils
    C(timeout) is present. A missing C(systemctl) or C(docker) leaves the state C(unknown) with a warning.
  - The module changes nothing.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm.service.name
options:
  manager:
    description:
      - How the service is deployed.
      - C(auto) picks C(systemd) when a unit file named so exists (in C(/etc/systemd/system), C(/run/systemd/system),
        C(/usr/local/lib/systemd/system), C(/lib/systemd/system) or C(/usr/lib/systemd/system)), or when O(unit_path)
        is given or O(name) ends with C(.service); else C(compose) when O(project_src) holds a compose file; else
        systemd loaded by C(systemctl) on a live host; else it reports a systemd unit that does not exist, with a
        warning.
    type: str
    choices: [systemd, compose, auto]
    default: auto
  project_src:
    description:
      - The compose project directory, holding C(compose.yaml), C(compose.yml), C(docker-compose.yaml) or
        C(docker-compose.yml) (in that order) and its C(.env).
      - Defaults to C(/opt/vllm/<name>). An absolute path as the target sees it (below O(root)).
      - The project name is the file's top-level C(name), else the directory name.
    type: path
  unit_path:
    description:
      - Where the unit file is, when it is not where systemd looks. An absolute path as the target sees it (below O(root)).
      - By default the C(FragmentPath) that C(systemctl show) reports on a live host, else the first unit file
        found in the systemd unit directories (for an instance C(name@x), also the template C(name@.service)).
    type: path
  root:
    description:
      - Directory holding the target's root filesystem; every file is read below it (symbolic links are resolved
        inside it).
      - When it is not C(/), nothing is run. The process side is then reported as not running (RV(service.running)
        null, RV(service.state.status=unknown)).
      - The module fails when O(root) does not exist or is not a directory.
    type: path
    default: /
attributes:
  check_mode:
    support: full
    description: The module only reads files and runs read-only commands; it behaves identically in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
  idempotent:
    support: full
    description: Never reports a change.
  platform:
    support: full
    platforms: posix
    description: Runs on the target with the Python standard library only (PyYAML is used when present).
notes:
  - RV(service.serve.port) is 8000 when C(--port) is omitted (vLLM's default), RV(service.serve.served_model_name) is
    the model when C(--served-model-name) is omitted. RV(service.serve.host), RV(service.serve.gpu_memory_utilization)
    and RV(service.serve.max_model_len) are null when their flag is omitted (vLLM then listens on all addresses,
    uses 0.9 of the memory and the model's length).
  - For a C(docker run) unit the MainPID is the docker client; its command line is parsed. The port is the one
    vLLM listens on inside the container.
  - C(api_key_set) is true for C(--api-key) or a non-empty E(VLLM_API_KEY) in the unit's or compose service's
    environment (for a running container, in its environment); C(/proc/<pid>/environ) is never read.
  - A C(--speculative-config) that is not valid JSON gives RV(service.serve.speculative_config=null) and a warning.
  - The rules and every case tested are described in C(docs/vllm_service_info.md) of the collection.
seealso:
  - name: systemd.service(5)
    description: How ExecStart= command lines are split, quoted and expanded.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html
  - name: Compose file reference, interpolation
    description: How Compose interpolates variables and reads C(command).
    link: https://docs.docker.com/reference/compose-file/interpolation/
'''

EXAMPLES = r'''
- name: Read the vLLM service (systemd unit vllm.service or compose project /opt/vllm/vllm)
  jetson_llm.vllm.vllm_service_info:
    name: vllm
  register: vllm_service

- name: Show what runs
  ansible.builtin.debug:
    msg: >-
      {{ vllm_service.service.serve.model }} on port {{ vllm_service.service.serve.port }},
      speculative: {{ vllm_service.service.serve.speculative_config is not none }},
      drift: {{ vllm_service.service.drift_reasons }}

- name: Refuse to change a service whose file was edited but not restarted
  ansible.builtin.assert:
    that:
      - not vllm_service.service.drift
    fail_msg: "{{ vllm_service.service.drift_reasons | join('; ') }}"

- name: Read a compose project
  jetson_llm.vllm.vllm_service_info:
    name: vllm
    manager: compose
    project_src: /srv/vllm

- name: Inspect the unit of an offline root filesystem (nothing runs)
  jetson_llm.vllm.vllm_service_info:
    name: vllm
    root: /mnt/jetson-rootfs
  delegate_to: localhost
'''

RETURN = r'''
service:
  description: The vLLM service as deployed.
  returned: always
  type: dict
  contains:
    name:
      description: The unit name without C(.service), or the compose service name.
      type: str
      returned: always
      sample: vllm
    manager:
      description: How the service is deployed.
      type: str
      returned: always
      choices: [systemd, compose]
      sample: systemd
    exists:
      description: The unit file exists (systemd), or the compose file exists and defines the service (compose).
      type: bool
      returned: always
      sample: true
    file:
      description: The unit file or compose file on disk.
      type: dict
      returned: always
      contains:
        path:
          description: Its path on the target.
          type: str
          sample: /etc/systemd/system/vllm.service
        exists:
          description: Whether something exists at that path.
          type: bool
          sample: true
        sha256:
          description: SHA-256 of its bytes; null when absent or not read (not a regular file, too large).
          type: str
          sample: 8fe2b2ec40827afa75a945e5e7647dfe6e5a6e75f4f9422db5e22cabbe1194f3
        mode:
          description: Its permission bits in octal; null when absent.
          type: str
          sample: '0644'
    compose:
      description:
        - The compose project's files (O(manager=compose) only).
        - "The project's own files are the ones C(docker compose) reads without C(-f) (the compose file, then its
          override file), unless the running container was created with other C(-f) files (its Compose labels name a
          file not among them): then those, when they still exist."
        - The speculative change of M(jetson_llm.vllm.speculative_decoding) is an override file of its own, listed
          after them when it exists.
      type: dict
      returned: when the manager is compose
      contains:
        project_dir:
          description: The project directory.
          type: str
          sample: /opt/vllm/vllm
        project:
          description: The Compose project name.
          type: str
          sample: vllm
        base_files:
          description: The project's own compose files, in C(-f) order.
          type: list
          elements: str
          sample: [/opt/vllm/vllm/compose.yaml]
        overlay:
          description: This collection's override files that exist (C(committed), C(candidate)).
          type: dict
          sample: {committed: /opt/vllm/vllm/jetson-llm-speculative-1-kept.yaml}
        files:
          description: Every file Compose runs the service from, in C(-f) order (the project's, then the overrides).
          type: list
          elements: str
          sample: [/opt/vllm/vllm/compose.yaml, /opt/vllm/vllm/jetson-llm-speculative-1-kept.yaml]
    env_files:
      description:
        - Paths of the C(EnvironmentFile=) entries, C(docker run --env-file) files and compose C(env_file) entries.
        - Never their contents.
      type: list
      elements: str
      returned: always
      sample: [/etc/vllm/vllm.env]
    runtime:
      description: C(container) (docker run, compose) or C(native); C(unknown) when no command line was found.
      type: str
      returned: always
      choices: [container, native, unknown]
      sample: container
    image:
      description: The container image (running one first); null for a native service.
      type: str
      returned: always
      sample: vllm/vllm-openai:latest
    state:
      description: The state of the service (all unknown or null when O(root) is not C(/)).
      type: dict
      returned: always
      contains:
        active:
          description: The service runs (systemd C(ActiveState=active), container running).
          type: bool
          sample: true
        status:
          description:
            - C(activating) includes systemd's C(auto-restart) (a crash loop when RV(service.state.restarts) grows) and
              a container C(restarting).
            - C(not-found) means systemd has not loaded such a unit, or no compose file defines the service.
            - C(unknown) on an offline root or when C(systemctl) / C(docker) is missing or fails.
          type: str
          choices: [active, activating, failed, inactive, unknown, not-found]
          sample: active
        main_pid:
          description: systemd C(MainPID) or the container's C(State.Pid); null when not running.
          type: int
          sample: 4242
        restarts:
          description: systemd C(NRestarts) or docker C(RestartCount); null when unknown.
          type: int
          sample: 0
        since:
          description: systemd C(ActiveEnterTimestamp) or the container's C(State.StartedAt); null when never started.
          type: str
          sample: Mon 2026-11-30 17:26:10 UTC
        need_daemon_reload:
          description: systemd C(NeedDaemonReload) (the unit file changed since systemd loaded it); null for compose.
          type: bool
          sample: false
        container_id:
          description: The container id (compose, or a docker run unit's C(--name) container); null otherwise.
          type: str
          sample: null
    configured:
      description: The command line in the file on disk and its vLLM arguments; null when there is no file.
      type: dict
      returned: always
      contains:
        argv:
          description:
            - The command line after unit-file or compose parsing and variable expansion, with secrets masked.
            - For compose without C(entrypoint), only the C(command) (the image's entry point is not known offline).
          type: list
          elements: str
        serve:
          description: The vLLM arguments (same keys as RV(service.serve)); null when no vLLM server is in the command line.
          type: dict
    running:
      description: The running command line (C(/proc/<MainPID>/cmdline), or C(Config.Entrypoint) + C(Config.Cmd) of the
        container) and its vLLM arguments; null when not running or O(root) is not C(/).
      type: dict
      returned: always
      contains:
        argv:
          description: The running command line, with secrets masked.
          type: list
          elements: str
        serve:
          description: The vLLM arguments (same keys as RV(service.serve)); null when no vLLM server is in the command line.
          type: dict
    serve:
      description: The vLLM arguments that are in effect; the running ones when running, else the configured ones; null when neither exists.
      type: dict
      returned: always
      contains:
        model:
          description: The model (C(vllm serve) positional argument or C(--model)); null when not found.
          type: str
          sample: Qwen/Qwen3-8B
        served_model_name:
          description: C(--served-model-name) values; the model when omitted.
          type: list
          elements: str
          sample: [Qwen/Qwen3-8B]
        host:
          description: C(--host); null when omitted.
          type: str
          sample: 0.0.0.0
        port:
          description: C(--port); 8000 (vLLM's default) when omitted.
          type: int
          sample: 8000
        gpu_memory_utilization:
          description: C(--gpu-memory-utilization); null when omitted (vLLM's default is 0.9).
          type: float
          sample: 0.75
        max_model_len:
          description: C(--max-model-len) (C(8k) is 8000, C(8K) is 8192, C(auto) is -1); null when omitted.
          type: int
          sample: 4096
        speculative_config:
          description: C(--speculative-config) parsed from its JSON (and C(--speculative-config.KEY VALUE) options); null when omitted or invalid.
          type: dict
          sample: {method: eagle3, model: RedHatAI/Qwen3-8B-speculator.eagle3, num_speculative_tokens: 3}
        api_key_set:
          description: An API key is set (C(--api-key) or E(VLLM_API_KEY)); the key itself is never returned.
          type: bool
          sample: false
        extra_args:
          description: Every other argument, in order, secrets masked.
          type: list
          elements: str
          sample: [--enable-prefix-caching]
        entry:
          description: The vLLM entry point; C(unknown) for arguments passed to an image's own entry point.
          type: str
          choices: [vllm serve, api_server, unknown]
          sample: vllm serve
        speculators:
          description:
            - When the model is a speculators-format checkpoint (its C(config.json) has C(speculators_config); a hub id
              named C(<owner>/<target>-speculator.<method>)), what it makes vLLM run - C(method),
              C(num_speculative_tokens), C(verifier) (the target vLLM serves), C(source) (V(config.json) or V(name)) -
              else null. vLLM then speculates without C(--speculative-config), and RV(service.serve.speculative_config)
              says so. A model path inside a container is not read.
          type: dict
          sample: {method: eagle3, num_speculative_tokens: 3, verifier: Qwen/Qwen3-8B, source: config.json}
    drift:
      description: The configured vLLM arguments (or image) differ from the running ones, or systemd needs a daemon-reload.
      type: bool
      returned: always
      sample: false
    drift_reasons:
      description: One sentence per difference.
      type: list
      elements: str
      returned: always
      sample: ["gpu_memory_utilization: file 0.7, running 0.75"]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.info import (
    ServiceInfoError,
    gather,
)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.options import name_argument_spec


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name_argument_spec(),
            manager=dict(type='str', default='auto', choices=['systemd', 'compose', 'auto']),
            project_src=dict(type='path'),
            unit_path=dict(type='path'),
            root=dict(type='path', default='/'),
        ),
        supports_check_mode=True,
    )

    def run_command(argv):
        return module.run_command(argv, check_rc=False, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''})

    try:
        service, warnings = gather(
            module.params['name'], manager=module.params['manager'], project_src=module.params['project_src'],
            unit_path=module.params['unit_path'], root=module.params['root'],
            run_command=run_command, which=module.get_bin_path)
    except ServiceInfoError as exc:
        module.fail_json(msg=str(exc))

    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, service=service)


if __name__ == '__main__':
    main()
