"""jetson_llm.vllm.vllm_benchmark against a REAL vLLM server (the CPU build of the test bed).

Nothing is faked: the module runs through the ansible CLI with the system Python (standard
library only) and talks HTTP to `vllm serve` processes started by the fixtures in
vllm_testbed.py (see docs/testbed.md). Small workloads keep this suite to a few minutes.
"""
from __future__ import annotations

import json
import math
import os
import stat

import pytest

from conftest import run_module
from vllm_testbed import LOG_DIR, NUM_SPEC_TOKENS, SPEC_API_KEY, http_get
# pytest fixtures, used by name as test arguments
from vllm_testbed import testbed, vllm_baseline, vllm_dead_endpoint, vllm_spec  # noqa: F401  pylint: disable=unused-import
from vllm_testbed import MTP_SPEC_TOKENS, vllm_spec_mtp  # noqa: F401  pylint: disable=unused-import
from vllm_testbed import DFLASH_SPEC_TOKENS, vllm_spec_dflash  # noqa: F401  pylint: disable=unused-import

MODULE = "jetson_llm.vllm.vllm_benchmark"
SMALL = {"input_len": 64, "output_len": 32, "num_prompts": 16, "warmup_prompts": 2, "concurrency": [1, 8],
         "temperature": 0, "seed": 7, "request_timeout": 120}
RUN_KEYS = ("concurrency", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "tpot_ms_p50", "tpot_ms_p99",
            "tpot_ms_mean", "throughput_tok_s", "request_throughput", "e2e_latency_ms_p50", "completed", "failed",
            "errors", "duration_s", "total_input_tokens", "total_output_tokens", "spec_decode", "metrics_polluted")


def bench(args, check_mode=False, name=None):
    """Run the module; return (result, benchmark) and fail with the module's message if it failed.

    The result is kept under tests/output/testbed/ (named after the test) for a look after the run.
    """
    result = run_module(MODULE, args, check_mode=check_mode)
    test = name or os.environ.get("PYTEST_CURRENT_TEST", "bench").split("::")[-1].split(" ")[0]
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / f"result-{test}.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    assert not result.get("failed"), f"module failed: {result.get('msg')}\n{json.dumps(result, indent=1)[:4000]}"
    return result, result["benchmark"]


def bench_fails(args):
    result = run_module(MODULE, args)
    test = os.environ.get("PYTEST_CURRENT_TEST", "bench").split("::")[-1].split(" ")[0]
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / f"result-{test}.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    assert result.get("failed") is True, f"module did not fail:\n{json.dumps(result, indent=1)[:4000]}"
    return result


def metric_total(url, name, headers=None):
    status, text = http_get(url + "/metrics", headers=headers)
    assert status == 200, f"GET {url}/metrics -> {status}: {text[:200]}"
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(name + "{") or line.startswith(name + " ")]
    return math.fsum(values) if values else None


