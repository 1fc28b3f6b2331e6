# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the noise-aware speculative_verdict (issue 10): intervals, undetermined verdicts,
the explanation of the speed-up (plugins/module_utils/_decision/verdict.py, bootstrap.py, speedup.py).

Samples are synthetic, with known answers: per-request TPOTs drawn around a chosen median with a
chosen spread (seeded, so the tests are deterministic), latency = TTFT + (tokens - 1) x TPOT, and
the run's point metrics computed from them the way vllm_benchmark does.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import math
import random
import re
import time

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import bootstrap as B
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import speedup as X
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.benchmark import median
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils.test_speculative_verdict import bench

TTFT_MS = 180.0
TOKENS = 128


def sampled(run, tpot_ms, spread, count=50, seed=0):
    """Give ``run`` ``count`` requests with TPOT ~ N(tpot_ms, spread x tpot_ms); point metrics follow the samples."""
    rng = random.Random('%s:%s:%s:%s' % (tpot_ms, spread, count, seed))
    tpots = [round(max(0.05 * tpot_ms, rng.gauss(tpot_ms, spread * tpot_ms)), 3) for _i in range(count)]
    latencies = [round(TTFT_MS + (TOKENS - 1) * t, 3) for t in tpots]
    starts, clock = [], 0.0
    for lat in latencies:
        starts.append(round(clock, 3))
        clock += lat + 0.5
    run['samples'] = {'ttft_ms': [TTFT_MS] * count, 'tpot_ms': tpots, 'output_tokens': [TOKENS] * count,
                      'latency_ms': latencies, 'start_ms': starts,
                      'finish_ms': [round(s + lat, 3) for s, lat in zip(starts, latencies)]}
    conc = run['concurrency']
    run.update(completed=count, total_output_tokens=TOKENS * count, tpot_ms_p50=median(tpots),
               throughput_tok_s=round(conc * 1000.0 * TOKENS * count / sum(latencies), 4))
    return run


def pair(c1=((22.0, 0.03), (16.0, 0.03)), c8=((30.0, 0.03), (30.0, 0.03)), count=50, acceptance=0.72, count8=None):
    """(baseline, candidate) benchmarks with samples: c1 / c8 = ((base TPOT, spread), (candidate TPOT, spread))."""
    base, cand = bench(c8=None if c8 is None else 251.0), bench(c8=None if c8 is None else 251.0, acceptance=acceptance)
    for label, bm, index in (('b', base, 0), ('c', cand, 1)):
        sampled(bm['runs'][0], c1[index][0], c1[index][1], count, seed=label + '1')
        if c8 is not None:
            sampled(bm['runs'][1], c8[index][0], c8[index][1], count8 or count, seed=label + '8')
    return base, cand


def decide(base, cand, **kwargs):
    return V.verdict(base, cand, **kwargs)


# --- known answers ---------------------------------------------------------------------------------

def test_clear_accept_is_shown_by_the_intervals():
    result = decide(*pair())
    assert result['verdict'] == 'accept' and result['keep'] is True
    assert result['determined'] is True and result['undetermined'] == [] and result['decision_basis'] == 'interval'
    crit = result['criteria']
    for name in ('throughput_gain_c1', 'tpot_reduction_c1', 'minimum_gain_c1'):
        assert crit[name]['status'] == 'met' and crit[name]['basis'] == 'interval', name
        low, high = crit[name]['interval']
        assert low <= crit[name]['point'] <= high and low > crit[name]['threshold']
    assert crit['throughput_gain_c1']['point'] == result['deltas']['throughput_gain_c1']
    assert crit['regression_c8']['status'] == 'not_met' or crit['regression_c8']['interval'][1] >= 0
    assert result['point_estimate_verdict'] == 'accept'
    assert result['bootstrap']['resamples'] == 2000 and result['bootstrap']['confidence'] == {'c1': 0.95, 'c8': 0.95}
    assert '95 % interval' in result['reasons'][0] and 'shown by the 95 % intervals' in result['reasons'][-1]


def test_clear_reject_is_shown_by_the_intervals():
    result = decide(*pair(c1=((22.0, 0.03), (22.3, 0.03))))
    assert result['verdict'] == 'reject' and result['keep'] is False and result['determined'] is True
    assert result['criteria']['minimum_gain_c1']['status'] == 'not_met'
    assert result['criteria']['minimum_gain_c1']['interval'][1] < 0.10
    assert any(r.startswith('The throughput gain at concurrency 1 is below 10.0 % (') and '95 % interval' in r
               for r in result['reasons'])


def test_a_measured_c8_loss_within_the_noise_reverts():
    """c=8: a 1-2 % loss in the point estimate, requests spread +-15 %: the interval does not show a loss.

    With c8_tolerance 0 a measured loss beyond the tolerance is a loss (the default tolerance, 2 %, lets this dip
    pass: below), although the interval alone would not show it: the burden of proof is on the change."""
    base, cand = pair(c8=((30.0, 0.15), (30.5, 0.15)))
    change = cand['runs'][1]['throughput_tok_s'] / base['runs'][1]['throughput_tok_s'] - 1
    assert -0.05 < change < 0  # a dip, within the noise
    default = decide(base, cand, c8_tolerance=0.0)
    assert default['verdict'] == 'reject' and default['keep'] is False
    regression = default['criteria']['regression_c8']
    assert regression['point_status'] == 'met' and regression['status'] == 'met'
    assert regression['interval'][0] < -0.0 < regression['interval'][1]   # the interval alone would not show it
    assert any('regresses at concurrency 8' in r and 'point estimate' in r for r in default['reasons'])
    # The default tolerance (2 % since issue 21): a dip of 1 to 2 % is no regression on its point estimate, and
    # under non-inferiority the interval must still rule out a 5 % loss for the change to be kept.
    tolerant = decide(base, cand)
    assert tolerant['criteria']['regression_c8']['point_status'] == 'not_met'
    assert tolerant['keep'] is (tolerant['criteria']['regression_c8']['status'] == 'not_met')


