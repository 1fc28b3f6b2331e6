# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cohort rollout's decisions (_decision/rollout.py): canaries, the gate, cohort verdicts, the confirmation.

The confirmation's error rates are checked by Monte Carlo on synthetic request streams (a SIMULATOR of benchmark
samples, as decision_sim is for the verdict): per-request TPOT varies by REQUEST_CV (the CPU test bed's 9 %), each
twin runs at its own speed exp(N(0, spread)) times the canary's, and the real ``confirm()`` decides.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import math
import random

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import rollout as R

NOW = datetime.datetime(2026, 12, 6, 18, 0, tzinfo=datetime.timezone.utc)
REQUEST_CV = 0.09
TRIALS = 4000


def iso(delta_s=0):
    return (NOW + datetime.timedelta(seconds=delta_s)).isoformat().replace('+00:00', 'Z')


EVIDENCE = {'baseline_tpot_ms': 30.0, 'candidate_tpot_ms': 20.0, 'baseline_log_se': 0.01, 'candidate_log_se': 0.01,
            'acceptance_rate': 0.7}


def verdict(status='enabled', key='abc123def456', canary='h01', measured_s=-60, **extra):
    value = {'key': key, 'status': status, 'canary': canary, 'measured_at': iso(measured_s),
             'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3}, 'evidence': dict(EVIDENCE)}
    value.update(extra)
    return value


# --- the gate --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('status, action', [('enabled', 'confirm'), ('reverted', 'follow'), ('refused', 'follow'),
                                            ('undetermined', 'follow'), ('failed', 'stop'), ('unreachable', 'stop')])
def test_each_canary_status_gates_its_cohort(status, action):
    out = R.gate('abc123def456', {'abc123def456': verdict(status)}, NOW, 3600, run_started=iso(-600), host='h02')
    assert out['action'] == action
    assert 'h01' in out['reason'] and 'abc123def456' in out['reason']
    assert out['verdict']['status'] == status


def test_no_verdict_another_key_or_per_host_verification_verify_in_full():
    assert R.gate('abc123def456', {}, NOW, 3600)['action'] == 'verify'
    assert R.gate(None, {'x': verdict()}, NOW, 3600)['action'] == 'verify'
    other = R.gate('abc123def456', {'abc123def456': verdict(key='000000000000')}, NOW, 3600)
    assert other['action'] == 'verify' and "'000000000000'" in other['reason']
    forced = R.gate('abc123def456', {'abc123def456': verdict()}, NOW, 3600, verify_each_host=True)
    assert forced['action'] == 'verify' and 'jetson_spec_verify_each_host' in forced['reason']
    own = R.gate('abc123def456', {'abc123def456': verdict()}, NOW, 3600, host='h01')
    assert own['action'] == 'verify' and 'canary' in own['reason']


def test_a_verdict_expires_on_the_baseline_age_rule_unless_measured_in_this_run():
    old = {'abc123def456': verdict(measured_s=-7200)}
    expired = R.gate('abc123def456', old, NOW, 3600)
    assert expired['action'] == 'verify' and '7200 s old' in expired['reason']
    # measured after this run started: gates whatever max_age says (0: always measure the baseline again)
    fresh = R.gate('abc123def456', {'abc123def456': verdict(measured_s=-10)}, NOW, 0, run_started=iso(-600))
    assert fresh['action'] == 'confirm'
    assert R.gate('abc123def456', {'abc123def456': verdict(measured_s=-10)}, NOW, 0)['action'] == 'verify'


def test_a_failure_of_an_earlier_run_gates_nothing_so_its_cohort_gets_a_canary_again():
    # (an AWX workflow's artifact, or a hand-made verdict: a failure is not a verdict about the cohort)
    for status in ('failed', 'unreachable'):
        out = R.gate('abc123def456', {'abc123def456': verdict(status)}, NOW, 3600, run_started=iso(-10))
        assert out['action'] == 'verify' and 'earlier run' in out['reason']
        picked = R.pick_canaries({'h02': {'cohort': 'abc123def456', 'action': 'verify'}},
                                 {'abc123def456': verdict(status)}, NOW, 3600, run_started=iso(-10))
        assert picked['canaries'] == ['h02'] and picked['verdicts'] == {}


