#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: vllm_health
short_description: Wait until a vLLM service serves its model, or say why it does not
version_added: 0.1.0
description:
  - Polls the server until C(GET /health) answers 200 B(and) C(GET /v1/models) lists O(model).
  - Watches the service manager at the same time (systemd C(NRestarts) and state, or the compose container's
    C(RestartCount) and state), so a service that exits early or restarts in a loop ends the wait at once, instead
    of looking like a slow start until O(timeout).
  - On failure, reads what vLLM printed since the start (C(journalctl) or C(docker logs)) and names the failure
    with the line that proves it - V(config_rejected) (vLLM refused C(--speculative-config)), V(kv_cache) (too little
    memory left for the KV cache), V(oom) (CUDA memory, a Jetson's NvMap allocation failing with error 12, the OOM
    killer, a start-up ended by SIGKILL / exit code 137, including systemd's C(status=137/n/a) of a unit whose
    C(ExecStart) is C(docker run)), V(engine_init), else V(crash_loop), V(early_exit) or V(timeout).
  - When the log names nothing, the manager's own view still can - Docker's C(State.OOMKilled), a main process killed
    by SIGKILL (C(ExecMainCode=killed), C(ExecMainStatus=9)) or one that exited 137 (C(docker run) whose container was
    killed) - and the failure is then V(oom), with that as RV(evidence).
  - Reads only; it never starts, stops or changes anything.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm.endpoint
  - jetson_llm.vllm.service
  - jetson_llm.vllm._attributes
options:
  request_timeout:
    description:
      - Seconds each look at the server may take (connecting and each answer); a look that takes longer counts as
        not healthy yet and the next look follows.
    type: float
    default: 10
  model:
    description: The served model name that C(/v1/models) must list. Empty accepts any.
    type: str
    default: ''
  name:
    description:
      - The systemd unit (with or without C(.service)) or the compose service to watch.
      - Letters, digits and C(:_.@-\) (1 to 250 characters), not starting with C(-) or C(.) (it is an operand of
        C(systemctl), C(journalctl) and C(docker)).
      - Empty watches nothing but the HTTP endpoint (no early-exit or crash-loop detection, no log reading).
    type: str
    default: ''
  since:
    description:
      - Read the log from this time on (seconds since the epoch, e.g. when the service was restarted), so an older
        failure is not taken for this one. Default - when the module started.
    type: float
  timeout:
    description:
      - Seconds to wait at most (a Jetson cold start, download and compile, can pass 10 minutes).
      - It bounds every look at the server too, whatever O(request_timeout) and O(request_deadline) say (a server
        that trickles its answer is cut off at the deadline). Asking the service manager (C(systemctl),
        C(docker)) is bounded separately, 35 s a command at most, and so is reading the log on failure.
    type: int
    default: 1200
  interval:
    description: Seconds between two looks.
    type: float
    default: 2.0
  max_restarts:
    description: Restarts the manager may make during the wait before it counts as a crash loop.
    type: int
    default: 0
  fail_when_unhealthy:
    description: Fail the task when the service did not become healthy. With V(false), look at RV(healthy).
    type: bool
    default: true
  listen_host:
    description:
      - The address the server listens on (its C(--host)). When it is not a loopback address (V(0.0.0.0), V(::), a
        LAN address, a host name) and no O(api_key) is given, the module warns that anyone who can reach the host can
        use the model, and RV(exposed) is true. Unset, nothing is checked.
    type: str
attributes:
  check_mode:
    support: full
    details:
      - The module only reads; it waits the same way in check mode.
  diff_mode:
    support: none
    details:
      - Nothing is changed, so there is nothing to diff.
  idempotent:
    support: full
    details:
      - Never reports a change.
notes:
  - Only the Python standard library is needed on the target.
'''

EXAMPLES = r'''
- name: Wait for the restarted vLLM service
  jetson_llm.vllm.vllm_health:
    endpoint: http://127.0.0.1:8000
    model: qwen3-8b
    name: vllm
    timeout: 1200
    fail_when_unhealthy: false
  register: health

