# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the speculative_verdict rules (plugins/module_utils/_decision/verdict.py: verdict).

The benchmark dictionaries follow the vllm_benchmark result contract (the RETURN doc of
plugins/modules/vllm_benchmark.py); docs/decision-rules.md points at these test names.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError

PROMPT_SET = 'c0ffee' * 10 + 'abcd'


def _run(concurrency, tput, tpot, acceptance=None):
    spec = None
    if acceptance is not None:
        spec = {'acceptance_rate': acceptance, 'acceptance_length': 1 + 3 * acceptance, 'draft_tokens': 1000,
                'accepted_tokens': int(1000 * acceptance), 'drafts': 250, 'per_position_acceptance': [0.9, 0.7, 0.5]}
    return {
        'concurrency': concurrency, 'ttft_ms_p50': 180.0, 'ttft_ms_p99': 250.0, 'itl_ms_p50': tpot, 'itl_ms_p99': tpot * 2,
        'tpot_ms_p50': tpot, 'tpot_ms_p99': tpot * 1.5, 'tpot_ms_mean': tpot, 'throughput_tok_s': tput,
        'request_throughput': tput / 128.0, 'e2e_latency_ms_p50': 180.0 + 127 * (tpot or 0), 'completed': 50,
        'failed': 0, 'errors': [], 'duration_s': 60.0, 'total_input_tokens': 102400, 'total_output_tokens': 6400,
        'spec_decode': spec, 'metrics_polluted': False,
    }


def bench(c1=(44.0, 22.0), c8=251.0, acceptance=None, **config):
    """A vllm_benchmark ``benchmark`` dict: c1 = (throughput_tok_s, tpot_ms_p50); c8 = throughput or None."""
    runs = [_run(1, c1[0], c1[1], acceptance)]
    if c8 is not None:
        runs.append(_run(8, c8, 30.0, acceptance))
    cfg = {'input_len': 2048, 'output_len': 128, 'num_prompts': 50, 'warmup_prompts': 10, 'dataset': 'builtin',
           'prompt_set_id': PROMPT_SET, 'concurrency': [r['concurrency'] for r in runs], 'temperature': 0.0,
           'ignore_eos': True, 'seed': 0}
    cfg.update(config)
    return {
        'skill': 'jetson_llm.vllm.vllm_benchmark', 'runtime': 'vllm', 'model': 'meta-llama/Llama-3.1-8B-Instruct',
        'endpoint': 'http://127.0.0.1:8000', 'sku': 'Jetson AGX Thor', 'generation': 'thor', 'product_line': 'thor-agx',
        'variant': 'thor-t5000', 'l4t': '38.2.0', 'jetpack': '7.0', 'power_mode': 'MAXN', 'container': None,
        'vllm_version': '0.20.1', 'config': cfg, 'runs': runs, 'warnings': [],
    }


def decide(base, cand, **kwargs):
    return V.verdict(base, cand, **kwargs)


# --- sanity --------------------------------------------------------------------------------------

def test_published_thor_numbers_accept():
    """Llama 3.1 8B on Thor: 44 tok/s baseline (Jetson AI Lab); a speculative run at 60 tok/s, TPOT 22 -> 16 ms."""
    result = decide(bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72))
    assert result['verdict'] == 'accept' and result['keep'] is True
    assert result['deltas'] == {'throughput_gain_c1': 0.3636, 'tpot_reduction_c1': 0.2727,
                                'throughput_change_c8': 0.0159, 'acceptance_rate': 0.72,
                                'ttft_change_c1': 0.0, 'ttft_change_c8': 0.0}
    assert result['measurements']['c1'] == {'baseline': {'throughput_tok_s': 44.0, 'tpot_ms_p50': 22.0, 'ttft_ms_p50': 180.0},
                                            'candidate': {'throughput_tok_s': 60.0, 'tpot_ms_p50': 16.0, 'ttft_ms_p50': 180.0}}
    assert result['measurements']['c8'] == {'baseline': {'throughput_tok_s': 251.0, 'ttft_ms_p50': 180.0},
                                            'candidate': {'throughput_tok_s': 255.0, 'ttft_ms_p50': 180.0}}
    assert result['warnings'] == []
    assert result['recommendation']['action'] == 'raise_num_speculative_tokens'