def check_run(run, args):
    """Invariants of one measured run of a healthy server with ignore_eos."""
    missing = [k for k in RUN_KEYS if k not in run]
    assert not missing, f"run lacks {missing}: {run}"
    c = run["concurrency"]
    assert run["completed"] == args["num_prompts"], run
    assert run["failed"] == 0 and run["errors"] == [], run
    # ignore_eos (the default): every request produced exactly output_len tokens (usage.completion_tokens).
    assert run["total_output_tokens"] == args["num_prompts"] * args["output_len"], run
    # The server's own prompt token counts (usage.prompt_tokens), sized with its /tokenize to input_len.
    assert run["total_input_tokens"] is not None, run
    mean_in = run["total_input_tokens"] / run["completed"]
    assert abs(mean_in - args["input_len"]) <= 0.1 * args["input_len"], (c, mean_in)
    for key in ("ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "tpot_ms_p50", "tpot_ms_p99", "tpot_ms_mean",
                "throughput_tok_s", "request_throughput", "e2e_latency_ms_p50", "duration_s"):
        assert isinstance(run[key], (int, float)) and run[key] > 0, (c, key, run[key])
    assert run["ttft_ms_p99"] >= run["ttft_ms_p50"] and run["itl_ms_p99"] >= run["itl_ms_p50"], run
    assert run["tpot_ms_p99"] >= run["tpot_ms_p50"], run
    # e2e latency = ttft + (output_tokens - 1) * tpot for each request; medians keep the order.
    assert run["e2e_latency_ms_p50"] > run["ttft_ms_p50"], run
    assert run["e2e_latency_ms_p50"] >= (args["output_len"] - 1) * run["tpot_ms_p50"] * 0.5, run
    # Throughputs are totals over the run's duration.
    assert run["throughput_tok_s"] == pytest.approx(run["total_output_tokens"] / run["duration_s"], rel=1e-3), run
    assert run["request_throughput"] == pytest.approx(run["completed"] / run["duration_s"], rel=1e-3), run
    # The run cannot be shorter than its slowest request, nor longer than all of them one after another.
    assert run["duration_s"] * 1000 >= run["e2e_latency_ms_p50"], run
    assert run["duration_s"] * 1000 <= run["completed"] * run["e2e_latency_ms_p50"] * 3 + 1000, run
    assert run["metrics_polluted"] is False, run
    if c == 1:
        # One request at a time: tokens stream in after the first, so the first one arrives early.
        # (TTFT ~ E2EL means the client read a whole completion at once: a starved client, not a stream.)
        assert run["ttft_ms_p50"] < 0.5 * run["e2e_latency_ms_p50"], run


def check_common(result, bm, args, model):
    assert bm["runtime"] == "vllm" and bm["skill"] == MODULE, bm
    assert bm["model"] == model, bm["model"]
    assert str(bm["vllm_version"]).startswith("0.32.0"), bm["vllm_version"]  # from the server's /version
    assert [r["concurrency"] for r in bm["runs"]] == args["concurrency"], bm["runs"]
    cfg = bm["config"]
    for key in ("input_len", "output_len", "num_prompts", "warmup_prompts", "seed"):
        assert cfg[key] == args[key], (key, cfg)
    assert cfg["concurrency"] == args["concurrency"] and cfg["ignore_eos"] is True, cfg
    assert float(cfg["temperature"]) == 0.0, cfg
    assert len(cfg["prompt_set_id"]) == 64, cfg
    # Off-Jetson: the identity is unknown, never invented.
    assert bm["sku"] == "unknown" and bm["sku_label"] is None and bm["l4t"] is None, bm  # the contract bucket off-Jetson
    assert isinstance(bm["warnings"], list)
    assert result["changed"] is False


# --- the test bed itself ----------------------------------------------------------------------------
def test_testbed_servers_are_real_vllm(vllm_baseline, vllm_spec):  # noqa: F811
    """The fixtures serve real vLLM 0.32: /version, the served names, the api key and the spec counters."""
    for srv in (vllm_baseline, vllm_spec):
        status, text = http_get(srv.url + "/version")
        assert status == 200 and json.loads(text)["version"].startswith("0.32.0"), text
    status, text = http_get(vllm_baseline.url + "/v1/models")
    assert status == 200 and [m["id"] for m in json.loads(text)["data"]] == ["target"], text
    status, text = http_get(vllm_spec.url + "/v1/models")
    assert status == 401, f"the speculative server must demand its api key: {text}"
    status, text = http_get(vllm_spec.url + "/v1/models", headers={"Authorization": f"Bearer {SPEC_API_KEY}"})
    assert status == 200 and [m["id"] for m in json.loads(text)["data"]] == ["target-spec"], text
    assert metric_total(vllm_spec.url, "vllm:spec_decode_num_draft_tokens_total") is not None
    assert metric_total(vllm_baseline.url, "vllm:spec_decode_num_draft_tokens_total") is None


