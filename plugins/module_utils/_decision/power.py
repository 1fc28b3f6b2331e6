# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a verdict's measurement could have shown: its power at the measured noise (private to this collection).

A reverted candidate leaves an operator with one question the verdict can answer from its own intervals: could
this host have kept a good candidate at all? Each interval of a ratio (two-sided, at its level's confidence) gives
the standard error of the ratio's log, se = (ln measured - ln low) / z, read on the side the decision looks at.
From it, under the verdict's own rules:

* concurrency 8, non-inferiority: a candidate that does not change throughput at all is kept there when its
  interval's lower bound rules out a loss beyond the margin and its point estimate shows no loss beyond the
  tolerance: P = Phi(min(-ln(1 - margin) / se - z, -ln(1 - tolerance) / se));
* concurrency 1: the true throughput gain kept with probability 0.8 against the gain bar - on the point estimate
  (decide_undetermined=point_estimate settles an open criterion there): (1 + bar) exp(z_0.8 se) - 1; on the
  interval (decide_undetermined=undetermined): (1 + bar) exp((z + z_0.8) se) - 1.

Approximate by construction: the intervals are bootstrap percentiles, stretched for a sequential look, widened for
a declared phase shift, with Student's t above concurrency 1; read as normal on the log scale they give the order
of magnitude an operator needs (a 9 % chance is not a 60 % one), not a third decimal. A phase shift the operator
did not declare is invisible to the intervals, so the figures are then optimistic (docs/performance.md).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
from statistics import NormalDist

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.bootstrap import two_sided_z

#: The keep probability the concurrency-1 figure is for (4 times in 5, the usual design power).
DESIGN_POWER = 0.8
_NORMAL = NormalDist()


def log_se(measured, low, confidence):
    """Standard error of ln(ratio) from the lower side of a two-sided ``confidence`` interval; None if unusable."""
    if measured is None or low is None or measured <= 0 or low <= 0 or low >= measured:
        return None
    return (math.log(measured) - math.log(low)) / two_sided_z(confidence)


def c8_unchanged_keep(se, confidence, margin, tolerance):
    """Probability that a candidate with concurrency-8 throughput unchanged passes non-inferiority there."""
    if se is None:
        return None
    by_margin = -math.log(1.0 - margin) / se - two_sided_z(confidence)
    by_tolerance = -math.log(1.0 - tolerance) / se if tolerance > 0 else 0.0
    return _NORMAL.cdf(min(by_margin, by_tolerance))


def c1_gain_kept(se, confidence, min_gain, on_interval, power=DESIGN_POWER):
    """The true concurrency-1 throughput gain kept with probability ``power`` against ``min_gain`` (a share)."""
    if se is None:
        return None
    reach = _NORMAL.inv_cdf(power) + (two_sided_z(confidence) if on_interval else 0.0)
    return (1.0 + min_gain) * math.exp(reach * se) - 1.0


def of_verdict(gain_ratio, gain_low, change8_ratio, change8_low, confidence, opts, margin):
    """{'c1_gain_kept_80': share or None, 'c8_unchanged_kept': probability or None} for a verdict.

    ``gain_ratio`` / ``gain_low``: the concurrency-1 throughput ratio and its interval's lower end (None without an
    interval); ``change8_*`` the same at concurrency 8; ``confidence``: {'c1', 'c8'}; ``opts``: the verdict's options
    (min_throughput_gain, c8_tolerance, decide_undetermined); ``margin``: the non-inferiority margin the verdict
    applies (verdict.noninferiority_margin).
    """
    se1 = log_se(gain_ratio, gain_low, confidence['c1'])
    se8 = log_se(change8_ratio, change8_low, confidence['c8'])
    gain = c1_gain_kept(se1, confidence['c1'], opts['min_throughput_gain'],
                        opts['decide_undetermined'] == 'undetermined')
    keep8 = c8_unchanged_keep(se8, confidence['c8'], margin, opts['c8_tolerance'])
    return {'c1_gain_kept_80': None if gain is None else round(gain, 4),
            'c8_unchanged_kept': None if keep8 is None else round(keep8, 4)}


def sentence(power, min_gain, margin):
    """One reason line saying what the measurement could show, or None when neither level has an interval."""
    parts = []
    if power['c1_gain_kept_80'] is not None:
        parts.append('a candidate needs a true throughput gain of about %+.0f %% at concurrency 1 to be kept 4 times in '
                     '5 (the bar is %+.0f %%)' % (power['c1_gain_kept_80'] * 100, min_gain * 100))
    if power['c8_unchanged_kept'] is not None:
        parts.append('one that leaves concurrency 8 unchanged passes there (a loss beyond %.1f %% ruled out) about %.0f %% '
                     'of the time' % (margin * 100, power['c8_unchanged_kept'] * 100))
    if not parts:
        return None
    text = 'What this measurement could show, from its intervals (approximately): %s.' % ', and '.join(parts)
    if power['c8_unchanged_kept'] is not None and power['c8_unchanged_kept'] < 0.5:
        text += (' At this concurrency-8 noise most good candidates are reverted: measure more requests at concurrency 8, '
                 'quiet the host (fixed clocks, nothing else running), or raise c8_margin (at most 10 %).')
    return text
