# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Monte Carlo SIMULATOR of benchmark request streams for the keep-or-revert decision (issue 21).

Not a component of the collection and never a stand-in for vLLM: it feeds the collection's real decision code
(``_decision.verdict.verdict`` for the fixed protocol, ``_server.sequential.run_rounds`` then the verdict for the
sequential one) with synthetic, seeded request streams whose noise is the CPU test bed's, measured with
tests/benchmarks/aa_probe.py (docs/performance.md, "A/A calibration"):

* concurrency 1: each request's TPOT varies by ``REQUEST_CV`` (9 %: the bootstrap's 1.9 % standard error of
  throughput over 24 requests);
* concurrency 8: requests run in waves of 8; each wave's speed varies by ``WAVE_CV`` (14 %: 8 % over 3 waves), each
  request in it by 2 %;
* the host's phase shift: each phase (baseline, candidate) of each level runs at a speed exp(N(0, s / sqrt 2)), so two
  phases of the same service differ by s (the test bed's A/A figure: 8 %), whatever the number of requests.

``noise`` multiplies the request and wave noise (not the shift). A scenario is a true ratio of candidate to baseline
throughput at c=1 and at c=8 (TPOT scales as 1 / ratio, TTFT is unchanged). Used by
test_decision_error_rates.py (asserted rates, few pairs) and tests/benchmarks/decision_error_rates.py (the table of
docs/performance.md, many pairs).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import itertools
import math
import random

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import sequential as Q
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V

TOKENS = 128
TTFT_S = 0.05
BASE_TPOT_MS = {1: 27.0, 8: 40.0}
REQUEST_CV = 0.09
WAVE_CV = 0.14
IN_WAVE_CV = 0.02
SCENARIOS = {
    "aa": (1.00, 1.00, "keep is wrong"),
    "gain15": (1.15, 1.00, "keep is wrong"),
    "gain30": (1.30, 1.00, "keep is right"),
    "gain45": (1.45, 1.00, "keep is right"),
    "gain60": (1.60, 1.00, "keep is right"),
    "loss10": (1.60, 0.90, "must revert"),
    "loss20": (1.60, 0.80, "must revert"),
}
#: The role's option combinations that decide differently: decide_undetermined x phase_shift (declared or not) x
#: c8_margin (the default and the largest allowed). The concurrency-8 rule (non-inferiority) is the only one.
OPTIONS = [dict(decide_undetermined=d, phase_shift=s, c8_margin=m)
           for d, s, m in itertools.product(("point_estimate", "undetermined"), (None, 0.08), (0.05, 0.10))]
P = {"endpoint": "http://127.0.0.1:8000", "concurrency": [1, 8], "num_prompts": 50, "warmup_prompts": 10,
     "input_len": 128, "output_len": TOKENS, "dataset": "random", "temperature": 0.0, "ignore_eos": True, "seed": 0,
     "max_failed_ratio": 0.0}


def request_record(start, tpot_s, ttft_s=TTFT_S, tokens=TOKENS):
    """A successful RequestRecord started at ``start`` with ``tokens`` output tokens at ``tpot_s`` each."""
    rec = bm.RequestRecord(start)
    rec.ttft = ttft_s
    rec.itl = [tpot_s] * (tokens - 1)
    rec.latency = ttft_s + (tokens - 1) * tpot_s
    rec.output_tokens = tokens
    rec.prompt_tokens = 128
    rec.success = True
    return rec


class Stream:
    """The requests of one phase at one level: a phase speed, then request (and wave) noise."""

    def __init__(self, rng, concurrency, tpot_ms, noise, shift):
        self.rng = rng
        self.c = concurrency
        self.tpot = tpot_ms / 1000.0 * math.exp(rng.gauss(0.0, shift / math.sqrt(2.0))) if shift else tpot_ms / 1000.0
        self.noise = noise

    def take(self, count):
        records, duration = [], 0.0
        for start in range(0, count, self.c):
            size = min(self.c, count - start)
            if self.c == 1:
                wave = 1.0
                spread = REQUEST_CV * self.noise
            else:
                wave = max(0.2, 1.0 + self.rng.gauss(0.0, WAVE_CV * self.noise))
                spread = IN_WAVE_CV * self.noise
            longest = 0.0
            for _i in range(size):
                rec = request_record(duration, self.tpot * wave * max(0.2, 1.0 + self.rng.gauss(0.0, spread)))
                records.append(rec)
                longest = max(longest, rec.latency)
            duration += longest
        return records, duration


def _run(records, duration, concurrency, set_id, speculative):
    run = bm.summarize_run(records, duration, concurrency)
    spec = None
    if speculative:
        drafts = len(records) * 30.0
        spec = {"drafts": drafts, "draft_tokens": drafts * 4, "accepted_tokens": drafts * 2.8, "acceptance_rate": 0.7,
                "mean_acceptance_length": 3.8}
    run.update(spec_decode=spec, metrics_polluted=False, prompt_set_id="%s-%d" % (set_id, concurrency))
    return run


def _benchmark(runs, set_id, count):
    return bm.assemble(dict(P, num_prompts=count), {}, "m", "0.32.0", set_id, runs, [])


class Runner:
    """sequential.run_rounds's runner over the candidate's streams."""

    def __init__(self, streams):
        self.streams = streams
        self.drafts = 0.0

    def warm_up(self, _c):
        return None

    def measure(self, c, count):
        records, duration = self.streams[c].take(count)
        before = {"drafts": self.drafts, "draft_tokens": self.drafts * 4, "accepted_tokens": self.drafts * 2.8,
                  "per_pos": {0: self.drafts * 0.7}, "generation_tokens": None, "prompt_tokens": None,
                  "request_success": None, "running": 0.0, "waiting": 0.0}
        self.drafts += count * 30.0
        after = dict(before, drafts=self.drafts, draft_tokens=self.drafts * 4, accepted_tokens=self.drafts * 2.8,
                     per_pos={0: self.drafts * 0.7})
        return records, duration, before, after

    def failed_too_much(self, _run):
        return None

    def benchmark(self, runs, config):
        for run in runs:
            run["prompt_set_id"] = "cand-%d" % run["concurrency"]
        bench = _benchmark(runs, "cand", max(run["completed"] for run in runs))
        bench["config"]["sequential"] = dict(config)
        return bench


def one_decision(job):
    """(scenario, noise, shift, protocol, options (an OPTIONS index or a dict of them), pair index, resamples)
    -> (keep, verdict, requests)."""
    scenario, noise, shift, protocol, opt_index, pair, resamples = job
    r1, r8, _meaning = SCENARIOS[scenario]
    rng = random.Random("%s|%s|%s|%d" % (scenario, noise, shift, pair))   # the same pairs for every option
    base_streams = dict((c, Stream(rng, c, BASE_TPOT_MS[c], noise, shift)) for c in (1, 8))
    cand_streams = {1: Stream(rng, 1, BASE_TPOT_MS[1] / r1, noise, shift),
                    8: Stream(rng, 8, BASE_TPOT_MS[8] / r8, noise, shift)}
    options = dict(OPTIONS[opt_index]) if isinstance(opt_index, int) else dict(opt_index)
    verdict_opts = {"bootstrap_resamples": resamples,
                    "c8_margin": options.get("c8_margin", V.VERDICT_DEFAULTS["c8_margin"]),
                    "phase_shift": {"c1": options["phase_shift"], "c8": options["phase_shift"]}
                    if options["phase_shift"] else None}
    if protocol == "fixed":
        n = 50
        base = _benchmark([_run(*base_streams[c].take(n), c, "base", False) for c in (1, 8)], "base", n)
        cand = _benchmark([_run(*cand_streams[c].take(n), c, "cand", True) for c in (1, 8)], "base", n)
        result = V.verdict(base, cand, decide_undetermined=options["decide_undetermined"], **verdict_opts)
        return result["keep"], result["verdict"], 4 * (n + 10)
    n = 24
    base = _benchmark([_run(*base_streams[c].take(n), c, "base", False) for c in (1, 8)], "base", n)
    seq = Q.check_sequential(dict(verdict_opts, baseline=base, max_prompts=48, round_prompts={1: 8, 8: 16}),
                             dict(P, num_prompts=n, warmup_prompts=2))
    bench, report, failure = Q.run_rounds(dict(P, num_prompts=n, warmup_prompts=2), seq, Runner(cand_streams))
    if failure:
        raise RuntimeError(failure)
    # What the role keeps: speculative_verdict on the two benchmarks, with the role's decide_undetermined.
    result = V.verdict(base, bench, decide_undetermined=options["decide_undetermined"], **verdict_opts)
    return result["keep"], result["verdict"], report["requests"]["total"]
