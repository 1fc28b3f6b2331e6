# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Error spending across the looks of a sequential benchmark (private; standard library only).

A sequential benchmark looks at its intervals after every round and stops as soon as they settle the decision.
Looking six times at fixed 95 % intervals gives six chances of a wrong decision: the error rate of the whole
procedure is well above the 5 % each look pretends. Here the 5 % (two-sided; 2.5 % on each side of a threshold)
is an error budget spent over the looks with Lan and DeMets' O'Brien-Fleming-type spending function

    alpha(t) = 2 - 2 Phi(z_(1 - alpha / 2) / sqrt(t)),   t = look / looks (the share of the planned looks made),

and look k is decided at the level alpha(t_k) - alpha(t_(k-1)) (its confidence is 1 minus that). Each concurrency
level spends its own budget over its own looks (concurrency 1 decides the gain and TPOT criteria, concurrency 8 the
regression; with the default rounds 6 and 3 looks), as the fixed protocol gives each criterion its own 95 %
interval. The levels of a criterion's looks add up to alpha, so by the union bound (Bonferroni) the chance that ANY
look settles it on the wrong side of its threshold is at most alpha, whatever the looks' correlation: a conservative, simple bound
that needs no numerical integration over correlated looks and holds for the bootstrap's intervals as for normal
ones. The spending is a function of the look's number only (the schedule is fixed before any request is sent),
which the union bound needs.

Why O'Brien-Fleming-type: it spends almost nothing on the first looks (look 1 of 6 is decided at 99.9998 %) and
most on the last, so a decision that stops early must be far from its threshold, and the last look is close to a
fixed 95 % test (98.2 % for 6 looks). The speculative-decoding criteria are usually far from their thresholds
when they are clear (a +60 % gain against a +30 % bar is 6 standard errors away after 8 requests): those still
stop at the first rounds; a borderline case measures on, which is where the fixed intervals were wrong most.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
from statistics import NormalDist

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.bootstrap import CONFIDENCE

#: What a sequential benchmark's config names as its design.
METHOD = "O'Brien-Fleming-type alpha spending (Lan-DeMets) per concurrency level, union bound over the looks"
#: The whole procedure's two-sided error budget (the fixed protocol's 95 % intervals: 5 %).
ALPHA = 1.0 - CONFIDENCE


def spent(fraction, alpha=ALPHA):
    """The error spent by the share ``fraction`` (0..1) of the planned looks: O'Brien-Fleming-type (Lan-DeMets)."""
    if fraction <= 0:
        return 0.0
    fraction = min(1.0, fraction)
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return min(alpha, 2.0 - 2.0 * NormalDist().cdf(z / math.sqrt(fraction)))


def look_alpha(look, looks, alpha=ALPHA):
    """The error level of look ``look`` (1-based) of ``looks`` planned: what it spends of ``alpha``."""
    if looks < 1 or not 1 <= look <= looks:
        raise ValueError('look %r of %r: a look is numbered from 1 to the planned number of looks' % (look, looks))
    return spent(look / float(looks), alpha) - spent((look - 1) / float(looks), alpha)


#: A look's confidence is at most this (look 1 of hundreds would round to 1.0, an infinite interval); the error
#: the clamp adds is below 1e-12 per look.
MAX_CONFIDENCE = 1.0 - 1e-12


def look_confidence(look, looks, alpha=ALPHA):
    """The two-sided confidence of look ``look`` of ``looks``: 1 - look_alpha (1 look: the fixed 95 %)."""
    return 1.0 - look_alpha(look, looks, alpha)


def bounded_confidence(look, looks):
    """look_confidence, at most MAX_CONFIDENCE: what an interval is computed at (the verdict and the rounds)."""
    return min(MAX_CONFIDENCE, look_confidence(look, looks))


def schedule(looks, alpha=ALPHA):
    """[(look, confidence)] of every planned look."""
    return [(look, look_confidence(look, looks, alpha)) for look in range(1, looks + 1)]
