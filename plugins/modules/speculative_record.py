#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_record
short_description: Write a host's speculative-decoding outcome record (the one writer of its schema)
version_added: 0.2.0
description:
  - Writes the outcome record of M(jetson_llm.vllm.speculative_decoding) (by default
    C(/etc/ansible/facts.d/jetson_vllm_speculative.fact), so later plays see it as
    C(ansible_local.jetson_vllm_speculative)). M(jetson_llm.vllm.speculative_state) and the fleet report read it.
  - The record is checked (a dictionary with a known C(status), C(reasons) a list of strings, no NaN or infinity),
    stamped with the current C(schema) and written atomically (a reader never sees half a record), owned by root,
    mode C(0644). It holds no secret.
  - Its numbers (C(baseline_gpu_memory_utilization), C(candidate_gpu_memory_utilization), C(num_speculative_tokens),
    C(baseline_age_s), C(revert_check.baseline_throughput_tok_s), C(revert_check.restored_throughput_tok_s),
    C(revert_check.ratio), C(batch_aware.max_batch), C(tuning.from_k)) are written as numbers, also when given as
    numeric strings (as ansible-core 2.18 templates them), and an empty string as null; any other value there fails
    the module and nothing is written.
  - The parent directory is created (mode C(0755)) when it is missing.
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.writer
options:
  path:
    description:
      - The record file, an absolute path without control characters. A path whose parent exists but is not a
        directory, or that is not a regular file, fails the module and nothing is written.
    type: path
    required: true
  record:
    description:
      - The record. C(status) is one of V(enabled), V(reverted), V(refused), V(skipped), V(disabled), V(failed),
        V(pending); C(schema) is set by the module.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Record that a change is in flight
  jetson_llm.vllm.speculative_record:
    path: /etc/ansible/facts.d/jetson_vllm_speculative.fact
    record:
      status: pending
      reasons: []
      started: "2026-12-03T09:00:00Z"
'''

RETURN = r'''
record:
  description: The record as written (with its C(schema)).
  returned: success
  type: dict
path:
  description: The record file.
  returned: success
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import MAX_RECORD_BYTES, RecordError, dumps, validate
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import parent_problem, write_atomic
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_path
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.files import read_regular


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type='path', required=True), record=dict(type='dict', required=True)),
        supports_check_mode=True,
    )
    path = module.params['path']
    try:
        check_path(path, 'path')
    except InputError as exc:
        module.fail_json(msg='%s. Nothing was changed.' % exc)
    problem = parent_problem(path)
    if problem:
        module.fail_json(msg='The record cannot be written at %s: %s. Nothing was changed.' % (path, problem))
    try:
        content = dumps(module.params['record'])
    except RecordError as exc:
        module.fail_json(msg='The record cannot be written: %s. Nothing was changed.' % exc)
    if len(content) > MAX_RECORD_BYTES:
        module.fail_json(msg='The record is larger than %d bytes. Nothing was changed.' % MAX_RECORD_BYTES)
    before = read_regular('/', path, limit=MAX_RECORD_BYTES)
    if os.path.lexists(path) and not os.path.isfile(path):
        module.fail_json(msg='%s exists and is not a regular file (%s): the record is not written there. Nothing was '
                         'changed.' % (path, before.error or 'not a file'))
    old = before.text or ''
    changed = old != content
    result = dict(changed=changed, path=path, record=validate(module.params['record']))
    if module._diff:
        result['diff'] = {'before': old, 'after': content, 'before_header': path, 'after_header': path}
    if changed and not module.check_mode:
        write_atomic(module, path, content, 0o644)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
