# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""Short summaries of benchmark results for records and reports: see run_summary.yml."""

from ansible.errors import AnsibleFilterError

SUMMARY_KEYS = ('concurrency', 'throughput_tok_s', 'tpot_ms_p50', 'ttft_ms_p50', 'itl_ms_p50', 'completed', 'failed')


def run_summary(run):
    """The numbers of one vllm_benchmark run that a fleet report shows."""
    if not isinstance(run, dict):
        raise AnsibleFilterError('run_summary takes one run of a vllm_benchmark result (a dict), not %s' % type(run).__name__)
    summary = dict((key, run.get(key)) for key in SUMMARY_KEYS)
    spec = run.get('spec_decode') or {}
    summary['acceptance_rate'] = spec.get('acceptance_rate') if isinstance(spec, dict) else None
    return summary


class FilterModule(object):
    def filters(self):
        return {'run_summary': run_summary}
