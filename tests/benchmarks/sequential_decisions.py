"""Sequential measurement against the fixed protocol, on real vLLM servers (issue 10).

A benchmark, not a test. For each pair of the test bed (docs/testbed.md) it starts two real vLLM
servers, the baseline (no speculation) and the candidate (with --speculative-config), and takes
the keep-or-revert decision several times, each time with fresh prompts (the seed is the repeat):

* sequential: the baseline with ``--baseline-prompts`` measured requests and ``--warmup`` warm-ups
  per level, then the candidate with vllm_benchmark's ``sequential`` option (rounds of
  ``--round1`` / ``--round8`` requests at c=1 / c=8, at most ``--max-prompts`` per level), then
  speculative_verdict on both;
* fixed: the specification's jetson-llm-benchmark protocol, 10 warm-up + 50 measured requests per
  phase and level (240 requests), then speculative_verdict.

Every benchmark runs through the real ansible CLI (the module on the system Python), like the role.
Requests counted per decision include the warm-ups of both phases. Wall time is the time of the
two benchmark tasks (the service restart between the phases is the same for both protocols and is
not counted). Results: tests/output/bench/sequential_decisions.{json,md}, written after each
decision.

Pairs (K=4):
  accept: target-deep + draft-deep-1layer, --dtype float32 (on an AVX2 CPU bfloat16 makes speculation unable to
          pay, see docs/performance.md); chosen as a pair that pays.
  reject: target + draft-perfect, bfloat16; chosen as a draft too expensive to pay: +14 % at c=1 and a loss at c=8
          on the AVX2 machines. Its verdict depends on the CPU (on AVX-512 BF16 / AMX it gains more).
  heavy:  target + draft-heavy, bfloat16; the target's weights and 28 identity layers: acceptance ~1.0 at 8 times
          the target's depth, too expensive to pay on any CPU (the reject pair whose verdict does not depend on
          the machine).
  random: target + draft-random, bfloat16; acceptance 0: a reject on any CPU.

Which decision is right: a pair's verdict is a property of the machine that measures it, so the script does not
hard-code one. The reference decision of a pair is ``--expect PAIR=VERDICT`` when given, else the majority
keep-or-revert decision of the fixed-protocol decisions of this run (the anchor; ``--fixed``, 3 by default), on
the same servers and the same machine. A tie, or no fixed decision, leaves the pair without a reference, and the
table says so instead of counting right or wrong. A decision is right when its keep-or-revert decision is the
reference's (with ``keep_marginal`` false, "marginal" and "reject" both revert, and the sequential mode stops once
that decision is settled, perhaps before the name is).

With ``--phase-shift C1 C8`` (the host's shift between phases, as aa_probe.py measures it) the sequential
protocol passes it to vllm_benchmark and every decision is judged with it, and with ``--decide-undetermined``;
each record also keeps the plain verdict (bootstrap alone, point estimates when undetermined), and the reference
is the plain verdict of the fixed decisions, the specification's protocol as it stands.

    .venv/bin/python tests/benchmarks/sequential_decisions.py [--pairs accept reject heavy random] [--repeats 5] [--fixed 3]
        [--expect random=reject] [--phase-shift 0.08 0.08 --decide-undetermined undetermined]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
OUT_DIR = TOP / "tests" / "output" / "bench"
BENCH = "jetson_llm.vllm.vllm_benchmark"
VERDICT = "jetson_llm.vllm.speculative_verdict"
FIXED = {"num_prompts": 50, "warmup_prompts": 10}  # the specification's protocol (jetson-llm-benchmark)
FIXED_REQUESTS = 2 * 2 * (FIXED["num_prompts"] + FIXED["warmup_prompts"])  # 2 phases x 2 levels = 240

sys.path.insert(0, str(TOP / "tests" / "integration"))
from conftest import run_module  # noqa: E402  pylint: disable=wrong-import-position

# The test bed's server module (tests/testbed/server.py), loaded once by the fixtures' module.
from vllm_testbed import testbed_server as srv_mod  # noqa: E402  pylint: disable=wrong-import-position

# name -> (target, draft, dtype)
PAIRS = {
    "accept": ("target-deep", "draft-deep-1layer", "float32"),
    "reject": ("target", "draft-perfect", "bfloat16"),
    "heavy": ("target", "draft-heavy", "bfloat16"),
    "random": ("target", "draft-random", "bfloat16"),
}
VERDICTS = ("accept", "marginal", "reject")
NUM_SPEC_TOKENS = 4


def servers(pair, log_dir):
    """(baseline, candidate) VllmServer objects of a pair (not started). Both serve the same model name."""
    target, draft, dtype = PAIRS[pair]
    extra = ["--dtype", dtype]
    base = srv_mod.VllmServer(target, name=target, extra_args=extra, log_path=log_dir / f"vllm-seq-{pair}-baseline.log")
    cand = srv_mod.VllmServer(target, name=target, extra_args=extra, log_path=log_dir / f"vllm-seq-{pair}-candidate.log",
                              speculative_config={"method": "draft_model", "model": draft,
                                                  "num_speculative_tokens": NUM_SPEC_TOKENS})
    return base, cand


def workload(args, seed):
    return {"concurrency": [1, 8], "input_len": args.input_len, "output_len": args.output_len, "dataset": "random",
            "temperature": 0, "ignore_eos": True, "seed": seed, "request_timeout": 600}


def bench(url, model, params):
    t0 = time.monotonic()
    result = run_module(BENCH, dict(params, endpoint=url, model=model))
    wall = time.monotonic() - t0
    if result.get("failed"):
        raise RuntimeError(f"vllm_benchmark failed: {result.get('msg')}")
    return result["benchmark"], wall


def judge(baseline, candidate, **options):
    """speculative_verdict on two benchmarks (more module options as keywords)."""
    result = run_module(VERDICT, dict(options, baseline=baseline, candidate=candidate))
    if result.get("failed"):
        raise RuntimeError(f"speculative_verdict failed: {result.get('msg')}")
    return result


def criteria(verdict):
    return {name: {"status": entry["status"], "point": entry["point"], "interval": entry["interval"]}
            for name, entry in verdict["criteria"].items()}


def verdict_options(args):
    """The speculative_verdict options of the decisions under test (empty: the plain verdict)."""
    opts = {}
    if getattr(args, "phase_shift", None):
        opts["phase_shift"] = {"c1": args.phase_shift[0], "c8": args.phase_shift[1]}
    if getattr(args, "decide_undetermined", "point_estimate") != "point_estimate":
        opts["decide_undetermined"] = args.decide_undetermined
    return opts


def decide(protocol, pair, repeat, base_srv, cand_srv, args):
    """One keep-or-revert decision; returns its record."""
    model = PAIRS[pair][0]
    seed = 1000 + repeat
    common = workload(args, seed)
    if protocol == "fixed":
        base_params = dict(common, **FIXED)
        cand_params = dict(common, **FIXED)
    else:
        base_params = dict(common, num_prompts=args.baseline_prompts, warmup_prompts=args.warmup)
        cand_params = dict(common, warmup_prompts=args.warmup)
    baseline, wall_b = bench(base_srv.url, model, base_params)
    if protocol == "sequential":
        cand_params["sequential"] = {"baseline": baseline, "round_prompts": {"1": args.round1, "8": args.round8},
                                     "max_prompts": args.max_prompts}
        if "phase_shift" in verdict_options(args):
            cand_params["sequential"]["phase_shift"] = verdict_options(args)["phase_shift"]
    candidate, wall_c = bench(cand_srv.url, model, cand_params)
    verdict = judge(baseline, candidate, **verdict_options(args))
    plain = judge(baseline, candidate) if verdict_options(args) else verdict
    seq = candidate.get("sequential")
    requests = seq["requests"]["total"] if seq else FIXED_REQUESTS
    record = {"pair": pair, "protocol": protocol, "repeat": repeat, "seed": seed,
              "verdict": verdict["verdict"], "keep": verdict["keep"], "determined": verdict["determined"],
              "undetermined": verdict["undetermined"], "decision_basis": verdict["decision_basis"], "requests": requests,
              "wall_s": round(wall_b + wall_c, 1), "wall_baseline_s": round(wall_b, 1),
              "wall_candidate_s": round(wall_c, 1), "deltas": verdict["deltas"], "criteria": criteria(verdict),
              "reasons": verdict["reasons"], "load1": round(os.getloadavg()[0], 2),
              "verdict_plain": plain["verdict"], "keep_plain": plain["keep"], "options": verdict_options(args),
              "time": time.strftime("%H:%M:%S")}
    if seq:
        record.update(rounds=seq["rounds"], stopped=seq["stopped"], sequential_reason=seq["reason"],
                      sequential_verdict=seq["verdict"], name_undetermined=seq.get("name_undetermined", []),
                      requests_detail=seq["requests"], history=seq["history"])
    return record


def references(records, expect):
    """pair -> (keep, how): the reference keep-or-revert decision of every pair in ``records``; keep is None when
    there is none (no fixed decision, or a tie between them). ``expect`` (pair -> verdict) overrides."""
    refs = {}
    for pair in dict.fromkeys(r["pair"] for r in records):
        if pair in expect:
            refs[pair] = (expect[pair] == "accept", f"--expect {expect[pair]}")
            continue
        fixed = [r.get("keep_plain", r["keep"]) for r in records if r["pair"] == pair and r["protocol"] == "fixed"]
        keeps = sum(fixed)
        if not fixed or 2 * keeps == len(fixed):
            refs[pair] = (None, f"none: fixed decisions keep {keeps} of {len(fixed)}")
        else:
            keep = 2 * keeps > len(fixed)
            refs[pair] = (keep, f"{'keep' if keep else 'revert'}: fixed decisions keep {keeps} of {len(fixed)}")
    return refs


def correct(rec, refs):
    """True / False against the pair's reference decision, None when the pair has none."""
    keep = refs[rec["pair"]][0]
    return None if keep is None else rec["keep"] == keep