def test_the_summary_says_in_one_line_how_sure_the_verdict_is():
    result = decide(bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72))
    # no per-request samples here: point estimates, said so
    assert result['summary'] == ('c=1 +36 % (no interval: too few requests), c=8 +2 % (no interval: too few '
                                 'requests): accept, kept')
    criteria = {'throughput_gain_c1': {'point': 0.412, 'interval': [0.331, 0.494]},
                'tpot_reduction_c1': {'point': 0.3, 'interval': [0.2, 0.4]},
                'regression_c8': {'point': -0.013, 'interval': [-0.04, 0.021]}}
    assert V.summary_line(criteria, 'accept', True) == \
        'c=1 +41 % (95 % CI +33 % to +49 %), c=8 -1 % (95 % CI -4 % to +2 %): accept, kept'
    criteria['regression_c8'] = {'point': -0.125, 'interval': [-0.2, -0.05]}
    assert V.summary_line(criteria, 'reject', False).endswith('c=8 -12 % (95 % CI -20 % to -5 %): reject, reverted')
    assert V.summary_line({}, 'reject', False) == 'no measurement: reject, reverted'
    assert V.summary_line({'throughput_gain_c1': {'point': 0.001, 'interval': None}}, 'marginal', True) == \
        'c=1 0 % (no interval: too few requests): marginal, kept'


def test_same_numbers_reject():
    result = decide(bench(), bench(acceptance=0.5))
    assert result['verdict'] == 'reject' and result['keep'] is False
    assert result['deltas']['throughput_gain_c1'] == 0.0


def test_verdict_is_deterministic_and_does_not_modify_inputs():
    base, cand = bench(), bench(c1=(60.0, 16.0), acceptance=0.7)
    before = copy.deepcopy((base, cand))
    assert decide(base, cand) == decide(base, cand)
    assert (base, cand) == before


def test_registered_result_and_bare_benchmark_are_both_accepted():
    base, cand = bench(), bench(c1=(60.0, 16.0), acceptance=0.7)
    registered = {'changed': False, 'benchmark': cand, 'failed': False}
    assert decide({'benchmark': base}, registered) == decide(base, cand)


# --- thresholds and their boundaries -------------------------------------------------------------

@pytest.mark.parametrize('base_c1, cand_c1, expected', [
    ((100.0, 10.0), (130.0, 8.0), 'accept'),        # exactly 30 % and exactly 20 % (float: 0.30000000000000004, 0.1999...)
    ((41.6, 25.0), (54.08, 20.0), 'accept'),        # 30 % that computes as 0.2999999999999998
    ((100.0, 10.0), (129.99, 8.0), 'marginal'),     # just under 30 %
    ((100.0, 10.0), (130.0, 8.01), 'marginal'),     # TPOT just under 20 %
    ((100.0, 10.0), (200.0, 9.0), 'marginal'),      # big gain, TPOT only -10 %
    ((100.0, 10.0), (110.0, 10.0), 'marginal'),     # exactly 10 % is not "< 10 %"
    ((26.5, 10.0), (29.15, 10.0), 'marginal'),      # 10 % that computes as 0.09999999999999987
    ((100.0, 10.0), (109.99, 8.0), 'reject'),       # just under 10 %
    ((100.0, 10.0), (95.0, 12.0), 'reject'),        # slower
])
def test_thresholds_at_concurrency_1(base_c1, cand_c1, expected):
    result = decide(bench(c1=base_c1, c8=None), bench(c1=cand_c1, c8=None))
    assert result['verdict'] == expected
    assert result['keep'] is (expected == 'accept')


@pytest.mark.parametrize('keep_marginal, keep', [(False, False), (True, True)])
def test_keep_marginal(keep_marginal, keep):
    result = decide(bench(c1=(100.0, 10.0)), bench(c1=(120.0, 9.0)), keep_marginal=keep_marginal)
    assert result['verdict'] == 'marginal' and result['keep'] is keep
    assert ('kept because keep_marginal is true' in result['reasons'][-1]) is keep_marginal


def test_keep_marginal_never_keeps_a_reject():
    result = decide(bench(c1=(100.0, 10.0)), bench(c1=(105.0, 9.0)), keep_marginal=True)
    assert result['verdict'] == 'reject' and result['keep'] is False