def test_real_regression_at_concurrency_8_is_shown_and_rejects():
    """The CPU test bed's same-size draft lost 22 % at c=8: far outside the noise."""
    result = decide(*pair(c8=((30.0, 0.05), (38.5, 0.05))))
    regression = result['criteria']['regression_c8']
    assert regression['status'] == 'met' and regression['interval'][1] < 0
    assert result['verdict'] == 'reject' and result['decision_basis'] == 'interval'
    assert any('Throughput regresses at concurrency 8 beyond the tolerance' in r and 'entirely below' in r
               for r in result['reasons'])


def test_c8_regression_only_is_a_c1_pass_shown_or_on_its_points_with_a_c8_regression():
    """The role's trigger for batch-size-aware speculation: a clear c=1 gain with a clear c=8 loss is one; so is a c=1
    gain whose interval is still open (few, noisy requests) but whose point estimates pass both bars; a c=1 point
    estimate below a bar, or no c=8 regression, is not."""
    clear = decide(*pair(c1=STRONG_C1, c8=((30.0, 0.05), (38.5, 0.05))))
    assert clear['verdict'] == 'reject' and clear['c8_regression_only'] is True
    open1 = decide(*pair(c1=((22.0, 0.25), (12.0, 0.25)), c8=((30.0, 0.05), (38.5, 0.05)), count=8))
    statuses = [open1['criteria'][name]['status'] for name in ('throughput_gain_c1', 'tpot_reduction_c1')]
    assert 'undetermined' in statuses and all(open1['criteria'][name]['point_status'] == 'met'
                                              for name in ('throughput_gain_c1', 'tpot_reduction_c1')), open1['criteria']
    assert open1['c8_regression_only'] is True
    below = decide(*pair(c1=((22.0, 0.03), (19.0, 0.03)), c8=((30.0, 0.05), (38.5, 0.05))))
    assert below['criteria']['throughput_gain_c1']['point_status'] == 'not_met' and below['c8_regression_only'] is False
    flat8 = decide(*pair(c1=STRONG_C1))
    assert flat8['keep'] is True and flat8['c8_regression_only'] is False
    alone = decide(*pair(c1=STRONG_C1, c8=None))
    assert alone['c8_regression_only'] is False
    assert V.c8_regression_only({}) is False


def test_an_open_c8_settled_as_a_regression_triggers_batch_aware_speculation_only_when_settled_so():
    """A strong c=1 gain with a concurrency 8 too noisy to rule out a loss (point estimate a gain): the default
    decide_undetermined=point_estimate reverts it as a regression, and that is the trigger (the change was reverted only
    because of concurrency 8); asked to leave it undetermined, there is no verdict to act on, so no trigger."""
    noisy8 = ((30.0, 0.6), (28.5, 0.6))
    settled = decide(*pair(c1=STRONG_C1, c8=noisy8, count8=48))
    regression = settled['criteria']['regression_c8']
    assert regression['status'] == 'undetermined' and regression['point_status'] != 'met', regression
    assert settled['verdict'] == 'reject' and settled['keep'] is False
    assert any('decide_undetermined=point_estimate settles an open regression as a regression' in r
               for r in settled['reasons']), settled['reasons']
    assert settled['c8_regression_only'] is True
    left_open = decide(*pair(c1=STRONG_C1, c8=noisy8, count8=48), decide_undetermined='undetermined')
    assert left_open['verdict'] == 'undetermined' and left_open['c8_regression_only'] is False
    assert V.c8_regression_only(settled['criteria']) is False, 'without the final statuses an open c=8 is no regression'
    assert V.c8_regression_only(settled['criteria'], {'regression_c8': 'met'}) is True


def test_small_noisy_sample_is_undetermined_and_says_so():
    """8 requests per phase, +-20 % per request: the interval of the gain spans both the 10 % and the 30 % bar."""
    base, cand = pair(c1=((22.0, 0.2), (16.9, 0.2)), c8=None, count=8)
    result = decide(base, cand)
    assert result['determined'] is False
    assert 'throughput_gain_c1' in result['undetermined']
    assert result['criteria']['throughput_gain_c1']['status'] == 'undetermined'
    low, high = result['criteria']['throughput_gain_c1']['interval']
    assert low < 0.10 and 0.30 < high
    # default: decided on the point estimates, and said so
    assert result['verdict'] == result['point_estimate_verdict'] and result['decision_basis'] == 'point_estimate'
    assert any(r.startswith('Undetermined: the 95 % interval of the throughput gain at concurrency 1') for r in result['reasons'])
    assert any('Decided on the point estimates, as decide_undetermined=point_estimate asks' in r for r in result['reasons'])
    # a sequential caller asks for "undetermined"
    open_result = decide(base, cand, decide_undetermined='undetermined')
    assert open_result['verdict'] == 'undetermined' and open_result['keep'] is False
    assert open_result['recommendation']['action'] == 'measure_more'
    assert open_result['decision_basis'] == 'interval' and open_result['undetermined'] == result['undetermined']
    assert 'Verdict undetermined' in open_result['reasons'][-1]


