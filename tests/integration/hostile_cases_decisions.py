"""Hostile inputs for the decision modules and jetson_facts (format: tests/integration/hostile.py).

speculative_plan, speculative_verdict and jetson_facts, tried as a hostile user would: non-finite and
absurd numbers, CR/LF and shell/systemd characters in strings, wrong types, mixed-type lists, FIFOs
and device nodes where a file is expected. Every case expects a clear message naming the value and
what is allowed (or, for jetson_facts' documented fallback, a warning and a result).

The FIFO roots are created when this file is imported, under the system temporary directory.
"""
from __future__ import annotations

import os
import stat
import tempfile

from hostile import Hostile

PLAN = "jetson_llm.vllm.speculative_plan"
VERDICT = "jetson_llm.vllm.speculative_verdict"
FACTS = "jetson_llm.vllm.jetson_facts"

THOR = {
    "is_jetson": True, "reason": None, "generation": "thor", "product_line": "thor-agx", "variant": "thor-t5000",
    "l4t": {"version": "38.2.0", "major": 38, "minor": 2, "patch": 0, "source": "nv_tegra_release"},
    "memory": {"total_mb": 125772, "available_mb": 117940, "swap_total_mb": 0, "swap_free_mb": 0},
    "vllm_runtime": {"path": "upstream", "image": "vllm/vllm-openai:latest", "min_vllm_version": "0.20",
                     "forbidden_images": ["ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"], "notes": []},
}
PLAN_ARGS = {"jetson": THOR, "target_model": "meta-llama/Llama-3.1-8B-Instruct", "expected_concurrency": 1,
             "baseline_gpu_memory_utilization": 0.75, "vllm_version": "0.20.1", "draft_size_mb": 1000}


def plan(**changes):
    args = dict(PLAN_ARGS)
    args.update(changes)
    return args


def bench(tput1=44.0, tpot1=22.0, tput8=251.0, runs=None, **config):
    cfg = {"input_len": 2048, "output_len": 128, "num_prompts": 50, "dataset": "builtin", "prompt_set_id": "ab" * 32,
           "concurrency": [1, 8], "temperature": 0.0, "ignore_eos": True}
    cfg.update(config)
    if runs is None:
        runs = [{"concurrency": 1, "throughput_tok_s": tput1, "tpot_ms_p50": tpot1, "failed": 0, "errors": []},
                {"concurrency": 8, "throughput_tok_s": tput8, "tpot_ms_p50": 30.0, "failed": 0, "errors": []}]
    return {"model": "meta-llama/Llama-3.1-8B-Instruct", "config": cfg, "runs": runs}


def verdict(baseline=None, candidate=None):
    return {"baseline": baseline if baseline is not None else bench(),
            "candidate": candidate if candidate is not None else bench(60.0, 16.0, 255.0)}


