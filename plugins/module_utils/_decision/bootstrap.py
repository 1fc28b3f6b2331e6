# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Confidence intervals for the speculative_verdict: a percentile bootstrap over requests (private).

Why a bootstrap and not batch means: a verification benchmark is short (50 requests per
concurrency level by default, 10 to 30 minutes of a Jetson's time), the decision is partly
taken on a median (TPOT p50), and per-request times are skewed (a few slow requests). Batch
means need a long run cut into many batches that are each long enough to be roughly
independent and normal; a median has no batch-means form at all. The bootstrap resamples the
requests themselves, assumes no distribution, works for a median as for a ratio of sums, and
gives usable intervals from a few dozen requests. What it does assume: the requests of a run
are exchangeable (no trend over the run) and the two runs are independent.

At concurrency above 1 the requests of a run are not independent: the ones in flight together
share the server's batches, so a slow step slows all of them. Resampling them one by one counts
one slow wave as many independent slow requests: in a simulation of c=8 runs whose waves vary by
10 % (tests/unit/.../test_speculative_verdict_noise.py), 52 to 62 % of the 95 % intervals of two
runs of the same server excluded "no change" (24 to 96 requests per run). So above concurrency 1 the bootstrap resamples whole waves:
blocks of ``concurrency`` consecutive requests in the order they were sent (with a fixed output
length, as the role measures, the requests of a wave start and end together, so the blocks are
the waves). A run then has only a few independent blocks (50 requests at c=8: 7), and a
percentile bootstrap of a few values is too narrow, so the interval is widened around the
measured ratio by t(m_b + m_c - 2) / z x sqrt(m / (m - 1)) (m_b, m_c: blocks of the two runs,
m the smaller): the Student-t and plug-in-variance corrections of a mean of m values. In the
same simulation that leaves at most 7 % of the intervals excluding "no change", for 3 to 12
blocks per run. At concurrency 1 a block is one request: the plain bootstrap, not widened.

What no resampling of one baseline phase and one candidate phase can see is a shift of the
whole machine between the two phases (thermal state, clocks, other load; on the CPU test bed's
virtual machine two phases of the SAME service differ by 7 to 9 % (SD) at concurrency 1, while the
bootstrap's standard error is about 2 %). ``phase_shift`` is that shift, as the relative standard
deviation of an A/A comparison beyond the request-to-request noise, measured on the host
(tests/benchmarks/aa_probe.py prints it); with_phase_shift adds it to an interval in quadrature,
on the log scale (a shift multiplies the whole phase). A threshold within z x phase_shift of the
measured ratio cannot be settled by more requests of the same two phases (shift_bound).

Everything is deterministic: the random generator is seeded from the data (sha256 of the
samples and the number of resamples), so the same benchmarks always give the same intervals
and the same verdict (an idempotent decision).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import math
import random
from statistics import NormalDist

from ansible_collections.jetson_llm.vllm.plugins.module_utils._stats import median, percentile

#: Two-sided confidence of every interval.
CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
#: Allowed bootstrap_resamples: below 200 the 2.5 % and 97.5 % quantiles rest on 5 resamples or fewer.
RESAMPLES_RANGE = (200, 20000)
#: Fewer requests than this in a phase: no interval (a bootstrap of 3 values says little).
MIN_REQUESTS = 5
#: At concurrency above 1, fewer blocks than this in a phase: no interval (see min_requests).
MIN_BLOCKS = 2
#: Most requests accepted per run: vllm_benchmark's num_prompts limit.
MAX_REQUESTS = 10000
#: Most request draws in one verdict (resamples x requests, summed over the resampled sets): about 3 s
#: of pure Python on the development machine's x86 core (expect a few times that on a Jetson's Arm
#: core); above it the number of resamples is lowered (never below the minimum), with a warning.
MAX_DRAWS = 20000000


def data_seed(*parts):
    """A hex seed derived from JSON-serialisable ``parts``: the same data give the same seed."""
    text = json.dumps(parts, sort_keys=True, separators=(',', ':'), allow_nan=False)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def block_size(concurrency):
    """Requests resampled together at ``concurrency``: the requests in flight together (1 at concurrency 1)."""
    return max(1, int(concurrency))


def min_requests(concurrency):
    """Fewest requests of a phase for an interval: MIN_REQUESTS, and MIN_BLOCKS whole blocks above concurrency 1."""
    block = block_size(concurrency)
    return MIN_REQUESTS if block == 1 else max(MIN_REQUESTS, MIN_BLOCKS * block)


def blocks_of(items, block):
    """``items`` cut into consecutive blocks of ``block`` (the last one may be shorter)."""
    return [items[start:start + block] for start in range(0, len(items), max(1, block))]


def block_resample(rng, items, block):
    """One block-bootstrap resample of ``items``: len(items) of them, drawn as whole blocks (blocks_of).

    ``block`` 1 is the ordinary bootstrap (rng.choices).
    """
    count = len(items)
    if block <= 1 or count <= 1:
        return rng.choices(items, k=count)
    blocks = blocks_of(items, block)
    drawn = []
    while len(drawn) < count:
        drawn.extend(rng.choice(blocks))
    return drawn[:count]


def _incomplete_beta(a, b, x):
    """The regularised incomplete beta function I_x(a, b) (Lentz's continued fraction, Numerical Recipes 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1.0 - x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * result / a


def t_cdf(value, df):
    """P(T <= value) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + value * value))
    return 1.0 - tail if value >= 0 else tail


