# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for sequential measurement (issue 10; plugins/module_utils/_server/sequential.py).

A fake runner stands in for the HTTP side: each concurrency level of each phase produces a known,
seeded stream of requests (TPOT ~ N(mean, spread x mean), 128 output tokens, latency = TTFT +
127 x TPOT), so the tests know the answer: a clear accept stops after the first round, a noisy case
needs more rounds, a candidate sitting on a threshold runs into the budget and is decided on the
point estimates (and says so). The real HTTP path runs against real vLLM servers in
tests/integration/test_sequential_real.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import random

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import sequential as Q
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spending as S
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils.decision_sim import request_record

TOKENS = 128
TTFT_S = 0.05
P = {'endpoint': 'http://127.0.0.1:8000', 'concurrency': [1, 8], 'num_prompts': 24, 'warmup_prompts': 2,
     'input_len': 128, 'output_len': TOKENS, 'dataset': 'random', 'temperature': 0.0, 'ignore_eos': True, 'seed': 0,
     'max_failed_ratio': 0.0}


def records(count, tpot_ms, spread, rng, concurrency):
    """``count`` RequestRecords with TPOT ~ N(tpot_ms, spread x tpot_ms); and the run's duration."""
    out, clock = [], 0.0
    for _i in range(count):
        rec = request_record(clock, max(0.05, rng.gauss(tpot_ms, spread * tpot_ms)) / 1000.0, TTFT_S, TOKENS)
        out.append(rec)
        clock += rec.latency / concurrency
    return out, sum(r.latency for r in out) / concurrency


def counters(drafts, accepted):
    return {'drafts': drafts, 'draft_tokens': drafts * 4.0, 'accepted_tokens': accepted, 'per_pos': {0: accepted / 4.0},
            'generation_tokens': None, 'prompt_tokens': None, 'request_success': None, 'running': 0.0, 'waiting': 0.0}


class FakeRunner:
    """Known streams per level: {concurrency: (tpot_ms, spread)}; counts what was sent."""

    def __init__(self, streams, seed='cand', fail_at=None):
        self.streams = streams
        self.rng = dict((c, random.Random('%s:%s' % (seed, c))) for c in streams)
        self.warmed = []
        self.measured = []
        self.fail_at = fail_at
        self.drafts = 0.0

    def warm_up(self, c):
        self.warmed.append(c)

    def measure(self, c, count):
        self.measured.append((c, count))
        recs, duration = records(count, self.streams[c][0], self.streams[c][1], self.rng[c], c)
        if self.fail_at == len(self.measured):
            recs[0].fail('HTTP 500 from POST /v1/completions')
        before = counters(self.drafts, self.drafts * 3.6)
        self.drafts += count * 30
        return recs, duration, before, counters(self.drafts, self.drafts * 3.6)

    def failed_too_much(self, run):
        if run['failed']:
            return '%d requests failed at concurrency %d' % (run['failed'], run['concurrency'])
        return None

    def benchmark(self, runs, config):
        for run in runs:
            run['prompt_set_id'] = 'cand-%d' % run['concurrency']
        most = max(run['completed'] + run['failed'] for run in runs)
        bench = bm.assemble(dict(P, num_prompts=most), {}, 'm', '0.32.0', 'cand', runs, [])
        bench['config']['sequential'] = dict(config)
        return bench


def baseline(streams, count=24, seed='base'):
    runs = []
    for c in P['concurrency']:
        recs, duration = records(count, streams[c][0], streams[c][1], random.Random('%s:%s' % (seed, c)), c)
        run = bm.summarize_run(recs, duration, c)
        run.update(spec_decode=None, metrics_polluted=False, prompt_set_id='base-%d' % c)
        runs.append(run)
    return bm.assemble(dict(P, num_prompts=count), {}, 'm', '0.32.0', 'base-set', runs, [])


def sequential(base, **kwargs):
    value = {'baseline': base}
    value.update(kwargs)
    return Q.check_sequential(value, dict(P))


