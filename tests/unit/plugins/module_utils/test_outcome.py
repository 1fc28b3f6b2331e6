"""The outcome after the verdict (_decision.outcome: batch_aware_note, after_verdict; verify.yml, batch_aware.yml)."""
from __future__ import annotations

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import outcome as O

FIRST = {"keep": False, "verdict": "reject", "reasons": ["c=1 +40 %.", "c=8 -12 %."]}
CONFIG = {"num_speculative_tokens_per_batch_size": [[1, 2, 4], [3, 65536, 0]]}
LIMIT = {"max_batch": 2, "reason": "--max-num-batched-tokens 16 fits only 3 request(s) with 4 draft tokens."}
UP = {"healthy": True, "failure": None}
JUDGED = {"keep": True, "verdict": "accept", "deltas": {"throughput_gain_c1": 0.3}, "drafting": {"off_above": 2},
          "reasons": ["c=1 +30 %, c=8 -1 %."]}
PASSED = "The planned configuration passed at concurrency 1 but regressed at concurrency 8 (verdict reject); "

# (limit, health, judged) -> (tried, kept, verdict, summary)
NOTES = [
    (LIMIT, UP, JUDGED, True, True, "accept",
     PASSED + "tried speculating only up to 2 requests at a time (num_speculative_tokens_per_batch_size: "
     "--max-num-batched-tokens 16 fits only 3 request(s) with 4 draft tokens): verdict accept, kept."),
    ({"max_batch": 4, "reason": None}, UP, dict(JUDGED, keep=False, verdict="reject"), True, False, "reject",
     PASSED + "tried speculating only up to 4 requests at a time (num_speculative_tokens_per_batch_size): "
     "verdict reject, not kept."),
    ({"max_batch": 4, "reason": None}, {"healthy": False, "failure": "oom"}, JUDGED, True, False, None,
     PASSED + "tried speculating only up to 4 requests at a time (num_speculative_tokens_per_batch_size): "
     "it did not start: oom."),
    ({"max_batch": 0, "reason": "no batch fits"}, UP, JUDGED, False, False, None,
     PASSED + "batch-size-aware speculation was not tried: no batch fits"),
]


@pytest.mark.parametrize("limit, health, judged, tried, kept, verdict, summary", NOTES)
def test_the_batch_size_aware_note_says_what_was_tried_and_decided(limit, health, judged, tried, kept, verdict,
                                                                   summary):
    note = O.batch_aware_note(FIRST, limit, CONFIG, health, judged)
    assert (note["tried"], note["kept"], note["verdict"], note["summary"]) == (tried, kept, verdict, summary)
    assert note["first_reasons"] == FIRST["reasons"]
    if not (tried and health["healthy"]):
        assert note["reasons"] == [] and note["deltas"] == {} and note["drafting"] is None, note
    if not tried:
        assert note["speculative_config"] is None and note["max_batch"] == 0 and note["healthy"] is None


VERDICT = {"keep": True, "verdict": "accept", "summary": "accept +40 %", "reasons": ["kept"], "deltas": {"d": 1},
           "recommendation": {"keep": True},
           "criteria": {"throughput_gain_c1": {"interval": [0.3, 0.5]}, "regression_c8": {"interval": [-0.02, 0.03]}}}
OUTCOME = {"status": "pending", "reasons": [], "started": "2026-12-07T00:00:00Z", "handoff": {}}


def test_a_kept_change_is_enabled_with_its_verdict_and_intervals():
    new = O.after_verdict(OUTCOME, VERDICT, {"runs": []}, None, [], None, "fixed")
    assert new["status"] == "enabled" and new["reasons"] == ["kept"] and new["unsettled"] is False
    assert new["intervals"] == {"c1": [0.3, 0.5], "c8": [-0.02, 0.03]} and new["batch_aware"] is None
    assert new["measurement"] == {"mode": "fixed", "requests": None, "stopped": None, "reason": None}
    assert new["started"] == OUTCOME["started"] and OUTCOME["status"] == "pending"


def test_a_sequential_measurement_records_its_requests_and_why_it_stopped():
    candidate = {"sequential": {"requests": {"total": 40}, "stopped": "settled", "reason": "c=1 decided"}}
    new = O.after_verdict(OUTCOME, dict(VERDICT, keep=False, verdict="reject"), candidate, None, [], None, "sequential")
    assert new["status"] == "reverted"
    assert new["measurement"] == {"mode": "sequential", "requests": 40, "stopped": "settled", "reason": "c=1 decided"}