@pytest.mark.parametrize('bad, words', [
    ({'status': 'kept'}, "status 'kept'"),
    ({'status': ['enabled']}, "status ['enabled']"),
    ({'measured_at': 'yesterday'}, 'no measurement time'),
    ({'measured_at': iso(86400)}, 'in the future'),
    ({'canary': None}, 'names no canary'),
    ({'speculative_config': 'eagle3'}, 'no speculative_config'),
    ({'evidence': None}, 'no evidence'),
    ({'evidence': dict(EVIDENCE, baseline_tpot_ms=1e300)}, 'evidence.baseline_tpot_ms 1e+300'),
    ({'evidence': dict(EVIDENCE, baseline_log_se=float('nan'))}, 'evidence.baseline_log_se nan'),
    ({'evidence': dict(EVIDENCE, candidate_log_se='0.1')}, "evidence.candidate_log_se '0.1'"),
    ({'evidence': dict(EVIDENCE, acceptance_rate=1.5)}, 'evidence.acceptance_rate 1.5'),
    ({'evidence': dict(EVIDENCE, candidate_tpot_ms=0)}, 'evidence.candidate_tpot_ms 0'),
])
def test_a_damaged_verdict_never_gates(bad, words):
    value = verdict()
    value.update(bad)
    out = R.gate('abc123def456', {'abc123def456': value}, NOW, 3600)
    assert out['action'] == 'verify' and words in out['reason']
    assert R.gate('abc123def456', {'abc123def456': 'enabled'}, NOW, 3600)['action'] == 'verify'
    # keys that are not strings (YAML 1: ...) are dropped, not compared
    assert R.usable_verdicts({1: verdict(), 'abc123def456': verdict()}, NOW, 3600) == {'abc123def456': verdict()}


def test_collect_a_failure_overrides_what_the_canary_reached_and_a_lost_canary_is_unreachable():
    cohort = {'key': 'abc123def456', 'group': 'cohort_abc123def456', 'label': 'thor'}
    other = dict(cohort, key='000000000000')
    third = dict(cohort, key='111111111111')
    kept = verdict(key='abc123def456')
    canaries = {
        'a': {'verdict': kept, 'cohort': cohort, 'done': True},
        # its record could not be written after a keep: failed, whatever it measured
        'b': {'verdict': dict(kept, key='000000000000'), 'cohort': other, 'error': 'No space left', 'done': True},
        # dropped off mid-change: its rollout tasks never ended
        'c': {'verdict': None, 'cohort': third, 'done': False, 'now': iso()},
        'd': {'verdict': None, 'cohort': None, 'done': True},
    }
    out = R.collect(canaries)
    assert {key: value['status'] for key, value in out.items()} == {
        'abc123def456': 'enabled', '000000000000': 'failed', '111111111111': 'unreachable'}
    assert out['000000000000']['reasons'] == ['No space left'] and out['111111111111']['canary'] == 'c'
    assert list(R.collect(canaries, saveable=True)) == ['abc123def456']


# --- the canaries ----------------------------------------------------------------------------------------------
def test_one_canary_per_cohort_without_a_usable_verdict_first_by_name_or_the_operators_choice():
    hosts = {
        'b2': {'cohort': 'aaaaaaaaaaaa', 'action': 'verify'},
        'a1': {'cohort': 'aaaaaaaaaaaa', 'action': 'verify'},
        'c3': {'cohort': 'bbbbbbbbbbbb', 'action': 'verify'},
        'd4': {'cohort': 'bbbbbbbbbbbb', 'action': 'verify', 'prefer': True},
        'e5': {'cohort': 'cccccccccccc', 'action': 'in_sync'},     # measures nothing
        'f6': {'cohort': 'dddddddddddd', 'action': 'verify'},      # its cohort has a usable verdict
        'g7': {'cohort': None, 'action': 'verify'},                # no cohort: its own canary
        'a0': {'cohort': 'aaaaaaaaaaaa', 'action': 'refuse'},
    }
    out = R.pick_canaries(hosts, {'dddddddddddd': verdict(key='dddddddddddd')}, NOW, 3600)
    assert out['by_cohort'] == {'aaaaaaaaaaaa': 'a1', 'bbbbbbbbbbbb': 'd4'}
    assert out['canaries'] == ['a1', 'd4', 'g7'] and list(out['verdicts']) == ['dddddddddddd']
    # the same choice whatever the order the hosts come in
    assert R.pick_canaries(dict(reversed(list(hosts.items()))), {'dddddddddddd': verdict(key='dddddddddddd')},
                           NOW, 3600) == out
    with pytest.raises(R.RolloutError, match='must be a dictionary'):
        R.pick_canaries(['a1'], {}, NOW, 3600)