# The accept pair of the test bed, roughly: TPOT 27 -> 9 ms at c=1, and c=8 much faster too.
BASE = {1: (27.0, 0.03), 8: (40.0, 0.03)}
CLEAR_ACCEPT = {1: (9.0, 0.03), 8: (22.0, 0.03)}


def test_default_rounds_are_whole_waves():
    assert [Q.default_round(c) for c in (1, 2, 3, 4, 8, 16)] == [8, 8, 9, 8, 16, 32]


def test_clear_accept_stops_after_the_first_round():
    seq = sequential(baseline(BASE))
    runner = FakeRunner(CLEAR_ACCEPT)
    bench, report, failure = Q.run_rounds(dict(P), seq, runner)
    assert failure is None
    assert runner.warmed == [1, 8]
    assert runner.measured == [(1, 8), (8, 16)]
    assert report['stopped'] == 'determined' and report['rounds'] == 1
    assert report['verdict'] == 'accept' and report['keep'] is True and report['determined'] is True
    assert report['undetermined'] == [] and report['decision_basis'] == 'interval'
    assert report['requests']['candidate'] == {'1': {'warmup': 2, 'measured': 8}, '8': {'warmup': 2, 'measured': 16}}
    assert report['requests']['baseline'] == {'1': {'warmup': 2, 'measured': 24}, '8': {'warmup': 2, 'measured': 24}}
    assert report['requests']['total'] == 52 + 28 == report['requests']['baseline_total'] + report['requests']['candidate_total']
    assert ('Stopped after round 1: the intervals (99.9998 % at concurrency 1, look 1 of 6, 99.93 % at concurrency 8, '
            'look 1 of 3) settle the verdict (accept); 80 requests in all') in report['reason']
    # The candidate benchmark is what speculative_verdict judges: the same verdict, all rounds in its runs.
    assert [run['completed'] for run in bench['runs']] == [8, 16]
    assert bench['config']['num_prompts'] == 16
    assert bench['config']['sequential'] == {
        'baseline_prompt_set_id': 'base-set', 'max_prompts': 48, 'round_prompts': {'1': 8, '8': 16},
        'looks': {'1': 6, '8': 3}, 'looks_made': {'1': 1, '8': 1},
        'confidence': {'c1': pytest.approx(0.9999984, abs=1e-7), 'c8': pytest.approx(0.999313, abs=1e-6)},
        'spending': S.METHOD}
    assert report['confidence'] == bench['config']['sequential']['confidence'] == report['history'][0]['confidence']
    # speculative_verdict judges the candidate at the confidence its last looks used (read from the benchmark)
    final = V.verdict(seq['baseline'], bench)
    assert final['verdict'] == 'accept' and final['determined'] is True
    assert final['bootstrap']['confidence'] == bench['config']['sequential']['confidence']
    assert '(99.9998 % CI' in final['summary'] and '(99.93 % CI' in final['summary']
    # spec_decode sums the counter deltas of the level's rounds
    assert bench['runs'][0]['spec_decode']['drafts'] == 8 * 30
    assert bench['runs'][0]['spec_decode']['acceptance_rate'] == pytest.approx(0.9)


def test_clear_reject_by_a_regression_at_concurrency_8_stops_after_the_first_round():
    # The reject pair: little gain at c=1 (inside the marginal band), a clear loss at c=8.
    seq = sequential(baseline({1: (2.8, 0.05), 8: (4.0, 0.03)}))
    runner = FakeRunner({1: (2.45, 0.05), 8: (5.2, 0.03)})
    _bench, report, _failure = Q.run_rounds(dict(P), seq, runner)
    assert report['stopped'] == 'determined' and report['rounds'] == 1
    assert report['verdict'] == 'reject' and report['keep'] is False
    assert report['requests']['total'] == 80


