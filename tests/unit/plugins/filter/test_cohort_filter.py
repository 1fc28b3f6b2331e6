# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cohort filter: the same key as module_utils/_decision/cohort.py, a group name, a label, clear errors."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter import cohort_rollout as CR
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


# --- the rollout filters (cohort_rollout.py): translation only, the decisions are tested in test_rollout.py -----


def test_canaries_from_hostvars_and_saved_text_with_awx_verdicts_over_them():
    hostvars = {
        'b': {'_jetson_spec_cohort': {'key': 'k1'}, '_jetson_spec_action': 'verify'},
        'a': {'_jetson_spec_cohort': {'key': 'k1'}, '_jetson_spec_action': 'verify', 'jetson_spec_canary': 'no'},
        'c': {'_jetson_spec_cohort': {'key': 'k2'}, '_jetson_spec_action': 'verify', 'jetson_spec_canary': 'true'},
        'd': {'_jetson_spec_cohort': {'key': 'k2'}, '_jetson_spec_action': 'verify'},
        'e': {'_jetson_spec_action': 'in_sync'},
    }
    saved = ('{"k1": {"key": "k1", "status": "reverted", "canary": "x", "measured_at": "2026-12-06T17:00:00Z"}, '
             '"k3": {"key": "k3", "status": "failed", "canary": "y", "measured_at": "2026-12-06T17:00:00Z"}}')
    out = CR.cohort_canaries(['a', 'b', 'c', 'd', 'e'], saved, '2026-12-06T18:00:00Z', 7200, hostvars=hostvars)
    assert out['canaries'] == ['c'] and list(out['verdicts']) == ['k1'], "an earlier run's failure gates nothing"
    # an AWX artifact's verdict replaces the saved one of the same key (here: too old, so k1 needs a canary again)
    old = {'k1': {'key': 'k1', 'status': 'reverted', 'canary': 'x', 'measured_at': '2026-12-01T00:00:00Z'}}
    out = CR.cohort_canaries(['a', 'b', 'c', 'd'], saved, '2026-12-06T18:00:00Z', 7200, hostvars=hostvars, extra=old)
    assert out['canaries'] == ['a', 'c'] and out['verdicts'] == {}


def test_a_job_after_the_canary_job_picks_no_canary_and_a_bad_part_is_named():
    hostvars = {'a': {'_jetson_spec_cohort': {'key': 'k1'}, '_jetson_spec_action': 'verify'}}
    out = CR.cohort_canaries(['a'], '{}', '2026-12-06T18:00:00Z', 60, hostvars=hostvars, part='others')
    assert out['canaries'] == []
    assert CR.cohort_canaries(['a'], '{}', '2026-12-06T18:00:00Z', 60, hostvars=hostvars, part='canaries')['canaries'] == ['a']
    assert CR.cohort_gate('k1', {}, '2026-12-06T18:00:00Z', 60, part='others')['action'] == 'stop'
    assert CR.cohort_gate('k1', {}, '2026-12-06T18:00:00Z', 60, part='all')['action'] == 'verify'
    for bad in ('rest', None):
        with pytest.raises(AnsibleFilterError, match='jetson_spec_rollout_part is'):
            CR.cohort_gate('k1', {}, '2026-12-06T18:00:00Z', 60, part=bad)
        with pytest.raises(AnsibleFilterError, match='jetson_spec_rollout_part is'):
            CR.cohort_canaries(['a'], '{}', '2026-12-06T18:00:00Z', 60, hostvars=hostvars, part=bad)


@pytest.mark.parametrize('saved, words', [('{"k1": ', 'the saved cohort verdicts'), ('[1, 2]', 'dictionary'),
                                          ('{"k": NaN}', 'the saved cohort verdicts')])
def test_a_damaged_saved_file_is_named_with_the_fix(saved, words):
    with pytest.raises(AnsibleFilterError, match=words):
        CR.cohort_canaries([], saved, '2026-12-06T18:00:00Z', 60, hostvars={})


def test_a_bad_time_or_age_names_the_value():
    with pytest.raises(AnsibleFilterError, match="now is 'soon'"):
        CR.cohort_gate('k1', {}, 'soon', 60)
    with pytest.raises(AnsibleFilterError, match='jetson_spec_baseline_max_age'):
        CR.cohort_gate('k1', {}, '2026-12-06T18:00:00Z', float('nan'))
    with pytest.raises(AnsibleFilterError, match='jetson_spec_cohort_spread'):
        CR.cohort_confirm({'runs': []}, {'evidence': {}}, 'wide')


