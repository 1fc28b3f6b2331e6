# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cohort filter: the same key as module_utils/_decision/cohort.py, a group name, a label, clear errors."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.cohort import FilterModule
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import cohort as C

cohort = FilterModule().filters()['cohort']

JETSON = {'variant': 'thor-t5000', 'memory': {'total_mb': 125772}, 'power': {'mode_name': 'MAXN'}}
SOFTWARE = {'l4t': '38.2.0', 'jetpack': '7.0', 'vllm_version': '0.32.0', 'runtime': 'native'}
SERVE = {'model': '/models/target', 'port': 8211, 'host': '127.0.0.1', 'served_model_name': ['target'],
         'api_key_set': True, 'gpu_memory_utilization': 0.75, 'max_model_len': 1024, 'speculative_config': None,
         'extra_args': ['--dtype', 'float32', '--api-key', '********'], 'entry': 'vllm serve'}
PLANNED = {'method': 'draft_model', 'model': '/models/draft-deep-1layer', 'num_speculative_tokens': 4}
VERDICT = {'c8_margin': 0.05, 'expected_concurrency': 1}
WORKLOAD = {'concurrency': [1, 8], 'num_prompts': 8}


def test_the_filter_gives_the_module_utils_key_a_group_and_a_label():
    result = cohort(JETSON, SOFTWARE, SERVE, PLANNED, VERDICT, WORKLOAD)
    parts = {'device': C.device_part(JETSON), 'software': SOFTWARE, 'service': C.service_part(SERVE),
             'planned': PLANNED, 'verdict': VERDICT, 'workload': WORKLOAD}
    assert result['key'] == C.cohort(parts)['key']
    assert result['group'] == 'cohort_' + result['key']
    assert result['label'] == 'thor-t5000 MAXN L4T 38.2.0 vLLM 0.32.0 target draft_model K=4'
    twin = dict(SERVE, port=8212, served_model_name=['twin'])
    assert cohort(JETSON, SOFTWARE, twin, PLANNED, VERDICT, WORKLOAD)['key'] == result['key']
    other = cohort(JETSON, dict(SOFTWARE, l4t='38.4.0'), SERVE, PLANNED, VERDICT, WORKLOAD)
    assert other['key'] != result['key']
    assert cohort(JETSON, SOFTWARE, SERVE, PLANNED, VERDICT, WORKLOAD, model_revision='main')['key'] != result['key']


@pytest.mark.parametrize('args, words', [
    ((JETSON, ['l4t'], SERVE, PLANNED, VERDICT, WORKLOAD), 'software must be a dictionary, not list'),
    ((JETSON, SOFTWARE, SERVE, PLANNED, {'c8_margin': float('inf')}, WORKLOAD), 'verdict.c8_margin is inf'),
    (('thor', SOFTWARE, SERVE, PLANNED, VERDICT, WORKLOAD), 'jetson must be a dictionary'),
])
def test_bad_input_is_a_filter_error_that_names_it(args, words):
    with pytest.raises(AnsibleFilterError) as err:
        cohort(*args)
    assert words in str(err.value)