def test_a_job_that_follows_a_canary_job_picks_no_canary_and_stops_cohorts_without_a_verdict():
    """jetson_spec_rollout_part others (an AWX workflow's sliced rollout): slices share nothing, so none picks a
    canary; a cohort the canary job gave a verdict is gated as in one job, another is not attempted."""
    hosts = {'a1': {'cohort': 'aaaaaaaaaaaa', 'action': 'verify'}, 'f6': {'cohort': 'dddddddddddd', 'action': 'verify'}}
    verdicts = {'dddddddddddd': verdict(key='dddddddddddd')}
    out = R.pick_canaries(hosts, verdicts, NOW, 3600, pick=False)
    assert out == {'canaries': [], 'by_cohort': {}, 'verdicts': verdicts}
    assert R.gate('dddddddddddd', verdicts, NOW, 3600, host='f6', without_verdict='stop')['action'] == 'confirm'
    stop = R.gate('aaaaaaaaaaaa', verdicts, NOW, 3600, host='a1', without_verdict='stop')
    assert stop['action'] == 'stop' and stop['verdict'] is None
    assert 'No verdict of cohort aaaaaaaaaaaa yet' in stop['reason'] and 'run the canary job' in stop['reason']
    expired = R.gate('dddddddddddd', {'dddddddddddd': verdict(key='dddddddddddd', measured_s=-7200)}, NOW, 3600,
                     without_verdict='stop')
    assert expired['action'] == 'stop' and '7200 s old' in expired['reason']
    # a host without a cohort is a cohort of one: verified in its own slice
    assert R.gate(None, verdicts, NOW, 3600, without_verdict='stop')['action'] == 'verify'
    with pytest.raises(R.RolloutError, match="without_verdict is 'skip'; allowed: verify, stop"):
        R.gate('aaaaaaaaaaaa', verdicts, NOW, 3600, without_verdict='skip')


@pytest.mark.parametrize('part', ['all', 'canaries', 'others'])
def test_the_rollout_parts_are_named(part):
    assert R.rollout_part(part) == part


@pytest.mark.parametrize('part', ['', 'Others', 'rest', None, ['others'], 'others\n'])
def test_a_rollout_part_that_is_none_of_them_is_refused_by_name(part):
    with pytest.raises(R.RolloutError, match='jetson_spec_rollout_part is .*; allowed: all, canaries, others'):
        R.rollout_part(part)


# --- cohort verdicts -------------------------------------------------------------------------------------------
COHORT = {'key': 'abc123def456', 'group': 'cohort_abc123def456', 'label': 'thor'}


