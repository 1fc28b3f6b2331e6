# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How often the keep-or-revert decision is wrong, asserted (issue 21): seeded Monte Carlo on decision_sim.

decision_sim is a SIMULATOR of request streams at the CPU test bed's noise; what is tested is the collection's real
decision code it drives (the verdict, the sequential rounds with their alpha spending, then the verdict). Each cell
is a few dozen seeded pairs, so the bounds below leave room for sampling: they fail when a change to the decision
makes wrong keeps common, not when one more pair in forty goes the other way. The full table (100 pairs per cell, 1x
to 4x the noise) is tests/benchmarks/decision_error_rates.py's, in docs/performance.md. Each test prints its rates
(pytest -s).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils import decision_sim as SIM

PAIRS = 40
RESAMPLES = 200
SHIFT = 0.08   # the test bed's true phase shift between two phases (A/A), present in every simulated pair
PROTOCOLS = ('fixed', 'sequential')


def keep_rate(scenario, protocol, options, noise=1.0, pairs=PAIRS):
    index = SIM.OPTIONS.index(options)
    keeps = sum(bool(SIM.one_decision((scenario, noise, SHIFT, protocol, index, pair, RESAMPLES))[0])
                for pair in range(pairs))
    return keeps / float(pairs)


def combos(rules=('non_inferiority', 'point')):
    return [dict(decide_undetermined=d, regression_rule=r, phase_shift=s)
            for d in ('point_estimate', 'undetermined') for r in rules for s in (None, SHIFT)]


def label(options):
    return '%s/%s/shift %s' % (options['decide_undetermined'], options['regression_rule'], options['phase_shift'] or 0)


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_and_a_pairs_are_almost_never_kept_under_any_option_combination(protocol):
    """No true change: every keep is wrong. At most 2.5 % per criterion and side is the stated alpha; a keep
    needs three criteria to go wrong the same way, so the rate is far below it."""
    rates = dict((label(o), keep_rate('aa', protocol, o)) for o in combos(('non_inferiority', 'point', 'interval')))
    print(protocol, rates)
    assert max(rates.values()) <= 0.025, rates


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_c8_loss_of_ten_percent_is_reverted_under_non_inferiority_whatever_the_calibration(protocol):
    """+60 % at c=1, -10 % at c=8: must revert. Non-inferiority (the default) keeps only what its interval shows to
    lose less than 5 %: at most alpha (2.5 %) in theory, with the host's unmodelled 8 % shift a little more."""
    rates = dict((label(o), keep_rate('loss10', protocol, o)) for o in combos(('non_inferiority',)))
    print(protocol, rates)
    assert max(rates.values()) <= 0.10, rates
    calibrated = [rate for name, rate in rates.items() if name.endswith('shift 0.08')]
    assert max(calibrated) <= 0.05, rates


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_c8_loss_of_twenty_percent_is_reverted_under_non_inferiority(protocol):
    rates = dict((label(o), keep_rate('loss20', protocol, o)) for o in combos(('non_inferiority',)))
    print(protocol, rates)
    assert max(rates.values()) <= 0.05, rates


def test_the_literal_point_rule_is_the_opt_in_that_keeps_c8_losses():
    """regression_rule=point (and the deprecated interval, now the same) decides on the measured c=8 change alone:
    a true 10 % loss measured as a gain by the noise is kept. docs/performance.md states how often (24 to 50 %);
    this pins that it is neither never nor always, so the documented figure stays what the code does."""
    options = dict(decide_undetermined='point_estimate', regression_rule='point', phase_shift=None)
    rate = keep_rate('loss10', 'fixed', options)
    print('point, loss10, fixed: %.2f' % rate)
    assert 0.05 <= rate <= 0.6, rate


def test_point_and_the_deprecated_interval_rule_decide_alike():
    """regression_rule=interval reverts a measured loss beyond the tolerance since issue 21: the same pairs give the
    same decisions as point."""
    for pair in range(10):
        for decide in ('point_estimate', 'undetermined'):
            opts = [dict(decide_undetermined=decide, regression_rule=rule, phase_shift=None) for rule in ('point', 'interval')]
            got = [SIM.one_decision(('loss10', 1.0, SHIFT, 'fixed', SIM.OPTIONS.index(o), pair, RESAMPLES))[:2] for o in opts]
            assert got[0] == got[1], (pair, decide, got)


def test_the_power_for_a_clear_gain_is_what_docs_performance_states():
    """+60 % at c=1, c=8 unchanged: a keep is right. Non-inferiority must show, with the few waves of 8 a benchmark
    has at c=8 (6 per phase in the fixed protocol), that c=8 loses less than 5 %: on a quiet host (0.25x the test
    bed's noise, a 2 % phase shift) that succeeds about 60 % of the time, at the test bed's noise (waves varying by
    14 %, an 8 % shift) rarely. Both are stated in docs/performance.md, with the remedies (c8_margin, more c=8
    requests); this pins them."""
    default = dict(decide_undetermined='point_estimate', regression_rule='non_inferiority', phase_shift=None)
    index = SIM.OPTIONS.index(default)
    quiet = sum(bool(SIM.one_decision(('gain60', 0.25, 0.02, 'fixed', index, pair, RESAMPLES))[0])
                for pair in range(PAIRS)) / float(PAIRS)
    noisy = keep_rate('gain60', 'fixed', default)
    print('power, +60 %% at c=1, fixed protocol: quiet host %.2f, test bed %.2f' % (quiet, noisy))
    assert 0.4 <= quiet <= 0.85, quiet
    assert noisy <= 0.35 and noisy < quiet, (noisy, quiet)
