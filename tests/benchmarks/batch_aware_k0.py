"""K = 0 above a batch size, on real vLLM: the residual cost, and what happens at the threshold (issue 20).

A benchmark, not a test. It starts three real vLLM servers of the test bed (docs/testbed.md) with the same target:

* ``baseline``: no speculation;
* ``spec``: a draft model with K = 4 at every batch size;
* ``batch_aware``: the same draft with ``num_speculative_tokens_per_batch_size`` ``[[1, N, 4], [N + 1, 65536, 0]]``,
  the schedule the role tries after a concurrency-8 regression (N = 4 by default).

The two speculating servers run with ``--per-request-spec-decode-metrics summary`` (vllm#48915), so each request
says how many verify steps drafted for it. It measures each server in turn, ``--repeats`` times (the order rotates,
so all three see the same drift of the machine), at concurrency 1, N, N + 1 and 8 with vllm_benchmark through the
real ansible CLI, and reports per level:

* throughput against the baseline's (the residual cost of K = 0 is batch_aware / baseline above N, where nothing
  should be drafted);
* the share of the requests' output tokens that came out of drafting steps, (drafts + accepted) / output tokens
  (the measure of the verdict's ``drafting_off_above`` check), from the requests' own metrics. Between N and the
  next level a share between 0 and 1 is K switching with the number of requests scheduled (vllm#49548: the scheduler
  keys K off every scheduled request, prefills included, and the running set shrinks as requests finish); above N
  any drafting is K = 0 ignored (vllm#51510, Model Runner v2).

On the CPU build vLLM uses the V1 model runner (Model Runner v2 needs Triton: "Model Runner V2 requires Triton;
using the V1 model runner instead"), so Model Runner v2 itself is not measured here.

    .venv/bin/python tests/benchmarks/batch_aware_k0.py [--repeats 3] [--max-batch 4] [--draft draft-perfect]
        [--target target-deep --draft draft-deep-1layer --dtype float32 --output tests/output/bench/batch_aware_k0_deep]

Results: tests/output/bench/batch_aware_k0.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sequential_decisions import OUT_DIR, TOP, bench, prepare, srv_mod  # noqa: E402  pylint: disable=wrong-import-position

sys.path.insert(0, str(TOP / ".build" / "collections"))
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V  # noqa: E402  pylint: disable=wrong-import-position

K = 4
PER_REQUEST = ["--per-request-spec-decode-metrics", "summary"]


def servers(args):
    """name -> VllmServer (not started)."""
    config = {"method": "draft_model", "model": args.draft, "num_speculative_tokens": K}
    schedule = [[1, args.max_batch, K], [args.max_batch + 1, 65536, 0]]
    specs = {
        "baseline": dict(),
        "spec": dict(speculative_config=config, extra_args=PER_REQUEST),
        "batch_aware": dict(speculative_config=dict(config, num_speculative_tokens_per_batch_size=schedule),
                            extra_args=PER_REQUEST),
    }
    dtype = ["--dtype", args.dtype]
    return {name: srv_mod.VllmServer(args.target, name=args.target, log_path=OUT_DIR / f"vllm-k0-{name}.log",
                                     **dict(spec, extra_args=spec.get("extra_args", []) + dtype))
            for name, spec in specs.items()}


def levels(max_batch):
    return sorted({1, max_batch, max_batch + 1, 8})


def measure(srv, args, seed):
    params = {"concurrency": levels(args.max_batch), "input_len": args.input_len, "output_len": args.output_len,
              "dataset": "random", "temperature": 0, "ignore_eos": True, "seed": seed, "request_timeout": 600,
              "num_prompts": args.prompts, "warmup_prompts": 2}
    benchmark, wall = bench(srv.url, args.target, params)
    # the verdict's own drafting_off_above measure, at every level (above "batch size 0")
    drafting = V.drafting_above({run["concurrency"]: run for run in benchmark["runs"]}, 0)["levels"]
    runs = {}
    for run in benchmark["runs"]:
        spec = run.get("spec_decode") or {}
        out = run.get("total_output_tokens") or 0
        drafts = spec.get("drafts") or 0
        accepted = spec.get("accepted_tokens") or 0
        runs[run["concurrency"]] = {
            "throughput_tok_s": run["throughput_tok_s"], "tpot_ms_p50": run["tpot_ms_p50"],
            "ttft_ms_p50": run["ttft_ms_p50"], "output_tokens": out, "drafts": drafts, "accepted": accepted,
            # (drafts + accepted) / output tokens, capped at 1: the share of the output from drafting steps
            "drafting_share": drafting[run["concurrency"]]["share"],
            "source": spec.get("source"), "acceptance_rate": spec.get("acceptance_rate")}
    return {"runs": runs, "wall_s": round(wall, 1), "warnings": benchmark.get("warnings", [])}


def _ratio(tput, name):
    if tput[name] is None or not tput["baseline"]:
        return "–"
    return f"{tput[name]:.1f} (x{tput[name] / tput['baseline']:.2f})"


def markdown(records, args):
    names = ("baseline", "spec", "batch_aware")
    lines = [f"K = 0 above batch size {args['max_batch']} on real vLLM (CPU build, V1 model runner): target "
             f"{args['target']}, draft {args['draft']} (K = {K}, {args.get('dtype', 'bfloat16')}), input {args['input_len']} / output "
             f"{args['output_len']} tokens, {args['prompts']} requests per level, {len(records)} measurement(s).", "",
             "| concurrency | baseline tok/s | spec tok/s (x baseline) | batch_aware tok/s (x baseline) "
             "| spec: output from drafting steps | batch_aware: output from drafting steps |",
             "|---|---|---|---|---|---|"]
    for conc in levels(args["max_batch"]):
        tput = {}
        share = {}
        for name in names:
            values = [r["runs"][str(conc)]["throughput_tok_s"] for r in records if r["server"] == name]
            tput[name] = statistics.mean(values) if values else None
            shares = [r["runs"][str(conc)]["drafting_share"] for r in records if r["server"] == name
                      and r["runs"][str(conc)]["drafting_share"] is not None]
            share[name] = statistics.mean(shares) if shares else 0.0

        base = f"{tput['baseline']:.1f}" if tput["baseline"] is not None else "–"
        lines.append(f"| {conc} | {base} | {_ratio(tput, 'spec')} | {_ratio(tput, 'batch_aware')} | {share['spec']:.0%} "
                     f"| {share['batch_aware']:.0%} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--target", default="target")
    parser.add_argument("--draft", default="draft-perfect")
    parser.add_argument("--dtype", default="bfloat16", help="float32 for the target-deep pair (see docs/performance.md)")
    parser.add_argument("--max-batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--output", default=str(OUT_DIR / "batch_aware_k0"))
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier run's JSON report")
    args = parser.parse_args(argv)
    if args.render:
        report = json.loads(Path(args.render).read_text())
        print(markdown(report["records"], report["args"]))
        return 0
    missing = prepare((args.target, args.draft))
    if missing:
        return missing
    out = Path(args.output)
    records = []
    t_start = time.monotonic()
    srvs = servers(args)
    try:
        for srv in srvs.values():
            srv.launch()
        for srv in srvs.values():
            srv.wait_ready()
        order = list(srvs)
        for repeat in range(args.repeats):
            for name in order[repeat % 3:] + order[:repeat % 3]:
                rec = dict(measure(srvs[name], args, 2000 + repeat), server=name, repeat=repeat,
                           time=time.strftime("%H:%M:%S"))
                rec["runs"] = {str(c): v for c, v in rec["runs"].items()}
                records.append(rec)
                summary = ", ".join(f"c={c} {v['throughput_tok_s']} tok/s drafting {v['drafting_share']}"
                                    for c, v in rec["runs"].items())
                print(f"[k0] #{repeat} {name}: {summary}", flush=True)
                report = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args), "records": records,
                          "elapsed_s": round(time.monotonic() - t_start, 1)}
                out.with_suffix(".json").write_text(json.dumps(report, indent=1))
                out.with_suffix(".md").write_text(markdown(records, vars(args)) + "\n")
    finally:
        for srv in srvs.values():
            srv.stop()
    print("\n" + markdown(records, vars(args)) + "\n")
    print(f"[k0] {time.monotonic() - t_start:.0f} s; results in {out}.json / .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
