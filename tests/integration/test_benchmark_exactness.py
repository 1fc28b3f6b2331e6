"""vllm_benchmark through the real `ansible` CLI against a deterministic streaming simulator.

tests/utils/fake_vllm.py streams with known timings and token counts (it is a simulator
written for these tests, not vLLM). The known values are the simulator's own record of when
it wrote each chunk (its schedule is fixed, but on a loaded machine a sleep can wake late,
so the record, not the nominal schedule, is the truth): the module's TTFT, ITL, TPOT, E2EL
and throughput, measured from the other end of the socket, must match them within 2 %. Its
speculative-decoding stats must match the simulator's counters exactly, and every failure
mode must give a clear, actionable failure.
The same module against real vLLM is tested in test_vllm_benchmark_real.py.
"""
from __future__ import annotations

import json
import statistics
import sys
import threading
import urllib.request

import pytest

from conftest import TOP, run_module

sys.path.insert(0, str(TOP / "tests" / "utils"))
from fake_vllm import FakeVLLM  # noqa: E402  pylint: disable=wrong-import-position

MODULE = "jetson_llm.vllm.vllm_benchmark"
REL = 0.02  # the tolerance


def bench(sim, check_mode=False, **args):
    args.setdefault("endpoint", sim.url)
    return run_module(MODULE, args, check_mode=check_mode)


def ok(result):
    assert not result.get("failed"), json.dumps(result, indent=1)[:4000]
    return result["benchmark"]


def failed(result):
    assert result.get("failed") is True, json.dumps(result, indent=1)[:4000]
    return result["msg"]


def known(timelines):
    """vLLM's metrics computed from the simulator's record of one run (seconds)."""
    ttft, itl, tpot, e2el, tokens = [], [], [], [], 0
    for tl in timelines:
        times = [t for t, _n in tl["chunks"]]
        count = sum(n for _t, n in tl["chunks"])
        ttft.append(times[0] - tl["received"])
        e2el.append(times[-1] - tl["received"])
        itl.extend(b - a for a, b in zip(times, times[1:]))
        tpot.append((times[-1] - times[0]) / (count - 1))
        tokens += count
    duration = max(tl["chunks"][-1][0] for tl in timelines) - min(tl["received"] for tl in timelines)
    return {"ttft_ms_p50": 1000 * statistics.median(ttft), "itl_ms_p50": 1000 * statistics.median(itl),
            "tpot_ms_p50": 1000 * statistics.median(tpot), "tpot_ms_mean": 1000 * statistics.mean(tpot),
            "e2e_latency_ms_p50": 1000 * statistics.median(e2el), "throughput_tok_s": tokens / duration,
            "request_throughput": len(timelines) / duration, "duration_s": duration}


def assert_matches(run, expected):
    for key, value in expected.items():
        assert run[key] == pytest.approx(value, rel=REL), (key, run[key], value, run)


@pytest.fixture
def sim():
    with FakeVLLM(ttft=0.1, itl=0.02) as server:
        yield server


# --- exactness ------------------------------------------------------------------------------