def test_noisy_case_needs_more_rounds_and_only_the_open_level_measures():
    # gain ~ +35 % at c=1 with 12 % request-to-request noise: close to the 30 % bar; c=8 settled at once.
    seq = sequential(baseline({1: (20.0, 0.12), 8: (40.0, 0.03)}))
    runner = FakeRunner({1: (14.8, 0.12), 8: (30.0, 0.03)})
    _bench, report, _failure = Q.run_rounds(dict(P), seq, runner)
    assert report['rounds'] > 1
    assert runner.measured[:2] == [(1, 8), (8, 16)]
    assert all(c == 1 for c, _n in runner.measured[2:]), runner.measured  # c=8 was settled after round 1
    assert report['history'][0]['settled'] is None and 'throughput_gain_c1' in report['history'][0]['open']
    assert report['requests']['candidate']['8']['measured'] == 16
    assert report['requests']['candidate']['1']['measured'] == 8 * report['rounds']


def test_budget_stops_with_a_point_estimate_decision_and_says_so():
    # Exactly on the 30 % bar with noise: the interval always straddles it.
    seq = sequential(baseline({1: (20.0, 0.10), 8: (40.0, 0.03)}), max_prompts=24)
    runner = FakeRunner({1: (15.38, 0.10), 8: (30.0, 0.03)})
    bench, report, failure = Q.run_rounds(dict(P), seq, runner)
    assert failure is None
    assert report['stopped'] == 'budget' and report['determined'] is False
    assert report['rounds'] == 3 and runner.measured.count((1, 8)) == 3
    assert report['requests']['candidate']['1']['measured'] == 24  # the budget, not more
    assert report['undetermined'] and report['verdict'] in ('accept', 'marginal')
    assert report['decision_basis'] == 'point_estimate'
    assert 'the budget of 24 measured requests per level is spent' in report['reason']
    assert 'rests on the point estimates' in report['reason']
    assert any('Decided on the point estimates' in text for text in report['reasons'])
    # speculative_verdict on the same benchmarks says the same
    final = V.verdict(seq['baseline'], bench)
    assert final['verdict'] == report['verdict'] and final['determined'] is False


def test_an_undetermined_regression_at_concurrency_8_keeps_only_concurrency_8_measuring():
    # c=1: a clear accept. c=8: -1 % with noise, within a 3 % tolerance. The interval does not rule out a loss larger
    # than c8_margin (5 %), so only concurrency 8 is measured on, until the budget: still open, not kept (the
    # default non_inferiority rule: not ruling a loss out is not a pass).
    seq = sequential(baseline({1: (27.0, 0.03), 8: (40.0, 0.10)}), max_prompts=32, c8_tolerance=0.03)
    runner = FakeRunner({1: (9.0, 0.03), 8: (40.4, 0.10)})
    _bench, report, _failure = Q.run_rounds(dict(P), seq, runner)
    assert runner.measured == [(1, 8), (8, 16), (8, 16)]
    assert report['history'][0]['open'] == ['regression_c8'] and report['history'][0]['verdict'] == 'undetermined'
    assert report['stopped'] == 'budget' and report['undetermined'] == ['regression_c8']
    assert report['verdict'] == 'reject' and report['keep'] is False
    assert 'does not keep the change: at concurrency 8 its interval does not rule out a loss larger than ' \
           'c8_margin (5.0 %)' in report['reason'], report['reason']


# The reject pair as a fresh CI machine measured it (1 Dec 2026): about +15 % at concurrency 1 (inside the marginal
# band, and so is its interval) and no clear change at concurrency 8. Marginal or reject: reverted either way.
MARGINAL_BASE = {1: (2.8, 0.03), 8: (4.0, 0.10)}
MARGINAL_CAND = {1: (2.35, 0.03), 8: (3.96, 0.10)}