@pytest.mark.parametrize('base8, cand8, tolerance, expected', [
    (251.0, 251.0, 0.0, 'accept'),      # unchanged is not a regression
    (251.0, 250.9, 0.0, 'reject'),      # any loss regresses with the default tolerance
    (200.0, 196.0, 0.02, 'accept'),     # exactly the tolerance (-2 %)
    (200.0, 195.9, 0.02, 'reject'),
    (41.5, 88.6, 0.0, 'accept'),        # NVIDIA: Llama 3.3 70B on Thor at c=8, 41.5 -> 88.6 with EAGLE-3
])
def test_concurrency_8_regression(base8, cand8, tolerance, expected):
    result = decide(bench(c1=(100.0, 10.0), c8=base8), bench(c1=(150.0, 7.0), c8=cand8), c8_tolerance=tolerance)
    assert result['verdict'] == expected
    if expected == 'reject':
        assert any('regresses at concurrency 8' in r for r in result['reasons'])


def test_concurrency_8_regression_rejects_even_a_great_c1_and_marginal_c1():
    great = decide(bench(c8=251.0), bench(c1=(88.0, 11.0), c8=240.0, acceptance=0.9), keep_marginal=True)
    assert great['verdict'] == 'reject' and great['keep'] is False
    assert great['deltas']['throughput_change_c8'] == -0.0438


def test_real_testbed_same_size_draft_is_rejected():
    """Measured with real vLLM on the CPU test bed: +14 % at c=1, TPOT -15 %, -22 % at c=8."""
    result = decide(bench(c1=(323.5, 2.77), c8=2275.0), bench(c1=(368.4, 2.36), c8=1777.0, acceptance=0.996))
    assert result['verdict'] == 'reject'
    assert result['deltas']['throughput_gain_c1'] == 0.1388


def test_missing_concurrency_8_decides_on_c1_and_warns():
    result = decide(bench(c8=None), bench(c1=(60.0, 16.0), c8=None, acceptance=0.5))
    assert result['verdict'] == 'accept'
    assert result['deltas']['throughput_change_c8'] is None and result['measurements']['c8'] is None
    assert any('No run at concurrency 8' in w for w in result['warnings'])


def test_thresholds_are_options():
    base, cand = bench(c1=(100.0, 10.0)), bench(c1=(120.0, 9.0))
    assert decide(base, cand)['verdict'] == 'marginal'
    assert decide(base, cand, min_throughput_gain=0.2, min_tpot_reduction=0.1)['verdict'] == 'accept'
    assert decide(base, cand, disable_below_gain=0.25, min_throughput_gain=0.3)['verdict'] == 'reject'


@pytest.mark.parametrize('kwargs, words', [
    (dict(min_throughput_gain=float('nan')), 'min_throughput_gain must be a finite number'),
    (dict(min_throughput_gain=-0.1), 'min_throughput_gain must be >= 0.0'),
    (dict(min_tpot_reduction=1.5), 'min_tpot_reduction must be <= 1.0'),
    (dict(disable_below_gain='0.1'), 'disable_below_gain must be a number'),
    (dict(c8_tolerance=-0.01), 'c8_tolerance must be >= 0.0'),
    (dict(c8_tolerance=True), 'c8_tolerance must be a number'),
    (dict(disable_below_gain=0.4), 'disable_below_gain .* must not exceed min_throughput_gain'),
    (dict(low_acceptance_rate=0.7), 'low_acceptance_rate .* must not exceed high_acceptance_rate'),
    (dict(keep_marginal='yes'), 'keep_marginal must be a boolean'),
])
def test_threshold_options_validated(kwargs, words):
    with pytest.raises(SpeculativeInputError, match=words):
        decide(bench(), bench(), **kwargs)


# --- recommendation ------------------------------------------------------------------------------