def _fifo_root(name, rel):
    """A root filesystem under the temporary directory with a FIFO at ``rel``; returns the root."""
    root = os.path.join(tempfile.gettempdir(), "hostile-decisions-%s-%d" % (name, os.getuid()))
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        os.mkfifo(path)
    compatible = os.path.join(root, "proc/device-tree/compatible")
    if rel != "proc/device-tree/compatible" and not os.path.exists(compatible):
        os.makedirs(os.path.dirname(compatible), exist_ok=True)
        with open(compatible, "wb") as handle:
            handle.write(b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0")
    return root


def _device_root():
    """A root whose device-tree compatible is /dev/zero's device node (never ends); a FIFO when mknod is denied."""
    root = os.path.join(tempfile.gettempdir(), "hostile-decisions-device-%d" % os.getuid())
    path = os.path.join(root, "proc/device-tree/compatible")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
        except OSError:
            os.mkfifo(path)
    return root


def _big_model_root():
    root = os.path.join(tempfile.gettempdir(), "hostile-decisions-big-model-%d" % os.getuid())
    os.makedirs(os.path.join(root, "proc/device-tree"), exist_ok=True)
    with open(os.path.join(root, "proc/device-tree/model"), "wb") as handle:
        handle.write(b"NVIDIA Jetson AGX Orin " + b"A" * 200000 + b"\0")
    with open(os.path.join(root, "proc/device-tree/compatible"), "wb") as handle:
        handle.write(b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0")
    return root


LONG = "x" * 10000

CASES = [
    # ---- speculative_plan ---------------------------------------------------------------------
    Hostile("plan-vllm-version-shell", PLAN, plan(vllm_version="0.20.1; rm -rf /"),
            expect=("vllm_version", "0.20.1; rm -rf /", "such as 0.20.1")),
    Hostile("plan-vllm-version-newline-systemd", PLAN, plan(vllm_version="0.20.1\nExecStartPre=/bin/sh -c id"),
            expect=("vllm_version", "ExecStartPre", "nothing may follow")),
    Hostile("plan-num-speculative-tokens-huge", PLAN,
            plan(num_speculative_tokens=1000000000, measured_acceptance_rate=0.9),
            expect=("num_speculative_tokens must be <= 16", "1000000000")),
    Hostile("plan-acceptance-nan", PLAN, plan(measured_acceptance_rate=float("nan")),
            expect=("measured_acceptance_rate", "finite", "nan")),
    Hostile("plan-baseline-gmu-inf", PLAN, plan(baseline_gpu_memory_utilization=float("inf")),
            expect=("baseline_gpu_memory_utilization", "finite", "inf")),
    Hostile("plan-target-model-crlf", PLAN, plan(target_model="meta-llama/Llama-3.1-8B-Instruct\r\nEvil=1"),
            expect=("target_model", "line break", "Hugging Face repo id")),
    Hostile("plan-draft-model-systemd-specifier", PLAN, plan(method="draft_model", draft_model="acme/draft%n"),
            expect=("draft_model", "percent sign", "systemd")),
    Hostile("plan-runtime-image-shell", PLAN, plan(runtime_image="vllm/vllm-openai:latest$(reboot)"),
            expect=("runtime_image", "dollar sign", "container image reference")),
    Hostile("plan-image-tag-contradicts-version", PLAN, plan(runtime_image="vllm/vllm-openai:v0.10.0"),
            expect=("vllm/vllm-openai:v0.10.0", "vllm 0.10", "vllm_version says 0.20.1")),
    Hostile("plan-jetson-not-a-dict", PLAN, plan(jetson="thor"),
            expect=("jetson", "dictionary")),
    Hostile("plan-previous-attempt-unknown-failure", PLAN, plan(previous_attempt={"failure": "melted"}),
            expect=("melted", "oom", "config_rejected")),
    Hostile("plan-previous-attempt-oom-without-gmu", PLAN, plan(previous_attempt={"failure": "oom"}),
            expect=("gpu_memory_utilization", "oom")),
    Hostile("plan-previous-attempt-gmu-nan", PLAN,
            plan(previous_attempt={"failure": "oom", "gpu_memory_utilization": float("nan")}),
            expect=("previous_attempt.gpu_memory_utilization", "finite")),
    Hostile("plan-smaller-draft-quote", PLAN, plan(smaller_draft_model="acme/tiny'draft"),
            expect=("smaller_draft_model", "single quote")),
    Hostile("plan-baseline-benchmark-ttft-nan", PLAN,
            plan(baseline_benchmark=bench(runs=[{"concurrency": 1, "failed": 0, "ttft_ms_p50": float("nan"),
                                                 "e2e_latency_ms_p50": 2900.0}], concurrency=[1])),
            expect=("baseline_benchmark", "ttft_ms_p50", "positive finite number")),
    Hostile("plan-max-ttft-share-out-of-range", PLAN, plan(max_ttft_share=5.0),
            expect=("max_ttft_share must be <= 1.0", "5.0")),
    Hostile("plan-extra-config-unknown-key", PLAN, plan(extra_config={"evil\nkey": 1}),
            expect=("extra_config", "unknown SpeculativeConfig key", "allowed")),
    Hostile("plan-target-model-10000-chars", PLAN, plan(target_model="acme/" + LONG),
            expect=("target_model", "10005 characters long", "at most 1024")),
    Hostile("plan-expected-concurrency-string", PLAN, plan(expected_concurrency="one"),
            expect=("expected_concurrency", "one", "int")),
    Hostile("plan-catalogue-entry-wrong-type", PLAN, plan(catalogue={"acme/x": ["a", "b"]}),
            expect=("catalogue entry for acme/x", "dictionary")),
    # ---- speculative_verdict ------------------------------------------------------------------
    Hostile("verdict-concurrency-mixed-types", VERDICT,
            verdict(bench(concurrency=[1, "x"]), bench(60.0, 16.0, 255.0, concurrency=[1, "x"])),
            expect=("config.concurrency", "integers >= 1", "'x'")),
    Hostile("verdict-concurrency-null", VERDICT,
            verdict(bench(concurrency=[1, None]), bench(60.0, 16.0, 255.0, concurrency=[1, None])),
            expect=("config.concurrency", "integers >= 1", "None")),
    Hostile("verdict-failed-run-errors-dict", VERDICT,
            verdict(candidate=bench(runs=[{"concurrency": 1, "throughput_tok_s": 60.0, "tpot_ms_p50": 16.0,
                                           "failed": 3, "errors": {"timeout": 3}},
                                          {"concurrency": 8, "throughput_tok_s": 255.0, "tpot_ms_p50": 30.0,
                                           "failed": 0, "errors": []}])),
            expect=("candidate run at concurrency 1 had 3 failed request", "timeout")),
    Hostile("verdict-nan-temperature", VERDICT,
            verdict(bench(temperature=float("nan")), bench(60.0, 16.0, 255.0, temperature=float("nan"))),
            expect=("config.temperature", "finite")),
    Hostile("verdict-baseline-throughput-subnormal", VERDICT, verdict(bench(tput1=1e-320)),
            expect=("baseline", "throughput_tok_s", "positive finite number")),
    Hostile("verdict-candidate-throughput-huge", VERDICT,
            verdict(bench(tput1=1e-300), bench(1e300, 16.0, 255.0)),
            expect=("throughput_tok_s change", "not a finite number")),
    Hostile("verdict-baseline-not-a-dict", VERDICT, verdict(baseline=["runs"]),
            expect=("baseline", "list", "convert to dict")),
    Hostile("verdict-threshold-inf", VERDICT, dict(verdict(), min_throughput_gain=float("inf")),
            expect=("min_throughput_gain", "finite", "inf")),
    # ---- jetson_facts -------------------------------------------------------------------------
    Hostile("facts-fifo-model", FACTS, {"root": _fifo_root("model", "proc/device-tree/model"), "run_nvpmodel": False},
            outcome="ok", expect=("model", "is not a regular file (a FIFO)"), max_seconds=30.0),
    Hostile("facts-fifo-nv-tegra-release", FACTS,
            {"root": _fifo_root("release", "etc/nv_tegra_release"), "run_nvpmodel": False},
            outcome="ok", expect=("nv_tegra_release", "is not a regular file (a FIFO)"), max_seconds=30.0),
    Hostile("facts-fifo-meminfo", FACTS, {"root": _fifo_root("meminfo", "proc/meminfo"), "run_nvpmodel": False},
            outcome="ok", expect=("meminfo", "is not a regular file (a FIFO)"), max_seconds=30.0),
    Hostile("facts-fifo-dpkg-status", FACTS,
            {"root": _fifo_root("dpkg", "var/lib/dpkg/status"), "run_nvpmodel": False},
            outcome="ok", expect=("dpkg/status", "is not a regular file (a FIFO)"), max_seconds=30.0),
    Hostile("facts-device-node-compatible", FACTS, {"root": _device_root(), "run_nvpmodel": False},
            outcome="ok", expect=("compatible", "is not a regular file"), max_seconds=30.0),
    Hostile("facts-huge-model-string", FACTS, {"root": _big_model_root(), "run_nvpmodel": False},
            outcome="ok", expect=("model", "larger than 4096 bytes"), max_seconds=30.0),
    Hostile("facts-root-is-a-fifo", FACTS,
            {"root": os.path.join(_fifo_root("rootfifo", "proc/meminfo"), "proc/meminfo"), "run_nvpmodel": False},
            expect=("root", "is not a directory")),
    Hostile("facts-root-long", FACTS, {"root": "/" + LONG, "run_nvpmodel": False},
            expect=("root", "characters")),
    Hostile("facts-root-crlf", FACTS, {"root": "/tmp/no\r\nsuch-root", "run_nvpmodel": False},
            expect=("root", "\\r\\n", "does not exist")),
]