# --- measurements -----------------------------------------------------------------------------------
def test_random_dataset_concurrency_1_and_8(vllm_baseline, tmp_path):  # noqa: F811
    """Default model (first of /v1/models), random prompts, c=1 and c=8, JSON written on the target."""
    out = tmp_path / "sub" / "bench.json"
    args = dict(SMALL, endpoint=vllm_baseline.url, dataset="random", output_file=str(out))
    requests_before = metric_total(vllm_baseline.url, "vllm:request_success_total") or 0.0
    result, bm = bench(args)
    requests_after = metric_total(vllm_baseline.url, "vllm:request_success_total")

    assert bm["model"] == "target" and bm["endpoint"] == vllm_baseline.url, bm
    assert bm["config"]["dataset"] == "random"
    for key in ("input_len", "output_len", "num_prompts", "warmup_prompts", "seed"):
        assert bm["config"][key] == args[key], (key, bm["config"])
    assert str(bm["vllm_version"]).startswith("0.32.0"), bm["vllm_version"]
    assert [r["concurrency"] for r in bm["runs"]] == [1, 8]
    for run in bm["runs"]:
        check_run(run, args)
        assert run["spec_decode"] is None, "the baseline server does not speculate"
    c1, c8 = bm["runs"]
    # Eight requests in flight finish the same work faster than one at a time on the same server.
    assert c8["throughput_tok_s"] > c1["throughput_tok_s"], (c1, c8)
    assert c8["duration_s"] < c1["duration_s"], (c1, c8)
    # The server saw exactly the warm-up and measured requests, nothing else.
    expected = len(args["concurrency"]) * (args["num_prompts"] + args["warmup_prompts"])
    assert requests_after - requests_before == expected, (requests_before, requests_after, expected)

    # output_file: written, 0644, holds the returned result; only then is the task "changed".
    assert result["changed"] is True
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    assert json.loads(out.read_text())["runs"] == bm["runs"]


def test_builtin_dataset_concurrency_1_and_8(vllm_baseline):  # noqa: F811
    """The realistic prompt set shipped in the collection, sized to input_len with the server's tokenizer."""
    args = dict(SMALL, endpoint=vllm_baseline.url, model="target", dataset="builtin")
    result, bm = bench(args)
    check_common(result, bm, args, "target")
    assert bm["config"]["dataset"] == "builtin"
    for run in bm["runs"]:
        check_run(run, args)
        assert run["spec_decode"] is None
    # Another dataset, other prompts: the prompt set id tells them apart.
    _result, bm_random = bench(dict(args, dataset="random", concurrency=[1], num_prompts=2, warmup_prompts=0),
                               name="builtin-vs-random")
    assert bm_random["config"]["prompt_set_id"] != bm["config"]["prompt_set_id"]


def test_speculative_decoding_stats_with_perfect_draft(vllm_spec):  # noqa: F811
    """Draft = copy of the target at temperature 0: (nearly) every draft token accepted."""
    args = dict(SMALL, endpoint=vllm_spec.url, model="target-spec", dataset="builtin", api_key=SPEC_API_KEY)
    result, bm = bench(args)
    check_common(result, bm, args, "target-spec")
    for run in bm["runs"]:
        check_run(run, args)
        sd = run["spec_decode"]
        assert sd is not None, f"no spec_decode stats from a speculating server: {run}"
        assert sd["draft_tokens"] > 0 and sd["drafts"] > 0, sd
        assert sd["acceptance_rate"] > 0.9, sd
        assert 1 < sd["acceptance_length"] <= 1 + NUM_SPEC_TOKENS, sd
        pos = sd["per_position_acceptance"]
        assert len(pos) == NUM_SPEC_TOKENS, sd
        assert all(0.0 <= p <= 1.0 for p in pos), sd
        # A token at position i is only accepted when all before it were: non-increasing.
        assert all(a >= b - 1e-9 for a, b in zip(pos, pos[1:])), sd
        # Each draft proposes K tokens; acceptance rate and length are the same counters seen two ways.
        assert sd["draft_tokens"] == NUM_SPEC_TOKENS * sd["drafts"], sd
        assert sd["accepted_tokens"] <= sd["draft_tokens"], sd
        assert sd["acceptance_rate"] == pytest.approx(sd["accepted_tokens"] / sd["draft_tokens"], abs=1e-4), sd
        assert sd["acceptance_length"] == pytest.approx(1 + sd["accepted_tokens"] / sd["drafts"], abs=1e-4), sd
        assert sum(pos) == pytest.approx(sd["accepted_tokens"] / sd["drafts"], abs=1e-3), sd
        # Only this run's tokens: the counters moved by no more than what it generated.
        assert sd["accepted_tokens"] < run["total_output_tokens"], (sd, run["total_output_tokens"])
        # The server runs with --per-request-spec-decode-metrics summary: the figures are the run's own requests'
        # (every completed one), and on this quiet server they add up to exactly what /metrics counted.
        assert sd["source"] == "requests" and sd["requests"] == run["completed"], sd
        assert sd["server_counters"] == {k: sd[k] for k in ("drafts", "draft_tokens", "accepted_tokens")}, sd
        assert 0.9 < sd["request_acceptance_rate_mean"] <= 1.0, sd
    c1 = bm["runs"][0]
    # With speculation one SSE chunk carries several tokens, so there are fewer ITLs than tokens
    # for the same decode time: the mean per-chunk ITL exceeds the mean per-token TPOT. (Means, not
    # medians: on a loaded 2-core machine the client may read chunks in bursts, which moves the ITL
    # median towards 0 but leaves the sums, and so this inequality, unchanged; every request has
    # output_len tokens with ignore_eos.)
    assert c1["itl_ms_mean"] > c1["tpot_ms_mean"], c1
    assert SPEC_API_KEY not in json.dumps(result), "the api key leaked into the module's result"