@pytest.mark.parametrize('cand_c1, acceptance, action, words', [
    ((60.0, 16.0), 0.72, 'raise_num_speculative_tokens', 'acceptance rate 0.72 is > 0.6'),
    ((60.0, 16.0), 0.6, 'keep', 'acceptance rate 0.60'),               # exactly 0.6 is not > 0.6
    ((60.0, 16.0), None, 'keep', 'acceptance rate unknown'),
    ((50.0, 20.0), 0.3, 'lower_num_speculative_tokens_or_smaller_draft', 'lower num_speculative_tokens or use a smaller'),
    ((50.0, 20.0), 0.5, 'remove_speculative_config', 'acceptance rate 0.50'),
    ((45.0, 21.0), 0.2, 'lower_num_speculative_tokens_or_smaller_draft', 'Remove speculation'),
    ((45.0, 21.0), 0.9, 'remove_speculative_config', 'Remove --speculative-config'),
])
def test_recommendation(cand_c1, acceptance, action, words):
    result = decide(bench(), bench(c1=cand_c1, acceptance=acceptance))
    assert result['recommendation']['action'] == action
    assert words in result['recommendation']['message']
    assert result['deltas']['acceptance_rate'] == acceptance


def test_recommendation_marginal_kept():
    result = decide(bench(), bench(c1=(50.0, 20.0), acceptance=0.5), keep_marginal=True)
    assert result['recommendation']['action'] == 'keep' and 'keep_marginal' in result['recommendation']['message']


def test_unknown_acceptance_warns_that_speculation_may_be_off():
    result = decide(bench(), bench(c1=(60.0, 16.0)))
    assert any('no speculative-decoding counters' in w for w in result['warnings'])


def test_acceptance_null_inside_spec_decode_is_unknown():
    cand = bench(c1=(60.0, 16.0), acceptance=0.7)
    cand['runs'][0]['spec_decode']['acceptance_rate'] = None
    assert decide(bench(), cand)['deltas']['acceptance_rate'] is None


@pytest.mark.parametrize('value', [1.5, -0.1, float('nan'), '0.7'])
def test_acceptance_invalid(value):
    cand = bench(c1=(60.0, 16.0), acceptance=0.7)
    cand['runs'][0]['spec_decode']['acceptance_rate'] = value
    with pytest.raises(SpeculativeInputError, match='acceptance_rate'):
        decide(bench(), cand)


# --- warnings ------------------------------------------------------------------------------------

def test_warnings_polluted_metrics_and_speculative_baseline_and_other_device():
    base = bench(acceptance=0.5)
    base['runs'][1]['metrics_polluted'] = True
    cand = bench(c1=(60.0, 16.0), acceptance=0.7)
    cand['variant'] = 'thor-t4000'
    text = ' '.join(decide(base, cand)['warnings'])
    assert 'baseline run at concurrency 8 has polluted metrics' in text
    assert 'baseline should be measured without' in text
    assert "differ in variant ('thor-t5000' vs 'thor-t4000')" in text


# --- live traffic during the benchmark: never a keep on it ----------------------------------------

@pytest.mark.parametrize('where, concurrency', [('baseline', 1), ('baseline', 8), ('candidate', 1), ('candidate', 8)])
def test_a_keep_measured_during_live_traffic_is_held_undetermined(where, concurrency):
    base, cand = bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72)
    run = (base if where == 'baseline' else cand)['runs'][0 if concurrency == 1 else 1]
    run['metrics_polluted'] = True
    result = decide(base, cand)
    assert result['verdict'] == 'undetermined' and result['keep'] is False
    assert result['live_traffic'] == {'runs': ['%s at concurrency %s' % (where, concurrency)],
                                      'verdict_without_it': 'accept'}
    assert any(r.startswith('Not kept: other clients used the server during the benchmark (%s at concurrency %s'
                            % (where, concurrency)) for r in result['reasons']), result['reasons']
    assert result['recommendation']['action'] == 'verify_again_without_traffic'


def test_a_marginal_keep_is_held_too_and_a_revert_stands():
    base = bench()
    base['runs'][1]['metrics_polluted'] = True
    marginal = decide(base, bench(c1=(50.0, 20.0), c8=255.0, acceptance=0.6), keep_marginal=True)
    assert marginal['verdict'] == 'undetermined' and marginal['live_traffic']['verdict_without_it'] == 'marginal'
    reject = decide(base, bench(c1=(30.0, 30.0), c8=200.0, acceptance=0.2))
    assert reject['verdict'] == 'reject' and reject['live_traffic'] == {'runs': ['baseline at concurrency 8'],
                                                                        'verdict_without_it': None}