def test_marginal_or_reject_stops_as_soon_as_the_decision_is_settled():
    seq = sequential(baseline(MARGINAL_BASE), max_prompts=32)
    runner = FakeRunner(MARGINAL_CAND)
    bench, report, failure = Q.run_rounds(dict(P), seq, runner)
    assert failure is None
    assert runner.measured == [(1, 8), (8, 16)]  # no more rounds for the verdict's name alone
    assert report['stopped'] == 'determined' and report['rounds'] == 1 and report['determined'] is True
    # (non_inferiority settles the open regression as one: reject rather than marginal, reverted either way)
    assert report['verdict'] == 'reject' and report['keep'] is False
    assert report['undetermined'] == [] and report['name_undetermined'] == ['regression_c8']
    assert report['history'][0]['settled'] is None and report['history'][0]['open'] == ['regression_c8']
    assert report['history'][0]['decision'] == 'revert' and report['history'][0]['possible'] == ['marginal', 'reject']
    assert report['reason'].startswith(
        'Stopped after round 1: the intervals (99.99 % at concurrency 1, look 1 of 4, 99.44 % at concurrency 8, look 1 '
        'of 2) settle the decision (revert: the verdict is marginal or reject, and regression_c8 is still undetermined, '
        'which can only choose between them); 80 requests in all')
    final = V.verdict(seq['baseline'], bench)
    assert final['verdict'] == 'reject' and final['keep'] is False and final['determined'] is False
    assert final['undetermined'] == ['regression_c8']


def test_with_keep_marginal_the_same_candidate_measures_on_until_the_decision_is_settled():
    # marginal would now be kept and reject reverted: concurrency 8 must show whether it regresses.
    seq = sequential(baseline(MARGINAL_BASE), max_prompts=32, keep_marginal=True)
    runner = FakeRunner(MARGINAL_CAND)
    _bench, report, _failure = Q.run_rounds(dict(P), seq, runner)
    assert runner.measured == [(1, 8), (8, 16), (8, 16)]
    assert report['history'][0]['decision'] is None and report['history'][0]['possible'] == ['marginal', 'reject']
    if report['stopped'] == 'budget':
        # Not shown to lose less than c8_margin at the last look: not kept (non_inferiority).
        assert report['undetermined'] == ['regression_c8'] and report['keep'] is False, report['reason']


def test_settle_keep_maps_the_possible_verdicts_to_one_decision():
    statuses = {'throughput_gain_c1': 'not_met', 'tpot_reduction_c1': 'not_met', 'minimum_gain_c1': 'met',
                'regression_c8': 'undetermined'}
    assert V.settle_keep(statuses) == (False, ['marginal', 'reject'])
    assert V.settle_keep(statuses, keep_marginal=True) == (None, ['marginal', 'reject'])
    statuses.update(throughput_gain_c1='met', tpot_reduction_c1='met')
    assert V.settle_keep(statuses) == (None, ['accept', 'reject'])
    statuses.update(regression_c8='not_met', tpot_reduction_c1='undetermined')
    assert V.settle_keep(statuses) == (None, ['accept', 'marginal'])
    assert V.settle_keep(statuses, keep_marginal=True) == (True, ['accept', 'marginal'])


def test_a_failed_request_stops_the_rounds_with_a_failure():
    seq = sequential(baseline(BASE))
    runner = FakeRunner(CLEAR_ACCEPT, fail_at=1)
    bench, report, failure = Q.run_rounds(dict(P), seq, runner)
    assert failure == '1 requests failed at concurrency 1'
    assert report['stopped'] == 'failed' and report['verdict'] is None
    assert runner.measured == [(1, 8)] and bench['runs'][0]['failed'] == 1


def test_point_estimate_criteria_never_stop_the_rounds():
    result = {'criteria': {'throughput_gain_c1': {'status': 'met', 'basis': 'point_estimate'},
                           'tpot_reduction_c1': {'status': 'met', 'basis': 'interval'},
                           'minimum_gain_c1': {'status': 'met', 'basis': 'interval'}}}
    assert Q.stop_state(result) == (None, ['throughput_gain_c1'])
    result['criteria']['throughput_gain_c1']['basis'] = 'interval'
    assert Q.stop_state(result) == ('accept', [])
    result['criteria']['regression_c8'] = {'status': 'not_met', 'basis': 'point_estimate'}
    assert Q.stop_state(result) == (None, ['regression_c8'])


