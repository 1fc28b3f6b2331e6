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
version_added: 0.1.0
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
  metrics_file:
    description:
      - Also write the record as Prometheus metrics in node_exporter's textfile-collector format (a C(.prom) file in
        the collector's directory, for example C(/var/lib/node_exporter/textfile_collector/jetson_vllm_speculative.prom)),
        so a Grafana board can show the fleet and alert on drift. Gauges, each labelled C(service) -
        C(jetson_llm_vllm_speculative_status) (1 for the recorded status, 0 for the others),
        C(jetson_llm_vllm_speculative_throughput_change) (C(concurrency) 1 and 8),
        C(jetson_llm_vllm_speculative_acceptance_rate), C(jetson_llm_vllm_speculative_num_speculative_tokens) and
        C(jetson_llm_vllm_speculative_last_verification_timestamp_seconds). A value the record lacks is left out.
      - An absolute path; the file is mode C(0644) (it holds no secret), written whole or not at all. Unset, no
        metrics are written.
    type: path
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
metrics_file:
  description: The metrics file written, or null when O(metrics_file) is unset.
  returned: success
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import (
    MAX_RECORD_BYTES, RecordError, dumps, metrics, validate)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import parent_problem, write_atomic
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_path
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.files import read_regular


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type='path', required=True), record=dict(type='dict', required=True),
                           metrics_file=dict(type='path')),
        supports_check_mode=True,
    )
    path, metrics_file = module.params['path'], module.params['metrics_file']
    try:
        check_path(path, 'path')
        check_path(metrics_file, 'metrics_file', allow_none=True)
    except InputError as exc:
        module.fail_json(msg='%s. Nothing was changed.' % exc)
    for where in [path] + ([metrics_file] if metrics_file else []):
        problem = parent_problem(where)
        if problem:
            module.fail_json(msg='The record cannot be written at %s: %s. Nothing was changed.' % (where, problem))
        if os.path.lexists(where) and not os.path.isfile(where):
            module.fail_json(msg='%s exists and is not a regular file: the record is not written there. Nothing was '
                             'changed.' % where)
    try:
        content = dumps(module.params['record'])
    except RecordError as exc:
        module.fail_json(msg='The record cannot be written: %s. Nothing was changed.' % exc)
    if len(content) > MAX_RECORD_BYTES:
        module.fail_json(msg='The record is larger than %d bytes. Nothing was changed.' % MAX_RECORD_BYTES)
    old = read_regular('/', path, limit=MAX_RECORD_BYTES).text or ''
    record = validate(module.params['record'])
    writes = [(path, old, content)]
    if metrics_file:
        previous = read_regular('/', metrics_file, limit=MAX_RECORD_BYTES).text or ''
        writes.append((metrics_file, previous, metrics(record, record.get('service'))))
    changed = any(before_text != after for _where, before_text, after in writes)
    result = dict(changed=changed, path=path, record=record, metrics_file=metrics_file)
    if module._diff:
        result['diff'] = [{'before': before_text, 'after': after, 'before_header': where, 'after_header': where}
                          for where, before_text, after in writes if before_text != after]
    if changed and not module.check_mode:
        for where, before_text, after in writes:
            if before_text != after:
                write_atomic(module, where, after, 0o644)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
