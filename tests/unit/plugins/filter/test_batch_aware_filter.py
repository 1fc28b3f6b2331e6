# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the batch_aware_limit filter (the N of a batch-size-aware config under a token budget)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.batch_aware import FilterModule
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import last_option_value

batch_aware_limit = FilterModule().filters()['batch_aware_limit']


def test_without_a_token_budget_n_is_kept():
    assert batch_aware_limit(4, 4, ['--dtype', 'float32']) == {'max_batch': 4, 'requested': 4, 'token_budget': None,
                                                               'reason': None}


def test_a_large_budget_keeps_n():
    # 2048 // 5 = 409 requests fit a step with 4 draft tokens each: N = 4 can turn speculation off.
    result = batch_aware_limit(4, 4, ['--max-num-batched-tokens', '2048'])
    assert result['max_batch'] == 4 and result['token_budget'] == 2048 and result['reason'] is None


def test_a_budget_that_caps_the_batch_lowers_n():
    # The role test's host: 16 // 5 = 3 requests fit, so N must be 2 for a batch of 3 to turn speculation off.
    result = batch_aware_limit(4, 4, ['--dtype', 'float32', '--max-num-batched-tokens', '16', '--max-num-seqs', '8'])
    assert result['max_batch'] == 2 and result['requested'] == 4 and result['token_budget'] == 16
    assert 'fits only 3 request(s) with 4 draft tokens' in result['reason'] and 'so up to 2' in result['reason']


def test_the_boundary_n_equal_to_what_fits_is_lowered():
    # 15 // 5 = 3: with N = 3 the batch of 3 still speculates; N = 2 lets a batch of 3 turn it off.
    assert batch_aware_limit(3, 4, ['--max-num-batched-tokens=15'])['max_batch'] == 2
    assert batch_aware_limit(2, 4, ['--max-num-batched-tokens=15'])['max_batch'] == 2


def test_a_budget_for_one_request_leaves_nothing_to_try():
    result = batch_aware_limit(4, 4, ['--max_num_batched_tokens', '9'])
    assert result['max_batch'] == 0 and 'cannot help' in result['reason']


def test_human_readable_budget_and_the_last_value_wins():
    assert batch_aware_limit(4, 4, ['--max-num-batched-tokens', '16', '--max-num-batched-tokens', '8k'])['token_budget'] == 8000
    assert batch_aware_limit(4, 4, ['--max-num-batched-tokens', 'lots'])['token_budget'] is None


def test_bad_inputs_are_named():
    with pytest.raises(AnsibleFilterError, match='serve_args must be a list'):
        batch_aware_limit(4, 4, '--max-num-batched-tokens 16')
    with pytest.raises(AnsibleFilterError, match='must be integers'):
        batch_aware_limit('many', 4, [])


def test_last_option_value_forms():
    assert last_option_value(['--max_num_seqs', '8', '--max-num-seqs=16'], '--max-num-seqs') == '16'
    assert last_option_value(['--max-num-seqs'], '--max-num-seqs') is None
    assert last_option_value([3, None, '--x', '1'], '--x') == '1'
    assert last_option_value(None, '--x') is None


batch_aware_trigger = FilterModule().filters()['batch_aware_trigger']


def test_the_trigger_filter_returns_try_and_why():
    verdict = {'keep': False, 'c8_regression_only': True}
    config = {'num_speculative_tokens': 4}
    assert batch_aware_trigger(verdict, 4, [1, 8], '0.32.0', config) == {'try': True, 'why': None}
    off = batch_aware_trigger(verdict, '0', [1, 8], '0.32.0', config)
    assert off['try'] is False and off['why'].startswith('jetson_spec_batch_aware_max_batch is 0')


def test_the_trigger_filter_names_its_bad_inputs():
    with pytest.raises(AnsibleFilterError, match="the verdict is str"):
        batch_aware_trigger('reject', 4, [1, 8], '0.32.0', {})
    with pytest.raises(AnsibleFilterError, match="concurrency is int"):
        batch_aware_trigger({}, 4, 8, '0.32.0', {})
    with pytest.raises(AnsibleFilterError, match="must be integers"):
        batch_aware_trigger({'c8_regression_only': True}, 'x', [1, 8], '0.32.0', {})