def test_a_phase_shift_stops_the_rounds_when_only_a_new_pair_of_phases_could_settle_the_verdict():
    # +33 % at c=1 against the 30 % bar, TPOT -25 % against 20 %: the bootstrap alone can settle it with more rounds,
    # a host whose phases shift by 8 % (SD) cannot (both thresholds lie within 1.96 x 8 % of the measured ratios).
    streams_base, streams_cand = {1: (20.0, 0.03), 8: (40.0, 0.03)}, {1: (15.0, 0.03), 8: (30.0, 0.03)}
    seq = sequential(baseline(streams_base), phase_shift={'c1': 0.08, 'c8': 0.0})
    assert seq['phase_shift'] == {'c1': 0.08, 'c8': 0.0}
    runner = FakeRunner(streams_cand)
    bench, report, failure = Q.run_rounds(dict(P), seq, runner)
    assert failure is None
    assert report['stopped'] == 'shift' and report['rounds'] == 1 and report['determined'] is False
    assert runner.measured == [(1, 8), (8, 16)]
    assert sorted(report['history'][0]['shift_bound']) == sorted(report['history'][0]['open'])
    assert {'throughput_gain_c1', 'tpot_reduction_c1'} <= set(report['undetermined'])
    assert "within the host's phase shift of the threshold (phase_shift 8.0 % at concurrency 1, 0.0 % at concurrency 8)" \
        in report['reason']
    assert "This report's verdict (%s) reads them on the point estimates" % report['verdict'] in report['reason']
    assert 'decide_undetermined=undetermined reads them as undetermined and does not keep the change' in report['reason']
    final = V.verdict(seq['baseline'], bench, phase_shift={'c1': 0.08, 'c8': 0.0})
    assert final['verdict'] == report['verdict'] and final['determined'] is False
    assert final['criteria']['throughput_gain_c1']['shift_bound'] is True
    assert any('only a new pair of phases could narrow the intervals' in text for text in final['reasons'])
    # Without the shift the same candidate is measured on (the bootstrap alone sees a narrowing interval).
    plain = FakeRunner(streams_cand)
    _bench, plain_report, _failure = Q.run_rounds(dict(P), sequential(baseline(streams_base)), plain)
    assert plain_report['stopped'] != 'shift' and plain_report['history'][0]['shift_bound'] == []


# --------------------------------------------------------------------------------------------
# Option validation
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize('change, text', [
    ({'max_prompts': 4}, 'sequential.max_prompts must be an integer from 5 to 10000 (measured candidate requests per '
                         'level at most), got 4.'),
    ({'max_prompts': -8}, 'got -8'),
    ({'max_prompts': 10 ** 12}, 'got 1000000000000'),
    ({'max_prompts': '48'}, "sequential.max_prompts must be an integer from 5 to 10000"),
    ({'max_prompts': True}, "got True (bool)"),
    ({'min_throughput_gain': float('nan')}, 'sequential.min_throughput_gain must be a finite number, got nan.'),
    ({'min_tpot_reduction': float('inf')}, 'sequential.min_tpot_reduction must be a finite number, got inf.'),
    ({'c8_tolerance': -0.1}, 'sequential.c8_tolerance must be >= 0.0, got -0.1.'),
    ({'disable_below_gain': 1e308}, 'sequential.disable_below_gain must be <= 10.0, got 1e+308.'),
    ({'min_throughput_gain': 0.05}, 'sequential.disable_below_gain (0.1) must not exceed sequential.min_throughput_gain'),
    ({'regression_rule': 'non_inferiority'}, "sequential has unknown key(s) 'regression_rule'"),
    ({'bootstrap_resamples': 10}, 'sequential.bootstrap_resamples must be an integer from 200 to 20000, got 10.'),
    ({'round_prompts': {8: 12}}, 'sequential.round_prompts at concurrency 8 must be a multiple of 8 from 16 to '
                                 'max_prompts (48)'),
    ({'round_prompts': {8: 8}}, 'must be a multiple of 8 from 16 to max_prompts (48), so that every round ends with '
                                'full waves and gives an interval; got 8.'),  # one block of 8: no block interval
    ({'round_prompts': {1: 4}}, 'round_prompts at concurrency 1 must be a multiple of 1 from 5'),
    ({'round_prompts': {1: 1000}}, 'got 1000'),
    ({'round_prompts': {1: float('nan')}}, 'got nan'),
    ({'round_prompts': {'4': 8}}, "has the key '4', which is not one of the concurrency levels [1, 8]"),
    ({'round_prompts': {'one': 8}}, "has the key 'one'"),
    ({'round_prompts': [8, 16]}, 'sequential.round_prompts must be a dictionary of concurrency level -> requests'),
    ({'keep_marginal': 'yes'}, "sequential.keep_marginal must be a boolean (true or false), got 'yes'."),
    ({'rounds': 3}, "sequential has unknown key(s) 'rounds'"),
    ({'phase_shift': 0.08}, 'sequential.phase_shift must be a dictionary with c1 and c8'),
    ({'phase_shift': {'c3': 0.1}}, "sequential.phase_shift has unknown key(s) 'c3'; allowed: c1, c8."),
    ({'phase_shift': {'c1': float('nan')}}, 'sequential.phase_shift.c1 must be a finite number, got nan.'),
    ({'phase_shift': {'c8': -0.01}}, 'sequential.phase_shift.c8 must be >= 0.0, got -0.01.'),
    ({'phase_shift': {'c1': 0.9}}, 'sequential.phase_shift.c1 must be <= 0.5, got 0.9.'),
    ({'phase_shift': {'c1': '0.08'}}, "sequential.phase_shift.c1 must be a number, got '0.08' (str)."),
])
def test_bad_options_name_the_value_and_what_is_allowed(change, text):
    with pytest.raises(bm.BenchmarkError) as exc:
        sequential(baseline(BASE), **change)
    assert text in str(exc.value)


