#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_overlay
short_description: Write, commit or remove the speculative change of a systemd vLLM service as a drop-in of its own
version_added: 0.3.0
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
  - The module does not reload systemd or restart the service; the caller does (C(daemon_reload) is returned).
  - The file is mode C(0644), or C(0600) when the command line holds a secret value (an C(--api-key) given
    literally); diffs mask secret values.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.writer
options:
  name:
    description: The systemd service (C(vllm) or C(vllm.service)).
    type: str
    required: true
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
    description: The C(--speculative-config) value (required with O(state=candidate)).
    type: dict
  gpu_memory_utilization:
    description: The lowered C(--gpu-memory-utilization), above 0 and at most 1 (required with O(state=candidate)).
    type: float
  legacy_last_known_good:
    description:
      - A copy of the unit kept by releases before 0.3.0, which wrote the speculative change into the unit itself.
        With O(state=absent), when the unit (without the overlay) runs C(--speculative-config) and this copy exists,
        the copy is put back in place of the unit and removed (once, on upgrade).
    type: path
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
'''

RETURN = r'''
candidate:
  description: Path of the candidate overlay, and whether it exists after the task.
  returned: always
  type: dict
  contains:
    path: {description: The path under /run/systemd/system., type: str, returned: always}
    exists: {description: Whether it exists after the task., type: bool, returned: always}
committed:
  description: Path of the committed overlay, and whether it exists after the task.
  returned: always
  type: dict
  contains:
    path: {description: The path under /etc/systemd/system., type: str, returned: always}
    exists: {description: Whether it exists after the task., type: bool, returned: always}
baseline_sha256:
  description: One sha256 over the files systemd reads for the service without the overlay (paths and bytes).
  returned: always
  type: str
unit_path:
  description: The unit file.
  returned: always
  type: str
daemon_reload:
  description: Whether the caller must run systemctl daemon-reload (a drop-in was written or removed).
  returned: always
  type: bool
migrated:
  description: Whether a unit written by an earlier release was put back from O(legacy_last_known_good).
  returned: always
  type: bool
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils import _overlay as overlay
from ansible_collections.jetson_llm.vllm.plugins.module_utils import _service_files as files
from ansible_collections.jetson_llm.vllm.plugins.module_utils import _service_systemd as systemd
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import write_atomic

ROOT = '/'
MAX_UNIT_BYTES = files.MAX_FILE_BYTES


def _remove(path):
    if os.path.lexists(path):
        os.unlink(path)
        return True
    return False


def _fragment_path(module, unit):
    systemctl = module.get_bin_path('systemctl')
    if systemctl:
        rc, out, _err = module.run_command([systemctl, 'show', '--property=FragmentPath', '--value', unit],
                                           check_rc=False, environ_update={'LC_ALL': 'C', 'SYSTEMD_PAGER': ''})
        if rc == 0 and out.strip():
            return out.strip()
    return systemd.find_unit_file(ROOT, unit) or '/etc/systemd/system/' + unit


def _check_regular(module, read, what):
    if read.exists and read.data is None:
        module.fail_json(msg='%s %s exists but cannot be read (%s): nothing was changed.'
                         % (what, read.path, read.error or 'not a regular file'))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', required=True, choices=['candidate', 'committed', 'absent']),
            scope=dict(type='str', default='all', choices=['candidate', 'all']),
            speculative_config=dict(type='dict'),
            gpu_memory_utilization=dict(type='float'),
            legacy_last_known_good=dict(type='path'),
        ),
        required_if=[('state', 'candidate', ['speculative_config', 'gpu_memory_utilization'])],
        supports_check_mode=True,
    )
    params = module.params
    try:
        unit = overlay.checked_unit(params['name'])
    except overlay.OverlayError as exc:
        module.fail_json(msg='%s: nothing was changed.' % exc)
    gmu = params['gpu_memory_utilization']
    if gmu is not None and not 0 < gmu <= 1:  # NaN fails both comparisons
        module.fail_json(msg='gpu_memory_utilization %r is not above 0 and at most 1: nothing was changed.' % gmu)
    state = params['state']
    where = overlay.paths(unit)
    current = overlay.read_overlay(ROOT, unit)
    for key in ('candidate', 'committed'):
        _check_regular(module, current[key], 'The %s overlay' % key)
    unit_path = _fragment_path(module, unit)
    baseline = overlay.read_baseline(ROOT, unit, unit_path)
    if baseline['file'].data is None and (state == 'candidate' or baseline['file'].exists):
        module.fail_json(msg='%s: the unit file %s cannot be read (%s): nothing was changed.'
                         % (unit, unit_path, baseline['file'].error or 'it does not exist'))
    # None: no file.
    before = dict((key, current[key].text if current[key].exists else None) for key in ('candidate', 'committed'))
    after = dict(before)
    modes = {'candidate': 0o644, 'committed': 0o644}
    migrated = False

    if state == 'candidate':
        try:
            text, _argv, secret = overlay.render(unit, baseline, params['speculative_config'], gmu)
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

    legacy = params['legacy_last_known_good']
    legacy_read = None
    if state == 'absent' and params['scope'] == 'all' and legacy:
        legacy_read = files.read_regular(ROOT, legacy, limit=MAX_UNIT_BYTES)
        runs_speculative = '--speculative-config' in [
            word.split('=', 1)[0] for word in (baseline.get('argv') or [])]
        migrated = legacy_read.data is not None and runs_speculative
        if migrated and (os.path.islink(unit_path) or not os.path.isfile(unit_path)):
            module.fail_json(msg='%s runs --speculative-config written by an earlier release, but %s is not a regular '
                             'file: put %s back by hand. Nothing was changed.' % (unit, unit_path, legacy))

    changed = after != before or migrated
    result = dict(changed=changed, unit_path=unit_path, migrated=migrated,
                  daemon_reload=changed, baseline_sha256=baseline['sha256'])
    if module._diff:
        result['diff'] = [{'before_header': where[key], 'after_header': where[key],
                           'before': overlay.redact(before[key] or ''), 'after': overlay.redact(after[key] or '')}
                          for key in ('candidate', 'committed') if before[key] != after[key]]
        if migrated:
            result['diff'].append({'before_header': unit_path, 'after_header': unit_path,
                                   'before': '(the unit with --speculative-config)\n',
                                   'after': '(the copy %s)\n' % legacy})
    if changed and not module.check_mode:
        if migrated:
            write_atomic(module, unit_path, legacy_read.data, 0o644)
            os.unlink(legacy)
        # Commit: write /etc first, then remove /run, so a crash in between leaves two identical overlays.
        for key in ('committed', 'candidate'):
            if after[key] == before[key]:
                continue
            if after[key] is not None:
                write_atomic(module, where[key], after[key].encode('utf-8'), modes[key])
            else:
                _remove(where[key])
        if migrated:
            result['baseline_sha256'] = overlay.read_baseline(ROOT, unit, unit_path)['sha256']
    for key in ('candidate', 'committed'):
        result[key] = {'path': where[key], 'exists': after[key] is not None}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