def rejudge(records, shift, decide_undetermined):
    """Records re-judged with a phase shift from their recorded points and intervals (no new request).

    The widening needs only a criterion's point and interval (speculative_verdict's with_phase_shift), so a run
    measured without a shift can be read with one; the thresholds are the verdict's defaults (as in every run of
    this script). Sequential decisions keep the requests they used: with the shift they might have stopped sooner.
    """
    sys.path.insert(0, str(TOP / ".build" / "collections"))
    # pylint: disable=import-outside-toplevel
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import bootstrap as B
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
    thresholds = {"throughput_gain_c1": 0.30, "tpot_reduction_c1": 0.20, "minimum_gain_c1": 0.10, "regression_c8": 0.0}
    out = []
    for rec in records:
        crit = {}
        for name, entry in rec["criteria"].items():
            sign, level = (-1, "c1") if name == "tpot_reduction_c1" else (1, "c8" if name == "regression_c8" else "c1")
            interval = entry["interval"]
            if interval:
                ratios = B.with_phase_shift(tuple(sorted(1 + sign * v for v in interval)), 1 + sign * entry["point"],
                                            shift[level])
                interval = sorted(sign * (r - 1) for r in ratios)
            status, point_status = V.classify(name, entry["point"], interval, thresholds[name])
            crit[name] = dict(entry, status=status, point_status=point_status, interval=interval)
        verdict, _final, open_names, _point = V.decide(crit, decide_undetermined)
        out.append(dict(rec, criteria=crit, verdict=verdict, keep=V.keep_of(verdict), determined=not open_names,
                        undetermined=open_names, verdict_plain=rec["verdict"], keep_plain=rec["keep"],
                        options={"phase_shift": shift, "decide_undetermined": decide_undetermined}))
    return out