def test_the_note_and_outcome_filters_name_their_bad_inputs():
    from ansible_collections.jetson_llm.vllm.plugins.filter.outcome import FilterModule as OutcomeFilters
    filters = OutcomeFilters().filters()
    note = filters['batch_aware_note']({'verdict': 'reject', 'reasons': []}, {'max_batch': 0, 'reason': 'x'}, None, None, None)
    assert note['tried'] is False
    with pytest.raises(AnsibleFilterError, match="batch_aware_note: limit is str"):
        filters['batch_aware_note']({}, '4', {}, {}, {})
    with pytest.raises(AnsibleFilterError, match="verdict_outcome: the verdict is NoneType"):
        filters['verdict_outcome']({}, None, {}, None, [], None, 'fixed')
    with pytest.raises(AnsibleFilterError, match="resumed_reasons is str"):
        filters['verdict_outcome']({}, {}, {}, None, 'resumed', None, 'fixed')


def test_the_attempt_filters_name_their_bad_inputs():
    from ansible_collections.jetson_llm.vllm.plugins.filter.outcome import FilterModule as OutcomeFilters
    filters = OutcomeFilters().filters()
    with pytest.raises(AnsibleFilterError, match="attempt_note: the attempts is str"):
        filters['attempt_note']('none', 0, {}, {}, {})
    with pytest.raises(AnsibleFilterError, match="attempt_next: index 'x'"):
        filters['attempt_next']({}, 'x', 3, {'healthy': False}, {'enable': True, 'next_step': 'smaller_draft'})
    with pytest.raises(AnsibleFilterError, match="startup_failure_outcome: the outcome is list"):
        filters['startup_failure_outcome']([], {}, [], [])


def test_the_after_plan_filter_names_its_bad_inputs():
    from ansible_collections.jetson_llm.vllm.plugins.filter.outcome import FilterModule as OutcomeFilters
    after_plan = OutcomeFilters().filters()['after_plan']
    assert after_plan('verify', {'enable': False, 'reasons': ['no']}, 'yes', {})['outcome']['status'] == 'refused'
    assert after_plan('verify', {'enable': False, 'reasons': ['no']}, 'False', {})['outcome']['status'] == 'skipped'
    with pytest.raises(AnsibleFilterError, match="after_plan: is_jetson"):
        after_plan('verify', {}, 'maybe', {})
    with pytest.raises(AnsibleFilterError, match="after_plan: the action is 'maybe'; allowed: in_sync, verify"):
        after_plan('maybe', {}, True, {})
    with pytest.raises(AnsibleFilterError, match="after_plan: the outcome is NoneType"):
        after_plan('verify', {}, True, None)


def test_the_failure_outcome_filter_reads_changed_as_ansible_does_and_names_its_bad_inputs():
    from ansible_collections.jetson_llm.vllm.plugins.filter.outcome import FilterModule as OutcomeFilters
    failure_outcome = OutcomeFilters().filters()['failure_outcome']
    first = {'task': 'Benchmark', 'msg': 'boom'}
    new = failure_outcome({'reasons': []}, first, None, 'True', ['/run/a.conf'], 'vllm')
    assert new['reasons'] == ['Task "Benchmark" failed: boom', 'The previous service was restored and is healthy.']
    assert failure_outcome({}, first, None, 'false', [], 'vllm')['reasons'] == ['Task "Benchmark" failed: boom']
    with pytest.raises(AnsibleFilterError, match="failure_outcome: changed"):
        failure_outcome({}, first, None, 'perhaps', [], 'vllm')
    with pytest.raises(AnsibleFilterError, match="failure_outcome: the failure is str"):
        failure_outcome({}, 'boom', None, True, [], 'vllm')
    with pytest.raises(AnsibleFilterError, match="failure_outcome: the revert failure is str"):
        failure_outcome({}, first, 'boom', True, [], 'vllm')
    with pytest.raises(AnsibleFilterError, match="failure_outcome: the overlays is str"):
        failure_outcome({}, first, None, True, '/run/a.conf', 'vllm')
