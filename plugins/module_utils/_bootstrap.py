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

Everything is deterministic: the random generator is seeded from the data (sha256 of the
samples and the number of resamples), so the same benchmarks always give the same intervals
and the same verdict (an idempotent decision).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import random

from ansible_collections.jetson_llm.vllm.plugins.module_utils._benchmark import median, percentile

#: Two-sided confidence of every interval.
CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
#: Allowed bootstrap_resamples: below 200 the 2.5 % and 97.5 % quantiles rest on 5 resamples or fewer.
RESAMPLES_RANGE = (200, 20000)
#: Fewer requests than this in a phase: no interval (a bootstrap of 3 values says little).
MIN_REQUESTS = 5
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


def ratio_interval(seed, label, baseline, candidate, statistic, resamples, point_ratio=None, confidence=CONFIDENCE):
    """The percentile-bootstrap interval of statistic(candidate) / statistic(baseline).

    Each resample draws len(baseline) baseline requests and len(candidate) candidate requests
    with replacement, independently (each phase from its own generator, seeded from ``seed`` and
    ``label``), and takes the ratio of the two statistics; the interval is the (1 - confidence) / 2
    and (1 + confidence) / 2 quantiles of the ratios.

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
    n_base, n_cand = len(baseline), len(candidate)
    ratios = []
    for _i in range(resamples):
        base = statistic(rng_base.choices(baseline, k=n_base))
        if not base > 0:
            return None
        ratios.append(statistic(rng_cand.choices(candidate, k=n_cand)) / base)
    tail = (1.0 - confidence) / 2.0 * 100.0
    return percentile(ratios, tail) * scale, percentile(ratios, 100.0 - tail) * scale
