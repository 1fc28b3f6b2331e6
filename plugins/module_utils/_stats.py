# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Order statistics as numpy computes them (private, standard library only): the benchmark's summaries and the
decision's intervals use the same definitions."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math


def _lerp(a, b, t):
    # numpy's _lerp: the two branches keep monotonicity and exact end points.
    diff = b - a
    if t >= 0.5:
        return b - diff * (1 - t)
    return a + diff * t


def percentile(values, q):
    """numpy.percentile(values, q) with the default 'linear' method; None when empty."""
    if not values:
        return None
    xs = sorted(values)
    n = len(xs)
    virtual = (n - 1) * (q / 100.0)  # numpy's 'linear' virtual index
    if virtual >= n - 1:
        return xs[-1]
    if virtual < 0:
        return xs[0]
    prev = int(math.floor(virtual))
    return _lerp(xs[prev], xs[prev + 1], virtual - prev)


def median(values):
    """numpy.median; None when empty."""
    if not values:
        return None
    xs = sorted(values)
    n = len(xs)
    mid = n // 2
    if n % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2.0


def mean(values):
    if not values:
        return None
    return math.fsum(values) / len(values)