def test_no_live_traffic_changes_nothing():
    result = decide(bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72))
    assert result['verdict'] == 'accept' and result['live_traffic'] == {'runs': [], 'verdict_without_it': None}


# --- errors, not verdicts ------------------------------------------------------------------------

@pytest.mark.parametrize('field, base_value, cand_value', [
    ('input_len', 2048, 1024),
    ('output_len', 128, 256),
    ('num_prompts', 50, 20),
    ('dataset', 'builtin', 'random'),
    ('prompt_set_id', PROMPT_SET, 'f' * 64),
    ('ignore_eos', True, False),
    ('ignore_eos', True, 1),
    ('temperature', 0.0, 0.7),
    ('temperature', 0.0, None),
])
def test_mismatched_workloads_are_errors(field, base_value, cand_value):
    with pytest.raises(SpeculativeInputError, match='config.%s is %r in the baseline and %r in the candidate'
                       % (field, base_value, cand_value)):
        decide(bench(**{field: base_value}), bench(c1=(60.0, 16.0), **{field: cand_value}))


def test_mismatched_concurrency_lists_are_errors():
    with pytest.raises(SpeculativeInputError, match=r'config.concurrency is \[1, 8\] in the baseline and \[1\]'):
        decide(bench(), bench(c8=None))


def test_missing_config_field_in_one_result_is_an_error():
    cand = bench()
    del cand['config']['prompt_set_id']
    with pytest.raises(SpeculativeInputError, match="config.prompt_set_id is '%s' in the baseline and missing"
                       % PROMPT_SET):
        decide(bench(), cand)


def test_failed_requests_are_errors():
    cand = bench(c1=(60.0, 16.0))
    cand['runs'][1].update(failed=3, errors=['HTTP 500: CUDA out of memory'])
    with pytest.raises(SpeculativeInputError, match=r'candidate run at concurrency 8 had 3 failed request\(s\) '
                                                    r'\(first error: HTTP 500: CUDA out of memory\)'):
        decide(bench(), cand)


def test_failed_benchmark_task_is_an_error():
    with pytest.raises(SpeculativeInputError, match='candidate is a failed vllm_benchmark task'):
        decide(bench(), {'failed': True, 'msg': 'connection refused'})


@pytest.mark.parametrize('key, value', [
    ('throughput_tok_s', None), ('throughput_tok_s', 0), ('throughput_tok_s', -1.0),
    ('throughput_tok_s', float('nan')), ('throughput_tok_s', '44'), ('tpot_ms_p50', None),
    ('tpot_ms_p50', float('inf')), ('tpot_ms_p50', True),
])
def test_null_or_bad_metric_needed_for_the_decision_is_an_error(key, value):
    base = bench()
    base['runs'][0][key] = value
    with pytest.raises(SpeculativeInputError, match='baseline run at concurrency 1 has no usable %s' % key):
        decide(base, bench(c1=(60.0, 16.0)))


def test_null_c8_throughput_is_an_error():
    cand = bench()
    cand['runs'][1]['throughput_tok_s'] = None
    with pytest.raises(SpeculativeInputError, match='candidate run at concurrency 8 has no usable throughput_tok_s'):
        decide(bench(), cand)


def test_metric_not_needed_may_be_null():
    base, cand = bench(), bench(c1=(60.0, 16.0))
    for run in base['runs'] + cand['runs']:
        run['itl_ms_p99'] = None
        run['ttft_ms_p50'] = None
    cand['runs'][1]['tpot_ms_p50'] = None  # TPOT is only decided on at concurrency 1
    assert decide(base, cand)['verdict'] == 'accept'


@pytest.mark.parametrize('mutate, words', [
    (lambda b: b.update(runs=[]), 'no runs'),
    (lambda b: b.pop('runs'), 'no runs'),
    (lambda b: b.pop('config'), 'no config'),
    (lambda b: b['runs'].append(copy.deepcopy(b['runs'][0])), 'two runs at concurrency 1'),
    (lambda b: b['runs'][0].update(concurrency=0), 'concurrency must be an integer >= 1'),
    (lambda b: b['runs'][0].update(failed=None), 'no valid failed count'),
    (lambda b: b['runs'].pop(), r'lists concurrency \[1, 8\] in its config but has runs at \[1\]'),
    (lambda b: b['runs'].__setitem__(0, 'oops'), r'runs\[0\] must be a dictionary'),
])
def test_malformed_results_are_errors(mutate, words):
    cand = bench(c1=(60.0, 16.0))
    mutate(cand)
    with pytest.raises(SpeculativeInputError, match=words):
        decide(bench(), cand)


