#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_overlay
short_description: Write, commit or remove the speculative change of a vLLM service as a file of the collection's own
version_added: 0.1.0
description:
  - The speculative change of M(jetson_llm.vllm.speculative_decoding) on a systemd host is one drop-in file of this
    collection, C(zz-jetson-llm-speculative-2-candidate.conf) under C(/run) until kept, then
    C(zz-jetson-llm-speculative-1-kept.conf) under C(/etc). The operator's unit and drop-ins are never written.
  - Both names sort after every usual drop-in name (C(override.conf), C(50-*.conf)), the candidate's after the kept
    one's, so the candidate's C(ExecStart=) reset is applied last (systemd merges drop-ins by file name across /etc and
    /run; of two files with the same name the one in /etc would win).
  - Its C(ExecStart=) is the service's effective one as systemd resolves it from the unit and every other drop-in
    (the baseline), as written, with exactly two flags appended, C(--gpu-memory-utilization) and
    C(--speculative-config); vLLM keeps the last value of a flag. The module checks that the resulting command line
    is the baseline's plus those two flags and that vLLM's parser model reads the wanted values from it; a unit whose
    C(ExecStart=) runs vLLM through a shell or script is a clear error and nothing is written.
  - O(state=candidate) writes it under C(/run/systemd/system/UNIT.d/) (volatile, so a reboot mid-change comes back on
    the baseline), O(state=committed) moves the candidate to C(/etc/systemd/system/UNIT.d/) once a verdict keeps it,
    O(state=absent) removes the candidate (O(scope=candidate), back to the committed overlay or the baseline) or both
    (O(scope=all), back to the baseline); with O(scope=candidate) the kept overlay runs again.
  - "With O(manager=compose) the change is an override file of the collection's own in the project directory:
    C(jetson-llm-speculative-2-candidate.yaml) until kept, then C(jetson-llm-speculative-1-kept.yaml). It sets only
    the service's C(command:): the command of the project's own compose files (read with C(docker compose config
    --no-interpolate), or as the files say when Compose is not available), as written, plus the same two flags
    (C($) written C($$)); Compose replaces C(command:) when a later C(-f) file sets it. The project's files are the
    compose file and its override file, or the C(-f) files the running container was created from (its Compose
    labels) when the project runs with others.
    Compose reads the override only when it is named, so RV(compose_files) gives the C(-f) list to run the service
    with (the project's files, then the kept override, then the candidate)."
  - The module does not reload systemd or restart the service; the caller does (C(daemon_reload) is returned).
  - The file is mode C(0644), or C(0600) when the command line holds a secret value (an C(--api-key) given
    literally); diffs mask secret values.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm.service.name
  - jetson_llm.vllm.service
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.writer
options:
  state:
    description: What to do with the overlay.
    type: str
    required: true
    choices: [candidate, committed, absent]
  scope:
    description: With O(state=absent), remove the candidate only, or the candidate and the committed overlay.
    type: str
    default: all
    choices: [candidate, all]
  speculative_config:
    description:
      - The C(--speculative-config) value (required with O(state=candidate)).
      - A NaN or an infinity anywhere in it fails the module and nothing is written (JSON cannot carry them).
    type: dict
  gpu_memory_utilization:
    description: The lowered C(--gpu-memory-utilization), above 0 and at most 1 (required with O(state=candidate)).
    type: float
'''

EXAMPLES = r'''
- name: Write the candidate (unverified, under /run)
  jetson_llm.vllm.speculative_overlay:
    name: vllm
    state: candidate
    speculative_config: {method: eagle3, model: /models/eagle3-head, num_speculative_tokens: 3}
    gpu_memory_utilization: 0.45

- name: Keep it (the verdict passed)
  jetson_llm.vllm.speculative_overlay:
    name: vllm
    state: committed

- name: Back to the baseline
  jetson_llm.vllm.speculative_overlay:
    name: vllm
    state: absent

- name: The same change of a compose service (an override file beside the project's compose file)
  jetson_llm.vllm.speculative_overlay:
    name: vllm
    manager: compose
    project_src: /opt/vllm/vllm
    state: candidate
    speculative_config: {method: ngram, num_speculative_tokens: 3, prompt_lookup_max: 5, prompt_lookup_min: 5}
    gpu_memory_utilization: 0.7
  register: overlay

- name: Recreate the service from the project's files and the override
  community.docker.docker_compose_v2:
    project_src: /opt/vllm/vllm
    files: "{{ overlay.compose_files }}"
    services: [vllm]
    dependencies: false
    recreate: always
'''

RETURN = r'''
candidate:
  description: Path of the candidate overlay, and whether it exists after the task.
  returned: always
  type: dict
  contains:
    path: {description: The path (systemd under /run/systemd/system; compose in the project directory)., type: str, returned: always}
    exists: {description: Whether it exists after the task., type: bool, returned: always}
committed:
  description: Path of the committed overlay, and whether it exists after the task.
  returned: always
  type: dict
  contains:
    path: {description: The path (systemd under /etc/systemd/system; compose in the project directory)., type: str, returned: always}
    exists: {description: Whether it exists after the task., type: bool, returned: always}
baseline_sha256:
  description:
    - One sha256 over the files the service is defined by without the overlay (paths and bytes); systemd, the unit and
      its other drop-ins; compose, the project's compose files and its C(.env).
  returned: always
  type: str
unit_path:
  description: The unit file (systemd), or the project's first compose file (compose).
  returned: always
  type: str
compose_files:
  description: With O(manager=compose), the C(-f) list to run the service with after the task (the project's files, then
    the kept override, then the candidate, those that exist); empty for systemd.
  returned: always
  type: list
  elements: str
  sample: [/opt/vllm/vllm/compose.yaml, /opt/vllm/vllm/jetson-llm-speculative-2-candidate.yaml]
daemon_reload:
  description: Whether the caller must run systemctl daemon-reload (a drop-in was written or removed; never for compose).
  returned: always
  type: bool
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay_compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import info as service_info
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.options import (
    COMPOSE_NEEDS_PROJECT, name_argument_spec, service_argument_spec)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import write_atomic
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_name, dumps, end_of_options

ROOT = '/'


def _remove(path):
    if os.path.lexists(path):
        os.unlink(path)
        return True
    return False


def _fragment_path(module, unit):
    systemctl = module.get_bin_path('systemctl')
    if systemctl:
        rc, out, _err = module.run_command(end_of_options([systemctl, 'show', '--property=FragmentPath', '--value'], [unit]),
                                           check_rc=False, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''})
        if rc == 0 and out.strip():
            return out.strip()
    return systemd.find_unit_file(ROOT, unit) or '/etc/systemd/system/' + unit


def _check_regular(module, read, what):
    if read.exists and read.data is None:
        module.fail_json(msg='%s %s exists but cannot be read (%s): nothing was changed.'
                         % (what, read.path, read.error or 'not a regular file'))


class _Systemd(object):
    """The overlay of a systemd unit: a drop-in."""

    redact = staticmethod(overlay.redact)

    def __init__(self, module):
        try:
            self.unit = overlay.checked_unit(module.params['name'])
        except overlay.OverlayError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
        self.where = overlay.paths(self.unit)
        self.current = overlay.read_overlay(ROOT, self.unit)
        self.path = _fragment_path(module, self.unit)
        self.baseline = overlay.read_baseline(ROOT, self.unit, self.path)
        self.base_files = []

    def readable(self):
        return self.baseline['file'].data is not None, self.baseline['file'].exists, self.baseline['file'].error

    def render(self, speculative_config, gmu):
        return overlay.render(self.unit, self.baseline, speculative_config, gmu)

    def baseline_serve(self):
        """vLLM's arguments in the baseline (a local model's config.json read for a speculators checkpoint)."""
        if not self.baseline.get('argv'):
            return {}
        info = analyse_command(self.baseline['argv'], env=self.baseline.get('env') or {},
                               read_model_config=service_info.model_config_reader(ROOT))[0]
        return info.get('serve') or {}


class _Compose(object):
    """The overlay of a compose service: an override file in the project directory."""

    redact = staticmethod(overlay_compose.redact)

    def __init__(self, module):
        params = module.params
        try:
            self.name = check_name(params['name'], 'name', 'a compose service name')
        except InputError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
        try:
            self.project_src = overlay_compose.checked_project(params['project_src'])
        except overlay.OverlayError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
        self.where = overlay_compose.paths(self.project_src)
        self.current = overlay_compose.read_overlay(ROOT, self.project_src)

        def run(argv):
            return module.run_command(argv, check_rc=False, environ_update={'LC_ALL': 'C'})
        # The project's own files, as vllm_service_info finds them (the running container's labels first).
        try:
            gathered, _warnings = service_info.gather(self.name, manager='compose', project_src=self.project_src,
                                                      run_command=run, which=module.get_bin_path)
        except service_info.ServiceInfoError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
        self.runner = service_info.Runner(run, module.get_bin_path)
        self.base_files = gathered['compose']['base_files']
        self.path = self.base_files[0] if self.base_files else self.project_src + '/compose.yaml'
        self.baseline = self._read()

    def _read(self):
        return overlay_compose.read_baseline(
            ROOT, self.project_src, self.name, self.base_files,
            service_info.compose_config_runner(self.runner, self.project_src, self.base_files))

    def readable(self):
        ok = self.baseline['raw'] is not None
        return ok, bool(self.base_files), '; '.join(self.baseline['problems']) or 'no compose file'

    def render(self, speculative_config, gmu):
        return overlay_compose.render(self.name, self.baseline, speculative_config, gmu)

    def baseline_serve(self):
        """vLLM's arguments in the project's own files (a model path is inside the container: hub ids only)."""
        return self.baseline.get('serve') or {}


def main():
    argument_spec = name_argument_spec()
    argument_spec.update(service_argument_spec())
    argument_spec.update(
        state=dict(type='str', required=True, choices=['candidate', 'committed', 'absent']),
        scope=dict(type='str', default='all', choices=['candidate', 'all']),
        speculative_config=dict(type='dict'),
        gpu_memory_utilization=dict(type='float'),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_if=[('state', 'candidate', ['speculative_config', 'gpu_memory_utilization']),
                     COMPOSE_NEEDS_PROJECT],
        supports_check_mode=True,
    )
    params = module.params
    gmu = params['gpu_memory_utilization']
    if gmu is not None and not 0 < gmu <= 1:  # NaN fails both comparisons
        module.fail_json(msg='gpu_memory_utilization %r is not above 0 and at most 1: nothing was changed.' % gmu)
    if params['speculative_config'] is not None:
        try:  # before the host is read: a NaN would be written as NaN, which vLLM refuses only when it starts
            dumps(params['speculative_config'], 'speculative_config')
        except InputError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
    target = _Compose(module) if params['manager'] == 'compose' else _Systemd(module)
    state = params['state']
    where, current = target.where, target.current
    for key in ('candidate', 'committed'):
        _check_regular(module, current[key], 'The %s overlay' % key)
    readable, exists, error = target.readable()
    if not readable and (state == 'candidate' or (exists and params['manager'] == 'systemd')):
        module.fail_json(msg='%s cannot be read (%s): nothing was changed.' % (target.path, error or 'it does not exist'))
    # None: no file.
    before = dict((key, current[key].text if current[key].exists else None) for key in ('candidate', 'committed'))
    after = dict(before)
    modes = {'candidate': 0o644, 'committed': 0o644}

    if state == 'candidate':
        speculators = target.baseline_serve().get('speculators')
        if speculators:
            module.fail_json(msg='%s already speculates: it serves the speculators-format checkpoint %s (method %s), '
                             'from which vLLM builds its speculative configuration without --speculative-config; a '
                             'second configuration would be merged into it or discarded, depending on the vLLM '
                             'release. Nothing was changed.'
                             % (params['name'], target.baseline_serve().get('model'), speculators.get('method')))
        try:
            text, _argv, secret = target.render(params['speculative_config'], gmu)
        except overlay.OverlayError as exc:
            module.fail_json(msg='%s: nothing was changed.' % exc)
        after['candidate'] = text
        modes['candidate'] = 0o600 if secret else 0o644
    elif state == 'committed':
        if not current['candidate'].exists and not current['committed'].exists:
            module.fail_json(msg='There is no candidate overlay %s to commit: nothing was changed.' % where['candidate'])
        if current['candidate'].exists:
            after['committed'] = before['candidate']
            after['candidate'] = None
            modes['committed'] = current['candidate'].mode if current['candidate'].mode is not None else 0o644
    else:
        after['candidate'] = None
        if params['scope'] == 'all':
            after['committed'] = None

    changed = after != before
    result = dict(changed=changed, unit_path=target.path,
                  daemon_reload=changed and params['manager'] == 'systemd', baseline_sha256=target.baseline['sha256'])
    if module._diff:
        result['diff'] = [{'before_header': where[key], 'after_header': where[key],
                           'before': target.redact(before[key] or ''), 'after': target.redact(after[key] or '')}
                          for key in ('candidate', 'committed') if before[key] != after[key]]
    if changed and not module.check_mode:
        # Commit: write the kept file first, then remove the candidate, so a crash in between leaves two identical
        # overlays.
        for key in ('committed', 'candidate'):
            if after[key] == before[key]:
                continue
            if after[key] is not None:
                write_atomic(module, where[key], after[key].encode('utf-8'), modes[key])
            else:
                _remove(where[key])
    for key in ('candidate', 'committed'):
        result[key] = {'path': where[key], 'exists': after[key] is not None}
    result['compose_files'] = overlay_compose.compose_files(
        target.base_files, dict((key, where[key]) for key in ('committed', 'candidate') if after[key] is not None)) \
        if params['manager'] == 'compose' else []
    module.exit_json(**result)


if __name__ == '__main__':
    main()
