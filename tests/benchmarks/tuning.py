"""K tuning and batch-size-aware speculation on real vLLM servers, full workloads (issue 10).

A benchmark, not a test: the role tests run the short versions through ansible-playbook
(tests/integration/test_roles.py); this script measures the same decisions with the
specification's protocol (10 warm-up + 50 measured requests per level by default) and judges every
candidate with speculative_verdict against one baseline, as the role does. Every benchmark runs
through the real ansible CLI (vllm_benchmark on the system Python).

Parts (``--parts``):

* ``k``: ``target-deep`` + ``draft-deep-1layer`` (acceptance ~1.0) in float32. The baseline, then
  K = 4 (the role's start on a Thor with this test's setting), 5 and 6 (its two tuning steps by
  default). The role's own functions (plugins/module_utils/_decision/tuning.py) decide on the
  verdicts: a step is tried while the best K's acceptance rate at concurrency 1 is above
  ``--min-acceptance`` (0.6), kept when the verdict keeps it and its concurrency-1 throughput beats
  the best so far; the first step that is not better ends tuning.
* ``batch``: ``target-deep`` in float32 under ``--max-num-batched-tokens 16 --max-num-seqs 8`` (a
  token budget that fits the baseline's batch of 8 but not 8 speculating requests), for each draft
  of ``--drafts``: the planned K = 4, then the batch-size-aware configuration
  ``[[1, N, 4], [N + 1, 65536, 0]]`` with N from the role's own function (``batch_aware_limit``,
  N = 2 here), each judged against the same baseline. The role tries the second only when the
  first passes at concurrency 1 and regresses at concurrency 8; this script measures both always
  and reports what the role would have done.

Servers run with ``--enforce-eager`` as in the role tests (docs/testbed.md), or compiled with ``--compile``. One server at a time
(started, measured, stopped), so no idle server shares the two cores.

    .venv/bin/python tests/benchmarks/tuning.py [--parts k batch] [--num-prompts 50] [--warmup 10]
    .venv/bin/python tests/benchmarks/tuning.py --render tests/output/bench/tuning.json

Results: tests/output/bench/tuning.{json,md} (written after every measurement) and the server logs.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
TARGET = "target-deep"
DTYPE = ["--dtype", "float32"]
EAGER = ["--enforce-eager"]
BUDGET = ["--max-num-batched-tokens", "16", "--max-num-seqs", "8"]
K_START = 4
#: The role's _jetson_spec_tune_max_k, and the utilisation its start on a Thor lowers to (the record's value).
MAX_K = 16
GPU_MEMORY_UTILIZATION = 0.7

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(TOP / ".build" / "collections"))
# pylint: disable=wrong-import-position
from sequential_decisions import OUT_DIR, bench, criteria, judge, prepare, render, saver, srv_mod  # noqa: E402
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import batch_aware_limit  # noqa: E402
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import tuning  # noqa: E402


def workload(args, output_len):
    return {"concurrency": [1, 8], "input_len": args.input_len, "output_len": output_len, "dataset": "random",
            "temperature": 0, "ignore_eos": True, "seed": args.seed, "num_prompts": args.num_prompts,
            "warmup_prompts": args.warmup, "request_timeout": 600}


def measure(label, extra, spec, params, log_dir):
    """Start one server, benchmark it, stop it: (benchmark, wall seconds, start seconds)."""
    srv = srv_mod.VllmServer(TARGET, name=TARGET, extra_args=extra, speculative_config=spec,
                             log_path=log_dir / f"vllm-tuning-{label}.log")
    print(f"[tuning] {label}: starting {spec or 'no speculation'} {' '.join(extra)}", flush=True)
    with srv:
        result, wall = bench(srv.url, TARGET, params)
        return result, wall, round(srv.started_s, 1)


def level(bm, concurrency, key):
    for run in bm["runs"]:
        if run["concurrency"] == concurrency:
            if key == "acceptance_rate":
                return (run.get("spec_decode") or {}).get("acceptance_rate")
            return run[key]
    return None


def record(part, label, spec, bm, wall, started, verdict=None, **more):
    rec = {"part": part, "label": label, "speculative_config": spec, "wall_s": round(wall, 1), "start_s": started,
           "throughput_c1": level(bm, 1, "throughput_tok_s"), "tpot_p50_c1": level(bm, 1, "tpot_ms_p50"),
           "throughput_c8": level(bm, 8, "throughput_tok_s"), "tpot_p50_c8": level(bm, 8, "tpot_ms_p50"),
           "ttft_p50_c1": level(bm, 1, "ttft_ms_p50"), "ttft_p50_c8": level(bm, 8, "ttft_ms_p50"),
           "acceptance_c1": level(bm, 1, "acceptance_rate"), "acceptance_c8": level(bm, 8, "acceptance_rate"),
           "load1": round(os.getloadavg()[0], 2), "time": time.strftime("%H:%M:%S")}
    if verdict is not None:
        rec.update(verdict=verdict["verdict"], keep=verdict["keep"], determined=verdict["determined"],
                   deltas=verdict["deltas"], criteria=criteria(verdict), reasons=verdict["reasons"],
                   point_estimate_verdict=verdict.get("point_estimate_verdict"))
    rec.update(more)
    return rec


def passes_c1_regresses_c8(verdict):
    """The role's trigger for batch-size-aware speculation (tasks/verify.yml): not kept, and the verdict's
    c8_regression_only (c=1 passes, on its intervals or its point estimates where they leave it open; c=8 regressed)."""
    return not verdict["keep"] and bool(verdict.get("c8_regression_only"))


def serve_args(args, *more):
    return DTYPE + ([] if args.compile else EAGER) + [arg for group in more for arg in group]


def part_k(args, records, save):
    """The baseline, then K_START and its tuning steps, each measured; what the role does with them is decided by the
    role's own functions (_decision.tuning: tuning_next, tuning_step); a K the role would not have tried is measured
    and reported as such."""
    params = workload(args, args.output_len)
    base, wall, started = measure("k-baseline", serve_args(args), None, params, OUT_DIR)
    records.append(record("k", "baseline", None, base, wall, started))
    save()
    tune, step = None, 0
    for k in range(K_START, K_START + 1 + args.tune_steps):
        spec = {"method": "draft_model", "model": "draft-deep-1layer", "num_speculative_tokens": k}
        cand, wall, started = measure(f"k{k}", serve_args(args), spec, params, OUT_DIR)
        verdict = judge(base, cand, num_speculative_tokens=k)
        tput = level(cand, 1, "throughput_tok_s")
        if k == K_START:
            role = "kept (the change itself)" if verdict["keep"] else "not kept: the change is reverted, no tuning"
            if verdict["keep"]:
                tune = tuning.start(spec, GPU_MEMORY_UTILIZATION, cand["runs"])
        elif tune is not None and tune["state"] == "go" and tuning.next_step(tune, args.min_acceptance, MAX_K)["go"]:
            step += 1
            tune = tuning.record_step(tune, step, k, {"healthy": True, "failure": None}, verdict, cand, args.tune_steps)
            role = f"step {step}: {'kept' if tune['tried'][-1]['kept'] else 'not better: tuning stops'}"
        else:
            if tune is not None and tune["state"] == "go":
                tune = tuning.next_step(tune, args.min_acceptance, MAX_K)["tune"]
            role = "measured only (the role would not have tried it)"
        records.append(record("k", f"K={k}", spec, cand, wall, started, verdict, role=role))
        save()
        print(f"[tuning] K={k}: {verdict['verdict']}, c=1 {tput} tok/s; {role}", flush=True)
    records.append({"part": "k", "label": "summary", "kept_k": tune["best"]["k"] if tune else None,
                    "stopped": (tune["stopped"] or f"reached the {args.tune_steps} tuning step(s)") if tune
                    else "the change itself was not kept"})
    save()


def part_batch(args, records, save):
    extra = serve_args(args, BUDGET)
    params = workload(args, args.batch_output_len)
    limit = batch_aware_limit(args.max_batch, K_START, extra)
    n = limit["max_batch"]
    base, wall, started = measure("batch-baseline", extra, None, params, OUT_DIR)
    records.append(record("batch", "baseline", None, base, wall, started))
    save()
    for draft in args.drafts:
        planned = {"method": "draft_model", "model": draft, "num_speculative_tokens": K_START}
        cand, wall, started = measure(f"batch-{draft}-planned", extra, planned, params, OUT_DIR)
        verdict = judge(base, cand, num_speculative_tokens=K_START)
        trigger = passes_c1_regresses_c8(verdict)
        records.append(record("batch", f"{draft}: planned K={K_START}", planned, cand, wall, started, verdict,
                              role=("batch-size-aware tried" if n else f"batch-size-aware not tried: {limit['reason']}")
                              if trigger else "kept or reverted as it is: batch-size-aware not tried"))
        save()
        if n < 1:
            print(f"[tuning] {draft}: no batch size can turn speculation off: {limit['reason']}", flush=True)
            continue
        aware = dict(planned, num_speculative_tokens_per_batch_size=[[1, n, K_START], [n + 1, 65536, 0]])
        cand, wall, started = measure(f"batch-{draft}-aware", extra, aware, params, OUT_DIR)
        verdict = judge(base, cand, num_speculative_tokens=K_START)
        records.append(record("batch", f"{draft}: batch-size-aware N={n}", aware, cand, wall, started, verdict,
                              limit_reason=limit["reason"],
                              role=("kept" if verdict["keep"] else "not kept: reverted") if trigger
                              else "measured only (the role would not have tried it)"))
        save()
        print(f"[tuning] {draft}: planned trigger {trigger}; batch-size-aware {verdict['verdict']}", flush=True)


def _crit(rec, name):
    entry = (rec.get("criteria") or {}).get(name)
    if not entry:
        return "–"
    iv = entry["interval"]
    return f"{entry['point'] * 100:+.1f} %" + (f" [{iv[0] * 100:+.1f}, {iv[1] * 100:+.1f}]" if iv else "") \
        + f" {entry['status']}"


def markdown(records, args):
    lines = [f"input {args['input_len']} tokens, output {args['output_len']} (K tuning) / {args['batch_output_len']} "
             f"(batch-size-aware), random prompts (seed {args['seed']}), temperature 0, ignore_eos, concurrency 1 and 8, "
             f"{args['warmup']} warm-up + {args['num_prompts']} measured requests per level; `target-deep` in float32, "
             f"{'compiled (torch.compile)' if args.get('compile') else '--enforce-eager'}; every candidate judged by "
             "speculative_verdict against its part's baseline (95 % intervals, the default non-inferiority rule at c=8).", "",
             "| part | configuration | tok/s c=1 | TPOT p50 c=1 (ms) | tok/s c=8 | TPOT / TTFT p50 c=8 (ms) "
             "| acceptance c=1 / c=8 | verdict | gain c=1 | TPOT reduction c=1 | change c=8 | the role |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def num(value, fmt="{:.1f}"):
        return "–" if value is None else fmt.format(value)
    for rec in records:
        if rec["label"] == "summary":
            lines.append(f"| {rec['part']} | **kept K = {rec['kept_k']}** ({rec['stopped']}) | | | | | | | | | | |")
            continue
        lines.append(f"| {rec['part']} | {rec['label']} | {num(rec['throughput_c1'])} | {num(rec['tpot_p50_c1'], '{:.2f}')} "
                     f"| {num(rec['throughput_c8'])} | {num(rec['tpot_p50_c8'], '{:.1f}')} / "
                     f"{num(rec.get('ttft_p50_c8'), '{:.0f}')} | {num(rec['acceptance_c1'], '{:.2f}')} / "
                     f"{num(rec['acceptance_c8'], '{:.2f}')} | {rec.get('verdict', 'baseline')} "
                     f"| {_crit(rec, 'throughput_gain_c1')} | {_crit(rec, 'tpot_reduction_c1')} "
                     f"| {_crit(rec, 'regression_c8')} | {rec.get('role', '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--parts", nargs="+", default=["k", "batch"], choices=["k", "batch"])
    parser.add_argument("--num-prompts", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=128, help="output tokens of the K tuning part")
    parser.add_argument("--batch-output-len", type=int, default=32, help="output tokens of the batch-size-aware part")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tune-steps", type=int, default=2, help="K + 1 ... K + steps (the role's default: 2)")
    parser.add_argument("--min-acceptance", type=float, default=0.6,
                        help="jetson_spec_tune_min_acceptance: tune only above this acceptance at c=1 (the role's default: 0.6)")
    parser.add_argument("--max-batch", type=int, default=4, help="jetson_spec_batch_aware_max_batch (the role's default: 4)")
    parser.add_argument("--drafts", nargs="+", default=["draft-deep-tiny", "draft-deep-1layer"],
                        choices=["draft-deep-tiny", "draft-deep-1layer"])
    parser.add_argument("--compile", action="store_true",
                        help="serve without --enforce-eager (vLLM compiles the model at every start: slower starts)")
    parser.add_argument("--output", default=str(OUT_DIR / "tuning"), help="path without extension")
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier run's JSON report")
    args = parser.parse_args(argv)
    if args.render:
        return render(args.render, markdown)
    missing = prepare((TARGET, "draft-deep-1layer", "draft-deep-tiny"))
    if missing:
        return missing
    out = Path(args.output)
    records = []
    t_start = time.monotonic()
    save = saver(out, args, records, markdown)

    for part in args.parts:  # in the order given
        {"k": part_k, "batch": part_batch}[part](args, records, save)
    save()
    print("\n" + markdown(records, vars(args)) + "\n")
    print(f"[tuning] {time.monotonic() - t_start:.0f} s; results in {out}.json / .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