def test_no_concurrency_1_run_is_an_error():
    with pytest.raises(SpeculativeInputError, match='decided at concurrency 1'):
        b = bench()
        b['runs'] = b['runs'][1:]
        b['config']['concurrency'] = [8]
        c = copy.deepcopy(b)
        decide(b, c)


@pytest.mark.parametrize('value', [None, 'results.json', [], 42])
def test_results_must_be_dicts(value):
    with pytest.raises(SpeculativeInputError, match='baseline must be a vllm_benchmark result'):
        decide(value, bench())


def test_registered_benchmark_must_be_a_dict():
    with pytest.raises(SpeculativeInputError, match='candidate.benchmark must be a dictionary'):
        decide(bench(), {'benchmark': 'oops'})


# --- hostile inputs (issue 9) ---------------------------------------------------------------------

@pytest.mark.parametrize('listed', [[1, 'x'], [1, None], [1, 8.5], [1, True], 'c1', [[1]]])
def test_config_concurrency_must_be_a_list_of_integers(listed):
    base, cand = bench(), bench()
    base['config']['concurrency'] = listed
    cand['config']['concurrency'] = copy.deepcopy(listed)
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, cand)
    text = str(err.value)
    assert 'config.concurrency' in text and 'integers' in text


@pytest.mark.parametrize('errors', [{'timeout': 3}, 'boom', [{'msg': 'x'}], 5])
def test_failed_run_with_any_errors_shape_is_a_clear_error(errors):
    base, cand = bench(), bench()
    cand['runs'][0]['failed'] = 3
    cand['runs'][0]['errors'] = errors
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, cand)
    assert 'failed request' in str(err.value)


def test_nan_workload_fields_are_an_error_not_different_workloads():
    base, cand = bench(temperature=float('nan')), bench(temperature=float('nan'))
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, cand)
    text = str(err.value)
    assert 'config.temperature' in text and 'finite' in text and 'different workloads' not in text


@pytest.mark.parametrize('value', [1e-320, 0.0, -5.0, float('inf'), float('nan')])
def test_unusable_baseline_throughput_is_an_error(value):
    base = bench(c1=(value, 22.0))
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, bench(c1=(60.0, 16.0), acceptance=0.7))
    assert 'throughput_tok_s' in str(err.value)


def test_gain_that_is_not_finite_is_an_error():
    with pytest.raises(SpeculativeInputError) as err:
        decide(bench(c1=(1e-300, 22.0)), bench(c1=(1e300, 16.0), acceptance=0.7))
    assert 'not a finite number' in str(err.value)


def test_the_reason_says_which_way_tpot_went():
    slower = decide(bench(c1=(44.0, 22.0)), bench(c1=(33.0, 30.0)))
    assert 'tpot_ms_p50 rose 36.4 % (22.00 -> 30.00 ms)' in slower['reasons'][0], slower['reasons'][0]
    faster = decide(bench(c1=(44.0, 22.0)), bench(c1=(66.0, 11.0)))
    assert 'tpot_ms_p50 fell 50.0 % (22.00 -> 11.00 ms)' in faster['reasons'][0], faster['reasons'][0]


# --- TTFT: reported next to TPOT, never credited; max_ttft_increase (off by default) -------------------------
def _with_ttft(benchmark, c1=None, c8=None):
    for run in benchmark['runs']:
        value = {1: c1, 8: c8}[run['concurrency']]
        if value is not None:
            run['ttft_ms_p50'] = value
    return benchmark