def test_junk_from_awx_is_named_as_the_variable_and_never_gates():
    with pytest.raises(AnsibleFilterError, match='jetson_spec_cohort_verdicts must be a dictionary'):
        CR.cohort_canaries([], '{}', '2026-12-06T18:00:00Z', 60, hostvars={}, extra=['k1'])
    with pytest.raises(AnsibleFilterError, match='jetson_spec_cohort_verdicts'):
        CR.cohort_gate('k1', '{"k1": ', '2026-12-06T18:00:00Z', 60)
    junk = {'k1': {'key': 'k1', 'status': ['enabled'], 'canary': 'x', 'measured_at': '2026-12-06T17:59:00Z'},
            1: 'x', 'k2': None}
    assert CR.cohort_gate('k1', junk, '2026-12-06T18:00:00Z', 60)['action'] == 'verify'
    assert CR.cohort_canaries(['a'], junk, '2026-12-06T18:00:00Z', 60,
                              hostvars={'a': {'_jetson_spec_cohort': {'key': 'k1'}, '_jetson_spec_action': 'verify'}}
                              )['canaries'] == ['a']


def test_collect_reads_the_canaries_variables():
    cohort = {'key': 'k1', 'group': 'cohort_k1', 'label': 'x'}
    hostvars = {'a': {'_jetson_spec_cohort': cohort, '_jetson_fleet_error': 'No space left on device',
                      '_jetson_fleet_done': True},
                'b': {'_jetson_spec_cohort': dict(cohort, key='k2')}}
    out = CR.cohort_collect(['a', 'b'], hostvars, '2026-12-06T18:00:00Z')
    assert {key: value['status'] for key, value in out.items()} == {'k1': 'failed', 'k2': 'unreachable'}
    assert CR.cohort_collect(['a', 'b'], hostvars, '2026-12-06T18:00:00Z', saveable=True) == {}
    with pytest.raises(AnsibleFilterError, match='list of host names'):
        CR.cohort_collect('a', hostvars, '2026-12-06T18:00:00Z')


def test_rollout_failures_reads_the_hosts_variables_and_names_a_bad_percentage():
    hostvars = {'a': {'_jetson_fleet_batch': 'b1', '_jetson_fleet_attempted': True, '_jetson_fleet_error': 'boom'},
                'b': {'_jetson_fleet_batch': 'b1', '_jetson_fleet_attempted': True},
                'c': {}}
    share = CR.rollout_failures(['a', 'b', 'c'], hostvars, batch='b1', max_fail_percentage='20')
    assert (share['stop'], share['failed'], share['size']) == (True, ['a'], 2)
    assert CR.rollout_failures(['a', 'b', 'c'], hostvars, batch='b1', canary=True, rollout_size=10)['stop'] is False
    with pytest.raises(AnsibleFilterError, match='jetson_spec_max_fail_percentage is'):
        CR.rollout_failures(['a'], hostvars, batch='b1', max_fail_percentage='lots')
    with pytest.raises(AnsibleFilterError, match='list of host names'):
        CR.rollout_failures('a', hostvars)


def test_rollout_waves_gives_each_play_its_pattern_and_sizes_and_checks_every_setting():
    hostvars = {'c1': {'jetson_spec_disruption_group': 'site-a'},
                'a:1': {'jetson_spec_disruption_group': 'site-a', '_jetson_spec_action': 'verify'},
                'a2': {'jetson_spec_disruption_group': 'site-a', '_jetson_spec_action': 'confirm'},
                'x': {'_jetson_spec_action': 'in_sync', 'jetson_spec_disruption_group': 'site-a'},
                'f': {'jetson_spec_disruption_group': 'site-a', '_jetson_spec_action': 'follow',
                      '_jetson_spec_state': {'remove_speculation': False}}}
    plans = CR.rollout_waves(['c1', 'a:1', 'a2', 'x', 'f'], hostvars, canaries=['c1'], batch_size=4)
    assert plans['canaries'] == {'order': ['c1'], 'sizes': [1], 'held': [], 'pattern': 'c1,'}
    # a:1 and a2 both restart in site-a: one per batch; x (in sync) and f (nothing to remove) are never held
    assert plans['others']['order'] == ['a:1', 'x', 'f', 'a2'] and plans['others']['sizes'] == [3, 1]
    assert plans['others']['held'] == ['a2'] and plans['others']['pattern'] == 'a:1,x,f,a2,'
    with pytest.raises(AnsibleFilterError, match='jetson_spec_max_fail_percentage is'):
        CR.rollout_waves(['c1'], hostvars, max_fail_percentage='most')
    with pytest.raises(AnsibleFilterError, match='jetson_spec_max_unavailable is'):
        CR.rollout_waves(['c1'], hostvars, max_unavailable=0)
    with pytest.raises(AnsibleFilterError, match='jetson_spec_disruption_group of c1 is'):
        CR.rollout_waves(['c1'], {'c1': {'jetson_spec_disruption_group': ['a']}})


def test_a_disruption_group_that_cannot_be_read_is_an_error_not_no_group():
    class Broken(dict):
        def __getitem__(self, key):
            raise KeyError('site is undefined')

    with pytest.raises(AnsibleFilterError, match='jetson_spec_disruption_group of h cannot be read'):
        CR.rollout_waves(['h'], {'h': Broken(jetson_spec_disruption_group='{{ site }}')})