def test_the_batch_size_aware_reasons_come_after_the_first_verdicts_and_its_note_is_recorded():
    note = O.batch_aware_note(FIRST, LIMIT, CONFIG, UP, JUDGED)
    new = O.after_verdict(OUTCOME, JUDGED, {}, note, ["Resumed: rolled back."], None, "fixed")
    assert new["reasons"] == ["Resumed: rolled back."] + FIRST["reasons"] + [note["summary"]] + JUDGED["reasons"]
    assert new["batch_aware"]["kept"] is True and "summary" not in new["batch_aware"]
    assert "first_reasons" not in new["batch_aware"] and "reasons" not in new["batch_aware"]


@pytest.mark.parametrize("check, warned", [(None, False), ({"at_baseline_speed": True, "ratio": 0.99}, False),
                                           ({"ratio": 1.0}, False), ({"at_baseline_speed": False, "ratio": 0.8}, True)])
def test_a_slow_restored_service_is_a_warning_in_the_reasons(check, warned):
    new = O.after_verdict(OUTCOME, dict(VERDICT, keep=False), {}, None, [], check, "fixed")
    expected = ("Warning: the restored service measured 0.8 x the baseline throughput at concurrency 1 (healthy, byte "
                "for byte the previous service).")
    assert (expected in new["reasons"]) is warned


@pytest.mark.parametrize("live, unsettled", [
    (None, False), ({}, False), ({"verdict_without_it": None}, False), ({"verdict_without_it": "accept"}, True)])
def test_a_keep_held_for_live_traffic_is_unsettled(live, unsettled):
    assert O.after_verdict(OUTCOME, dict(VERDICT, live_traffic=live), {}, None, [], None, "fixed")["unsettled"] is unsettled


# --- start-up attempts -----------------------------------------------------------------------------------------------
ATTEMPT = {"state": "try", "speculative_config": {"method": "draft_model", "num_speculative_tokens": 4},
           "gpu_memory_utilization": 0.7, "model": "/m/draft"}
OOM = {"healthy": False, "failure": "oom", "evidence": "CUDA out of memory", "elapsed_s": 40}
NEXT = {"enable": True, "next_step": "lower_gpu_memory_utilization", "speculative_config": {"num_speculative_tokens": 4},
        "gpu_memory_utilization": 0.65, "model": "/m/draft", "reasons": ["lower it"], "handoff": {}}


@pytest.mark.parametrize("attempt, health, summary", [
    (ATTEMPT, {"healthy": True, "elapsed_s": 12.5}, "Attempt 2 (/m/draft, --gpu-memory-utilization 0.7): healthy after 12.5 s"),
    (ATTEMPT, OOM, 'Attempt 2 (/m/draft, --gpu-memory-utilization 0.7): failed to start: oom ("CUDA out of memory")'),
    (dict(ATTEMPT, model=None), dict(OOM, evidence=""),
     "Attempt 2 (draft_model, --gpu-memory-utilization 0.7): failed to start: oom"),
])
def test_each_attempt_is_recorded_with_one_sentence(attempt, health, summary):
    attempts = O.attempt_note([{"summary": "first"}], 1, attempt, health, {"available_before_mb": 900})
    assert len(attempts) == 2 and attempts[-1]["summary"] == summary
    assert attempts[-1]["memory"] == {"available_before_mb": 900} and attempts[-1]["failure"] == health.get("failure")


@pytest.mark.parametrize("health, plan_next, index, max_attempts, state", [
    ({"healthy": True}, {}, 0, 3, "up"),
    (OOM, NEXT, 0, 3, "try"),
    (OOM, dict(NEXT, next_step="smaller_draft", model="/m/small"), 1, 3, "try"),
    (OOM, NEXT, 2, 3, "failed"),                                   # no attempt left
    (OOM, dict(NEXT, enable=False), 0, 3, "failed"),               # the plan refuses
    (OOM, dict(NEXT, next_step="refuse"), 0, 3, "failed"),         # not another start-up
])
def test_after_a_failed_start_the_plans_next_step_is_tried_while_attempts_are_left(
        health, plan_next, index, max_attempts, state):
    after = O.attempt_next(ATTEMPT, index, max_attempts, health, plan_next)
    assert after["state"] == state
    if state == "up":
        assert after == dict(ATTEMPT, state="up")
    elif state == "try":
        assert after == {"state": "try", "speculative_config": plan_next["speculative_config"],
                         "gpu_memory_utilization": plan_next["gpu_memory_utilization"], "model": plan_next["model"]}
    else:
        assert after == {"state": "failed", "reasons": plan_next["reasons"], "handoff": plan_next["handoff"]}


