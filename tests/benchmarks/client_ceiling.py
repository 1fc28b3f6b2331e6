"""The ceiling of vllm_benchmark's own client: streamed tokens per second it can time on one core.

A benchmark, not a test: it prints a JSON summary. The client (the module's real code,
_benchmark_runner.run_requests) runs in this process pinned to one CPU; the deterministic
simulator (tests/utils/fake_vllm.py) runs in another process pinned to another CPU.

1. parse ceiling ("burst"): the simulator sends whole streams at once (many SSE messages per
   read), one token per message, so the figure is what the client can parse and time per
   second of wall time and per CPU second of its single core.
2. timing fidelity ("paced"): the simulator streams one token every ``--itl`` seconds on
   each of ``c`` connections; each request's TPOT and the pooled ITL median are compared
   with the simulator's own record of when it wrote each chunk, over a few rounds. A level is
   "faithful" when the median per-request TPOT error and the ITL median error are within
   2 %; the highest faithful rate is the ceiling for real use. Client gaps > 50 ms that the
   simulator did not write are counted as stalls of the (shared) machine, not of the client.

Usage: python tests/benchmarks/client_ceiling.py [--tokens 4096] [--itl 0.001] [--levels 1,8,16,32,48] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
subprocess.run([str(TOP / "tests" / "utils" / "collection.sh"), "link"], check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, str(TOP / ".build" / "collections"))

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import runner  # noqa: E402
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.http import Endpoint  # noqa: E402


def start_simulator(cpu, *args):
    cmd = [sys.executable, str(TOP / "tests" / "utils" / "fake_vllm.py"), "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise SystemExit(f"the simulator did not start: {url!r}")
    return proc, url


def body(tokens, tag=""):
    return json.dumps({"model": "fake-model", "prompt": "tok3 tok4 tok5 " + tag, "max_tokens": tokens, "stream": True,
                       "stream_options": {"include_usage": True}, "ignore_eos": True}).encode()


def measure(url, concurrency, requests, tokens, tag="r"):
    """Run ``requests`` streams at ``concurrency`` with the module's client; return (records, duration, cpu, prompts)."""
    endpoint = Endpoint(url, None, 60)
    slots = [runner.Slot() for _slot in range(concurrency)]
    bodies = [body(tokens, "%s-%d" % (tag, i)) for i in range(requests)]
    runner.run_requests(endpoint, slots, [body(8, "connect")] * concurrency, concurrency)  # connect the slots
    old = sys.getswitchinterval()
    sys.setswitchinterval(runner.SWITCH_INTERVAL)  # as run_benchmark does
    cpu0 = time.process_time()
    try:
        records, duration = runner.run_requests(endpoint, slots, bodies, concurrency)
    finally:
        sys.setswitchinterval(old)
    cpu = time.process_time() - cpu0
    for slot in slots:
        slot.drop()
    failed = [r.error for r in records if not r.success]
    if failed:
        raise SystemExit(f"requests failed: {failed[:3]}")
    return records, duration, cpu, [json.loads(b)["prompt"] for b in bodies]


def sim_timelines(url):
    with urllib.request.urlopen(url + "/_sim/timelines", timeout=30) as resp:
        return json.load(resp)["timelines"]


def tpot(first, last, tokens):
    return (last - first) / (tokens - 1)


