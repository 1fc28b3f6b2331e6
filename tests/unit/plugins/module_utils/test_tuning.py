"""K tuning's state machine (_decision.tuning; the role's tune.yml and tune_step.yml act on it), as tables."""
from __future__ import annotations

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import tuning as T

CONFIG = {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 4}


def runs(tput, acceptance=0.9):
    return [{"concurrency": 1, "throughput_tok_s": tput, "spec_decode": {"acceptance_rate": acceptance}},
            {"concurrency": 8, "throughput_tok_s": tput * 3, "spec_decode": {"acceptance_rate": acceptance}}]


def started(tput=100.0, acceptance=0.9):
    return T.start(CONFIG, 0.7, runs(tput, acceptance))


HEALTHY = {"healthy": True, "failure": None}
KEEP = {"keep": True, "verdict": "accept", "reasons": ["Kept: +40 %."], "summary": "accept +40 %",
        "criteria": {"throughput_gain_c1": {"interval": [0.3, 0.5]}, "regression_c8": {"interval": [-0.02, 0.04]}},
        "deltas": {"throughput_gain_c1": 0.4}, "recommendation": "keep"}


def test_start_takes_the_kept_k_and_its_concurrency_1_figures():
    tune = started(123.4, 0.95)
    assert tune == {"state": "go", "stopped": None, "tried": [], "from_k": 4,
                    "best": {"k": 4, "speculative_config": CONFIG, "gpu_memory_utilization": 0.7,
                             "throughput_c1": 123.4, "acceptance_c1": 0.95}}
    assert T.start(CONFIG, "0.7", [])["best"]["throughput_c1"] == 0.0          # no c=1 run: nothing to beat yet
    assert T.start(CONFIG, 0.7, [{"concurrency": 1, "spec_decode": None}])["best"]["acceptance_c1"] is None
    with pytest.raises(ValueError, match="no num_speculative_tokens"):
        T.start({"method": "ngram"}, 0.7, [])
    with pytest.raises(ValueError, match="not a finite number"):
        T.start(CONFIG, "nan", [])


# (best acceptance at c=1, min acceptance, max K, state) -> (go, stop starts with)
NEXT = [
    (0.9, 0.6, 16, "go", True, None),
    (0.61, 0.6, 16, "go", True, None),
    (0.6, 0.6, 16, "go", False, "acceptance rate 0.6 at num_speculative_tokens 4 is not above 0.6: more draft tokens"),
    (0.3333333, "0.6", 16, "go", False, "acceptance rate 0.333 at num_speculative_tokens 4 is not above 0.6"),
    (None, 0.6, 16, "go", False, "acceptance rate unknown at concurrency 1 (no speculative-decoding counters)"),
    (0.9, 0.6, 4, "go", False, "num_speculative_tokens 4 is the most allowed (4)"),
    (0.9, 0.6, 5, "go", True, None),
    (0.9, 0.6, 16, "stopped", False, None),
]


@pytest.mark.parametrize("acceptance, minimum, max_k, state, go, stop", NEXT)
def test_next_step_tries_k_plus_1_only_while_the_draft_is_accepted_often_and_k_is_allowed(
        acceptance, minimum, max_k, state, go, stop):
    tune = dict(started(acceptance=acceptance), state=state)
    step = T.next_step(tune, minimum, max_k)
    assert step["go"] is go and step["k"] == 5
    assert step["speculative_config"] == dict(CONFIG, num_speculative_tokens=5) and step["gpu_memory_utilization"] == 0.7
    if stop is None:
        assert step["stop"] is None and step["tune"] is tune
    else:
        assert step["stop"].startswith(stop), step["stop"]
        assert step["tune"]["state"] == "stopped" and step["tune"]["stopped"] == step["stop"]
    assert tune["state"] == state, "the input state is not changed in place"


def bench(tput, acceptance=0.97):
    return {"runs": runs(tput, acceptance)}


# (healthy, verdict keeps, c=1 throughput, step, max_steps) -> (kept, state, stopped)
STEPS = [
    (True, True, 120.0, 1, 2, True, "go", None),
    (True, True, 120.0, 2, 2, True, "stopped", "reached jetson_spec_tune_max_steps (2)"),
    (True, True, 100.0, 1, 2, False, "stopped", "num_speculative_tokens 5 was not better"),   # equal is not better
    (True, False, 150.0, 1, 2, False, "stopped", "num_speculative_tokens 5 was not better"),  # faster, not kept
    (False, True, 150.0, 1, 2, False, "stopped", "num_speculative_tokens 5 was not better"),  # did not start
]