- name: Say why it did not start
  ansible.builtin.debug:
    msg: "{{ health.failure }}: {{ health.evidence }}"
  when: not health.healthy
'''

RETURN = r'''
exposed:
  description: O(listen_host) is not a loopback address and no O(api_key) is given (a warning says so).
  returned: always
  type: bool
healthy:
  description: The server answered /health 200 and listed the model.
  returned: always
  type: bool
failure:
  description:
    - Why not - V(config_rejected), V(kv_cache), V(oom), V(engine_init), V(crash_loop), V(early_exit) or V(timeout); null when
      healthy.
  returned: always
  type: str
  sample: config_rejected
evidence:
  description: The log line that proved RV(failure) (or the last error line); null when healthy or nothing was found.
  returned: always
  type: str
  sample: "ValueError: Target and draft model should have the same vocabulary size. Target model vocab_size=512. Draft model vocab_size=300."
probe:
  description: What the last look at the server saw.
  returned: always
  type: str
state:
  description: The service manager's last view (null when O(name) is empty or the manager could not be asked).
  returned: always
  type: dict
  contains:
    status:
      description: V(running), V(starting), V(restarting), V(stopped), V(not-found) or V(unknown).
      type: str
    restarts:
      description: systemd C(NRestarts) or Docker C(RestartCount).
      type: int
    main_pid:
      description: The main process (systemd) or the container's process.
      type: int
    detail:
      description: The manager's own words, for example "activating (auto-restart)".
      type: str
    exit_code:
      description:
        - How the last main process ended, V(exited), V(killed) or V(dumped) (systemd C(ExecMainCode); Docker, an
          exited container), or null.
      type: str
    exit_status:
      description: Its exit status or signal (systemd C(ExecMainStatus), Docker C(State.ExitCode)), or null.
      type: int
    oom_killed:
      description: Docker's C(State.OOMKilled), or null (systemd says it in the journal).
      type: bool
restarts_during_wait:
  description: How many times the manager restarted the service during the wait.
  returned: always
  type: int
elapsed_s:
  description: Seconds waited.
  returned: always
  type: float
polls:
  description: Looks taken.
  returned: always
  type: int