def test_ttft_is_reported_and_does_not_change_the_verdict_when_the_rule_is_off():
    result = decide(bench(), _with_ttft(bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72), c1=216.0, c8=243.0))
    assert result['verdict'] == 'accept' and result['keep'] is True
    assert result['deltas']['ttft_change_c1'] == 0.2 and result['deltas']['ttft_change_c8'] == 0.35
    assert result['measurements']['c1']['candidate']['ttft_ms_p50'] == 216.0
    assert result['measurements']['c8']['baseline']['ttft_ms_p50'] == 180.0
    assert result['ttft'] == {'max_increase': None, 'status': None, 'verdict_without_it': None}
    text = ' '.join(result['reasons'])
    assert ('TTFT p50 changed +20.0 % at concurrency 1 (180.0 -> 216.0 ms), +35.0 % at concurrency 8 '
            '(180.0 -> 243.0 ms): reported, not credited to speculation') in text, text
    # A rise above 10 % at concurrency 1 is a warning an operator sees, naming the option that acts on it.
    assert any('TTFT p50 at concurrency 1 rose 20.0 %' in w and 'max_ttft_increase' in w for w in result['warnings'])


def test_a_small_ttft_rise_is_no_warning():
    result = decide(bench(), _with_ttft(bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72), c1=189.0))
    assert result['deltas']['ttft_change_c1'] == 0.05
    assert not any('TTFT' in w for w in result['warnings'])


def test_max_ttft_increase_reverts_an_accepted_change_whose_ttft_rose_too_much():
    cand = _with_ttft(bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72), c1=234.0)
    result = decide(bench(), cand, max_ttft_increase=0.25)
    assert result['verdict'] == 'reject' and result['keep'] is False
    assert result['ttft'] == {'max_increase': 0.25, 'status': 'not_met', 'verdict_without_it': 'accept'}
    assert any(r.startswith('Reverted: TTFT p50 at concurrency 1 rose 30.0 % (180.0 -> 234.0 ms), more than '
                            'max_ttft_increase (25.0 %); on throughput and TPOT alone the verdict would be accept')
               for r in result['reasons']), result['reasons']
    assert not any(r.startswith('Accepted') for r in result['reasons'])
    assert not any('TTFT' in w for w in result['warnings']), 'the rule is on: no warning on top of the verdict'
    # Within the limit (and exactly at it): the rule is met and the verdict is the criteria's.
    for ttft in (225.0, 200.0):
        within = decide(bench(), _with_ttft(bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72), c1=ttft),
                        max_ttft_increase=0.25)
        assert within['verdict'] == 'accept' and within['ttft']['status'] == 'met', ttft


def test_a_c8_regression_after_a_ttft_rise_beyond_the_limit_is_no_trigger_for_batch_size_aware_speculation():
    """Batch-size-aware speculation keeps concurrency 1 as it is: after a c=1 TTFT rise beyond max_ttft_increase it
    would be reverted for the same reason, so the c=8 regression does not make it worth a try."""
    cand = bench(c1=(60.0, 16.0), c8=200.0, acceptance=0.72)
    plain = decide(bench(), cand)
    assert plain['verdict'] == 'reject' and plain['c8_regression_only'] is True
    risen = decide(bench(), _with_ttft(bench(c1=(60.0, 16.0), c8=200.0, acceptance=0.72), c1=234.0),
                   max_ttft_increase=0.25)
    assert risen['verdict'] == 'reject' and risen['ttft']['status'] == 'not_met'
    assert risen['c8_regression_only'] is False
    within = decide(bench(), _with_ttft(bench(c1=(60.0, 16.0), c8=200.0, acceptance=0.72), c1=200.0),
                    max_ttft_increase=0.25)
    assert within['ttft']['status'] == 'met' and within['c8_regression_only'] is True


def test_max_ttft_increase_on_a_reject_keeps_the_reject_and_says_so():
    result = decide(bench(), _with_ttft(bench(c1=(45.0, 21.5), acceptance=0.2), c1=400.0), max_ttft_increase=0.1)
    assert result['verdict'] == 'reject' and result['ttft']['status'] == 'not_met'
    assert result['ttft']['verdict_without_it'] == 'reject'
    assert any(r.startswith('Reverted: TTFT p50 at concurrency 1 rose 122.2 %') and r.endswith('(10.0 %).')
               for r in result['reasons']), result['reasons']