def test_undetermined_criterion_that_cannot_change_the_verdict_does_not_leave_it_open():
    """TPOT clearly below 20 % reduction: accept is impossible whatever the gain, and the gain is clearly >= 10 %."""
    base, cand = pair(c1=((22.0, 0.03), (19.5, 0.03)), c8=None)
    result = decide(base, cand)
    assert result['criteria']['tpot_reduction_c1']['status'] == 'not_met'
    assert result['verdict'] == 'marginal' and result['determined'] is True and result['undetermined'] == []


def test_same_input_same_verdict_and_inputs_untouched():
    base, cand = pair(c1=((22.0, 0.2), (16.9, 0.2)), count=12)
    before = copy.deepcopy((base, cand))
    first = decide(base, cand)
    assert decide(base, cand) == first
    assert decide(copy.deepcopy(base), copy.deepcopy(cand)) == first
    assert (base, cand) == before
    other = copy.deepcopy(cand)
    other['runs'][0]['samples']['latency_ms'][0] += 0.001
    assert decide(base, other)['bootstrap']['seed'] != first['bootstrap']['seed']


def test_more_resamples_move_the_bounds_only_a_little():
    base, cand = pair()
    few = decide(base, cand, bootstrap_resamples=200)['criteria']['throughput_gain_c1']['interval']
    many = decide(base, cand, bootstrap_resamples=5000)['criteria']['throughput_gain_c1']['interval']
    assert few != many and abs(few[0] - many[0]) < 0.01 and abs(few[1] - many[1]) < 0.01


def test_identical_requests_give_a_zero_width_interval_at_the_point():
    base, cand = pair(c1=((20.0, 0.0), (10.0, 0.0)), c8=None)
    crit = decide(base, cand)['criteria']
    assert crit['tpot_reduction_c1']['interval'] == [0.5, 0.5] == [crit['tpot_reduction_c1']['point']] * 2


def test_without_samples_the_point_estimates_decide_and_say_so():
    result = decide(bench(), bench(c1=(60.0, 16.0), c8=255.0, acceptance=0.72))
    assert result['verdict'] == 'accept' and result['determined'] is True
    assert result['decision_basis'] == 'point_estimate' and result['undetermined'] == []
    assert result['bootstrap']['resamples'] is None
    for entry in result['criteria'].values():
        assert entry['basis'] == 'point_estimate' and entry['interval'] is None
        assert entry['status'] in ('met', 'not_met') and entry['status'] == entry['point_status']
    assert any('No per-request samples in the baseline and candidate runs at concurrency 1' in r
               and 'point estimate only' in r for r in result['reasons'])


def test_stored_baseline_without_samples_falls_back_for_that_level_only():
    base, cand = pair()
    del base['runs'][0]['samples']
    result = decide(base, cand)
    assert result['criteria']['throughput_gain_c1']['basis'] == 'point_estimate'
    assert result['criteria']['regression_c8']['basis'] == 'interval'
    assert result['decision_basis'] == 'point_estimate'
    assert any('No per-request samples in the baseline run at concurrency 1' in r for r in result['reasons'])


def test_too_few_requests_for_an_interval_fall_back_to_the_point_estimate():
    base, cand = pair(count=B.MIN_REQUESTS - 1, c8=None)
    result = decide(base, cand)
    assert result['criteria']['throughput_gain_c1']['basis'] == 'point_estimate'
    assert any('too few for an interval (at least %d)' % B.MIN_REQUESTS in r for r in result['reasons'])


def test_performance_2000_resamples_of_50_requests_well_under_a_second():
    base, cand = pair()
    started = time.process_time()
    decide(base, cand)
    assert time.process_time() - started < 1.0


def test_very_large_samples_use_fewer_resamples_with_a_warning():
    assert B.resamples_within_budget(2000, 300) == 2000
    assert B.resamples_within_budget(2000, 60000) == B.MAX_DRAWS // 60000
    assert B.resamples_within_budget(20000, 10 ** 9) == B.RESAMPLES_RANGE[0]


# --- the bootstrap itself --------------------------------------------------------------------------

def test_throughput_statistic_is_littles_law():
    stat = B.throughput_statistic(8)
    assert stat([(100, 1000.0), (100, 3000.0)]) == pytest.approx(8 * 200 / 4.0)
    assert B.throughput_statistic(1)([(128, 2000.0)]) == pytest.approx(64.0)


def test_ratio_interval_is_deterministic_and_placed_on_the_measured_ratio():
    rng = random.Random(3)
    base = [rng.uniform(9, 11) for _i in range(40)]
    cand = [rng.uniform(4.5, 5.5) for _i in range(40)]
    first = B.ratio_interval('seed', 'tpot', base, cand, B.tpot_p50, 2000)
    assert first == B.ratio_interval('seed', 'tpot', base, cand, B.tpot_p50, 2000)
    assert first != B.ratio_interval('other', 'tpot', base, cand, B.tpot_p50, 2000)
    assert first[0] < median(cand) / median(base) < first[1]
    moved = B.ratio_interval('seed', 'tpot', base, cand, B.tpot_p50, 2000, point_ratio=2 * median(cand) / median(base))
    assert moved == pytest.approx((2 * first[0], 2 * first[1]))
    assert B.ratio_interval('seed', 'tpot', [0.0] * 5, cand, B.tpot_p50, 200) is None


# --- concurrency above 1: whole waves are resampled ------------------------------------------------