def test_round_prompts_keys_may_be_strings():
    seq = sequential(baseline(BASE), round_prompts={'1': 5, '8': 24})
    assert seq['round_prompts'] == {1: 5, 8: 24}
    assert sequential(baseline(BASE), round_prompts={8: 16})['round_prompts'] == {1: 8, 8: 16}


def test_the_baseline_is_checked_before_any_request():
    base = baseline(BASE)
    with pytest.raises(bm.BenchmarkError, match='sequential.baseline is required'):
        Q.check_sequential({}, dict(P))
    with pytest.raises(bm.BenchmarkError, match='sequential must be a dictionary'):
        Q.check_sequential('yes', dict(P))
    no_samples = copy.deepcopy(base)
    del no_samples['runs'][1]['samples']
    with pytest.raises(bm.BenchmarkError, match='has no samples at concurrency 8: sequential stopping needs'):
        sequential(no_samples)
    with pytest.raises(bm.BenchmarkError, match='was measured with seed = 0, this benchmark uses 3'):
        Q.check_sequential({'baseline': base}, dict(P, seed=3))
    with pytest.raises(bm.BenchmarkError, match=r'has runs at concurrency \[1, 8\], this benchmark measures \[1\]'):
        Q.check_sequential({'baseline': base}, dict(P, concurrency=[1]))
    with pytest.raises(bm.BenchmarkError, match='sequential needs concurrency 1'):
        Q.check_sequential({'baseline': base}, dict(P, concurrency=[8]))
    failed = copy.deepcopy(base)
    failed['runs'][0]['failed'] = 2
    with pytest.raises(bm.BenchmarkError, match='had 2 failed request'):
        sequential(failed)
    seq_base = copy.deepcopy(base)
    seq_base['config']['sequential'] = {'baseline_prompt_set_id': 'x'}
    with pytest.raises(bm.BenchmarkError, match='is itself a sequential benchmark'):
        sequential(seq_base)
    with pytest.raises(bm.BenchmarkError, match='must be a vllm_benchmark result'):
        sequential([1, 2])