def paced_level(url, c, rounds, tokens):
    """Per-request TPOT and pooled ITL of the client against the simulator's record, over several rounds."""
    tpot_errors, client_itl, sim_itl, client_tpots, sim_tpots = [], [], [], [], []
    rates, cpu_share, stalls = [], [], 0
    for rnd in range(rounds):
        records, duration, cpu, prompts = measure(url, c, max(4, 2 * c), tokens, tag="c%d-%d" % (c, rnd))
        by_prompt = {tl["prompt"]: tl for tl in sim_timelines(url)}
        for rec, prompt in zip(records, prompts):
            tl = by_prompt[prompt]
            times = [t for t, _n in tl["chunks"]]
            sim_t = tpot(times[0], times[-1], tokens)
            client_t = (rec.latency - rec.ttft) / (rec.output_tokens - 1)
            tpot_errors.append(abs(client_t - sim_t) / sim_t)
            client_tpots.append(client_t)
            sim_tpots.append(sim_t)
            gaps = [b - a for a, b in zip(times, times[1:])]
            sim_itl.extend(gaps)
            client_itl.extend(rec.itl)
            # a client gap far above anything the simulator wrote: the machine stalled the client
            stalls += sum(1 for x in rec.itl if x > 0.05) - sum(1 for x in gaps if x > 0.05)
        rates.append(sum(r.output_tokens for r in records) / duration)
        cpu_share.append(cpu / duration)
    itl_err = abs(statistics.median(client_itl) - statistics.median(sim_itl)) / statistics.median(sim_itl)
    tpot_err = statistics.median(tpot_errors)
    return {"concurrency": c, "rounds": rounds, "requests": len(tpot_errors),
            "tok_s_measured": round(statistics.median(rates), 1),
            "client_cpu_share": round(statistics.median(cpu_share), 3),
            "tpot_ms_p50_client": round(1000 * statistics.median(client_tpots), 4),
            "tpot_ms_p50_simulator": round(1000 * statistics.median(sim_tpots), 4),
            "itl_ms_p50_client": round(1000 * statistics.median(client_itl), 4),
            "itl_ms_p50_simulator": round(1000 * statistics.median(sim_itl), 4),
            "tpot_error_median_per_request": round(tpot_err, 5),
            "tpot_requests_within_2pct": round(sum(1 for e in tpot_errors if e <= 0.02) / len(tpot_errors), 3),
            "itl_p50_error": round(itl_err, 5),
            "client_stalls_over_50ms": max(0, stalls),
            "faithful": tpot_err <= 0.02 and itl_err <= 0.02}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096, help="tokens per request in the burst test")
    parser.add_argument("--itl", type=float, default=0.001, help="seconds between chunks in the paced test")
    parser.add_argument("--paced-tokens", type=int, default=400, help="tokens per request in the paced test")
    parser.add_argument("--levels", default="1,8,16,32,48", help="concurrency levels of the paced test")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per paced level")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    client_cpu, sim_cpu = (cpus[0], cpus[1]) if len(cpus) > 1 else (cpus[0], None)
    os.sched_setaffinity(0, {client_cpu})
    summary = {"python": sys.version.split()[0], "client_cpu": client_cpu, "simulator_cpu": sim_cpu,
               "cpus_on_machine": os.cpu_count(), "load_average_before": os.getloadavg()[0]}

    # 1. parse ceiling
    proc, url = start_simulator(sim_cpu, "--ttft", "0", "--itl", "0", "--burst")
    try:
        burst = []
        for c in (1, 8):
            records, duration, cpu, _prompts = measure(url, c, max(4, 2 * c), args.tokens)
            tokens = sum(r.output_tokens for r in records)
            burst.append({"concurrency": c, "requests": len(records), "tokens": tokens, "chunks": sum(r.chunks for r in records),
                          "duration_s": round(duration, 4), "client_cpu_s": round(cpu, 4),
                          "tok_s_wall": round(tokens / duration), "tok_s_per_client_cpu_s": round(tokens / cpu)})
    finally:
        proc.terminate()
        proc.wait()
    summary["burst"] = burst

    # 2. timing fidelity at a paced rate
    paced = []
    proc, url = start_simulator(sim_cpu, "--ttft", "0.01", "--itl", str(args.itl))
    try:
        for c in [int(x) for x in args.levels.split(",")]:
            level = paced_level(url, c, args.rounds, args.paced_tokens)
            level["nominal_tok_s"] = round(c / args.itl)
            paced.append(level)
    finally:
        proc.terminate()
        proc.wait()
    summary["paced"] = paced
    faithful = [p["tok_s_measured"] for p in paced if p["faithful"]]
    summary["ceiling_tok_s_parse"] = max(b["tok_s_wall"] for b in burst)
    summary["ceiling_tok_s_faithful_timing"] = max(faithful) if faithful else None
    summary["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