def waves(count, tpot_ms, rng, wave_spread=0.10, request_spread=0.02, concurrency=8):
    """(output_tokens, latency_ms) of ``count`` requests sent ``concurrency`` at a time: each wave of ``concurrency``
    requests shares one speed factor ~ N(1, wave_spread) (one batch, one slow step for all), plus a small
    per-request spread."""
    pairs = []
    factor = 1.0
    for index in range(count):
        if index % concurrency == 0:
            factor = max(0.3, rng.gauss(1.0, wave_spread))
        tpot = tpot_ms * factor * max(0.3, rng.gauss(1.0, request_spread))
        pairs.append((TOKENS, round(TTFT_MS + (TOKENS - 1) * tpot, 3)))
    return pairs


def _excludes_no_change(trials, count, block, resamples=300):
    statistic = B.throughput_statistic(8)
    excluded = 0
    for trial in range(trials):
        rng = random.Random('same-server:%d:%d' % (count, trial))
        base, cand = waves(count, 30.0, rng), waves(count, 30.0, rng)
        low, high = B.ratio_interval('seed%d' % trial, 'throughput:c8', base, cand, statistic, resamples, block=block)
        excluded += not low <= 1.0 <= high
    return excluded / trials


def test_waves_of_the_same_server_are_not_a_change_with_block_resampling():
    """Known answer: both runs come from the same server, so a 95 % interval should exclude 'no change' about 5 %
    of the time. Resampling the requests of c=8 waves one by one excludes it in about half the runs (the c=8
    'regressions' that were one slow wave); resampling whole waves, widened for their small number, does not."""
    one_by_one = _excludes_no_change(60, 48, block=1)
    by_waves = _excludes_no_change(60, 48, block=8)
    assert one_by_one >= 0.30, one_by_one
    assert by_waves <= 0.10, by_waves


def test_a_real_c8_loss_is_still_shown_with_block_resampling():
    rng = random.Random('real-loss')
    base, cand = waves(48, 30.0, rng), waves(48, 40.0, rng)  # TPOT +33 %: about -25 % throughput
    low, high = B.ratio_interval('s', 'throughput:c8', base, cand, B.throughput_statistic(8), 2000, block=8)
    assert high < 0.95 and low > 0.5