def run(tpots, concurrency=1, acceptance=None):
    out = {'concurrency': concurrency, 'samples': {'tpot_ms': list(tpots)}, 'tpot_ms_p50': sorted(tpots)[len(tpots) // 2],
           'throughput_tok_s': 1000.0 / sorted(tpots)[len(tpots) // 2]}
    if acceptance is not None:
        out['spec_decode'] = {'acceptance_rate': acceptance}
    return out


def test_a_kept_canary_gives_its_config_and_evidence_a_held_or_undetermined_one_gates_like_a_revert():
    summary = {'status': 'enabled', 'fingerprint': 'f' * 64, 'finished': iso(), 'verdict': 'keep',
               'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 4},
               'candidate_gpu_memory_utilization': 0.65, 'reasons': ['kept']}
    base = {'runs': [run([30.0] * 10 + [31.0] * 10), run([50.0] * 8, 8)]}
    cand = {'runs': [run([20.0] * 20, acceptance=0.7)]}
    out = R.cohort_verdict(COHORT, 'h01', summary, base, cand)
    assert out['status'] == 'enabled' and out['canary'] == 'h01' and out['key'] == COHORT['key']
    assert out['speculative_config']['num_speculative_tokens'] == 4 and out['gpu_memory_utilization'] == 0.65
    assert out['evidence']['baseline_tpot_ms'] == pytest.approx(30.5, rel=1e-3)
    assert out['evidence']['candidate_tpot_ms'] == pytest.approx(20.0) and out['evidence']['acceptance_rate'] == 0.7
    assert out['measured_at'] == iso()
    held = dict(summary, fingerprint=None)
    assert R.cohort_verdict(COHORT, 'h01', held)['status'] == 'undetermined'
    undetermined = dict(summary, status='reverted', verdict='undetermined')
    assert R.cohort_verdict(COHORT, 'h01', undetermined)['status'] == 'undetermined'
    assert R.cohort_verdict(COHORT, 'h01', {'status': 'unreachable'})['status'] == 'unreachable'
    for nothing in ({'status': 'in_sync'}, {'status': 'skipped'}, {'status': 'disabled'}, None):
        assert R.cohort_verdict(COHORT, 'h01', nothing) is None
    assert R.cohort_verdict({}, 'h01', summary) is None


# --- the confirmation ------------------------------------------------------------------------------------------
def stream(rng, tpot_ms, n):
    sd = math.sqrt(math.log(1 + REQUEST_CV ** 2))
    return [round(tpot_ms * math.exp(rng.gauss(0, sd)), 3) for _request in range(n)]


def kept_verdict(rng, base_ms, gain, n=50, acceptance=0.7, n_candidate=None):
    baseline = {'runs': [run(stream(rng, base_ms, n))]}
    candidate = {'runs': [run(stream(rng, base_ms / gain, n_candidate or n), acceptance=acceptance)]}
    summary = {'status': 'enabled', 'fingerprint': 'f', 'finished': iso(), 'speculative_config': {'method': 'eagle3'}}
    return R.cohort_verdict(COHORT, 'h01', summary, baseline, candidate)


def twin_run(rng, tpot_ms, spread, n=24, acceptance=0.7):
    host = math.exp(rng.gauss(0, spread))
    return {'runs': [run(stream(rng, tpot_ms * host, n), acceptance=acceptance)]}


def rates(gain, spread, twin_pays, trials=TRIALS, seed=1, true_spread=None):
    """(confirmed, conclusive) shares of ``trials`` twins of a canary with ``gain`` (tests/benchmarks/
    confirmation_error_rates.py prints them as docs/fleet.md's table)."""
    rng = random.Random(seed)
    confirmed = conclusive = 0
    for _trial in range(trials):
        canary = kept_verdict(rng, 30.0, gain)
        true_tpot = 30.0 / gain if twin_pays else 30.0
        out = R.confirm(canary, twin_run(rng, true_tpot, spread if true_spread is None else true_spread), spread)
        confirmed += out['confirmed']
        conclusive += out['conclusive']
    return confirmed / float(trials), conclusive / float(trials)


# (the gains around the inconclusive edge, where a wrong keep is likeliest; the full table is the benchmark's)
@pytest.mark.parametrize('gain', [1.16, 1.20])
def test_a_twin_whose_speculation_does_not_pay_is_kept_at_most_2_5_percent_of_the_time(gain):
    keep = rates(gain, 0.03, twin_pays=False)[0]
    print('gain %.2f, spread 3 %%: wrong keep %.2f %%' % (gain, keep * 100))
    assert keep <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / TRIALS)


def test_the_bound_holds_when_the_canarys_baseline_is_much_noisier_than_its_candidate():
    """The canary's baseline median shares its error with the gate and the midpoint; the baseline rule bounds a wrong
    keep whatever the sample sizes (a baseline of 6 requests, a candidate of 200, no spread at all; the midpoint rule
    alone kept 4.4 % of such twins)."""
    rng = random.Random(13)
    keeps = 0
    trials = 4000
    for _trial in range(trials):
        canary = kept_verdict(rng, 30.0, 1.10, n=6, n_candidate=200)
        keeps += R.confirm(canary, twin_run(rng, 30.0, 0.0), 0.0)['confirmed']
    print('unbalanced canary, gain 1.10, spread 0: wrong keep %.2f %%' % (100.0 * keeps / trials))
    assert keeps / float(trials) <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / trials)


@pytest.mark.parametrize('gain', [1.30])
def test_a_twin_that_pays_as_its_canary_is_confirmed_at_least_97_5_percent_of_the_time(gain):
    keep, conclusive = rates(gain, 0.03, twin_pays=True, seed=2)
    print('gain %.2f, spread 3 %%: confirmed %.2f %% (conclusive %.2f %%)' % (gain, keep * 100, conclusive * 100))
    assert conclusive == 1.0
    assert keep >= 0.975 - 3 * math.sqrt(0.025 * 0.975 / TRIALS)


def test_a_gain_too_small_for_the_spread_is_inconclusive_so_the_host_is_verified_on_its_own():
    keep, conclusive = rates(1.03, 0.03, twin_pays=True, trials=400, seed=3)
    assert keep == 0.0 and conclusive == 0.0
    out = R.confirm(kept_verdict(random.Random(4), 30.0, 1.08), twin_run(random.Random(5), 27.0, 0.0), 0.03)
    assert not out['confirmed'] and 'too small to confirm' in out['reasons'][0]


def test_the_acceptance_rate_must_be_reported_and_near_the_canarys():
    rng = random.Random(6)
    canary = kept_verdict(rng, 30.0, 1.6, acceptance=0.7)
    good = R.confirm(canary, twin_run(rng, 30.0 / 1.6, 0.0, acceptance=0.66), 0.03)
    assert good['confirmed'], good['reasons']
    low = R.confirm(canary, twin_run(rng, 30.0 / 1.6, 0.0, acceptance=0.4), 0.03)
    assert not low['confirmed'] and 'more than 0.15 below' in ' '.join(low['reasons'])
    missing = R.confirm(canary, twin_run(rng, 30.0 / 1.6, 0.0, acceptance=None), 0.03)
    assert not missing['confirmed'] and 'no acceptance rate' in ' '.join(missing['reasons'])


def test_a_confirmation_measured_during_live_traffic_is_never_a_keep():
    rng = random.Random(16)
    canary = kept_verdict(rng, 30.0, 1.6, acceptance=0.7)
    twin = twin_run(rng, 30.0 / 1.6, 0.0, acceptance=0.7)
    assert R.confirm(canary, twin, 0.03)['confirmed'], 'the same run without live traffic is confirmed'
    twin['runs'][0]['metrics_polluted'] = True
    out = R.confirm(canary, twin, 0.03)
    assert not out['confirmed'] and not out['conclusive'] and out['figures']['metrics_polluted'] is True
    assert 'Other clients used the server during the confirmation' in out['reasons'][0]
    for unknown in (False, None):
        twin['runs'][0]['metrics_polluted'] = unknown
        assert R.confirm(canary, twin, 0.03)['confirmed'], 'metrics_polluted %r (false or unread) holds nothing' % unknown


@pytest.mark.parametrize('spread', [float('nan'), float('inf'), -0.1, 0.6, 'wide', True])
def test_a_bad_spread_is_refused_naming_the_variable(spread):
    with pytest.raises(R.RolloutError, match='jetson_spec_cohort_spread'):
        R.confirm(kept_verdict(random.Random(7), 30.0, 1.5), twin_run(random.Random(8), 20.0, 0.0), spread)


def test_too_few_requests_or_no_canary_figures_never_confirm():
    rng = random.Random(9)
    canary = kept_verdict(rng, 30.0, 1.6)
    few = R.confirm(canary, twin_run(rng, 18.0, 0.0, n=5), 0.03)
    assert not few['confirmed'] and 'at least 8 needed' in few['reasons'][0]
    bare = R.confirm({'evidence': {}}, twin_run(rng, 18.0, 0.0), 0.03)
    assert not bare['confirmed'] and 'no TPOT' in bare['reasons'][0]
    hostile = {'runs': [run([float('nan')] * 4 + [-1.0] * 4 + [float('inf')] * 4)]}
    assert not R.confirm(canary, hostile, 0.03)['confirmed']


# --- when the rollout stops (the failure share, checked after each batch) --------------------------------------------
def _hosts(*rows):
    """{name: {batch, attempted, error}} from (name, batch, error) rows, every host attempted unless batch is None."""
    return dict((name, {'batch': batch, 'attempted': batch is not None, 'error': error}) for name, batch, error in rows)


@pytest.mark.parametrize('rows, batch, pct, stop, failed, size', [
    # a batch counts its own hosts only: 1 of 5 is 20 %, not more than 20
    ([('a', 'b1', None), ('b', 'b1', 'x'), ('c', 'b1', None), ('d', 'b1', None), ('e', 'b1', None), ('f', 'b2', 'y')],
     'b1', 20, False, ['b'], 5),
    # 2 of 5 is 40 %
    ([('a', 'b1', 'x'), ('b', 'b1', 'y'), ('c', 'b1', None), ('d', 'b1', None), ('e', 'b1', None)],
     'b1', 20, True, ['a', 'b'], 5),
    # 0 % tolerates nothing, 100 % everything
    ([('a', 'b1', None), ('b', 'b1', 'x')], 'b1', 0, True, ['b'], 2),
    ([('a', 'b1', 'x'), ('b', 'b1', 'y')], 'b1', 100, False, ['a', 'b'], 2),
    # a string from an AWX survey is the same number
    ([('a', 'b1', 'x'), ('b', 'b1', None)], 'b1', '50', False, ['a'], 2),
    # another batch's failures and hosts not started are not counted
    ([('a', 'b2', 'x'), ('b', None, None), ('c', 'b1', None)], 'b1', 20, False, [], 1),
])
def test_a_batch_stops_the_rollout_past_the_percentage_of_its_hosts(rows, batch, pct, stop, failed, size):
    share = R.failure_share(_hosts(*rows), batch=batch, max_fail_percentage=pct)
    assert (share['stop'], share['failed'], share['size']) == (stop, failed, size)
    assert bool(share['msg']) is stop
    if stop:
        assert share['msg'].startswith('%d of the %d hosts of this batch failed or were unreachable (%s)'
                                       % (len(failed), size, ', '.join(failed))), share['msg']


def test_canaries_count_against_the_whole_run_so_one_failed_canary_alone_in_its_batch_is_not_all_of_it():
    canaries = _hosts(('c1', 'b1', 'boom'), ('c2', 'b2', None), ('t1', None, None))
    share = R.failure_share(canaries, batch='b1', canary=True, rollout_size=10, max_fail_percentage=20)
    assert (share['stop'], share['failed'], share['size']) == (False, ['c1'], 10)
    # three of ten canaries failed: 30 %
    three = _hosts(('c1', 'b1', 'x'), ('c2', 'b2', 'y'), ('c3', 'b3', 'z'))
    share = R.failure_share(three, batch='b3', canary=True, rollout_size=10, max_fail_percentage=20)
    assert share['stop'] is True and 'failed as canaries (c1, c2, c3)' in share['msg'], share
    # without a size, every host given is the run
    assert R.failure_share(three, canary=True, max_fail_percentage=50)['size'] == 3


@pytest.mark.parametrize('pct', ['abc', float('nan'), float('inf'), -1, 101, None, True, '1e999'])
def test_a_bad_percentage_is_refused_naming_the_variable(pct):
    with pytest.raises(R.RolloutError, match='jetson_spec_max_fail_percentage is .*; allowed: a number from 0 to 100'):
        R.failure_share(_hosts(('a', 'b1', 'x')), batch='b1', max_fail_percentage=pct)


# --- the disruption budget: at most N hosts of one group change at once ----------------------------------------------
def test_without_groups_the_batches_are_the_plays_serial_batches():
    hosts = [('h%d' % i, None, True) for i in range(7)]
    assert R.waves(hosts, 1, 3) == {'order': ['h%d' % i for i in range(7)], 'sizes': [1, 3, 3], 'held': []}
    assert R.waves(hosts, '50%', '25%')['sizes'] == [3, 1, 1, 1, 1]   # Ansible's percentages: rounded down, >= 1
    assert R.waves(hosts, 0, 0)['sizes'] == [7]                       # 0: every host
    assert R.waves([], 1, 3) == {'order': [], 'sizes': [], 'held': []}


def test_a_batch_holds_back_the_hosts_of_a_group_past_its_budget_and_fills_with_others():
    hosts = [('a1', 'site-a', True), ('a2', 'site-a', True), ('b1', 'site-b', True), ('a3', 'site-a', True),
             ('x', None, True), ('b2', 'site-b', True)]
    waves = R.waves(hosts, 3, 3, max_unavailable=1)
    batches, start = [], 0
    for size in waves['sizes']:
        batches.append(waves['order'][start:start + size])
        start += size
    assert batches == [['a1', 'b1', 'x'], ['a2', 'b2'], ['a3']], batches
    assert waves['held'] == ['a2', 'a3']   # b2 waited for room in a batch, not for its site's budget
    for batch in batches:
        for site in ('site-a', 'site-b'):
            assert sum(1 for name in batch if name.startswith(site[-1])) <= 1
    # two at once per site
    assert R.waves(hosts, 3, 3, max_unavailable=2)['sizes'] == [3, 3]
    # a percentage of the group's hosts in the play, at least one: 50 % of site-a's three is one
    assert R.waves(hosts, 6, 6, max_unavailable='50%')['sizes'] == [3, 2, 1]


def test_hosts_that_restart_nothing_are_never_held():
    hosts = [('a1', 'site-a', True), ('a2', 'site-a', False), ('a3', 'site-a', False), ('a4', 'site-a', True)]
    assert R.waves(hosts, 4, 4)['order'] == ['a1', 'a2', 'a3', 'a4'][:3] + ['a4']
    assert R.waves(hosts, 4, 4)['sizes'] == [3, 1]
    assert [R.restarts(action) for action in ('verify', 'confirm', None, 'in_sync', 'skip', 'stop')] == \
        [True, True, True, False, False, False]
    assert [R.restarts(action, True) for action in R.RESTART_IF_REMOVED] == [True] * len(R.RESTART_IF_REMOVED)
    assert not any(R.restarts(action, False) for action in R.RESTART_IF_REMOVED)


def test_every_host_is_in_exactly_one_batch_and_no_batch_breaks_the_budget():
    rng = random.Random(7)
    for _trial in range(200):
        size = rng.randint(1, 40)
        hosts = [('h%d' % i, rng.choice([None, 'g1', 'g2', 'g3']), rng.random() < 0.7) for i in range(size)]
        budget = rng.randint(1, 3)
        first, later = rng.randint(1, 10), rng.randint(1, 10)
        waves = R.waves(hosts, first, later, budget)
        assert sorted(waves['order']) == sorted(name for name, _g, _r in hosts) and sum(waves['sizes']) == size
        assert waves['sizes'][0] <= first and all(n <= later for n in waves['sizes'][1:])
        info = dict((name, (group, restart)) for name, group, restart in hosts)
        start = 0
        for count in waves['sizes']:
            batch = waves['order'][start:start + count]
            start += count
            for group in ('g1', 'g2', 'g3'):
                assert sum(1 for name in batch if info[name] == (group, True)) <= budget


@pytest.mark.parametrize('args, words', [
    ((1, 3, 0), 'jetson_spec_max_unavailable is 0; allowed: a number of hosts from 1'),
    ((1, 3, 'many'), 'jetson_spec_max_unavailable is'),
    ((1, 3, float('nan')), 'jetson_spec_max_unavailable is'),
    ((1, 3, '101%'), 'jetson_spec_max_unavailable is'),
    ((1, -2, 1), 'jetson_spec_batch_size is -2'),
    ((1, '25%\n', 1), None),
    (('-1', 3, 1), 'the first batch size is'),
    ((1, 10 ** 9, 1), 'jetson_spec_batch_size is'),
    ((True, 3, 1), 'the first batch size is True'),
])
def test_bad_sizes_and_budgets_are_refused_naming_the_variable(args, words):
    hosts = [('a', 'g', True), ('b', 'g', True)]
    if words is None:   # surrounding white space is not a reason to refuse
        assert R.waves(hosts, *args)['sizes'] == [1, 1]
        return
    with pytest.raises(R.RolloutError, match=words.replace('(', r'\(')):
        R.waves(hosts, *args)


def test_the_failure_percentage_takes_ansibles_forms_and_names_a_bad_one():
    hosts = _hosts(('a', 'b1', 'x'), ('b', 'b1', None))
    assert R.failure_share(hosts, batch='b1', max_fail_percentage='50%')['stop'] is False
    assert R.failure_share(hosts, batch='b1', max_fail_percentage=' 49 % ')['stop'] is True
    for bad in ('150', '-1%', '%', 'x%', [20]):
        with pytest.raises(R.RolloutError, match=r'jetson_spec_max_fail_percentage is .*; allowed: a number from 0 to 100'):
            R.fail_percentage(bad)


@pytest.mark.parametrize('value', ['\u00b2', '1' * 5000, '2.0', '1e3', '0x10', ' ', '+3'])
def test_a_size_that_is_not_plain_digits_is_a_rollout_error_not_a_crash(value):
    with pytest.raises(R.RolloutError, match='jetson_spec_batch_size is'):
        R.batch_count(value, 10, 'jetson_spec_batch_size')


@pytest.mark.parametrize('name', ['a,b', '!a', '&a', ' a', ''])
def test_a_host_name_a_pattern_cannot_carry_is_refused(name):
    with pytest.raises(R.RolloutError, match='cannot be a play\'s host pattern'):
        R.waves([(name, None, True)], 1, 1)