def test_no_attempt_served_the_outcome_is_reverted_with_every_attempt_said():
    attempts = O.attempt_note([], 0, ATTEMPT, OOM, {})
    failed = O.attempt_next(ATTEMPT, 0, 1, OOM, NEXT)
    new = O.after_startup_failure(OUTCOME, failed, attempts, ["Resumed."])
    assert new["status"] == "reverted" and new["handoff"] == {}
    assert new["reasons"] == ["Resumed.", "lower it", attempts[0]["summary"]]


# --- a task failed after the change (main.yml's rescue) ---------------------------------------------------------
FIRST_FAILURE = {"task": "Benchmark the speculative service", "msg": "12 of 12 requests failed"}
REVERT_FAILURE = {"task": "Wait until the restored service is healthy", "msg": "vllm.service failed to start"}
OVERLAYS = ["/run/systemd/system/vllm.service.d/candidate.conf", "/etc/systemd/system/vllm.service.d/kept.conf"]


@pytest.mark.parametrize("revert_failure, changed, last", [
    (None, True, "The previous service was restored and is healthy."),
    (None, False, None),
    (REVERT_FAILURE, True,
     'REVERT FAILED (task "Wait until the restored service is healthy"): vllm.service failed to start The host needs '
     "an operator; remove /run/systemd/system/vllm.service.d/candidate.conf and "
     "/etc/systemd/system/vllm.service.d/kept.conf, then restart vllm."),
])
def test_a_failure_keeps_its_first_cause_and_says_whether_the_revert_worked(revert_failure, changed, last):
    new = O.after_failure(dict(OUTCOME, reasons=["Resumed."]), FIRST_FAILURE, revert_failure, changed, OVERLAYS, "vllm")
    assert new["status"] == "failed"
    expected = ["Resumed.", 'Task "Benchmark the speculative service" failed: 12 of 12 requests failed']
    assert new["reasons"] == expected + ([last] if last else [])
    assert OUTCOME["status"] != "failed", "the outcome given is not changed in place"


def test_a_failures_message_is_cut_and_a_missing_one_is_named():
    new = O.after_failure({"status": "pending"}, {"task": None, "msg": "x" * 5000}, {"msg": "y" * 5000}, True,
                          OVERLAYS, "vllm")
    first, revert = new["reasons"]
    assert first.startswith('Task "?" failed: xxx') and first.endswith("...")
    assert len(first) < O.FAILURE_MSG_CHARS + 40
    assert revert.startswith('REVERT FAILED (task "?"): yyy') and "y" * (O.REVERT_MSG_CHARS + 1) not in revert
    assert O.after_failure({}, {}, None, False, [], "vllm")["reasons"] == ['Task "?" failed: no message']


def test_a_failed_loop_is_said_with_the_messages_of_its_failed_items():
    """A loop's failure (the staging of several models) says what failed in it, not Ansible's "One or more items
    failed"."""
    failure = {"task": "Stage the model weights", "msg": "One or more items failed",
               "results": [{"failed": False, "msg": "ok"}, {"failed": True, "msg": "draft.bin has SHA-256 0f, not 1e"},
                           "not a result", {"failed": True}]}
    new = O.after_failure({}, failure, None, False, [], "vllm")
    assert new["reasons"] == ['Task "Stage the model weights" failed: draft.bin has SHA-256 0f, not 1e']
    assert O.failure_message({"msg": "One or more items failed", "results": [{"failed": True}]}) == \
        "One or more items failed"
    assert O.failure_message({"msg": "plain", "results": None}) == "plain"


@pytest.mark.parametrize("drained, hook, revert_failure, run, said", [
    (False, "/srv/undrain.yml", None, False, None),
    (False, "", {"task": "Restart", "msg": "x"}, False, None),
    (True, "/srv/undrain.yml", None, True, None),
    (True, "/srv/undrain.yml", {"task": "Restart", "msg": "x"}, False, "stays out of service (the undrain hook was not run)"),
    (True, "", None, False, "no undrain hook is set now (jetson_spec_undrain_tasks)"),
    (True, "/srv/undrain.yml", None, "not serving", "stays out of service (the undrain hook was not run): its service "
                                                    "does not run"),
])
def test_the_undrain_runs_wherever_the_service_serves_not_after_a_failed_revert(drained, hook, revert_failure, run,
                                                                                said):
    outcome = {"status": "failed" if revert_failure else "reverted", "reasons": ["first"]}
    serving = run != "not serving"
    run = False if not serving else run
    step = O.undrain_step(outcome, drained, hook, revert_failure, serving)
    assert step["run"] is run
    if said:
        assert step["outcome"]["reasons"][0] == "first" and said in step["outcome"]["reasons"][-1]
        assert step["outcome"]["status"] == outcome["status"]
    else:
        assert step["outcome"] == outcome