def render(path, markdown_fn, **overrides):
    """Print the table of an earlier run's JSON report (``--render``); ``overrides`` that are not None replace its
    arguments."""
    report = json.loads(Path(path).read_text())
    print(markdown_fn(report["records"], dict(report["args"], **{k: v for k, v in overrides.items() if v is not None})))
    return 0


def prepare(models):
    """SIGTERM stops like Ctrl-C (the servers are stopped), the test bed is checked for ``models``, the output folder
    is made. Returns None, or the exit code when the test bed is missing."""
    def _interrupt(_signum, _frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        srv_mod.check_testbed(models=models)
    except srv_mod.TestbedMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return None


def saver(out, args, records, markdown_fn):
    """A function that writes ``out``.json (the arguments and every record so far) and ``out``.md (the table)."""
    t_start = time.monotonic()

    def save():
        report = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args), "records": records,
                  "elapsed_s": round(time.monotonic() - t_start, 1)}
        out.with_suffix(".json").write_text(json.dumps(report, indent=1))
        out.with_suffix(".md").write_text(markdown_fn(records, vars(args)) + "\n")
    return save


def _median(values):
    return statistics.median(values) if values else None


def parse_expect(items):
    """``PAIR=VERDICT`` strings -> {pair: verdict}; raises ValueError naming a bad item."""
    expect = {}
    for item in items or ():
        pair, sep, verdict = item.partition("=")
        if not sep or pair not in PAIRS or verdict not in VERDICTS:
            raise ValueError(f"--expect {item!r}: expected PAIR=VERDICT with PAIR one of {sorted(PAIRS)} "
                             f"and VERDICT one of {list(VERDICTS)}")
        expect[pair] = verdict
    return expect


