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
    keeps = sum(bool(SIM.one_decision((scenario, noise, SHIFT, protocol, options, pair, RESAMPLES))[0])
                for pair in range(pairs))
    return keeps / float(pairs)


def combos(margins=(0.05, 0.10)):
    """Every option combination of the role that decides differently (decision_sim.OPTIONS)."""
    return [o for o in SIM.OPTIONS if o['c8_margin'] in margins]


def label(options):
    return '%s/shift %s/margin %s' % (options['decide_undetermined'], options['phase_shift'] or 0, options['c8_margin'])


DEFAULT = dict(decide_undetermined='point_estimate', phase_shift=None, c8_margin=0.05)


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_and_a_pairs_are_almost_never_kept_under_any_option_combination(protocol):
    """No true change: every keep is wrong. At most 2.5 % per criterion and side is the stated alpha; a keep
    needs three criteria to go wrong the same way, so the rate is far below it."""
    rates = dict((label(o), keep_rate('aa', protocol, o)) for o in combos())
    print(protocol, rates)
    assert max(rates.values()) <= 0.025, rates


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_c8_loss_of_ten_percent_is_reverted_under_every_option_combination(protocol):
    """+60 % at c=1, -10 % at c=8: must revert. Non-inferiority keeps only what its interval shows to lose less than
    c8_margin: at the default 5 %, at most alpha (2.5 %) in theory, with the host's undeclared 8 % shift a little
    more; at the largest margin allowed (10 %, the loss itself) at most alpha when the shift is declared, and about
    one in ten when the host's 8 % shift is not (the bootstrap cannot see it: docs/performance.md)."""
    rates = dict((label(o), keep_rate('loss10', protocol, o)) for o in combos())
    print(protocol, rates)
    assert max(rate for name, rate in rates.items() if name.endswith('margin 0.05')) <= 0.10, rates
    assert max(rates.values()) <= 0.175, rates
    calibrated = [rate for name, rate in rates.items() if '/shift 0.08/' in name]
    assert max(calibrated) <= 0.05, rates


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_c8_loss_of_twenty_percent_is_reverted_under_every_option_combination(protocol):
    rates = dict((label(o), keep_rate('loss20', protocol, o)) for o in combos())
    print(protocol, rates)
    assert max(rates.values()) <= 0.05, rates


def test_the_power_for_a_clear_gain_and_at_the_bar_is_what_docs_performance_states():
    """A keep is right: +60 % at c=1, or exactly the specification's +30 % bar (TPOT -23 %), c=8 unchanged.
    Non-inferiority must show, with the few waves of 8 a benchmark has at c=8 (6 per phase in the fixed protocol),
    that c=8 loses less than 5 %: on a quiet host (0.25x the test bed's noise, a 2 % phase shift) that succeeds about
    60 % of the time, at the test bed's noise (waves varying by 14 %, an 8 % shift) rarely. At the bar itself a keep
    is at best a coin flip (the gain is measured at or above +30 % half the time). All stated in docs/performance.md,
    with the remedies (c8_margin up to 10 %, more c=8 requests); this pins them."""
    def rate(scenario, noise, shift):
        return sum(bool(SIM.one_decision((scenario, noise, shift, 'fixed', DEFAULT, pair, RESAMPLES))[0])
                   for pair in range(PAIRS)) / float(PAIRS)
    quiet = rate('gain60', 0.25, 0.02)
    noisy = keep_rate('gain60', 'fixed', DEFAULT)
    bar_quiet = rate('gain30', 0.25, 0.02)
    wide = keep_rate('gain60', 'fixed', dict(DEFAULT, c8_margin=0.10))
    print('power, fixed protocol: +60 %% quiet host %.2f, test bed %.2f (margin 10 %%: %.2f); +30 %% quiet host %.2f'
          % (quiet, noisy, wide, bar_quiet))
    assert 0.4 <= quiet <= 0.85, quiet
    assert noisy <= 0.35 and noisy < quiet, (noisy, quiet)
    assert noisy <= wide <= 0.5, (noisy, wide)
    assert 0.05 <= bar_quiet <= 0.5 and bar_quiet < quiet, (bar_quiet, quiet)