def test_ttft_missing_is_reported_as_unknown_unless_the_rule_needs_it():
    base, cand = bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72)
    for run in base['runs']:
        del run['ttft_ms_p50']
    result = decide(base, cand)
    assert result['verdict'] == 'accept'
    assert result['deltas']['ttft_change_c1'] is None and result['deltas']['ttft_change_c8'] is None
    assert 'ttft_ms_p50' not in result['measurements']['c1']['baseline']
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, cand, max_ttft_increase=0.25)
    assert 'baseline run at concurrency 1 has no usable ttft_ms_p50' in str(err.value)


@pytest.mark.parametrize('value', [-0.1, 10.5, float('nan'), float('inf'), 'a lot', True])
def test_bad_max_ttft_increase_is_an_error_naming_it(value):
    with pytest.raises(SpeculativeInputError) as err:
        decide(bench(), bench(c1=(60.0, 16.0), acceptance=0.72), max_ttft_increase=value)
    assert 'max_ttft_increase' in str(err.value)


# --- a batch-size schedule with K = 0 above N: the server's counters say whether it was honoured ------------------

def _with_c8_drafts(cand, drafts, accepted):
    cand = copy.deepcopy(cand)
    run8 = [r for r in cand['runs'] if r['concurrency'] == 8][0]
    run8['spec_decode'] = None if drafts is None else {
        'acceptance_rate': 0.5, 'acceptance_length': 1 + accepted / float(drafts), 'draft_tokens': drafts * 3,
        'accepted_tokens': accepted, 'drafts': drafts, 'per_position_acceptance': [0.6]}
    return cand


@pytest.mark.parametrize('drafts, accepted, ignored', [
    (None, None, False),   # no counter moved at c=8: K = 0 honoured
    (40, 30, False),       # only the run's first and last steps drafted (70 of 6400 tokens)
    (3000, 3200, True),    # drafting for nearly every token: K = 0 ignored (vllm#51510)
    (1600, 1700, True),    # just over half
    (1500, 1500, False),   # 3000 / 6400: under half
])
def test_k0_above_a_batch_size_is_checked_against_the_counters(drafts, accepted, ignored):
    base = bench(c1=(44.0, 22.0), c8=251.0)
    cand = _with_c8_drafts(bench(c1=(62.0, 15.0), c8=252.0, acceptance=0.7), drafts, accepted)
    plain = decide(base, cand)
    assert plain['keep'] is True and plain['drafting'] is None
    result = decide(base, cand, drafting_off_above=4)
    assert result['drafting']['off_above'] == 4 and list(result['drafting']['levels']) == [8]
    assert result['drafting']['ignored'] is ignored
    if ignored:
        assert result['keep'] is False and result['verdict'] == 'reject'
        text = ' '.join(result['reasons'])
        assert 'ignores K = 0 in a batch-size range' in text and 'vllm#51510' in text and 'not kept' in text
    else:
        assert result['keep'] is True and result['verdict'] == plain['verdict']


def test_k0_check_only_looks_above_the_batch_size_and_validates_it():
    base = bench(c1=(44.0, 22.0), c8=251.0)
    cand = _with_c8_drafts(bench(c1=(62.0, 15.0), c8=252.0, acceptance=0.7), 3000, 3200)
    assert decide(base, cand, drafting_off_above=8)['drafting']['levels'] == {}
    assert decide(base, cand, drafting_off_above=8)['keep'] is True
    for bad in (0, -1, 10 ** 9, 'four', 2.5, True):
        with pytest.raises(SpeculativeInputError, match='drafting_off_above'):
            decide(base, cand, drafting_off_above=bad)


def test_k0_check_never_crashes_on_a_lying_counter():
    base = bench(c1=(44.0, 22.0), c8=251.0)
    cand = _with_c8_drafts(bench(c1=(62.0, 15.0), c8=252.0, acceptance=0.7), 3000, 3200)
    run8 = [r for r in cand['runs'] if r['concurrency'] == 8][0]
    run8['spec_decode']['drafts'] = 'many'
    assert decide(base, cand, drafting_off_above=4)['drafting']['levels'][8]['share'] is None
    run8['spec_decode']['drafts'] = 10 ** 12
    assert decide(base, cand, drafting_off_above=4)['drafting']['levels'][8]['share'] == 1.0