def test_block_resample_draws_whole_waves():
    rng = random.Random(1)
    items = list(range(20))
    for _i in range(50):
        drawn = B.block_resample(rng, items, 8)
        assert len(drawn) == 20
        index = 0
        while index < 20:  # a concatenation of whole blocks, cut to 20
            assert drawn[index] in (0, 8, 16)
            block = B.blocks_of(items, 8)[drawn[index] // 8]
            assert drawn[index:index + len(block)] == block[:20 - index]
            index += len(block)
    assert B.blocks_of(items, 8) == [items[0:8], items[8:16], items[16:20]]
    assert B.block_resample(random.Random(2), items, 1) == random.Random(2).choices(items, k=20)  # c=1: unchanged


@pytest.mark.parametrize('df, expected', [(1, 12.706), (2, 4.303), (3, 3.182), (5, 2.571), (7, 2.365), (12, 2.179),
                                          (30, 2.042), (120, 1.980)])
def test_t_quantile_matches_the_tables(df, expected):
    assert B.t_quantile(0.975, df) == pytest.approx(expected, abs=0.004)


def test_widening_only_above_concurrency_1_and_shrinking_with_more_waves():
    assert B.widening(50, 50, 1) == 1.0
    seven, twelve = B.widening(50, 50, 8), B.widening(96, 96, 8)
    assert seven > twelve > 1.0
    assert seven == pytest.approx(B.t_quantile(0.975, 12) / 1.959964 * (7 / 6.0) ** 0.5, rel=1e-4)
    assert [B.min_requests(c) for c in (1, 2, 3, 8, 16)] == [5, 5, 6, 16, 32]
    with pytest.raises(ValueError):
        B.widening(8, 50, 8)


def test_too_few_waves_at_concurrency_8_fall_back_to_the_point_estimate():
    base, cand = pair(count8=12)
    result = decide(base, cand)
    assert result['criteria']['regression_c8']['basis'] == 'point_estimate'
    assert any('too few for an interval (at least 16: requests in flight together are resampled as blocks of 8, and 2 '
               'blocks are needed)' in r for r in result['reasons']), result['reasons']


# --- explaining the speed-up -----------------------------------------------------------------------

@pytest.mark.parametrize('acceptance, k, expected', [
    (1.0, 4, 5.0),                   # every draft token accepted: K + 1
    (0.0, 4, 1.0),                   # none accepted: the target's own token only
    (0.5, 3, 1.875),                 # 1 + 0.5 + 0.25 + 0.125
    (0.99, 4, (1 - 0.99 ** 5) / 0.01),
    (0.8, 1, 1.8),
    (1.0 - 1e-12, 16, 17.0),         # no cancellation next to 1
])
def test_expected_tokens_per_step(acceptance, k, expected):
    assert X.expected_tokens_per_step(acceptance, k) == pytest.approx(expected, rel=1e-9)


def test_explanation_of_an_expensive_draft_in_operator_words():
    """acceptance 0.99 with K=4 (4.96 tokens per step) but TPOT only 7 % lower: each draft token costs 0.90 of a step."""
    base = bench(c1=(100.0, 10.0), c8=None)
    cand = bench(c1=(108.0, 10.0 * 4.6 / 4.96), c8=None, acceptance=0.99)
    cand['runs'][0]['spec_decode'].update(acceptance_length=4.96, drafts=250, draft_tokens=1000,
                                          per_position_acceptance=[0.995, 0.99, 0.99, 0.985])
    result = decide(base, cand)
    exp = result['explanation']
    assert exp['k'] == 4 and exp['acceptance_rate'] == 0.99
    assert exp['expected_tokens_per_step'] == pytest.approx(4.901, abs=1e-3)
    assert exp['measured_tokens_per_step'] == exp['tokens_per_step'] == 4.96
    assert exp['step_cost'] == pytest.approx(4.6, abs=1e-4)
    assert exp['draft_cost_per_token'] == pytest.approx(0.9, abs=1e-4)
    assert exp['break_even_draft_cost'] == pytest.approx(0.99, abs=1e-4)
    assert exp['text'] in result['reasons']
    assert 'Acceptance 0.99 with K=4 gives 4.96 tokens per verification step (measured)' in exp['text']
    assert 'each draft token about 0.90 of one' in exp['text'] and 'the draft is expensive' in exp['text']


@pytest.mark.parametrize('tpot_ratio, acceptance_length, words', [
    (1.1, 3.0, 'the draft costs more than the tokens it saves: too expensive'),
    (0.5, 3.0, 'the draft is cheap enough, it takes 25 % of what speculation could save'),
    (0.9, 1.0, 'no draft token is accepted'),
    (0.2, 3.0, 'the model does not fit these figures'),
])
def test_explanation_judgements(tpot_ratio, acceptance_length, words):
    text = X.explain((acceptance_length - 1) / 4, 4, tpot_ratio, acceptance_length)['text']
    assert words in text


def test_explanation_without_counters_or_k():
    unknown = X.explain(None, None, 0.7)
    assert unknown['expected_tokens_per_step'] is None and 'acceptance rate unknown' in unknown['text']
    assert 'pass num_speculative_tokens' in X.explain(0.7, None, 0.7)['text']
    without_length = X.explain(0.5, 3, 0.8)
    assert without_length['tokens_per_step'] == without_length['expected_tokens_per_step'] == 1.875
    assert '(expected)' in without_length['text']


def test_k_from_the_option_or_the_counters():
    assert X.draft_tokens_per_step({'per_position_acceptance': [0.9, 0.8, 0.7]}) == 3
    assert X.draft_tokens_per_step({'drafts': 250, 'draft_tokens': 1000}) == 4
    assert X.draft_tokens_per_step({'drafts': 250, 'draft_tokens': 990}) == 4     # drafts cut short near max_tokens
    assert X.draft_tokens_per_step({'drafts': 250, 'draft_tokens': 875}) is None  # 3.5: not a K
    assert X.draft_tokens_per_step(None) is None
    base, cand = bench(), bench(c1=(60.0, 16.0), acceptance=0.7)   # the fixture's counters: 3 positions
    assert decide(base, cand)['explanation']['k'] == 3
    result = decide(base, cand, num_speculative_tokens=5)
    assert result['explanation']['k'] == 5
    assert any('num_speculative_tokens is 5 but the candidate\'s counters show 3' in w for w in result['warnings'])


# --- hostile input ---------------------------------------------------------------------------------

@pytest.mark.parametrize('option, value, words', [
    ('bootstrap_resamples', float('nan'), 'bootstrap_resamples must be an integer from 200 to 20000, got nan (float)'),
    ('bootstrap_resamples', float('inf'), 'bootstrap_resamples must be an integer from 200 to 20000, got inf (float)'),
    ('bootstrap_resamples', -1, 'bootstrap_resamples must be an integer from 200 to 20000, got -1'),
    ('bootstrap_resamples', 0, 'bootstrap_resamples must be an integer from 200 to 20000, got 0'),
    ('bootstrap_resamples', 10 ** 30, 'bootstrap_resamples must be an integer from 200 to 20000, got 1000000000000000000000000000000'),
    ('bootstrap_resamples', '2000', "bootstrap_resamples must be an integer from 200 to 20000, got '2000' (str)"),
    ('bootstrap_resamples', True, 'bootstrap_resamples must be an integer from 200 to 20000, got True (bool)'),
    ('bootstrap_resamples', 2000.5, 'bootstrap_resamples must be an integer from 200 to 20000, got 2000.5 (float)'),
    ('bootstrap_resamples', None, 'bootstrap_resamples must be an integer from 200 to 20000, got None (NoneType)'),
    ('decide_undetermined', 'Undetermined', "decide_undetermined must be one of point_estimate, undetermined, got 'Undetermined' (str)"),
    ('decide_undetermined', None, 'decide_undetermined must be one of point_estimate, undetermined, got None (NoneType)'),
    ('decide_undetermined', float('nan'), 'decide_undetermined must be one of point_estimate, undetermined, got nan (float)'),
    ('decide_undetermined', ['undetermined'], "decide_undetermined must be one of point_estimate, undetermined, got ['undetermined'] (list)"),
    ('decide_undetermined', 'maybe', "decide_undetermined must be one of point_estimate, undetermined, got 'maybe' (str)"),
    ('decide_undetermined', 1, 'decide_undetermined must be one of point_estimate, undetermined, got 1 (int)'),
    ('num_speculative_tokens', 0, 'num_speculative_tokens must be an integer from 1 to 16, or null'),
    ('num_speculative_tokens', 17, 'num_speculative_tokens must be an integer from 1 to 16, or null'),
    ('num_speculative_tokens', -3, 'got -3'),
    ('num_speculative_tokens', float('nan'), 'got nan (float)'),
    ('num_speculative_tokens', float('-inf'), 'got -inf (float)'),
    ('num_speculative_tokens', 10 ** 20, 'got 100000000000000000000'),
    ('num_speculative_tokens', '4', "got '4' (str)"),
    ('num_speculative_tokens', False, 'got False (bool)'),
    ('phase_shift', 0.08, 'phase_shift must be a dictionary with c1 and c8'),
    ('phase_shift', {'c1': 0.08, 'c16': 0.1}, "phase_shift has unknown key(s) 'c16'; allowed: c1, c8."),
    ('phase_shift', {'c1': float('inf')}, 'phase_shift.c1 must be a finite number, got inf.'),
    ('phase_shift', {'c8': float('nan')}, 'phase_shift.c8 must be a finite number, got nan.'),
    ('phase_shift', {'c1': -0.08}, 'phase_shift.c1 must be >= 0.0, got -0.08.'),
    ('phase_shift', {'c1': 1e300}, 'phase_shift.c1 must be <= 0.5, got 1e+300.'),
    ('phase_shift', {'c1': True}, 'phase_shift.c1 must be a number, got True (bool).'),
])
def test_new_options_validated(option, value, words):
    with pytest.raises(SpeculativeInputError) as err:
        decide(*pair(), **{option: value})
    assert words in str(err.value)


def _mutate(key, index, value):
    def mutate(run):
        run['samples'][key][index] = value
    return mutate


@pytest.mark.parametrize('mutate, words', [
    (lambda run: run.update(samples='all'), "has samples that are 'all', not a dictionary"),
    (lambda run: run['samples'].pop('latency_ms'), 'has samples.latency_ms missing'),
    (lambda run: run['samples'].update(tpot_ms=5), 'has samples.tpot_ms that is 5, not a list'),
    (lambda run: run['samples']['latency_ms'].pop(), 'has 50 samples.output_tokens but 49 samples.latency_ms'),
    (lambda run: run.update(completed=40), 'has 50 samples but completed is 40'),
    (_mutate('latency_ms', 3, float('nan')), 'samples.latency_ms[3] = nan: a positive finite number'),
    (_mutate('latency_ms', 4, float('inf')), 'samples.latency_ms[4] = inf'),
    (_mutate('latency_ms', 0, -5.0), 'samples.latency_ms[0] = -5.0'),
    (_mutate('latency_ms', 0, 1e-320), 'samples.latency_ms[0] = 1e-320'),
    (_mutate('latency_ms', 0, '2000'), "samples.latency_ms[0] = '2000'"),
    (_mutate('output_tokens', 7, 0), 'samples.output_tokens[7] = 0: a whole number of tokens >= 1'),
    (_mutate('output_tokens', 7, 12.5), 'samples.output_tokens[7] = 12.5'),
    (_mutate('output_tokens', 7, True), 'samples.output_tokens[7] = True'),
    (_mutate('tpot_ms', 2, -1.0), 'samples.tpot_ms[2] = -1.0: a finite number of milliseconds >= 0, or null'),
    (_mutate('tpot_ms', 2, float('nan')), 'samples.tpot_ms[2] = nan'),
])
def test_malformed_samples_are_errors_naming_the_value(mutate, words):
    base, cand = pair(c8=None)
    mutate(cand['runs'][0])
    with pytest.raises(SpeculativeInputError) as err:
        decide(base, cand)
    assert 'candidate run at concurrency 1' in str(err.value) and words in str(err.value)


def test_more_samples_than_the_benchmark_can_record_are_refused():
    base, cand = pair(c8=None)
    run = cand['runs'][0]
    for key in run['samples']:
        run['samples'][key] = run['samples'][key] * (B.MAX_REQUESTS // 50 + 1)
    run['completed'] = len(run['samples']['latency_ms'])
    with pytest.raises(SpeculativeInputError, match='has 10050 samples; at most 10000 are accepted'):
        decide(base, cand)


def test_null_tpot_of_one_token_requests_is_accepted():
    base, cand = pair(c8=None)
    cand['runs'][0]['samples']['tpot_ms'][0] = None
    cand['runs'][0]['samples']['output_tokens'][0] = 1
    assert decide(base, cand)['verdict'] == 'accept'


def test_a_tpot_rise_is_worded_as_a_rise_with_its_interval():
    result = decide(*pair(c1=((20.0, 0.03), (30.0, 0.03))))
    text = result['reasons'][0]
    match = re.search(r'tpot_ms_p50 rose ([\d.]+) % \([\d.]+ -> [\d.]+ ms; 95 % interval ([\d.]+) % to ([\d.]+) %\)', text)
    assert match, text
    rise, low, high = (float(group) for group in match.groups())
    assert 0 < low <= rise <= high, text


# --- the host's shift between phases (phase_shift) ---------------------------------------------

NEAR_BAR = ((22.0, 0.03), (15.9, 0.03))  # +38 % throughput, -28 % TPOT at c=1: clear of the bars for the bootstrap


def test_a_phase_shift_widens_the_intervals_and_a_near_bar_accept_becomes_undetermined():
    base, cand = pair(c1=NEAR_BAR)
    plain = decide(base, cand)
    assert plain['verdict'] == 'accept' and plain['determined'] is True
    assert plain['bootstrap']['phase_shift'] == {'c1': 0.0, 'c8': 0.0}
    assert not any(entry['shift_bound'] for entry in plain['criteria'].values())
    shifted = decide(base, cand, phase_shift={'c1': 0.08})
    assert shifted['bootstrap']['phase_shift'] == {'c1': 0.08, 'c8': 0.0}
    for name in ('throughput_gain_c1', 'tpot_reduction_c1'):
        wide, narrow = shifted['criteria'][name]['interval'], plain['criteria'][name]['interval']
        assert wide[0] < narrow[0] and wide[1] > narrow[1], name
        assert shifted['criteria'][name]['point'] == plain['criteria'][name]['point']
        assert shifted['criteria'][name]['status'] == 'undetermined' and shifted['criteria'][name]['shift_bound'] is True
    # the c=8 interval is not widened (no shift given there)
    assert shifted['criteria']['regression_c8']['interval'] == plain['criteria']['regression_c8']['interval']
    assert shifted['determined'] is False and shifted['verdict'] == 'accept' == shifted['point_estimate_verdict']
    assert any('include a shift of the whole host between the baseline and candidate phases (phase_shift: 8.0 % at '
               'concurrency 1, the standard deviation of an A/A comparison' in text for text in shifted['reasons'])
    assert any("the host's phase shift alone covers the threshold" in text for text in shifted['reasons'])
    assert any('only a new pair of phases could narrow the intervals' in text for text in shifted['reasons'])
    # the conservative reading: not shown, not kept
    strict = decide(base, cand, phase_shift={'c1': 0.08}, decide_undetermined='undetermined')
    assert strict['verdict'] == 'undetermined' and strict['keep'] is False


def test_a_phase_shift_leaves_clear_verdicts_alone():
    # c=1 only: at c=8 an 8 % shift cannot rule out a 5 % loss of a change that does not change c=8 (below).
    accept = decide(*pair(c1=((22.0, 0.03), (10.0, 0.03))), phase_shift={'c1': 0.08})
    assert accept['verdict'] == 'accept' and accept['determined'] is True
    reject = decide(*pair(c1=((22.0, 0.03), (30.0, 0.03))), phase_shift={'c1': 0.08, 'c8': 0.08})
    assert reject['verdict'] == 'reject' and reject['determined'] is True
    c1_criteria = ('throughput_gain_c1', 'tpot_reduction_c1', 'minimum_gain_c1')
    assert not any(accept['criteria'][name]['shift_bound'] for name in c1_criteria)
    # no change at c=8 with an 8 % shift there: the margin lies within the shift, so the open regression is
    # shift-bound (more requests of the same two phases cannot rule the loss out), and not kept.
    open8 = decide(*pair(c1=((22.0, 0.03), (10.0, 0.03))), phase_shift={'c1': 0.08, 'c8': 0.08})
    assert open8['criteria']['regression_c8']['status'] == 'undetermined', open8['reasons']
    assert open8['criteria']['regression_c8']['shift_bound'] is True and open8['keep'] is False
    assert not any(open8['criteria'][name]['shift_bound'] for name in c1_criteria)


def _aa_excludes_zero(trials, shift_sd, phase_shift, count=24):
    """A/A comparisons whose phases each take a random speed offset: how often the c=1 interval excludes 0."""
    rng = random.Random('aa:%s' % shift_sd)
    hits = 0
    for trial in range(trials):
        base, cand = bench(c8=None), bench(c8=None)
        for label, phase in (('b', base), ('c', cand)):
            tpot = 20.0 * math.exp(rng.gauss(0.0, shift_sd / math.sqrt(2.0)))  # the whole phase is faster or slower
            sampled(phase['runs'][0], tpot, 0.05, count, seed='%s%d' % (label, trial))
        low, high = decide(base, cand, bootstrap_resamples=200, phase_shift=phase_shift)['criteria'][
            'throughput_gain_c1']['interval']
        hits += not low <= 0.0 <= high
    return hits


def test_a_phase_shift_calibrates_a_and_a_comparisons_that_the_bootstrap_alone_does_not():
    """Known answer: no change, but each phase of the same service runs 8 % (SD of the A/A change) faster or slower.

    The bootstrap alone sees only the 5 % request-to-request noise: its 95 % intervals exclude "no change" far
    more often than 5 % of the time. With phase_shift c1 = 0.08 they are calibrated again.
    """
    alone = _aa_excludes_zero(60, 0.08, None)
    shifted = _aa_excludes_zero(60, 0.08, {'c1': 0.08})
    assert alone >= 30, alone           # about 2 in 3 for an SE of about 1.5 % against a shift of 8 %
    assert shifted <= 6, shifted        # about 5 % (3 of 60) expected


def test_with_phase_shift_and_shift_bound_arithmetic():
    z = 1.959963984540054
    assert B.with_phase_shift((0.9, 1.1), 1.0, 0.0) == (0.9, 1.1)
    assert B.with_phase_shift(None, 1.0, 0.1) is None
    low, high = B.with_phase_shift((1.0, 1.0), 1.0, 0.1)
    assert low == pytest.approx(2.718281828459045 ** (-z * 0.1)) and high == pytest.approx(2.718281828459045 ** (z * 0.1))
    low, high = B.with_phase_shift((0.0, 1.5), 1.2, 0.05)
    assert low == 0.0 and high > 1.5
    # in quadrature, on the log scale: a bootstrap half-width equal to the shift's widens by sqrt(2)
    low, high = B.with_phase_shift((2.718281828459045 ** -0.2, 2.718281828459045 ** 0.2), 1.0, 0.2 / z)
    assert high == pytest.approx(2.718281828459045 ** (0.2 * 2 ** 0.5))
    assert B.shift_bound(1.38, 1.30, 0.08) is True       # |ln(1.38 / 1.30)| = 0.06 < 0.157
    assert B.shift_bound(2.2, 1.30, 0.08) is False
    assert B.shift_bound(1.38, 1.30, 0.0) is False
    assert B.shift_bound(1.38, 0.0, 0.08) is False       # a 100 % TPOT reduction cannot be reached


# --- non-inferiority at concurrency 8 (issue 21) -------------------------------------------------------------------
# The README's calibration for a noisy host (phase_shift 8 % at both levels, decide_undetermined=undetermined) with a
# strong gain at c=1 and a 12.5 % throughput loss at c=8: the opposite burden of proof (a regression counted only when
# the interval shows it) kept it, as the widened interval did not show the loss. Every option combination the role
# exposes must revert it.
STRONG_C1 = ((22.0, 0.03), (10.0, 0.03))
LOSS_C8 = ((30.0, 0.03), (30.0 / 0.875, 0.03))   # candidate TPOT 1/0.875 of the baseline's: -12.5 % tok/s


def test_the_readme_calibration_no_longer_keeps_a_c8_loss():
    base, cand = pair(c1=STRONG_C1, c8=LOSS_C8)
    noisy = {'phase_shift': {'c1': 0.08, 'c8': 0.08}, 'decide_undetermined': 'undetermined'}
    result = decide(base, cand, **noisy)
    assert result['deltas']['throughput_change_c8'] == pytest.approx(-0.125, abs=0.01)
    assert result['keep'] is False and result['verdict'] == 'reject', result['reasons']
    assert result['criteria']['regression_c8']['status'] == 'met'


@pytest.mark.parametrize('phase_shift', [None, {'c1': 0.08, 'c8': 0.08}, {'c1': 0.3, 'c8': 0.3}])
@pytest.mark.parametrize('decide_undetermined', ['point_estimate', 'undetermined'])
@pytest.mark.parametrize('keep_marginal', [False, True])
@pytest.mark.parametrize('c8_margin', [0.0, 0.05, 0.1])
def test_every_calibration_reverts_a_c8_loss_of_ten_percent_or_more(
        phase_shift, decide_undetermined, keep_marginal, c8_margin):
    for loss in (0.10, 0.125, 0.3):
        base, cand = pair(c1=STRONG_C1, c8=((30.0, 0.03), (30.0 / (1.0 - loss), 0.03)))
        result = decide(base, cand, phase_shift=phase_shift, decide_undetermined=decide_undetermined,
                        keep_marginal=keep_marginal, c8_margin=c8_margin, c8_tolerance=0.05,
                        bootstrap_resamples=400)
        assert result['keep'] is False, (loss, result['reasons'])


def test_non_inferiority_keeps_only_what_the_interval_shows_and_a_wider_interval_is_more_careful():
    # c=8 unchanged, +-3 % per request, 50 requests: the interval rules out a 5 % loss -> kept.
    base, cand = pair(c1=STRONG_C1)
    shown = decide(base, cand)
    regression = shown['criteria']['regression_c8']
    assert shown['verdict'] == 'accept' and regression['status'] == 'not_met' and regression['interval'][0] >= -0.05
    assert any('rules out a loss larger than 5.0 % (c8_margin)' in r for r in shown['reasons'])
    # The same pair on a host declared to shift 8 % between phases: a 5 % loss is no longer ruled out -> not kept,
    # and the reasons say why and what to do.
    careful = decide(base, cand, phase_shift={'c1': 0.08, 'c8': 0.08})
    assert careful['keep'] is False and careful['criteria']['regression_c8']['status'] == 'undetermined'
    assert any('does not rule out a loss larger than 5.0 % (c8_margin)' in r for r in careful['reasons'])
    assert any('settles an open regression as a regression' in r for r in careful['reasons'])
    left_open = decide(base, cand, phase_shift={'c1': 0.08, 'c8': 0.08}, decide_undetermined='undetermined')
    assert left_open['verdict'] == 'undetermined' and 'regression_c8' in left_open['undetermined']
    # An operator who accepts more uncertainty raises the margin, at most to 10 % (a measured loss beyond the
    # tolerance still reverts, above): on a host shifting 4 % a 5 % loss is not ruled out, a 10 % one is.
    half = dict(phase_shift={'c1': 0.04, 'c8': 0.04})
    assert decide(base, cand, **half)['criteria']['regression_c8']['status'] == 'undetermined'
    wide = decide(base, cand, c8_margin=0.1, **half)
    assert wide['verdict'] == 'accept' and wide['keep'] is True, wide['reasons']
    assert any('rules out a loss larger than 10.0 % (c8_margin)' in r for r in wide['reasons'])


def test_c8_margin_is_validated():
    base, cand = pair()
    for bad in (float('nan'), -0.1, 1.5, 'x', True):
        with pytest.raises(V.SpeculativeInputError, match='c8_margin'):
            decide(base, cand, c8_margin=bad)


@pytest.mark.parametrize('name', ['c8_margin', 'c8_tolerance'])
def test_no_calibration_can_put_a_ten_percent_c8_loss_inside_the_tolerance_or_the_margin(name):
    """Both shares end at 10 % (issue 21: every option combination reverts a c=8 loss of 10 %); the error names
    the value and the range, and 0.1 itself is accepted."""
    base, cand = pair()
    for bad in (0.1000001, 0.2, 0.5, 1.0):
        with pytest.raises(V.SpeculativeInputError) as err:
            decide(base, cand, **{name: bad})
        assert str(err.value) == ('%s must be from 0.0 to 0.1, got %s: a concurrency-8 loss of 10.0 %% or more always '
                                  'reverts, whatever the calibration.' % (name, bad))
    assert decide(base, cand, **{name: 0.1})['verdict'] in ('accept', 'marginal', 'reject')
