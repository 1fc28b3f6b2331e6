# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""Short summaries of benchmark results for records and reports: see run_summary.yml."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import run_summary as _run_summary


def run_summary(run):
    """The numbers of one vllm_benchmark run that a fleet report shows."""
    if not isinstance(run, dict):
        raise AnsibleFilterError('run_summary takes one run of a vllm_benchmark result (a dict), not %s' % type(run).__name__)
    return _run_summary(run)


class FilterModule(object):
    def filters(self):
        return {'run_summary': run_summary}