# AGX Orin on L4T r39 (upstream vLLM), as jetson_facts reports it: mtp K = 2 there.
ORIN_R39 = {
    "is_jetson": True, "reason": None, "generation": "orin", "product_line": "orin-agx", "variant": "orin-agx-64gb",
    "l4t": {"version": "39.0.0", "major": 39, "minor": 0, "patch": 0, "source": "nv_tegra_release"},
    "memory": {"total_mb": 62790, "available_mb": 59002, "swap_total_mb": 0, "swap_free_mb": 0},
    "vllm_runtime": {"path": "upstream", "image": "vllm/vllm-openai:latest", "min_vllm_version": "0.20",
                     "forbidden_images": [], "notes": []},
}


def test_mtp_planned_from_a_real_checkpoint_runs_on_real_vllm(vllm_spec_mtp, testbed):  # noqa: F811
    """speculative_plan reads the checkpoint's own config.json (one MTP layer, MiMo layout) and plans method mtp
    with no model key; real vLLM 0.32 (CPU build) serves exactly that config and its counters count the drafts
    (the MTP layer's weights are random: ~0 accepted, the path runs, it does not pay)."""
    plan = run_module("jetson_llm.vllm.speculative_plan", {
        "jetson": ORIN_R39, "target_model": str(testbed.model("target-mtp")), "expected_concurrency": 1,
        "baseline_gpu_memory_utilization": 0.75, "vllm_version": "0.32.0", "runtime_image": "vllm/vllm-openai:latest"})
    assert plan.get("failed") is not True, plan
    assert plan["enable"] is True and plan["method"] == "mtp" and plan["model_source"] == "config.json", plan
    assert plan["speculative_config"] == {"method": "mtp", "num_speculative_tokens": MTP_SPEC_TOKENS}, plan
    assert vllm_spec_mtp.speculative_config == plan["speculative_config"]
    args = dict(SMALL, endpoint=vllm_spec_mtp.url, model="target-mtp", dataset="builtin", concurrency=[1],
                num_prompts=4)
    _result, bm = bench(args)
    sd = bm["runs"][0]["spec_decode"]
    assert sd is not None and sd["drafts"] > 0, f"no drafts counted from the MTP server: {bm['runs'][0]}"
    assert sd["draft_tokens"] == MTP_SPEC_TOKENS * sd["drafts"], sd
    # This server has no --per-request-spec-decode-metrics: the figures come from its /metrics counters.
    assert sd["source"] == "server_counters" and "requests" not in sd, sd


