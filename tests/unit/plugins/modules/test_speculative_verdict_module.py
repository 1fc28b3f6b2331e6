# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the speculative_verdict module's plumbing: options, documented results, Ansible's type checks."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as _verdict
from ansible_collections.jetson_llm.vllm.plugins.modules import speculative_verdict
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils.test_speculative_verdict_noise import pair
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import (
    ExitJson, FailJson, capture_module, run_main)


@pytest.fixture
def warnings(monkeypatch):
    found = []
    capture_module(monkeypatch, found)
    return found


def run(args):
    return run_main(speculative_verdict.main, args)


def test_result_has_every_documented_key(warnings):
    base, cand = pair()
    kind, result = run({'baseline': {'benchmark': base}, 'candidate': cand})
    assert kind is ExitJson and result['changed'] is False
    documented = yaml.safe_load(speculative_verdict.RETURN)
    assert sorted(documented) == sorted(k for k in result if k not in ('changed', 'invocation'))
    assert result['verdict'] == 'accept' and result['decision_basis'] == 'interval'
    assert sorted(result['criteria']) == sorted(_verdict.CRITERIA)
    assert sorted(result['explanation']) == sorted(documented['explanation']['contains'])
    assert sorted(result['bootstrap']) == sorted(documented['bootstrap']['contains'])
    assert sorted(result['deltas']) == sorted(documented['deltas']['contains'])
    assert sorted(result['ttft']) == sorted(documented['ttft']['contains'])
    assert sorted(result['criteria']['throughput_gain_c1']) == sorted(documented['criteria']['contains'])


def test_options_documented_as_the_argument_spec_declares(warnings):
    options = yaml.safe_load(speculative_verdict.DOCUMENTATION)['options']
    for name, default in _verdict.VERDICT_DEFAULTS.items():
        assert options[name].get('default') == default, name
    assert 'regression_rule' not in options, 'one rule at concurrency 8: nothing to choose'
    assert options['decide_undetermined']['choices'] == list(_verdict.DECIDE_UNDETERMINED)
    assert options['decide_undetermined']['default'] == 'point_estimate'
    assert options['num_speculative_tokens']['type'] == 'int' and 'default' not in options['num_speculative_tokens']


@pytest.mark.parametrize('args, words', [
    ({'bootstrap_resamples': 'many'}, 'bootstrap_resamples'),
    ({'bootstrap_resamples': 'nan'}, 'bootstrap_resamples'),
    ({'bootstrap_resamples': 100}, 'bootstrap_resamples must be an integer from 200 to 20000, got 100'),
    ({'decide_undetermined': 'coin'}, 'decide_undetermined must be one of: point_estimate, undetermined'),
    # ('inf' for an int option crashes ansible-core's own type check before the module runs, in ansible-core
    # releases without ansible/ansible#87253; the module_utils tests cover float inf.)
    ({'num_speculative_tokens': 'nan'}, 'num_speculative_tokens'),
    ({'num_speculative_tokens': 99}, 'num_speculative_tokens must be an integer from 1 to 16, or null'),
])
def test_bad_options_fail_with_the_value_and_what_is_allowed(warnings, args, words):
    base, cand = pair()
    args = dict(args, baseline=base, candidate=cand)
    kind, result = run(args)
    assert kind is FailJson and words in result['msg']
    assert '%s' % list(args.values())[0] in result['msg']


def test_undetermined_verdict_through_the_module(warnings):
    base, cand = pair(c1=((22.0, 0.2), (16.9, 0.2)), c8=None, count=8)
    kind, result = run({'baseline': base, 'candidate': cand, 'decide_undetermined': 'undetermined'})
    assert kind is ExitJson
    assert result['verdict'] == 'undetermined' and result['keep'] is False and result['determined'] is False
    assert 'throughput_gain_c1' in result['undetermined']
