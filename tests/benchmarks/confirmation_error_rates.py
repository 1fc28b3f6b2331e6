"""How often a cohort confirmation is wrong: a Monte Carlo SIMULATOR of benchmark samples (docs/fleet.md's table).

A measurement, not a test (tests/unit/plugins/module_utils/test_rollout.py asserts the bounds on fewer trials, with
the same simulator). It drives the collection's real ``_decision.rollout.confirm`` with synthetic, seeded
per-request TPOT samples:

* the canary: 50 requests at concurrency 1 with speculation off (true TPOT 30 ms) and 50 with it on (30 / gain);
* a twin: its own speed, exp(N(0, true spread)) times the canary's, and 24 requests of the kept configuration;
* every request's TPOT varies by 9 % (the CPU test bed's per-request CV, docs/performance.md);
* the acceptance rate equals the canary's (this table is about TPOT; the acceptance check only adds refusals).

"does not pay": the twin's candidate runs at its baseline speed (TPOT 30 ms x its own speed): a keep is wrong.
"pays": it runs as fast as the canary's candidate: failing confirmation sends it to a full verification.

    .venv/bin/python tests/benchmarks/confirmation_error_rates.py [--trials 4000] [--spread 0.03] [--true-spread ...]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / ".build" / "collections"))
# pylint: disable=wrong-import-position
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils import test_rollout as T  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--spread", type=float, nargs="+", default=[0.02, 0.03, 0.05],
                        help="the stated spread (jetson_spec_cohort_spread); the true spread is the same unless "
                             "--true-spread is given")
    parser.add_argument("--true-spread", type=float, default=None)
    parser.add_argument("--gains", type=float, nargs="+", default=[1.10, 1.15, 1.20, 1.30, 1.60, 2.00])
    args = parser.parse_args(argv)
    print("| stated spread | true spread | canary gain (c=1) | wrong keep (does not pay) | confirmed (pays) "
          "| conclusive |")
    print("|---|---|---|---|---|---|")
    for spread in args.spread:
        true = spread if args.true_spread is None else args.true_spread
        for gain in args.gains:
            keep, _conclusive = T.rates(gain, spread, twin_pays=False, trials=args.trials, seed=11, true_spread=true)
            confirmed, conclusive = T.rates(gain, spread, twin_pays=True, trials=args.trials, seed=12,
                                            true_spread=true)
            print(f"| {spread:.0%} | {true:.0%} | x{gain:.2f} | {keep:.2%} | {confirmed:.2%} | {conclusive:.0%} |")


if __name__ == "__main__":
    main()
