"""The lifecycle decision (module_utils/_decision/lifecycle.py) as a table: every cell of record x what runs x inputs."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import lifecycle as L
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import STATUSES

TOP = Path(__file__).resolve().parents[4]
FP = "f" * 64
SHA = "a" * 64


def observed(status=None, spec=False, running=True, lkg=True, guard=False, state="enabled", force=False,
             same_inputs=True, same_file=True, exists=True):
    record = {} if status is None else {"status": status, "fingerprint": FP if same_inputs else "0" * 64,
                                        "service_sha256": SHA if same_file else "b" * 64, "started": "then"}
    return {"service": "vllm", "service_exists": exists, "running": running, "running_speculative": spec,
            "record": record, "record_problem": None, "last_known_good": lkg, "guard_armed": guard,
            "state": state, "force_verify": force, "fingerprint": FP, "service_sha256": SHA}


# The issue's rows, by name: (observed, action, removes speculation).
ROWS = {
    "same run, string booleans normalised: in sync": (observed("enabled", spec=True), "in_sync", False),
    "enabled, then concurrency 8 (new inputs): verify, speculation removed first":
        (observed("enabled", spec=True, same_inputs=False), "verify", True),
    "refused while speculation runs (an earlier release): reconcile": (observed("refused", spec=True), "reconcile", True),
    "refused while speculation runs, then state=disabled": (observed("refused", spec=True, state="disabled"), "disable", True),
    "refused while speculation runs, forced: verify after removal":
        (observed("refused", spec=True, force=True), "verify", True),
    "controller killed mid-change (record pending), guard already restored": (observed("pending"), "resume", True),
    "controller killed mid-change, speculation still running": (observed("pending", spec=True), "resume", True),
    "guard armed without a pending record": (observed("enabled", spec=True, guard=True), "resume", True),
    "pending, state=disabled: resume first": (observed("pending", spec=True, state="disabled"), "resume", True),
    "no vLLM service": (observed(None, exists=False, running=False), "skip", False),
    "service missing mid-change, copy exists: resume": (observed("pending", exists=False, running=False), "resume", True),
    "service stopped": (observed("enabled", spec=False, running=False), "skip", False),
    "service stopped, refused earlier, same inputs: in sync": (observed("refused", running=False), "in_sync", False),
    "service stopped, first run: skip (the role still asks the plan)": (observed(None, running=False), "skip", False),
    "service stopped, state=disabled, refused record: in sync": (observed("refused", running=False, state="disabled"),
                                                                 "in_sync", False),
    "speculation nobody recorded, no copy: refuse": (observed(None, spec=True, lkg=False), "refuse", False),
    "speculation with a record but no copy: refuse": (observed("enabled", spec=True, lkg=False), "refuse", False),
    "first run": (observed(None), "verify", False),
    "disabled, nothing speculative, recorded disabled": (observed("disabled", state="disabled"), "in_sync", False),
    "disabled, nothing speculative, record reverted: left alone": (observed("reverted", state="disabled"), "in_sync", False),
    "disabled on a refused host that never speculated": (observed("refused", state="disabled"), "in_sync", False),
    "disabled, no record, nothing speculative": (observed(None, state="disabled"), "in_sync", False),
    "disabled, the record says enabled but nothing speculative runs": (observed("enabled", state="disabled"), "disable", False),
    "record enabled but the process runs without speculation": (observed("enabled", spec=False), "verify", False),
    "operator edited the unit after a kept change": (observed("enabled", spec=True, same_file=False), "verify", True),
    "failed record: tried again": (observed("failed"), "verify", False),
    "disabled earlier, then a plain run: verify": (observed("disabled"), "verify", False),
    "reverted, same inputs: in sync": (observed("reverted"), "in_sync", False),
    "reverted, JetPack upgraded: verify": (observed("reverted", same_inputs=False), "verify", False),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_issue_rows(name):
    obs, action, removes = ROWS[name]
    answer = L.decide(obs)
    assert (answer["action"], answer["remove_speculation"]) == (action, removes), answer
    assert answer["reasons"] and all(isinstance(r, str) and r for r in answer["reasons"])


CELLS = list(itertools.product(
    [None] + list(STATUSES),          # record status
    [False, True],                     # speculation runs
    [False, True],                     # the service runs
    [False, True],                     # last-known-good copy
    [False, True],                     # guard armed
    ["enabled", "disabled"],
    [False, True],                     # force
    [False, True],                     # same inputs
    [False, True],                     # same file
    [False, True],                     # service exists
))


def _cell(values):
    status, spec, running, lkg, guard, state, force, same_inputs, same_file, exists = values
    if spec and not running:
        return None  # a process that does not run has no command line
    if not exists and running:
        return None  # a running service has a unit
    return observed(status, spec=spec, running=running, lkg=lkg, guard=guard, state=state, force=force,
                    same_inputs=same_inputs, same_file=same_file, exists=exists)


def test_every_cell_has_one_action_from_the_closed_set_and_keeps_record_equal_to_reality():
    seen = set()
    for values in CELLS:
        obs = _cell(values)
        if obs is None:
            continue
        answer = L.decide(obs)
        action = answer["action"]
        seen.add(action)
        assert action in L.ACTIONS
        assert answer["rule"] in range(1, len(L.RULES) + 1) and L.RULES[answer["rule"] - 1][1] == action
        status = obs["record"].get("status")
        interrupted = status == "pending" or obs["guard_armed"]
        # An interruption is always resumed first, never left for a human.
        if interrupted and (obs["service_exists"] or obs["last_known_good"]):
            assert action == "resume", (values, answer)
        # Speculation that runs is never left in place under a record that says it is off, unless nothing
        # can restore the baseline (then the run refuses and says so, and writes no record).
        if obs["running_speculative"] and not interrupted:
            if not obs["last_known_good"]:
                assert action == "refuse", (values, answer)
            elif obs["state"] == "disabled":
                assert (action, answer["remove_speculation"]) == ("disable", True), (values, answer)
            elif status != "enabled":
                assert answer["remove_speculation"], (values, answer)
                assert action in ("reconcile", "verify"), (values, answer)
        # Nothing to restore from: never an action that needs the copy.
        if answer["remove_speculation"] and action != "resume":
            assert obs["last_known_good"], (values, answer)
        # in_sync only when the record describes what runs.
        if action == "in_sync":
            assert status in (None, "enabled", "reverted", "refused", "skipped", "disabled", "failed")
            assert status in ("enabled", "reverted", "refused", "skipped", "disabled") or obs["state"] == "disabled"
            assert status != "disabled" or obs["state"] == "disabled", (values, answer)
            assert (status == "enabled") == bool(obs["running_speculative"]), (values, answer)
            assert not obs["force_verify"] or obs["state"] == "disabled"
    assert seen == set(L.ACTIONS)


def test_string_and_typed_inputs_fingerprint_alike_only_after_normalisation():
    typed = {"keep_marginal": False, "expected_concurrency": 1, "c8_tolerance": 0.0}
    assert L.fingerprint(typed) == L.fingerprint(dict(reversed(list(typed.items()))))
    # The module normalises "false" / "1" / "0.0" to these before fingerprinting; raw strings differ.
    raw = {"keep_marginal": "false", "expected_concurrency": "1", "c8_tolerance": "0.0"}
    assert L.fingerprint(typed) != L.fingerprint(raw)


def test_fingerprint_refuses_nan():
    with pytest.raises(ValueError):
        L.fingerprint({"x": float("nan")})


def test_damaged_record_is_said_and_treated_as_none():
    obs = observed(None)
    obs["record_problem"] = "the record is not JSON"
    answer = L.decide(obs)
    assert answer["action"] == "verify"
    assert answer["reasons"][0] == "The recorded outcome is ignored: the record is not JSON."


def test_docs_lifecycle_table_is_generated_from_the_rules():
    text = (TOP / "docs" / "lifecycle.md").read_text()
    assert L.lifecycle_table() in text, "docs/lifecycle.md is stale: regenerate it (see its first lines)"


def test_a_changed_fingerprint_names_what_changed():
    before = {"baseline": {"power_mode": "MAXN", "l4t": "38.2.0", "workload": {"num_prompts": 50}},
              "inputs": {"expected_concurrency": 1}}
    after = {"baseline": {"power_mode": "15W", "l4t": "38.2.0", "workload": {"num_prompts": 50}},
             "inputs": {"expected_concurrency": 8}}
    assert L.changed_parts(before, after) == ['baseline.power_mode "MAXN" -> "15W"', "inputs.expected_concurrency 1 -> 8"]
    obs = observed("reverted", same_inputs=False)
    obs["record"]["fingerprint_parts"] = before
    obs["fingerprint_parts"] = after
    answer = L.decide(obs)
    assert answer["action"] == "verify"
    assert 'changed since the recorded outcome: baseline.power_mode "MAXN" -> "15W"' in answer["reasons"][-1]
    # A record of the previous release has no parts: the general sentence.
    del obs["record"]["fingerprint_parts"]
    assert "the inputs or the software changed" in L.decide(obs)["reasons"][-1]


def test_an_operator_edit_is_named_not_shown_as_a_digest():
    before = {'baseline': {'service': 'a' * 64, 'power_mode': 'MAXN'}, 'inputs': {}}
    after = {'baseline': {'service': 'b' * 64, 'power_mode': 'MAXN'}, 'inputs': {}}
    assert L.changed_parts(before, after) == [
        'baseline.service (the unit, a drop-in or a compose file other than the overlay: an edit is the new '
        'baseline)']


# --- after the plan (the filter after_plan; preflight.yml) ------------------------------------------------------------
REFUSAL = {"enable": False, "reasons": ["Orin Nano: no memory for a draft."], "handoff": {"next": "ngram"}}
PENDING = {"status": "pending", "reasons": [], "started": "t"}


@pytest.mark.parametrize("action, plan, is_jetson, expected_action, status", [
    ("verify", REFUSAL, True, "refuse", "refused"),
    ("verify", REFUSAL, False, "refuse", "skipped"),
    ("skip", REFUSAL, True, "refuse", "refused"),
    ("verify", dict(REFUSAL, enable=True), True, "verify", "pending"),
    ("verify", {"skipped": True, "changed": False}, True, "verify", "pending"),
    ("verify", None, True, "verify", "pending"),
    ("disable", REFUSAL, True, "disable", "pending"),
    ("in_sync", REFUSAL, True, "in_sync", "pending"),
])
def test_a_refusing_plan_ends_a_run_that_was_to_verify_as_refuse(action, plan, is_jetson, expected_action, status):
    after = L.after_plan(action, plan, is_jetson, PENDING)
    assert after["action"] == expected_action and after["outcome"]["status"] == status
    if expected_action == "refuse":
        assert after["outcome"]["reasons"] == REFUSAL["reasons"] and after["outcome"]["handoff"] == REFUSAL["handoff"]
    else:
        assert after["outcome"] is PENDING