def test_dflash_planned_with_a_local_draft_runs_on_real_vllm(vllm_spec_dflash, testbed):  # noqa: F811
    """speculative_plan plans method dflash asked for by name with a local DFlash draft (its config.json read on the
    host as vLLM reads it: DFlashDraftModel with dflash_config.mask_token_id); real vLLM 0.32 (CPU build, where the
    platform runs DFlash's Triton kernel as C++) serves exactly that config, drafting blocks of K tokens in parallel
    with non-causal attention over the target's layers 1 and 3 (random weights: ~0 accepted, the path runs)."""
    plan = run_module("jetson_llm.vllm.speculative_plan", {
        "jetson": ORIN_R39, "target_model": str(testbed.model("target")), "expected_concurrency": 1,
        "method": "dflash", "draft_model": str(testbed.model("draft-dflash")),
        "baseline_gpu_memory_utilization": 0.75, "vllm_version": "0.32.0", "runtime_image": "vllm/vllm-openai:latest"})
    assert plan.get("failed") is not True, plan
    assert plan["enable"] is True and plan["method"] == "dflash" and plan["model_source"] == "option", plan
    assert plan["speculative_config"] == {"draft_tensor_parallel_size": 1, "method": "dflash",
                                          "model": str(testbed.model("draft-dflash")),
                                          "num_speculative_tokens": DFLASH_SPEC_TOKENS}, plan
    assert vllm_spec_dflash.speculative_config == plan["speculative_config"]
    log = vllm_spec_dflash.log_path.read_text(errors="replace")
    assert "Resolved architecture: DFlashDraftModel" in log, "vLLM did not load the draft as DFlash"
    args = dict(SMALL, endpoint=vllm_spec_dflash.url, model="target-dflash", dataset="builtin", concurrency=[1],
                num_prompts=4)
    _result, bm = bench(args)
    assert str(bm["vllm_version"]).startswith("0.32.0"), bm["vllm_version"]
    sd = bm["runs"][0]["spec_decode"]
    assert sd is not None and sd["drafts"] > 0, f"no drafts counted from the DFlash server: {bm['runs'][0]}"
    assert sd["draft_tokens"] == DFLASH_SPEC_TOKENS * sd["drafts"], sd


# --- failures -----------------------------------------------------------------------------------------
def test_stopped_server_fails_naming_endpoint(vllm_dead_endpoint):  # noqa: F811
    """A port where a real vLLM ran and exited: a clear failure naming the endpoint, no numbers."""
    result = bench_fails(dict(SMALL, endpoint=vllm_dead_endpoint, concurrency=[1], num_prompts=2))
    msg = result["msg"]
    assert vllm_dead_endpoint in msg, msg
    assert "refused" in msg.lower() or "not reachable" in msg.lower() or "unreachable" in msg.lower(), msg
    assert "benchmark" not in result or not result["benchmark"].get("runs"), result


def test_wrong_model_names_it_and_lists_served_ones(vllm_baseline):  # noqa: F811
    result = bench_fails(dict(SMALL, endpoint=vllm_baseline.url, model="llama-3-70b-nonexistent", concurrency=[1]))
    msg = result["msg"]
    assert "llama-3-70b-nonexistent" in msg and "target" in msg and vllm_baseline.url in msg, msg


@pytest.mark.parametrize("key", ["wrong-key-Zp81Qx", None])
def test_bad_or_missing_api_key_fails_without_leaking_it(vllm_spec, key):  # noqa: F811
    args = dict(SMALL, endpoint=vllm_spec.url, model="target-spec", concurrency=[1], num_prompts=2)
    if key:
        args["api_key"] = key
    result = bench_fails(args)
    msg = result["msg"]
    assert "401" in msg and vllm_spec.url in msg and "api_key" in msg, msg
    dumped = json.dumps(result)
    assert SPEC_API_KEY not in dumped
    if key:
        assert key not in dumped, "the api key appears in the module's output"


def test_check_mode_sends_no_request(vllm_baseline, tmp_path):  # noqa: F811
    out = tmp_path / "never.json"
    before = metric_total(vllm_baseline.url, "vllm:request_success_total") or 0.0
    result = run_module(MODULE, dict(SMALL, endpoint=vllm_baseline.url, output_file=str(out)), check_mode=True)
    after = metric_total(vllm_baseline.url, "vllm:request_success_total") or 0.0
    assert not result.get("failed"), result
    assert result["changed"] is False and "check mode" in result.get("msg", "").lower(), result
    assert after == before, "check mode sent requests to the server"
    assert not out.exists()
