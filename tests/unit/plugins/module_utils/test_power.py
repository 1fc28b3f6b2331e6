# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict's power at its measured noise (_decision.power): known answers, then calibration on the request-stream
SIMULATOR (decision_sim) against what the real verdict does with the same kind of pairs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import random
from statistics import NormalDist

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import power as P
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils import decision_sim as SIM

Z95 = NormalDist().inv_cdf(0.975)


def test_log_se_reads_the_lower_side_of_the_interval():
    assert P.log_se(1.0, math.exp(-0.1), 0.95) == pytest.approx(0.1 / Z95)
    assert P.log_se(1.2, 1.2 * math.exp(-0.2), 0.99) == pytest.approx(0.2 / NormalDist().inv_cdf(0.995))
    for measured, low in ((None, 0.9), (1.0, None), (1.0, 0.0), (1.0, 1.0), (1.0, 1.1), (0.0, -1.0)):
        assert P.log_se(measured, low, 0.95) is None


def test_c8_unchanged_keep_known_answers():
    # half-width 2 x ln(1 / 0.95): the margin is one half-width away -> Phi(z) = 97.5 % by the margin, and the
    # tolerance (2 %) binds: Phi(-ln(0.98) / se).
    se = 2 * -math.log(0.95) / Z95
    expected = NormalDist().cdf(min(-math.log(0.95) / se - Z95, -math.log(0.98) / se))
    assert P.c8_unchanged_keep(se, 0.95, 0.05, 0.02) == pytest.approx(expected)
    # a tight interval passes almost always; a wide one rarely; no tolerance: the margin alone
    assert P.c8_unchanged_keep(0.005, 0.95, 0.05, 0.02) > 0.99
    assert P.c8_unchanged_keep(0.10, 0.95, 0.05, 0.02) < 0.1
    # no tolerance: any measured dip reverts, so even a perfectly measured unchanged c=8 passes half the time
    assert P.c8_unchanged_keep(0.02, 0.95, 0.05, 0.0) == pytest.approx(0.5)
    assert P.c8_unchanged_keep(0.05, 0.95, 0.05, 0.0) == pytest.approx(NormalDist().cdf(-math.log(0.95) / 0.05 - Z95))
    assert P.c8_unchanged_keep(None, 0.95, 0.05, 0.02) is None
    # more margin, more power; more confidence, less
    assert P.c8_unchanged_keep(0.04, 0.95, 0.10, 0.02) > P.c8_unchanged_keep(0.04, 0.95, 0.05, 0.02)
    assert P.c8_unchanged_keep(0.03, 0.999, 0.05, 0.0) < P.c8_unchanged_keep(0.03, 0.95, 0.05, 0.0)


def test_c1_gain_kept_known_answers():
    assert P.c1_gain_kept(0.0, 0.95, 0.30, False) == pytest.approx(0.30)
    z80 = NormalDist().inv_cdf(0.8)
    assert P.c1_gain_kept(0.05, 0.95, 0.30, False) == pytest.approx(1.3 * math.exp(z80 * 0.05) - 1)
    assert P.c1_gain_kept(0.05, 0.95, 0.30, True) == pytest.approx(1.3 * math.exp((z80 + Z95) * 0.05) - 1)
    assert P.c1_gain_kept(None, 0.95, 0.30, True) is None


def test_the_sentence_says_what_to_change_only_when_c8_mostly_fails():
    low = P.sentence({'c1_gain_kept_80': 0.41, 'c8_unchanged_kept': 0.09}, 0.30, 0.05)
    assert low == ('What this measurement could show, from its intervals (approximately): a candidate needs a true '
                   'throughput gain of about +41 % at concurrency 1 to be kept 4 times in 5 (the bar is +30 %), and one '
                   'that leaves concurrency 8 unchanged passes there (a loss beyond 5.0 % ruled out) about 9 % of the '
                   'time. At this concurrency-8 noise most good candidates are reverted: measure more requests at '
                   'concurrency 8, quiet the host (fixed clocks, nothing else running), or raise c8_margin (at most '
                   '10 %).')
    high = P.sentence({'c1_gain_kept_80': 0.33, 'c8_unchanged_kept': 0.9}, 0.30, 0.05)
    assert 'about 90 % of the time.' in high and 'most good candidates' not in high
    assert P.sentence({'c1_gain_kept_80': None, 'c8_unchanged_kept': None}, 0.30, 0.05) is None
    assert P.sentence({'c1_gain_kept_80': 0.33, 'c8_unchanged_kept': None}, 0.30, 0.05).endswith('(the bar is +30 %).')