def markdown(records, args):
    refs = references(records, parse_expect(args.get("expect")))
    options = verdict_options(argparse.Namespace(**args))
    judged = (f"Judged with {json.dumps(options, sort_keys=True)} (the plain verdict, bootstrap alone, in the last "
              "column). " if options else "")
    lines = [f"input {args['input_len']} / output {args['output_len']} tokens, random prompts (seed = 1000 + repeat), "
             f"temperature 0, ignore_eos, concurrency 1 and 8. Sequential: baseline {args['warmup']} warm-up + "
             f"{args['baseline_prompts']} measured per level; candidate {args['warmup']} warm-up per level, rounds of "
             f"{args['round1']} (c=1) / {args['round8']} (c=8), at most {args['max_prompts']} per level. Fixed: "
             f"{FIXED['warmup_prompts']} warm-up + {FIXED['num_prompts']} measured per phase and level "
             f"({FIXED_REQUESTS} requests). Requests include every warm-up; wall time = the two benchmark tasks. "
             f"{judged}"
             "Reference decision of each pair: " + "; ".join(f"{pair} {how}" for pair, (_keep, how) in refs.items())
             + ".", "",
             "| pair | protocol | # | verdict | decision | right | determined | rounds | requests | wall time (s) "
             "| gain c=1 [95 % interval] | TPOT reduction c=1 [95 % interval] | change c=8 [95 % interval] | stopped "
             "| plain verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def crit(rec, name):
        entry = rec["criteria"].get(name)
        if not entry:
            return "–"
        iv = entry["interval"]
        return f"{entry['point'] * 100:+.1f} %" + (f" [{iv[0] * 100:+.1f}, {iv[1] * 100:+.1f}]" if iv else "")

    def right(rec):
        return {None: "–", True: "yes", False: "**WRONG**"}[correct(rec, refs)]
    for rec in records:
        name = rec["verdict"] + (" (name open)" if rec.get("name_undetermined") else "")
        lines.append(f"| {rec['pair']} | {rec['protocol']} | {rec['repeat']} | {name} "
                     f"| {'keep' if rec['keep'] else 'revert'} | {right(rec)} | {'yes' if rec['determined'] else 'no'} "
                     f"| {rec.get('rounds', '–')} | {rec['requests']} | {rec['wall_s']:.0f} "
                     f"| {crit(rec, 'throughput_gain_c1')} | {crit(rec, 'tpot_reduction_c1')} | {crit(rec, 'regression_c8')} "
                     f"| {rec.get('stopped', '–')} | {rec.get('verdict_plain', rec['verdict'])} |")
    lines += ["", "| pair | protocol | decisions | keep | wrong decisions | undetermined | median requests (min-max) "
                  "| median requests / 240 | median wall time (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for pair in PAIRS:
        for protocol in ("sequential", "fixed"):
            group = [r for r in records if r["pair"] == pair and r["protocol"] == protocol]
            if not group:
                continue
            reqs = [r["requests"] for r in group]
            wrong = "–" if refs[pair][0] is None else sum(correct(r, refs) is False for r in group)
            lines.append(f"| {pair} | {protocol} | {len(group)} | {sum(r['keep'] for r in group)} | {wrong} "
                         f"| {sum(not r['determined'] for r in group)} | {_median(reqs):.0f} ({min(reqs)}-{max(reqs)}) "
                         f"| {_median(reqs) / FIXED_REQUESTS * 100:.0f} % | {_median([r['wall_s'] for r in group]):.0f} |")
    return "\n".join(lines)


def deadline_of(text):
    """``HH:MM`` -> the epoch seconds of its next occurrence (today, or tomorrow when it has passed)."""
    try:
        wanted = time.strptime(text, "%H:%M")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time HH:MM") from None
    now = time.localtime()
    at = time.mktime((now.tm_year, now.tm_mon, now.tm_mday, wanted.tm_hour, wanted.tm_min, 0, 0, 0, -1))
    return at if at > time.time() else at + 86400


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=sorted(PAIRS))
    parser.add_argument("--repeats", type=int, default=5, help="sequential decisions per pair")
    parser.add_argument("--fixed", type=int, default=3,
                        help="fixed-protocol decisions per pair (their majority is the pair's reference decision)")
    parser.add_argument("--expect", nargs="+", metavar="PAIR=VERDICT",
                        help="a pair's reference verdict, instead of the fixed decisions' majority")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--baseline-prompts", type=int, default=24)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--round1", type=int, default=8)
    parser.add_argument("--round8", type=int, default=16)
    parser.add_argument("--max-prompts", type=int, default=48)
    parser.add_argument("--first-repeat", type=int, default=0,
                        help="number of the first decision (the seed is 1000 + its number): continue an earlier run with fresh prompts")
    parser.add_argument("--fixed-last", action="store_true", help="the fixed-protocol decisions after the sequential ones")
    parser.add_argument("--merge", metavar="JSON", help="start from the records of an earlier run (same arguments) and add to them")
    parser.add_argument("--deadline", metavar="HH:MM", type=deadline_of,
                        help="start no decision after this local time (its next occurrence: 00:30 at 23:00 is tomorrow)")
    parser.add_argument("--phase-shift", nargs=2, type=float, metavar=("C1", "C8"),
                        help="the host's shift between phases (speculative_verdict phase_shift), e.g. 0.08 0.08")
    parser.add_argument("--decide-undetermined", default="point_estimate", choices=["point_estimate", "undetermined"])
    parser.add_argument("--output", default=str(OUT_DIR / "sequential_decisions"), help="path without extension")
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier run's JSON report "
                                                         "(with --phase-shift: re-judged with it, see rejudge)")
    args = parser.parse_args(argv)
    try:
        parse_expect(args.expect)
    except ValueError as exc:
        parser.error(str(exc))
    if args.render and args.phase_shift:
        report = json.loads(Path(args.render).read_text())
        shift = {"c1": args.phase_shift[0], "c8": args.phase_shift[1]}
        print(markdown(rejudge(report["records"], shift, args.decide_undetermined),
                       dict(report["args"], expect=args.expect, phase_shift=args.phase_shift,
                            decide_undetermined=args.decide_undetermined)))
        return 0
    if args.render:
        return render(args.render, markdown, expect=args.expect)
    missing = prepare(tuple(dict.fromkeys(model for pair in args.pairs for model in PAIRS[pair][:2])))
    if missing:
        return missing
    out = Path(args.output)
    records = json.loads(Path(args.merge).read_text())["records"] if args.merge else []
    t_start = time.monotonic()
    save = saver(out, args, records, markdown)

    def too_late():
        return args.deadline is not None and time.time() >= args.deadline

    for pair in args.pairs:
        if too_late():
            break
        base_srv, cand_srv = servers(pair, OUT_DIR)
        print(f"[seq] {pair}: starting the baseline and the candidate servers", flush=True)
        try:
            base_srv.launch()
            cand_srv.launch()
            base_srv.wait_ready()
            cand_srv.wait_ready()
            print(f"[seq] {pair}: ready ({base_srv.url}, {cand_srv.url})", flush=True)
            # Interleave the protocols, so both see the same machine load over time.
            first = args.first_repeat
            plan = [("sequential", first + r) for r in range(args.repeats)]
            for k in range(args.fixed):
                at = len(plan) if args.fixed_last else min(len(plan), 1 + k * 3)
                plan.insert(at, ("fixed", first + args.repeats + k))
            for protocol, repeat in plan:
                if too_late():
                    print(f"[seq] deadline {time.strftime('%H:%M', time.localtime(args.deadline))} reached: "
                          "no more decisions", flush=True)
                    break
                rec = decide(protocol, pair, repeat, base_srv, cand_srv, args)
                records.append(rec)
                save()
                print(f"[seq] {pair} {protocol} #{repeat}: {rec['verdict']} ({'keep' if rec['keep'] else 'revert'}), "
                      f"determined {rec['determined']}, {rec['requests']} requests, rounds {rec.get('rounds', '-')}, "
                      f"{rec['wall_s']:.0f} s; deltas {rec['deltas']}", flush=True)
        finally:
            base_srv.stop()
            cand_srv.stop()
    save()
    print("\n" + markdown(records, vars(args)) + "\n")
    print(f"[seq] {time.monotonic() - t_start:.0f} s; results in {out}.json / .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
