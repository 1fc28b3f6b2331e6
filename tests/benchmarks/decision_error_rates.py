"""How often the keep-or-revert decision is wrong: a Monte Carlo SIMULATOR of request streams (issue 21).

A measurement, not a test (nothing here asserts a rate; docs/performance.md carries the table it prints).
The simulator itself is tests/unit/plugins/module_utils/decision_sim.py (test_decision_error_rates.py asserts the
rates on fewer pairs). It drives the collection's real decision code - ``_decision.verdict.verdict`` for the fixed protocol and
``_server.sequential.run_rounds`` for the sequential one - with synthetic, seeded request streams whose noise is
the CPU test bed's, measured with tests/benchmarks/aa_probe.py (docs/performance.md, "A/A calibration"):

* concurrency 1: each request's TPOT varies by ``REQUEST_CV`` (9 %: the bootstrap's 1.9 % standard error of
  throughput over 24 requests);
* concurrency 8: requests run in waves of 8; each wave's speed varies by ``WAVE_CV`` (14 %: 8 % over 3 waves), each
  request in it by 2 %;
* the host's phase shift: each phase (baseline, candidate) of each level runs at a speed exp(N(0, s / sqrt 2)), so two
  phases of the same service differ by s = 8 % (the test bed's A/A figure), whatever the number of requests.

``--noise 1 2 4`` multiplies the request and wave noise (not the shift; ``--shift`` sets it). A scenario is a true
ratio of candidate to baseline throughput at c=1 and at c=8 (TPOT scales as 1 / ratio, TTFT is unchanged):

  aa        1.00 / 1.00   nothing changes: every keep is wrong
  gain15    1.15 / 1.00   below the +30 % bar: a keep is wrong
  gain30    1.30 / 1.00   on the specification's bar (+30 %, TPOT -23 %), c=8 unchanged: a keep is right (power)
  gain45    1.45 / 1.00   above the bar, c=8 unchanged: a keep is right (power)
  gain60    1.60 / 1.00   well above the bar (power)
  loss10    1.60 / 0.90   a c=8 loss of 10 %: must revert
  loss20    1.60 / 0.80   a c=8 loss of 20 %: must revert

Protocols: ``fixed`` (the specification's 50 measured requests per level and phase) and ``sequential`` (the role's
default: baseline 24, candidate rounds of 8 at c=1 and 16 at c=8, at most 48 per level). Option combinations: the
role's ``decide_undetermined`` x ``phase_shift`` (given to the verdict or not) x ``c8_margin`` (0.05, the default,
and 0.10, the most allowed); the concurrency-8 rule is non-inferiority, the only one; keep_marginal false. The
bootstrap uses ``--resamples`` (400) resamples: enough for a rate, not for a single decision.

    .venv/bin/python tests/benchmarks/decision_error_rates.py [--pairs 200] [--noise 1 2 4] [--jobs 2]
        [--scenarios aa gain15 ...] [--json tests/output/bench/decision_error_rates.json]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / ".build" / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils import decision_sim as SIM  # noqa: E402

SCENARIOS, OPTIONS, one_decision = SIM.SCENARIOS, SIM.OPTIONS, SIM.one_decision


LABELS = {"aa": "A/A (0 / 0): keep is wrong", "gain15": "+15 % / 0: keep is wrong",
          "gain30": "+30 % / 0 (the bar): keep is right",
          "gain45": "+45 % / 0: keep is right", "gain60": "+60 % / 0: keep is right",
          "loss10": "+60 % / -10 %: must revert", "loss20": "+60 % / -20 %: must revert"}


def summary(rows):
    """The table of docs/performance.md: per scenario, noise and protocol, the keep rate of the role's default, of
    the README's noisy-host calibration and of the least favourable option combination."""
    cells = {}
    for row in rows:
        cells.setdefault((row["scenario"], row["noise"], row["protocol"]), []).append(row)
    lines = ["| scenario (true c=1 / c=8 change) | noise | protocol | default | noisy-host calibration | "
             "worst option combination | median requests (default) |", "|---|---|---|---|---|---|---|"]

    def pick(cell, decide, shift, margin=0.05):
        return next(r for r in cell if r["decide_undetermined"] == decide and r["phase_shift_given"] == shift
                    and r["c8_margin"] == margin)

    for scenario in SCENARIOS:
        for noise in sorted({key[1] for key in cells}):
            for protocol in ("fixed", "sequential"):
                cell = cells.get((scenario, noise, protocol))
                if not cell:
                    continue
                default = pick(cell, "point_estimate", 0.0)
                noisy = pick(cell, "undetermined", 0.08)
                right = "right" in SCENARIOS[scenario][2]
                worst = (min if right else max)(cell, key=lambda r: r["keep_rate"])
                lines.append("| %s | %gx | %s | %.0f %% | %.0f %% | %.0f %% (%s, shift %g, margin %g) | %d |"
                             % (LABELS[scenario], noise, protocol, 100 * default["keep_rate"], 100 * noisy["keep_rate"],
                                100 * worst["keep_rate"], worst["decide_undetermined"], worst["phase_shift_given"],
                                worst["c8_margin"], default["median_requests"]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--noise", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    parser.add_argument("--shift", type=float, default=0.08, help="the host's true phase shift (0: none)")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--protocols", nargs="+", default=["fixed", "sequential"], choices=["fixed", "sequential"])
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--render", type=Path, help="print the summary table of an earlier --json and exit")
    parser.add_argument("--json", type=Path, default=TOP / "tests" / "output" / "bench" / "decision_error_rates.json")
    args = parser.parse_args()
    if args.render:
        print(summary(json.loads(args.render.read_text())["rows"]))
        return
    jobs = [(s, n, args.shift, p, o, i, args.resamples)
            for s in args.scenarios for n in args.noise for p in args.protocols for o in range(len(OPTIONS))
            for i in range(args.pairs)]
    started = time.monotonic()
    with multiprocessing.Pool(args.jobs) as pool:
        results = pool.map(one_decision, jobs, chunksize=16)
    cells = {}
    for job, (keep, verdict, requests) in zip(jobs, results):
        key = job[:5]
        cell = cells.setdefault(key, {"keep": 0, "n": 0, "requests": [], "verdicts": {}})
        cell["n"] += 1
        cell["keep"] += bool(keep)
        cell["requests"].append(requests)
        cell["verdicts"][verdict] = cell["verdicts"].get(verdict, 0) + 1
    rows = []
    for (scenario, noise, shift, protocol, opt_index), cell in sorted(cells.items()):
        opts = OPTIONS[opt_index]
        requests = sorted(cell["requests"])
        rows.append({"scenario": scenario, "meaning": SCENARIOS[scenario][2], "noise": noise, "true_shift": shift,
                     "protocol": protocol, "decide_undetermined": opts["decide_undetermined"],
                     "c8_margin": opts["c8_margin"], "phase_shift_given": opts["phase_shift"] or 0.0,
                     "pairs": cell["n"], "keep_rate": cell["keep"] / cell["n"],
                     "median_requests": requests[len(requests) // 2], "verdicts": cell["verdicts"]})
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"pairs": args.pairs, "resamples": args.resamples, "seconds":
                                     round(time.monotonic() - started), "rows": rows}, indent=1) + "\n")
    print("| scenario | noise | protocol | decide_undetermined | c8_margin | phase_shift given | keep rate "
          "| median requests |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| %s (%s) | %gx | %s | %s | %g | %g | %.1f %% | %d |"
              % (row["scenario"], row["meaning"], row["noise"], row["protocol"], row["decide_undetermined"],
                 row["c8_margin"], row["phase_shift_given"], 100.0 * row["keep_rate"], row["median_requests"]))
    print()
    print(summary(rows))
    print("%d decisions in %.0f s -> %s" % (len(jobs), time.monotonic() - started, args.json))


if __name__ == "__main__":
    main()
