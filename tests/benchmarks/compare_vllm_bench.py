"""Compare jetson_llm.vllm.vllm_benchmark with `vllm bench serve` on the same real vLLM server.

A benchmark, not a test (``make bench``). For each server configuration it starts a real vLLM
from the test bed (docs/testbed.md), then for each concurrency runs, N times and alternating which
goes first:

* the module, through the ansible CLI (system Python, standard library only), and
* ``vllm bench serve`` from the test bed's venv,

on the same workload: vLLM's random dataset, same input/output lengths, prompt count, warm-up
count, temperature 0, ignore_eos, same seed. It prints tpot_ms_p50 and throughput_tok_s side by
side with their relative difference (target: within 3 %), plus TTFT/ITL for information, and
writes everything to tests/output/bench/ (JSON and a Markdown table).

Both clients run in a session of their own (the module's ansible worker calls setsid; the bench
is started with one), like clients reaching a server over SSH, and the server runs at a lower CPU
priority (see tests/testbed/server.py): on a 2-core machine a CPU-only vLLM would otherwise starve
whichever client is outside its scheduling group.

    .venv/bin/python tests/benchmarks/compare_vllm_bench.py [--configs tiny deep-spec] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
OUT_DIR = TOP / "tests" / "output" / "bench"
MODULE = "jetson_llm.vllm.vllm_benchmark"
TARGET_AGREEMENT = 0.03
VOCAB = 512  # the test bed's tokenizer (tests/testbed/make_models.py)
SERVER_ARGS = ["--no-enable-prefix-caching"]

sys.path.insert(0, str(TOP / "tests" / "integration"))
from conftest import run_module  # noqa: E402  pylint: disable=wrong-import-position

# The test bed's server module (tests/testbed/server.py), loaded once by the fixtures' module.
from vllm_testbed import testbed_server as srv_mod  # noqa: E402  pylint: disable=wrong-import-position

# name -> (target model, speculative config or None, prompts at c=1, prompts at c>1)
CONFIGS = {
    "tiny": ("target", None, 50, 200),
    "tiny-spec": ("target", {"method": "draft_model", "model": "draft-perfect", "num_speculative_tokens": 4}, 50, 200),
    "deep": ("target-deep", None, 20, 80),
    "deep-spec": ("target-deep", {"method": "draft_model", "model": "draft-deep-1layer", "num_speculative_tokens": 4},
                  30, 120),
}


def same_prompts(url, model, n, args, tag):
    """Prompt files holding the SAME texts for both clients (--prompts same): vLLM's random-dataset recipe
    (runs of consecutive token ids from a random offset) decoded with the server's /detokenize.

    The module reads {"prompt", "output_len"} lines (dataset=file: measured prompts from the first line,
    warm-ups from the last lines); vllm bench serve's custom dataset reads {"prompt", "output_tokens"}
    (first lines, --disable-shuffle; its warm-ups repeat the first prompt).
    """
    rng = random.Random(f"{args.seed}:{tag}")
    lines = []
    for i in range(n + args.warmup):
        offset = rng.randrange(VOCAB - 3)
        ids = [3 + (offset + i + j) % (VOCAB - 3) for j in range(args.input_len - 1)]  # no special tokens (ids 0-2)
        body = json.dumps({"model": model, "tokens": ids}).encode()
        req = urllib.request.Request(url + "/detokenize", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:  # nosec: 127.0.0.1
            lines.append(json.loads(resp.read())["prompt"])
    ours = OUT_DIR / f"prompts-{tag}-module.jsonl"
    theirs = OUT_DIR / f"prompts-{tag}-vllm-bench.jsonl"
    ours.write_text("".join(json.dumps({"prompt": t, "output_len": args.output_len}) + "\n" for t in lines))
    theirs.write_text("".join(json.dumps({"prompt": t, "output_tokens": args.output_len}) + "\n" for t in lines[:n]))
    return ours, theirs


def run_ours(url, model, c, n, args, prompts_file=None):
    params = {"endpoint": url, "model": model, "concurrency": [c], "num_prompts": n, "warmup_prompts": args.warmup,
              "input_len": args.input_len, "output_len": args.output_len, "dataset": "random", "temperature": 0,
              "ignore_eos": True, "seed": args.seed, "request_timeout": 600}
    if prompts_file:
        params.update(dataset="file", prompts_file=str(prompts_file))
    t0 = time.monotonic()
    result = run_module(MODULE, params)
    wall = time.monotonic() - t0
    if result.get("failed"):
        raise SystemExit(f"the module failed: {result.get('msg')}")
    run = result["benchmark"]["runs"][0]
    if run["failed"]:
        raise SystemExit(f"the module counted {run['failed']} failed requests: {run['errors']}")
    return {"tpot_ms_p50": run["tpot_ms_p50"], "throughput_tok_s": run["throughput_tok_s"],
            "ttft_ms_p50": run["ttft_ms_p50"], "itl_ms_p50": run["itl_ms_p50"], "e2e_ms_p50": run["e2e_latency_ms_p50"],
            "duration_s": run["duration_s"], "completed": run["completed"],
            "input_tokens": run["total_input_tokens"], "output_tokens": run["total_output_tokens"],
            "acceptance_rate": (run["spec_decode"] or {}).get("acceptance_rate"), "wall_s": round(wall, 1),
            "load1": os.getloadavg()[0]}


def run_vllm_bench(url, model, tokenizer, c, n, args, tag, prompts_file=None):
    result_file = OUT_DIR / f"vllm-bench-{tag}.json"
    if result_file.exists():
        result_file.unlink()
    cmd = [str(srv_mod.testbed_dir() / "venv" / "bin" / "vllm"), "bench", "serve", "--backend", "openai",
           "--base-url", url, "--endpoint", "/v1/completions", "--model", model, "--tokenizer", tokenizer,
           "--num-prompts", str(n), "--max-concurrency", str(c), "--num-warmups", str(args.warmup), "--ignore-eos", "--temperature", "0",
           "--seed", str(args.seed), "--disable-tqdm", "--percentile-metrics", "ttft,tpot,itl,e2el",
           "--metric-percentiles", "50,99", "--save-result", "--result-dir", str(OUT_DIR),
           "--result-filename", result_file.name]
    if prompts_file:
        cmd += ["--dataset-name", "custom", "--dataset-path", str(prompts_file), "--custom-output-len",
                str(args.output_len), "--skip-chat-template", "--disable-shuffle"]
    else:
        cmd += ["--dataset-name", "random", "--random-input-len", str(args.input_len),
                "--random-output-len", str(args.output_len), "--random-range-ratio", "0"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, text=True, capture_output=True, check=False, start_new_session=True)
    wall = time.monotonic() - t0
    (OUT_DIR / f"vllm-bench-{tag}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not result_file.exists():
        raise SystemExit(f"vllm bench serve failed ({proc.returncode}); log {OUT_DIR / f'vllm-bench-{tag}.log'}:\n"
                         + "\n".join((proc.stdout + proc.stderr).splitlines()[-30:]))
    data = json.loads(result_file.read_text())
    if data["failed"]:
        raise SystemExit(f"vllm bench serve counted {data['failed']} failed requests")
    return {"tpot_ms_p50": data["median_tpot_ms"], "throughput_tok_s": data["output_throughput"],
            "ttft_ms_p50": data["median_ttft_ms"], "itl_ms_p50": data["median_itl_ms"], "e2e_ms_p50": data["median_e2el_ms"],
            "duration_s": data["duration"], "completed": data["completed"],
            "input_tokens": data["total_input_tokens"], "output_tokens": data["total_output_tokens"],
            # vLLM writes spec_decode_acceptance_rate in percent (0.32's vllm/benchmarks/serve.py: accepted / drafted
            # * 100); the collection's contract is a fraction, so it is converted here (0.0 is a real value).
            "acceptance_rate": (None if data.get("spec_decode_acceptance_rate") is None
                                else round(data["spec_decode_acceptance_rate"] / 100.0, 4)),
            "wall_s": round(wall, 1), "load1": os.getloadavg()[0]}


def rel(a, b):
    return None if a is None or b is None or b == 0 else (a - b) / b


def pct(x):
    return "n/a" if x is None else f"{x * 100:+.1f} %"


def summarise(pairs):
    """pairs: [(ours, bench)] -> per-metric means, relative difference of the means, paired differences."""
    out = {}
    for key in ("tpot_ms_p50", "throughput_tok_s", "ttft_ms_p50", "itl_ms_p50"):
        ours = [p[0][key] for p in pairs]
        theirs = [p[1][key] for p in pairs]
        paired = [rel(a, b) for a, b in zip(ours, theirs)]
        out[key] = {"ours": ours, "vllm_bench": theirs, "ours_mean": statistics.fmean(ours),
                    "vllm_bench_mean": statistics.fmean(theirs),
                    "rel_diff_of_means": rel(statistics.fmean(ours), statistics.fmean(theirs)),
                    "paired_rel_diffs": paired,
                    "ours_spread": (max(ours) - min(ours)) / statistics.fmean(ours) if len(ours) > 1 else None,
                    "vllm_bench_spread": (max(theirs) - min(theirs)) / statistics.fmean(theirs) if len(theirs) > 1 else None}
    return out


def markdown(results, args, server_args=()):
    caching = "no prefix caching" if "--no-enable-prefix-caching" in server_args else "prefix caching on"
    lines = [f"input {args['input_len']} / output {args['output_len']} tokens, temperature 0, ignore_eos, "
             f"{args['warmup']} warm-up requests, seed {args['seed']}, {args['repeats']} repeats (order alternated), "
             f"{caching}; values are means over the repeats; diff = (module - vllm bench) / vllm bench, of the "
             "means and [median of the per-repeat pairs]; prompts: random = each tool's random dataset, "
             "same = identical prompt texts.", "",
             "| server | prompts | c | n | TPOT p50 module / vllm bench (ms) | diff | tok/s module / vllm bench | diff "
             "| TTFT p50 (ms) | ITL p50 (ms) | spread of repeats TPOT / tok/s (module; vllm bench) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        s = res["summary"]
        tp, th, tt, it = s["tpot_ms_p50"], s["throughput_tok_s"], s["ttft_ms_p50"], s["itl_ms_p50"]

        def spread(m):
            return "/".join("n/a" if m[k] is None else f"{m[k] * 100:.0f}%" for k in ("ours_spread", "vllm_bench_spread"))
        lines.append(
            f"| {res['config']} | {res.get('prompts', 'random')} | {res['concurrency']} | {res['num_prompts']} "
            f"| {tp['ours_mean']:.3f} / {tp['vllm_bench_mean']:.3f} | {pct(tp['rel_diff_of_means'])} "
            f"[{pct(statistics.median(tp['paired_rel_diffs']))}] "
            f"| {th['ours_mean']:.1f} / {th['vllm_bench_mean']:.1f} | {pct(th['rel_diff_of_means'])} "
            f"[{pct(statistics.median(th['paired_rel_diffs']))}] "
            f"| {tt['ours_mean']:.2f} / {tt['vllm_bench_mean']:.2f} | {it['ours_mean']:.3f} / {it['vllm_bench_mean']:.3f} "
            f"| {spread(tp)}; {spread(th)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--configs", nargs="+", default=["tiny", "tiny-spec", "deep-spec"], choices=sorted(CONFIGS))
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-prompts", type=int, help="override the per-configuration prompt counts")
    parser.add_argument("--prompts", nargs="+", default=["random"], choices=["random", "same"],
                        help="random: each tool's own random dataset (same recipe, different draws); "
                             "same: identical prompt texts for both (isolates the clients)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a mean differs by more than 3 %%")
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier run's JSON report")
    args = parser.parse_args(argv)
    if args.render:
        report = json.loads(Path(args.render).read_text())
        print(markdown(report["results"], report["args"], report.get("server_args", ())))
        return 0

    def _interrupt(_signum, _frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, _interrupt)  # stop the server (and a running vllm bench) on SIGTERM too
    try:
        srv_mod.check_testbed(models=("target", "draft-perfect", "target-deep", "draft-deep-1layer"))
    except srv_mod.TestbedMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    results = []
    t_start = time.monotonic()
    for name in args.configs:
        model, spec, n1, n8 = CONFIGS[name]
        # No prefix caching: the clients repeat prompts (repeats, "same" prompts, vllm bench's warm-ups
        # repeat its first prompt); cached prefills would favour whichever client runs second.
        srv = srv_mod.VllmServer(model, name=name, speculative_config=spec, log_path=OUT_DIR / f"vllm-{name}.log",
                                 extra_args=SERVER_ARGS)
        print(f"[bench] {name}: starting {' '.join(srv.command()[1:3])} (spec {spec})", flush=True)
        with srv:
            print(f"[bench] {name}: ready in {srv.started_s:.0f} s at {srv.url}", flush=True)
            for mode, c in [(m, c) for m in args.prompts for c in args.concurrency]:
                n = args.num_prompts or (n1 if c == 1 else n8)
                files = same_prompts(srv.url, name, n, args, f"{name}-c{c}") if mode == "same" else (None, None)
                pairs = []
                for rep in range(args.repeats):
                    order = ("ours", "bench") if rep % 2 == 0 else ("bench", "ours")
                    got = {}
                    for who in order:
                        if who == "ours":
                            got[who] = run_ours(srv.url, name, c, n, args, files[0])
                        else:
                            got[who] = run_vllm_bench(srv.url, name, srv.model, c, n, args, f"{name}-{mode}-c{c}-r{rep}",
                                                      files[1])
                    pairs.append((got["ours"], got["bench"]))
                    o, b = got["ours"], got["bench"]
                    print(f"[bench] {name} {mode} prompts c={c} n={n} rep {rep + 1} ({order[0]} first): "
                          f"TPOT p50 {o['tpot_ms_p50']:.3f} vs {b['tpot_ms_p50']:.3f} ms ({pct(rel(o['tpot_ms_p50'], b['tpot_ms_p50']))}), "
                          f"{o['throughput_tok_s']:.1f} vs {b['throughput_tok_s']:.1f} tok/s "
                          f"({pct(rel(o['throughput_tok_s'], b['throughput_tok_s']))}); "
                          f"TTFT {o['ttft_ms_p50']:.2f} vs {b['ttft_ms_p50']:.2f}; ITL {o['itl_ms_p50']:.3f} vs {b['itl_ms_p50']:.3f}; "
                          f"input tokens {o['input_tokens']} vs {b['input_tokens']}", flush=True)
                results.append({"config": name, "prompts": mode, "model": model, "speculative_config": spec, "concurrency": c,
                                "num_prompts": n, "runs": [{"module": o, "vllm_bench": b} for o, b in pairs],
                                "summary": summarise(pairs)})
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "host_cpus": os.cpu_count(),
              "load_avg_end": os.getloadavg(), "args": vars(args), "server_args": SERVER_ARGS, "results": results,
              "elapsed_s": round(time.monotonic() - t_start, 1)}
    (OUT_DIR / "compare_vllm_bench.json").write_text(json.dumps(report, indent=1))
    table = markdown(results, vars(args), SERVER_ARGS)
    (OUT_DIR / "compare_vllm_bench.md").write_text(table + "\n")
    print("\n" + table + "\n")
    worst = max(abs(r["summary"][k]["rel_diff_of_means"]) for r in results for k in ("tpot_ms_p50", "throughput_tok_s"))
    verdict = "within" if worst <= TARGET_AGREEMENT else "OUTSIDE"
    print(f"[bench] largest difference of the means: {worst * 100:.1f} % ({verdict} the 3 % target); "
          f"{report['elapsed_s']:.0f} s; results in {OUT_DIR}")
    return 1 if args.strict and worst > TARGET_AGREEMENT else 0


if __name__ == "__main__":
    sys.exit(main())