@pytest.mark.parametrize("healthy, keeps, tput, step, max_steps, kept, state, stopped", STEPS)
def test_a_step_is_kept_when_its_verdict_keeps_it_and_it_beats_the_best_c1_throughput(
        healthy, keeps, tput, step, max_steps, kept, state, stopped):
    tune = started(100.0)
    health = HEALTHY if healthy else {"healthy": False, "failure": "oom"}
    after = T.record_step(tune, step, 5, health, dict(KEEP, keep=keeps), bench(tput), max_steps)
    assert (after["state"], after["stopped"]) == (state, stopped)
    entry = after["tried"][-1]
    assert entry["kept"] is kept and entry["k"] == 5 and entry["healthy"] is healthy
    if kept:
        assert after["best"]["k"] == 5 and after["best"]["throughput_c1"] == tput
        assert after["best"]["speculative_config"]["num_speculative_tokens"] == 5
        assert after["best"]["verdict"]["verdict"] == "accept" and after["best"]["candidate"] == bench(tput)
        assert entry["summary"] == (f"Tuning step {step}, num_speculative_tokens 5: verdict accept, {tput} tok/s at "
                                    "concurrency 1 against 100.0 with 4: kept.")
    else:
        assert after["best"] is tune["best"]
    if not healthy:
        assert entry["verdict"] is None and entry["throughput_c1"] is None and entry["failure"] == "oom"
        assert entry["summary"] == "Tuning step 1, num_speculative_tokens 5: did not start: oom."
    elif not kept:
        assert entry["summary"].endswith(": not better, 4 put back."), entry["summary"]


def test_result_takes_the_best_verdict_and_records_every_step():
    outcome = {"status": "enabled", "reasons": ["first"], "verdict": "accept", "verdict_summary": "first",
               "intervals": {"c1": [0.1, 0.2], "c8": None}, "deltas": {"x": 1}, "recommendation": "r0"}
    tune = T.record_step(started(100.0), 1, 5, HEALTHY, KEEP, bench(120.0), 2)
    tune = T.record_step(tune, 2, 6, HEALTHY, dict(KEEP, keep=False, verdict="reject"), bench(90.0), 2)
    new = T.result(outcome, tune, 2)
    assert new["reasons"][0] == "Kept: +40 %." and new["reasons"][-1] == (
        "Tuning kept num_speculative_tokens 5 (from 4): num_speculative_tokens 6 was not better.")
    assert [r for r in new["reasons"] if r.startswith("Tuning step")] == [e["summary"] for e in tune["tried"]]
    assert new["intervals"] == {"c1": [0.3, 0.5], "c8": [-0.02, 0.04]} and new["recommendation"] == "keep"
    assert new["verdict_summary"] == "accept +40 %" and new["num_speculative_tokens"] == 5
    assert new["tuning"]["kept_k"] == 5 and new["tuning"]["from_k"] == 4 and new["tuning"]["max_steps"] == 2
    assert [e["k"] for e in new["tuning"]["tried"]] == [5, 6]
    assert all("summary" not in e for e in new["tuning"]["tried"])
    assert outcome["reasons"] == ["first"], "the input outcome is not changed in place"


def test_result_without_a_kept_step_keeps_the_first_verdict():
    outcome = {"status": "enabled", "reasons": ["first"], "verdict": "accept", "deltas": {"x": 1}, "recommendation": "r"}
    tune = T.next_step(started(acceptance=0.4), 0.6, 16)["tune"]
    new = T.result(outcome, tune, 2)
    assert new["reasons"][0] == "first" and new["reasons"][-1].startswith(
        "Tuning kept num_speculative_tokens 4: acceptance rate 0.4 at num_speculative_tokens 4 is not above 0.6")
    assert new["verdict"] == "accept" and new["deltas"] == {"x": 1} and new["intervals"] is None
    assert new["tuning"] == {"from_k": 4, "kept_k": 4, "max_steps": 2, "stopped": tune["stopped"], "tried": []}
    done = T.result(outcome, started(), 0)
    assert done["reasons"][-1] == "Tuning kept num_speculative_tokens 4: done."