'''

import math
import os
import time
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_name, check_path, end_of_options
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import (
    OptionError, check_endpoint_options, check_integer, check_number, echo, endpoint_argument_spec, exposure_warning)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.info import Runner, find_container, systemctl_show
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.compose import default_files, parse_docker_inspect
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.options import (
    COMPOSE_NEEDS_PROJECT, service_argument_spec)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.systemd import unit_name
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.startup import (
    docker_state, make_endpoint, systemd_state, wait_healthy)

LOG_LINES = 400
PROBE_TIMEOUT = 10.0


class _Manager(object):
    """The service manager seen through its command-line tools (vllm_service_info's runner: no shell, bounded time)."""

    def __init__(self, module, name, manager, project_src, since):
        def run(argv):
            return module.run_command(argv, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''},
                                      expand_user_and_vars=False)
        self.runner = Runner(run, module.get_bin_path)
        self.name = name
        self.manager = manager
        self.project_src = project_src
        self.since = since
        self.warnings = []

    def _container(self):
        # Regular files only: a FIFO would hold docker compose until its timeout.
        paths = [path for path in default_files('/', self.project_src) if os.path.isfile(path)]
        cid, _found = find_container(self.runner, self.project_src, paths, None, self.name, self.warnings)
        return cid

    def state(self):
        if self.manager == 'systemd':
            props = systemctl_show(self.runner, unit_name(self.name), self.warnings)
            return systemd_state(props) if props is not None else None
        cid = self._container()
        if cid is None:
            return {'status': 'not-found', 'restarts': None, 'main_pid': None, 'detail': 'no container',
                    'exit_code': None, 'exit_status': None, 'oom_killed': None}
        rc, out, _err = self.runner.run(end_of_options([self.runner.which('docker'), 'inspect', '--type', 'container'],
                                                       [cid]))
        container = parse_docker_inspect(out) if rc == 0 else None
        return docker_state(container) if container else None

    def log(self):
        if self.manager == 'systemd':
            journalctl = self.runner.which('journalctl')
            if not journalctl:
                return ''
            rc, out, _err = self.runner.run([journalctl, '--no-pager', '-o', 'cat', '--unit=' + unit_name(self.name),
                                             '--since', '@%d' % int(math.floor(self.since)), '-n', str(LOG_LINES)])
            return out if rc == 0 else ''
        cid = self._container()
        if cid is None:
            return ''
        rc, out, err = self.runner.run(end_of_options([self.runner.which('docker'), 'logs', '--since',
                                                       '%d' % int(self.since), '--tail', str(LOG_LINES)], [cid]))
        return (out + '\n' + err) if rc == 0 else ''


def main():
    argument_spec = endpoint_argument_spec()
    # One look at the server is short: a look that hangs must not hold the whole wait.
    argument_spec['request_timeout']['default'] = PROBE_TIMEOUT
    argument_spec.update(
        model=dict(type='str', default=''),
        name=dict(type='str', default=''),
    )
    argument_spec.update(service_argument_spec())
    argument_spec.update(
        since=dict(type='float'),
        timeout=dict(type='int', default=1200),
        interval=dict(type='float', default=2.0),
        max_restarts=dict(type='int', default=0),
        fail_when_unhealthy=dict(type='bool', default=True),
        listen_host=dict(type='str'),
    )
    module = AnsibleModule(argument_spec=argument_spec, required_if=[COMPOSE_NEEDS_PROJECT], supports_check_mode=True)
    p = module.params
    try:
        endpoint_options = check_endpoint_options(p)
        check_integer('timeout', p['timeout'], 1, 86400, ' (seconds)')
        check_number('interval', p['interval'], minimum=0.1, maximum=600, hint=' (seconds)')
        check_integer('max_restarts', p['max_restarts'], 0, 1000)
        check_number('since', p['since'], minimum=0, allow_none=True, hint=' (seconds since the epoch)')
        if p['name']:
            check_name(p['name'], 'name')
        if p['model'] and any(ord(c) < 32 for c in p['model']):
            raise OptionError('model %s holds control characters; allowed: the served model name' % echo(p['model']))
        check_path(p['project_src'], 'project_src', allow_none=True)
    except (OptionError, InputError) as exc:
        module.fail_json(msg='%s' % exc)

    since = p['since'] if p['since'] is not None else time.time()
    manager = _Manager(module, p['name'], p['manager'], p['project_src'], since) if p['name'] else None
    endpoint = make_endpoint(endpoint_options['endpoint'], api_key=endpoint_options['api_key'],
                             timeout=endpoint_options['request_timeout'], deadline=endpoint_options['request_deadline'])
    result = wait_healthy(endpoint, p['model'],
                          read_state=manager.state if manager else None,
                          read_log=manager.log if manager else None,
                          timeout=p['timeout'], interval=p['interval'], max_restarts=p['max_restarts'])
    for text in (manager.warnings if manager else []):
        module.warn(text)
    exposure = (exposure_warning(p['listen_host'], endpoint_options['api_key'],
                                 port=urlsplit(endpoint_options['endpoint']).port)
                if p['listen_host'] is not None else None)
    if exposure:
        module.warn(exposure)
    result['exposed'] = bool(exposure)
    if not result['healthy'] and p['fail_when_unhealthy']:
        module.fail_json(msg='vLLM at %s is not healthy after %.0f s: %s%s' % (
            endpoint_options['endpoint'], result['elapsed_s'], result['failure'],
            (' (%s)' % result['evidence']) if result['evidence'] else ''), changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