def t_quantile(p, df):
    """The p quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom (standard library only).

    Exact for 1 and 2 degrees of freedom; above, bisection on the exact distribution function (t_cdf), so the
    far quantiles a sequential benchmark's early looks need are right too (3 degrees of freedom at 0.9999995:
    about 103, where a series expansion gives 70).
    """
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _i in range(100):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-9 * high:
            break
    return (low + high) / 2.0


def widening(n_base, n_cand, block, confidence=CONFIDENCE):
    """How much a block-bootstrap interval is widened around the measured ratio (1.0 for block 1).

    t(m_b + m_c - 2) / z x sqrt(m / (m - 1)), m_b and m_c the blocks of the two runs, m the
    smaller: a percentile bootstrap of m block values behaves like a mean +- z x its plug-in
    standard error, which is too narrow for a few values (see the module's docstring).
    """
    if block <= 1:
        return 1.0
    m_base = -(-n_base // block)
    m_cand = -(-n_cand // block)
    fewest = min(m_base, m_cand)
    if fewest < 2:
        raise ValueError('a block-bootstrap interval needs at least 2 blocks per run, got %d' % fewest)
    p = (1.0 + confidence) / 2.0
    return t_quantile(p, m_base + m_cand - 2) / NormalDist().inv_cdf(p) * math.sqrt(fewest / (fewest - 1.0))


def resamples_within_budget(resamples, draws_per_resample):
    """``resamples``, lowered when resamples x draws_per_resample exceeds MAX_DRAWS (at least the minimum)."""
    if draws_per_resample <= 0 or resamples * draws_per_resample <= MAX_DRAWS:
        return resamples
    return max(RESAMPLES_RANGE[0], MAX_DRAWS // draws_per_resample)


def tpot_p50(values):
    """The TPOT statistic: the median of per-request TPOTs (vLLM's tpot_ms_p50)."""
    return median(values)


def throughput_statistic(concurrency):
    """The throughput statistic of a resample of (output_tokens, latency_ms) pairs, in tokens per second.

    concurrency x sum(tokens) / sum(latency): Little's law at constant concurrency (requests in
    flight = throughput x time per request); at concurrency 1 it is sum(tokens) / sum(latency),
    the measured throughput without the client's gaps between requests.
    """
    def statistic(pairs):
        tokens = 0
        latency = 0.0
        for out, lat in pairs:
            tokens += out
            latency += lat
        return concurrency * 1000.0 * tokens / latency
    return statistic


def ratio_interval(seed, label, baseline, candidate, statistic, resamples, point_ratio=None, confidence=CONFIDENCE,
                   block=1):
    """The percentile-bootstrap interval of statistic(candidate) / statistic(baseline).

    Each resample draws len(baseline) baseline requests and len(candidate) candidate requests
    with replacement, independently (each phase from its own generator, seeded from ``seed`` and
    ``label``), in blocks of ``block`` consecutive requests (block_resample; 1: one by one), and
    takes the ratio of the two statistics; the interval is the (1 - confidence) / 2 and
    (1 + confidence) / 2 quantiles of the ratios, widened around the measured ratio when
    ``block`` > 1 (widening).

    ``point_ratio`` (the measured ratio the verdict reports) places the interval on the measured
    value: the bounds are multiplied by point_ratio / (the ratio of the whole samples). For TPOT
    the two ratios agree up to rounding; for throughput the measured figure divides by the run's
    duration, which at concurrency 8 also counts the ramp-down at the end of a run (fewer than 8
    requests in flight), so the interval keeps its width and sits on the measured change.

    Returns (low, high) of the ratio, or None when a statistic is not a positive number (e.g. a
    median TPOT of 0).
    """
    full_base = statistic(baseline)
    full_cand = statistic(candidate)
    if not full_base > 0 or not full_cand > 0:
        return None
    scale = 1.0 if point_ratio is None else point_ratio / (full_cand / full_base)
    rng_base = random.Random('%s:%s:baseline' % (seed, label))
    rng_cand = random.Random('%s:%s:candidate' % (seed, label))
    ratios = []
    for _i in range(resamples):
        base = statistic(block_resample(rng_base, baseline, block))
        if not base > 0:
            return None
        ratios.append(statistic(block_resample(rng_cand, candidate, block)) / base)
    resolved = min(confidence, CONFIDENCE)
    tail = (1.0 - resolved) / 2.0 * 100.0
    low, high = percentile(ratios, tail), percentile(ratios, 100.0 - tail)
    measured = full_cand / full_base
    if block > 1:
        wider = widening(len(baseline), len(candidate), block, resolved)
        low = max(0.0, measured - wider * (measured - low))
        high = measured + wider * (high - measured)
    if confidence > resolved:
        low, high = stretch((low, high), measured, stretch_factor(confidence, resolved, len(baseline),
                                                                  len(candidate), block))
    return low * scale, high * scale


def _quantile(confidence, df):
    p = (1.0 + confidence) / 2.0
    return NormalDist().inv_cdf(p) if df is None else t_quantile(p, df)


def stretch_factor(confidence, resolved, n_base, n_cand, block):
    """How much farther from the measured ratio a ``confidence`` interval reaches than a ``resolved`` one.

    A bootstrap of a few thousand resamples cannot place the 0.0001 % quantiles a sequential benchmark's first
    look asks for (spending): the interval is computed at ``resolved`` (95 %) and stretched on the log scale by
    q(confidence) / q(resolved), q the normal quantile for single requests and Student's t with the blocks'
    degrees of freedom (m_b + m_c - 2, as in widening) above concurrency 1.
    """
    df = None
    if block > 1:
        df = -(-n_base // block) + -(-n_cand // block) - 2
    return _quantile(confidence, df) / _quantile(resolved, df)


def stretch(interval, measured, factor):
    """``interval`` (low, high) around the ``measured`` ratio with each side's log distance times ``factor``."""
    low, high = interval
    centre = math.log(measured)
    if low > 0:
        low = math.exp(centre - factor * max(0.0, centre - math.log(low)))
    high = math.exp(centre + factor * max(0.0, math.log(high) - centre))
    return low, high


#: Largest phase_shift accepted (a relative standard deviation; 0.5 already spans a factor 2.7 at 95 %).
MAX_PHASE_SHIFT = 0.5


def two_sided_z(confidence=CONFIDENCE):
    """The normal quantile of a two-sided ``confidence`` interval (1.96 at 95 %)."""
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


def with_phase_shift(interval, measured, shift, confidence=CONFIDENCE):
    """``interval`` (low, high) of a ratio widened for a shift of the machine between the two phases.

    ``shift``: the relative standard deviation of that shift (0: the interval unchanged). On the log scale each
    side's distance from the ``measured`` ratio is combined in quadrature with z x shift, so the interval keeps
    its asymmetry and a ratio of 0 stays 0. None stays None.
    """
    if interval is None or not shift:
        return interval
    margin = two_sided_z(confidence) * shift
    low, high = interval
    centre = math.log(measured)
    if low > 0:
        low = math.exp(centre - math.hypot(max(0.0, centre - math.log(low)), margin))
    high = math.exp(centre + math.hypot(max(0.0, math.log(high) - centre), margin))
    return low, high


def shift_bound(measured, threshold_ratio, shift, confidence=CONFIDENCE):
    """True when ``threshold_ratio`` lies within the phase shift's own interval around the ``measured`` ratio:
    however many requests the two phases had, the interval would still include it."""
    if not shift or not measured > 0 or not threshold_ratio > 0:
        return False
    return abs(math.log(measured) - math.log(threshold_ratio)) < two_sided_z(confidence) * shift