def test_timings_and_throughput_match_the_known_values():
    """TTFT 250 ms, then one token every 20 ms: 16 tokens take 550 ms.

    The simulator stamps a request when its request line arrives; the module starts the clock
    just before it sends. The few milliseconds between the two (a thread wake-up and the GIL, in
    each process, worst at c=4 on 2 loaded cores: 2.2 ms was seen) are part of a real TTFT but
    invisible to the simulator, so the TTFT is long enough for 2 % to cover them (5 ms).
    """
    with FakeVLLM(ttft=0.25, itl=0.02) as sim:
        url = sim.url
        result = bench(sim, concurrency=[1, 4], num_prompts=8, warmup_prompts=1, input_len=96, output_len=16,
                       dataset="random")
    bm = ok(result)
    assert bm["model"] == "fake-model" and bm["vllm_version"] == "0.32.0" and bm["endpoint"] == url
    # The simulator saw exactly the warm-up and measured requests, in this order.
    assert len(sim.timelines) == 2 * (1 + 8)
    for run, timelines in zip(bm["runs"], (sim.timelines[1:9], sim.timelines[10:18])):
        assert run["completed"] == 8 and run["failed"] == 0 and run["errors"] == []
        assert run["total_output_tokens"] == 8 * 16                      # usage.completion_tokens
        assert run["total_input_tokens"] == 8 * 96                       # sized with /tokenize, counted by the server
        assert_matches(run, known(timelines))
        assert run["spec_decode"] is None and run["metrics_polluted"] is False
    # With one token per chunk, TPOT and ITL are the same thing.
    c1, c4 = bm["runs"]
    assert c1["tpot_ms_p50"] == pytest.approx(c1["itl_ms_p50"], rel=REL)
    # c=4 runs 8 requests in two waves of 4: about 4 times the throughput of c=1.
    assert c4["throughput_tok_s"] == pytest.approx(4 * c1["throughput_tok_s"], rel=0.25)
    body = sim.completions[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 16 and body["ignore_eos"] is True and "temperature" not in body
    assert "c=1: " in result["msg"] and "c=4: " in result["msg"]
    assert bm["warnings"] == []


def test_speculative_chunks_give_exact_spec_stats_and_divergent_itl_tpot():
    """4 tokens per chunk after the first, K=5: each chunk is a draft with 3 of 5 tokens accepted."""
    with FakeVLLM(ttft=0.25, itl=0.04, tokens_per_chunk=4, spec_k=5) as sim:
        bm = ok(bench(sim, concurrency=[2], num_prompts=6, warmup_prompts=2, input_len=64, output_len=33,
                      temperature=0))
    run = bm["runs"][0]
    # 33 tokens = 1 + 8 chunks of 4 (nominally E2EL = 250 + 8 * 40 = 570 ms, TPOT = 320 / 32 = 10 ms, ITL = 40 ms)
    assert [n for _t, n in sim.timelines[-1]["chunks"]] == [1] + [4] * 8
    expected = known(sim.timelines[2:])
    assert_matches(run, expected)
    assert run["itl_ms_p50"] == pytest.approx(4 * run["tpot_ms_p50"], rel=0.1)  # per chunk vs per token
    # Only the 6 measured requests count (the warm-ups happen before the first scrape).
    assert run["spec_decode"] == {"acceptance_rate": 0.6, "acceptance_length": 4.0, "drafts": 6 * 8,
                                  "draft_tokens": 6 * 8 * 5, "accepted_tokens": 6 * 8 * 3,
                                  "per_position_acceptance": [1.0, 1.0, 1.0, 0.0, 0.0], "source": "server_counters"}
    assert run["metrics_polluted"] is False
    assert bm["config"]["temperature"] == 0.0
    assert sim.completions[-1]["temperature"] == 0.0


def test_per_request_spec_metrics_are_summed_exactly_and_win_over_the_counters():
    """The same stream with vLLM 0.29+'s per-request metrics in each usage chunk (request_spec): spec_decode is the
    requests' sum, the same figures as the counters', which ride along; each request counts once in the mean rate."""
    with FakeVLLM(ttft=0.05, itl=0.01, tokens_per_chunk=4, spec_k=5, request_spec=True) as sim:
        bm = ok(bench(sim, concurrency=[2], num_prompts=6, warmup_prompts=2, input_len=64, output_len=33,
                      temperature=0))
    spec = bm["runs"][0]["spec_decode"]
    assert spec == {"acceptance_rate": 0.6, "acceptance_length": 4.0, "drafts": 6 * 8, "draft_tokens": 6 * 8 * 5,
                    "accepted_tokens": 6 * 8 * 3, "per_position_acceptance": [1.0, 1.0, 1.0, 0.0, 0.0],
                    "request_acceptance_rate_mean": 0.6, "requests": 6, "source": "requests",
                    "server_counters": {"drafts": 48, "draft_tokens": 240, "accepted_tokens": 144}}
    assert bm["warnings"] == []


def test_other_traffic_is_reported_as_pollution():
    with FakeVLLM(ttft=0.02, itl=0.005, spec_k=3, tokens_per_chunk=2) as sim:
        stop = threading.Event()

        def other_client():
            body = json.dumps({"model": "fake-model", "prompt": "hello", "max_tokens": 8, "stream": True,
                               "stream_options": {"include_usage": True}}).encode()
            while not stop.is_set():
                req = urllib.request.Request(sim.url + "/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=10) as resp:
                    resp.read()

        thread = threading.Thread(target=other_client, daemon=True)
        thread.start()
        try:
            result = bench(sim, concurrency=[1], num_prompts=10, warmup_prompts=0, input_len=32, output_len=16)
        finally:
            stop.set()
            thread.join(5)
    bm = ok(result)
    run = bm["runs"][0]
    assert run["metrics_polluted"] is True
    assert run["completed"] == 10 and run["total_output_tokens"] == 160
    assert any("other traffic may have polluted" in w for w in bm["warnings"]), bm["warnings"]
    assert any("other traffic may have polluted" in w for w in result.get("warnings", []))


def test_no_tokenize_endpoint_warns_and_still_records_real_counts():
    with FakeVLLM(ttft=0.01, itl=0.002, tokenize=False) as sim:
        bm = ok(bench(sim, concurrency=[1], num_prompts=3, warmup_prompts=0, input_len=130, output_len=4,
                      dataset="random"))
    run = bm["runs"][0]
    # 130 tokens / 1.3 tokens per word = 100 words; the simulator counts words (+ BOS): 101 each
    assert run["total_input_tokens"] == 3 * 101
    assert any("no usable /tokenize endpoint" in w and "approximate" in w for w in bm["warnings"]), bm["warnings"]
    assert any("more than 10% away from input_len 130" in w for w in bm["warnings"]), bm["warnings"]


def test_no_metrics_endpoint_gives_nulls_not_zeros():
    with FakeVLLM(ttft=0.01, itl=0.002, metrics=False, spec_k=4) as sim:
        bm = ok(bench(sim, concurrency=[1], num_prompts=2, warmup_prompts=0, input_len=16, output_len=4))
    run = bm["runs"][0]
    assert run["spec_decode"] is None and run["metrics_polluted"] is None
    assert any("metrics could not be read" in w for w in bm["warnings"]), bm["warnings"]


def test_prompts_file_with_per_line_output_len(sim, tmp_path):
    sim.ttft, sim.itl = 0.01, 0.002
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": "first prompt here"}\n\n{"prompt": "second", "output_len": 3}\n')
    out = tmp_path / "results" / "bench.json"
    result = bench(sim, concurrency=[1], num_prompts=4, warmup_prompts=1, output_len=5, dataset="file",
                   prompts_file=str(path), output_file=str(out))
    bm = ok(result)
    measured = sim.completions[1:]
    assert [b["prompt"] for b in measured] == ["first prompt here", "second"] * 2
    assert [b["max_tokens"] for b in measured] == [5, 3, 5, 3]
    assert sim.completions[0]["prompt"] == "second"  # the warm-up takes the line before the first, cyclically
    assert bm["runs"][0]["total_output_tokens"] == 16
    assert result["changed"] is True and json.loads(out.read_text()) == bm


def test_prompt_sets_are_reproducible_per_concurrency_level(sim):
    sim.ttft, sim.itl = 0.005, 0.001
    common = dict(num_prompts=3, warmup_prompts=1, input_len=48, output_len=2)
    a = ok(bench(sim, concurrency=[1, 2], **common))
    b = ok(bench(sim, concurrency=[2], **common))
    c = ok(bench(sim, concurrency=[2], seed=1, **common))
    assert a["runs"][1]["prompt_set_id"] == b["runs"][0]["prompt_set_id"]
    assert a["runs"][0]["prompt_set_id"] != a["runs"][1]["prompt_set_id"]
    assert c["runs"][0]["prompt_set_id"] != b["runs"][0]["prompt_set_id"]
    assert a["config"]["prompt_set_id"] != b["config"]["prompt_set_id"]
    # warm-up prompts never repeat measured ones (the prefix cache would serve them)
    prompts = [body["prompt"] for body in sim.completions]
    assert len(set(prompts[:4])) == 4


def test_idle_connections_closed_by_the_server_are_reopened():
    """uvicorn closes idle keep-alive connections; here the simulator closes them at once."""
    with FakeVLLM(ttft=0.005, itl=0.001, keepalive_timeout=0.001) as sim:
        bm = ok(bench(sim, concurrency=[1, 3], num_prompts=6, warmup_prompts=2, input_len=16, output_len=4))
        connections = sim.completion_connections
    assert [run["completed"] for run in bm["runs"]] == [6, 6]
    assert [run["failed"] for run in bm["runs"]] == [0, 0]
    # 3 slots at most, but connections were closed under them (at least between the phases) and reopened
    assert connections > 3


def test_check_mode_sends_nothing(sim, tmp_path):
    out = tmp_path / "bench.json"
    result = bench(sim, check_mode=True, output_file=str(out))
    assert not result.get("failed") and result["changed"] is False and "check mode" in result["msg"]
    assert sim.connections == 0 and sim.completions == [] and not out.exists()


# --- failures ------------------------------------------------------------------------------

def test_unreachable_endpoint():
    server = FakeVLLM().start()
    url = server.url
    server.stop()
    msg = failed(run_module(MODULE, {"endpoint": url, "concurrency": [1], "num_prompts": 1}))
    assert msg.startswith("Cannot reach the vLLM endpoint %s" % url) and "connection refused" in msg


def test_unknown_model(sim):
    msg = failed(bench(sim, model="llama-3-70b"))
    assert "'llama-3-70b' is not served by the vLLM endpoint %s; it serves: fake-model" % sim.url in msg


def test_api_key_missing_wrong_and_right():
    with FakeVLLM(ttft=0.01, itl=0.002, api_key="sk-right-Kq7") as sim:
        msg = failed(bench(sim, concurrency=[1], num_prompts=1))
        assert "requires an API key (HTTP 401" in msg and sim.url in msg and "set api_key" in msg
        result = bench(sim, concurrency=[1], num_prompts=1, api_key="sk-wrong-Zz9")
        assert "rejected the api_key given (HTTP 401" in failed(result)
        assert "sk-wrong-Zz9" not in json.dumps(result)
        result = bench(sim, concurrency=[1], num_prompts=2, warmup_prompts=0, input_len=8, output_len=2,
                       api_key="sk-right-Kq7")
        assert ok(result)["runs"][0]["completed"] == 2
        assert "sk-right-Kq7" not in json.dumps(result)


@pytest.mark.parametrize("mode, error", [
    ("http500", "HTTP 500 Internal Server Error from POST /v1/completions: simulated engine failure"),
    ("truncated", 'truncated SSE stream: the response ended without "data: [DONE]"'),
    ("drop", "the server closed the connection in the middle of the response"),
    ("no_usage", "truncated SSE stream: no usage chunk with completion_tokens"),
    ("malformed", "malformed SSE stream: a data message is not JSON"),
    ("error_event", "the server reported an error in the stream: simulated error mid-stream"),
])
def test_broken_responses_fail_the_module_with_the_partial_result(sim, mode, error):
    sim.ttft, sim.itl, sim.mode = 0.005, 0.001, mode
    result = bench(sim, concurrency=[1, 2], num_prompts=3, warmup_prompts=1, input_len=16, output_len=6)
    msg = failed(result)
    assert "3 of 3 requests to the vLLM endpoint %s failed at concurrency 1" % sim.url in msg
    assert error in msg
    run = result["benchmark"]["runs"][0]
    assert len(result["benchmark"]["runs"]) == 1  # stopped after the failing level
    assert run["completed"] == 0 and run["failed"] == 3 and run["errors"][0] == error or error in run["errors"][0]
    for key in ("ttft_ms_p50", "tpot_ms_p50", "itl_ms_p50", "throughput_tok_s", "e2e_latency_ms_p50", "total_output_tokens"):
        assert run[key] is None, key


def test_timeout_names_request_timeout(sim):
    sim.mode, sim.slow_s = "slow", 3.0
    result = bench(sim, concurrency=[1], num_prompts=1, warmup_prompts=0, input_len=8, output_len=2, request_timeout=0.5)
    msg = failed(result)
    assert "timed out" in msg and "request_timeout=0.5" in msg


def test_some_failures_within_max_failed_ratio(sim):
    sim.ttft, sim.itl, sim.mode, sim.fail_every = 0.005, 0.001, "http500", 3
    # requests 3, 6, 9 of the simulator fail: warm-up #1 ok, measured #2..#10 -> #3, #6, #9 fail
    result = bench(sim, concurrency=[1], num_prompts=9, warmup_prompts=1, input_len=16, output_len=4,
                   max_failed_ratio=0.5)
    bm = ok(result)
    run = bm["runs"][0]
    assert run["completed"] == 6 and run["failed"] == 3 and run["total_output_tokens"] == 24
    assert any("3 of 9 requests failed" in w for w in bm["warnings"])
    sim.reset_counters()
    msg = failed(bench(sim, concurrency=[1], num_prompts=9, warmup_prompts=1, input_len=16, output_len=4))
    assert "3 of 9 requests" in msg and "max_failed_ratio 0.0" in msg