def test_the_verdict_accepts_a_sequential_candidate_only_against_its_own_baseline():
    seq = sequential(baseline(BASE))
    bench, _report, _failure = Q.run_rounds(dict(P), seq, FakeRunner(CLEAR_ACCEPT))
    other = copy.deepcopy(seq['baseline'])
    other['config']['prompt_set_id'] = 'another'
    with pytest.raises(SpeculativeInputError, match='was measured against another baseline'):
        V.verdict(other, bench)
    fixed = copy.deepcopy(bench)
    del fixed['config']['sequential']
    with pytest.raises(SpeculativeInputError, match='config.num_prompts is 24 in the baseline and 16 in the candidate'):
        V.verdict(seq['baseline'], fixed)
    with pytest.raises(SpeculativeInputError, match='The baseline is a sequential benchmark'):
        V.verdict(bench, bench)


# --------------------------------------------------------------------------------------------
# The role's settings (jetson_spec_sequential), checked before the role changes anything
# --------------------------------------------------------------------------------------------

ROLE_DEFAULTS = {'baseline_prompts': 24, 'warmup_prompts': 2, 'round_prompts': {1: 8, 8: 16}, 'max_prompts': 48}


def test_role_defaults_are_good():
    assert Q.role_settings_problems(dict(ROLE_DEFAULTS), [1, 8]) == []
    assert Q.role_settings_problems(dict(ROLE_DEFAULTS, round_prompts={'1': 5, '8': 24}), [1, 8]) == []
    assert Q.role_settings_problems(dict(ROLE_DEFAULTS, baseline_prompts=5, max_prompts=5, round_prompts={1: 5}), [1]) == []


@pytest.mark.parametrize('change, concurrency, text', [
    ({'baseline_prompts': 8}, [1, 8], 'jetson_spec_sequential.baseline_prompts must be an integer from 16 to 10000 '
                                      '(measured baseline requests per level, at least 16: two whole waves at '
                                      'concurrency 8 for the intervals), got 8.'),
    ({'baseline_prompts': 24}, [1, 16], 'from 32 to 10000'),
    ({'baseline_prompts': '24'}, [1, 8], "got '24' (str)"),
    ({'baseline_prompts': float('nan')}, [1, 8], 'got nan'),
    ({'warmup_prompts': -1}, [1, 8], 'jetson_spec_sequential.warmup_prompts must be an integer from 0 to 1000'),
    ({'max_prompts': 10 ** 9}, [1, 8], 'jetson_spec_sequential.max_prompts must be an integer from 5 to 10000'),
    ({'max_prompts': 12, 'round_prompts': {1: 8}}, [1, 8],
     'jetson_spec_sequential.max_prompts must be at least 16 with concurrency 8 (two whole waves, which an interval at '
     'that level needs); got 12.'),
    ({'round_prompts': {8: 8}}, [1, 8], 'jetson_spec_sequential.round_prompts at concurrency 8 must be a multiple of 8 '
                                        'from 16 to max_prompts (48)'),
    ({'round_prompts': {4: 8}}, [1, 8], "has the key 4, which is not one of the concurrency levels [1, 8]"),
    ({'rounds': 3}, [1, 8], "jetson_spec_sequential has unknown key(s) 'rounds'"),
    ({}, [8], 'Sequential measurement needs concurrency 1'),
    ({}, ['eight'], "The benchmark workload's concurrency ['eight'] is not a list of levels"),
    ({}, [1, 100000], 'is not a list of levels'),
])
def test_role_settings_problems_name_the_value_and_what_is_allowed(change, concurrency, text):
    problems = Q.role_settings_problems(dict(ROLE_DEFAULTS, **change), concurrency)
    assert any(text in problem for problem in problems), problems


def test_role_settings_that_are_not_a_dictionary():
    assert Q.role_settings_problems([24], [1, 8]) == [
        'jetson_spec_sequential is [24]; allowed: a dictionary with baseline_prompts, warmup_prompts, round_prompts, '
        'max_prompts.']


def test_module_budget_below_two_waves_is_refused():
    with pytest.raises(bm.BenchmarkError, match=r'sequential.max_prompts must be at least 16 with concurrency 8'):
        sequential(baseline(BASE), max_prompts=12, round_prompts={1: 6})
