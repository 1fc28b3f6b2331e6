"""A/A calibration of the verdict's intervals on real vLLM servers (issue 10).

A benchmark, not a test. It takes the keep-or-revert comparison between two phases that serve the
SAME configuration: two identical servers of one test-bed model, no speculation, side by side as in
``sequential_decisions.py``. Every comparison measures phase A on one server, then phase B on the
other (server 1 first, then server 2 first in every other comparison), with the same prompts (the seed is the comparison's number) and the workload of the
sequential protocol's baseline (``--warmup`` warm-up + ``--prompts`` measured per level, c=1 and 8).
speculative_verdict then judges B against A.

Nothing changed between A and B, so the true change is zero: a 95 % interval of the throughput
change should exclude zero in about 5 % of the comparisons. A higher share means the machine's
speed shifts between phases by more than the request-to-request noise the bootstrap sees (the
intervals assume a stationary machine), and the script reports how much: the spread of the A/A
point estimates, which is the smallest difference between two phases that this machine can show,
and the ``phase_shift`` that calibrates the verdict's intervals on it (speculative_verdict's option,
the role's ``jetson_spec_phase_shift``): the part of the A/A spread the bootstrap does not see,
sqrt(mean(log ratio^2) - mean(bootstrap standard error^2)), per level.

    .venv/bin/python tests/benchmarks/aa_probe.py [--model target] [--dtype bfloat16] [--repeats 12]

Results: tests/output/bench/aa_probe.{json,md}, written after each comparison.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# pylint: disable=wrong-import-position
from sequential_decisions import OUT_DIR, bench, criteria, judge, prepare, render, saver, srv_mod  # noqa: E402

#: The verdict's criteria that compare throughput or TPOT (not the acceptance rate, which A/A has not).
CHANGES = {"throughput_gain_c1": "throughput change c=1", "tpot_reduction_c1": "TPOT reduction c=1",
           "regression_c8": "throughput change c=8"}


def workload(args, seed):
    return {"concurrency": [1, 8], "input_len": args.input_len, "output_len": args.output_len, "dataset": "random",
            "temperature": 0, "ignore_eos": True, "seed": seed, "num_prompts": args.prompts,
            "warmup_prompts": args.warmup, "request_timeout": 600}


def compare(repeat, server_a, server_b, args):
    """One A/A comparison; with --alternate the odd ones measure the second server first (order against server)."""
    params = workload(args, 3000 + repeat)
    swapped = args.alternate and repeat % 2 == 1
    first, second = (server_b, server_a) if swapped else (server_a, server_b)
    phase_a, wall_a = bench(first.url, args.model, params)
    phase_b, wall_b = bench(second.url, args.model, params)
    verdict = judge(phase_a, phase_b)
    crit = criteria(verdict)
    return {"repeat": repeat, "seed": params["seed"], "wall_s": round(wall_a + wall_b, 1), "first_server": 2 if swapped else 1,
            "changes": {name: crit[name] for name in CHANGES if name in crit},
            "excludes_zero": {name: not crit[name]["interval"][0] <= 0 <= crit[name]["interval"][1]
                              for name in CHANGES if name in crit and crit[name]["interval"]},
            "verdict": verdict["verdict"], "time": time.strftime("%H:%M:%S"),
            # per-request TPOT (ms) at c=1 in request order, for a look at drift within a phase
            "tpot_c1": {"a": tpot_c1(phase_a), "b": tpot_c1(phase_b)}}


#: criterion -> (level key, sign): the ratio candidate / baseline is 1 + sign x the criterion's value.
RATIO_OF = {"throughput_gain_c1": ("c1", 1), "tpot_reduction_c1": ("c1", -1), "regression_c8": ("c8", 1)}
Z95 = 1.959963984540054


def phase_shift(records):
    """{'c1': x, 'c8': y} (rounded up to 0.01) and, per criterion, (RMS log ratio, RMS standard error, excess)."""
    detail, shift = {}, {"c1": 0.0, "c8": 0.0}
    for name, (level, sign) in RATIO_OF.items():
        logs, errors = [], []
        for rec in records:
            entry = rec["changes"].get(name)
            if not entry or not entry["interval"]:
                continue
            bounds = sorted(1 + sign * value for value in entry["interval"])
            if bounds[0] <= 0 or 1 + sign * entry["point"] <= 0:
                continue
            logs.append(math.log(1 + sign * entry["point"]))
            errors.append((math.log(bounds[1]) - math.log(bounds[0])) / (2 * Z95))
        if not logs:
            continue
        rms = math.sqrt(statistics.mean(v * v for v in logs))
        se = math.sqrt(statistics.mean(e * e for e in errors))
        excess = math.sqrt(max(0.0, rms * rms - se * se))
        detail[name] = (rms, se, excess)
        shift[level] = max(shift[level], math.ceil(excess * 100) / 100)
    return shift, detail


def tpot_c1(benchmark):
    run = next(r for r in benchmark["runs"] if r["concurrency"] == 1)
    return run["samples"]["tpot_ms"]


def markdown(records, args):
    lines = [f"{args['model']} ({args['dtype']}), two identical servers without speculation; each comparison: phase A "
             f"then phase B, the same prompts, {args['warmup']} warm-up + {args['prompts']} measured per level "
             f"(c=1, 8), input {args['input_len']} / output {args['output_len']} tokens.", "",
             "| # | measured first | " + " | ".join(f"{label} [95 % interval]" for label in CHANGES.values()) + " |",
             "|---|---|" + "---|" * len(CHANGES)]
    for rec in records:
        cells = []
        for name in CHANGES:
            entry = rec["changes"].get(name)
            if not entry:
                cells.append("–")
                continue
            iv = entry["interval"]
            mark = " **excludes 0**" if rec["excludes_zero"].get(name) else ""
            cells.append(f"{entry['point'] * 100:+.1f} %" + (f" [{iv[0] * 100:+.1f}, {iv[1] * 100:+.1f}]" if iv else "")
                         + mark)
        lines.append(f"| {rec['repeat']} | {rec.get('first_server', 1)} | " + " | ".join(cells) + " |")
    lines += ["", "| change | comparisons | intervals excluding 0 (expected about 5 %) | point estimates: SD | min | max "
                  "| mean, server 1 first | mean, server 2 first |", "|---|---|---|---|---|---|---|---|"]
    for name, label in CHANGES.items():
        points = [rec["changes"][name]["point"] for rec in records if name in rec["changes"]]
        if not points:
            continue
        excl = sum(rec["excludes_zero"].get(name, False) for rec in records)
        sd = statistics.stdev(points) * 100 if len(points) > 1 else float("nan")
        by_first = [[rec["changes"][name]["point"] for rec in records
                     if name in rec["changes"] and rec.get("first_server", 1) == first] for first in (1, 2)]
        means = [f"{statistics.mean(group) * 100:+.1f} %" if group else "–" for group in by_first]
        lines.append(f"| {label} | {len(points)} | {excl} ({excl / len(points) * 100:.0f} %) | {sd:.1f} points "
                     f"| {min(points) * 100:+.1f} % | {max(points) * 100:+.1f} % | {means[0]} | {means[1]} |")
    shift, detail = phase_shift(records)
    lines += ["", "| change | RMS of the A/A changes (log) | RMS bootstrap standard error | shift beyond the bootstrap |",
              "|---|---|---|---|"]
    for name, (rms, se, excess) in detail.items():
        lines.append(f"| {CHANGES[name]} | {rms * 100:.1f} % | {se * 100:.1f} % | {excess * 100:.1f} % |")
    lines += ["", f"phase_shift for this machine: c1 {shift['c1']:.2f}, c8 {shift['c8']:.2f} "
                  f"(jetson_spec_phase_shift: {{c1: {shift['c1']:.2f}, c8: {shift['c8']:.2f}}})"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--model", default="target")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--repeats", type=int, default=12, help="A/A comparisons")
    parser.add_argument("--prompts", type=int, default=24, help="measured requests per level and phase")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--alternate", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the second server first in every other comparison (separates order from server)")
    parser.add_argument("--output", default=str(OUT_DIR / "aa_probe"), help="path without extension")
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier run's JSON report")
    args = parser.parse_args(argv)
    if args.render:
        return render(args.render, markdown)
    missing = prepare((args.model,))
    if missing:
        return missing
    records = []
    out = Path(args.output)
    save = saver(out, args, records, markdown)
    extra = ["--dtype", args.dtype]
    server_a = srv_mod.VllmServer(args.model, name=args.model, extra_args=extra, log_path=OUT_DIR / "vllm-aa-a.log")
    server_b = srv_mod.VllmServer(args.model, name=args.model, extra_args=extra, log_path=OUT_DIR / "vllm-aa-b.log")
    try:
        server_a.launch()
        server_b.launch()
        server_a.wait_ready()
        server_b.wait_ready()
        for repeat in range(args.repeats):
            rec = compare(repeat, server_a, server_b, args)
            records.append(rec)
            save()
            print(f"[aa] #{repeat}: " + json.dumps({k: round(v["point"], 4) for k, v in rec["changes"].items()})
                  + f" excludes 0: {rec['excludes_zero']}", flush=True)
    finally:
        server_a.stop()
        server_b.stop()
    save()
    print("\n" + markdown(records, vars(args)) + "\n")
    print(f"[aa] results in {out}.json / .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