def _pair(rng, noise, c8_ratio=1.0, n=50):
    """A fixed-protocol pair from the SIMULATOR's streams, without a phase shift (the intervals can see everything)."""
    base = SIM._benchmark([SIM._run(*SIM.Stream(rng, c, SIM.BASE_TPOT_MS[c], noise, 0.0).take(n), c, 'base', False)
                           for c in (1, 8)], 'base', n)
    cand = SIM._benchmark([SIM._run(*SIM.Stream(rng, c, SIM.BASE_TPOT_MS[c] / (1.6 if c == 1 else c8_ratio), noise,
                                                0.0).take(n), c, 'cand', True) for c in (1, 8)], 'base', n)
    return base, cand


@pytest.mark.parametrize('noise', [0.5, 1.0])
def test_the_stated_c8_power_matches_how_often_the_verdict_passes_c8(noise):
    """Calibration: over simulated pairs whose c=8 throughput does not change (and no undeclared phase shift), the
    mean c8_unchanged_kept the verdict states is close to the share of those verdicts that pass at c=8."""
    rng = random.Random('power:%s' % noise)
    stated, passed = [], []
    for _pair_index in range(40):
        result = V.verdict(*_pair(rng, noise), bootstrap_resamples=200)
        stated.append(result['power']['c8_unchanged_kept'])
        passed.append(result['criteria']['regression_c8']['status'] == 'not_met')
    mean_stated, rate = sum(stated) / len(stated), sum(passed) / float(len(passed))
    print('noise %sx: stated %.2f, passed %.2f' % (noise, mean_stated, rate))
    assert abs(mean_stated - rate) <= 0.2, (mean_stated, rate)
    assert all(0.0 <= value <= 1.0 for value in stated)


def test_a_verdict_states_its_power_and_a_noisier_host_has_less():
    rng = random.Random('power:order')
    quiet = V.verdict(*_pair(rng, 0.25), bootstrap_resamples=200)
    noisy = V.verdict(*_pair(rng, 2.0), bootstrap_resamples=200)
    assert quiet['power']['c8_unchanged_kept'] > noisy['power']['c8_unchanged_kept']
    assert quiet['power']['c1_gain_kept_80'] < noisy['power']['c1_gain_kept_80']
    assert 0.30 < quiet['power']['c1_gain_kept_80'] < 0.40
    assert any(r.startswith('What this measurement could show') for r in noisy['reasons'])
    assert noisy['power']['c8_unchanged_kept'] < 0.5, noisy['power']   # twice the test bed's noise at c=8
    assert any('most good candidates are reverted' in r for r in noisy['reasons'])
    assert quiet['power']['c8_unchanged_kept'] >= 0.5, quiet['power']
    assert not any('most good candidates are reverted' in r for r in quiet['reasons'])
    # a stricter decision needs a larger gain at concurrency 1 for the same measurement
    base, cand = _pair(random.Random('power:strict'), 1.0)
    loose = V.verdict(base, cand, bootstrap_resamples=200)['power']['c1_gain_kept_80']
    strict = V.verdict(base, cand, bootstrap_resamples=200, decide_undetermined='undetermined')['power']['c1_gain_kept_80']
    assert strict > loose


def test_without_samples_there_is_no_power_and_no_sentence():
    base, cand = _pair(random.Random('power:none'), 1.0)
    for bench in (base, cand):
        for run in bench['runs']:
            run.pop('samples', None)
    result = V.verdict(base, cand)
    assert result['power'] == {'c1_gain_kept_80': None, 'c8_unchanged_kept': None}
    assert not any(r.startswith('What this measurement could show') for r in result['reasons'])
