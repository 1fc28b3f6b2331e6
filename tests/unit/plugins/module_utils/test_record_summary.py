"""The record of one run, built by its owner (_decision.record.summary; the role's record.yml, filter outcome_summary)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import record as R

ROLE_VARS = yaml.safe_load((Path(__file__).resolve().parents[4] / "roles" / "speculative_decoding" / "vars" / "main.yml")
                           .read_text())
RUN = [{"concurrency": 1, "throughput_tok_s": 10.0, "tpot_ms_p50": 1.5, "ttft_ms_p50": 20.0, "itl_ms_p50": 1.4,
        "completed": 8, "failed": 0, "spec_decode": {"acceptance_rate": 0.9}, "samples": [1, 2, 3]}]
FACTS = {
    "_jetson_spec_action": "verify",
    "_jetson_spec_record": {"status": "enabled", "reasons": ["earlier"], "finished": "2026-12-01T00:00:00Z"},
    "_jetson_spec_outcome": {"status": "enabled", "reasons": ["kept"], "handoff": {}, "verdict": "accept",
                             "verdict_summary": "accept: +40 %", "intervals": {"c1": [0.3, 0.5], "c8": None},
                             "deltas": {"throughput_gain_c1": 0.4}, "recommendation": {"keep": True},
                             "measurement": {"mode": "fixed"}, "num_speculative_tokens": 5,
                             "tuning": {"kept_k": 5}, "batch_aware": None, "started": "2026-12-07T00:00:00Z"},
    "__jetson_spec_plan": {"method": "draft_model", "speculative_config": {"num_speculative_tokens": 4},
                           "num_speculative_tokens": 4},
    "_jetson_spec_attempt": {"speculative_config": {"num_speculative_tokens": 5}, "gpu_memory_utilization": 0.7},
    "_jetson_spec_attempts": [{"healthy": True}],
    "_jetson_spec_baseline": {"runs": RUN}, "_jetson_spec_candidate": {"runs": RUN},
    "_jetson_spec_baseline_gmu": "0.75", "_jetson_spec_baseline_reused": False,
    "_jetson_spec_revert_check": None,
    "ansible_facts": {"jetson": {"sku": "t5000", "variant": "devkit", "product_line": "thor",
                                 "l4t": {"version": "38.2.0"}, "jetpack": "7.0"}, "other": "not recorded"},
    "_jetson_spec_vllm_version": "0.32.0", "_jetson_spec_state": {"exposure": {"listening": "127.0.0.1"}},
    "vllm_service_name": "vllm", "_vllm_service_path": "/etc/systemd/system/vllm.service",
    "_jetson_spec_fingerprint": "f1", "_jetson_spec_baseline_fingerprint": "b1", "_jetson_spec_fingerprint_parts": {},
    "_jetson_spec_baseline_age": None, "_jetson_spec_overlay_committed": "/etc/systemd/system/vllm.service.d/x.conf",
    "_jetson_spec_cohort": {"key": "k1", "group": "cohort_k1", "label": "thor / 0.32.0"},
    "_jetson_spec_gate": {"verdict": {"canary": "thor-1"}}, "_jetson_spec_confirmation": None,
    "inventory_hostname": "thor-2",
}


def facts(**changes):
    result = copy.deepcopy(FACTS)
    result.update(changes)
    return result


def test_the_role_passes_exactly_the_inputs_the_record_is_built_from():
    assert ROLE_VARS["_jetson_spec_record_inputs"] == list(R.SUMMARY_INPUTS)
    assert ROLE_VARS["_jetson_spec_record_inputs_in_sync"] == list(R.IN_SYNC_INPUTS)


def test_a_host_in_sync_is_summarised_from_its_record_alone():
    # The rollout reads such a host with the record tasks alone: serve's variables may be undefined there.
    only = {name: FACTS[name] for name in R.IN_SYNC_INPUTS}
    only["_jetson_spec_action"] = "in_sync"
    assert R.summary(only, "t") == FACTS["_jetson_spec_record"]
    with pytest.raises(ValueError, match="lack __jetson_spec_plan"):
        R.summary(dict(only, _jetson_spec_action="verify"), "t")
    assert sorted(FACTS) == sorted(R.SUMMARY_INPUTS)


def test_a_verified_host_records_its_outcome_configuration_measurements_host_and_cohort():
    record = R.summary(facts(), "2026-12-07T00:05:00Z")
    assert record["status"] == "enabled" and record["reasons"] == ["kept"] and record["verdict"] == "accept"
    assert record["speculative_config"] == {"num_speculative_tokens": 5}, "what ran, not what was planned"
    assert record["num_speculative_tokens"] == 5 and record["method"] == "draft_model"
    assert record["baseline_gpu_memory_utilization"] == 0.75 and record["candidate_gpu_memory_utilization"] == 0.7
    assert record["baseline"] == [{"concurrency": 1, "throughput_tok_s": 10.0, "tpot_ms_p50": 1.5, "ttft_ms_p50": 20.0,
                                   "itl_ms_p50": 1.4, "completed": 8, "failed": 0, "acceptance_rate": 0.9}]
    assert record["jetson"] == {"sku": "t5000", "variant": "devkit", "product_line": "thor", "l4t": "38.2.0",
                                "jetpack": "7.0"}
    assert record["fingerprint"] == "f1" and record["finished"] == "2026-12-07T00:05:00Z"
    assert record["cohort"] == {"key": "k1", "group": "cohort_k1", "label": "thor / 0.32.0", "role": "verified",
                                "canary": "thor-1", "confirmation": None}
    assert record["last_known_good"] is None and R.validate(dict(record, service_sha256="0" * 64))


@pytest.mark.parametrize("changes, key, expected", [
    ({"_jetson_spec_attempt": None}, "speculative_config", {"num_speculative_tokens": 4}),   # not started: the plan's
    ({"_jetson_spec_attempt": None, "__jetson_spec_plan": {"skipped": True}}, "speculative_config", {}),
    ({"_jetson_spec_attempt": None}, "candidate_gpu_memory_utilization", None),
    ({"_jetson_spec_baseline_gmu": "n/a"}, "baseline_gpu_memory_utilization", 0.0),
    ({"_jetson_spec_baseline": None, "_jetson_spec_candidate": {"skipped": True}}, "candidate", []),
    ({"_jetson_spec_attempts": None}, "attempts", []),
    ({"ansible_facts": {"jetson": {"l4t": None}}}, "jetson",
     {"sku": None, "variant": None, "product_line": None, "l4t": None, "jetpack": None}),
    ({"_jetson_spec_cohort": None}, "cohort", None),
    ({"_jetson_spec_gate": {"verdict": None}}, "cohort", {"key": "k1", "group": "cohort_k1", "label": "thor / 0.32.0",
                                                          "role": "verified", "canary": "thor-2", "confirmation": None}),
    ({"_jetson_spec_action": "follow"}, "cohort", {"key": "k1", "group": "cohort_k1", "label": "thor / 0.32.0",
                                                   "role": "followed", "canary": "thor-1", "confirmation": None}),
    ({"_jetson_spec_action": "disable"}, "cohort", {"key": "k1", "group": "cohort_k1", "label": "thor / 0.32.0",
                                                    "role": None, "canary": "thor-1", "confirmation": None}),
])
def test_what_a_run_did_not_set_is_recorded_as_nothing(changes, key, expected):
    assert R.summary(facts(**changes), "t")[key] == expected


def test_an_unsettled_keep_is_recorded_without_a_fingerprint_so_the_next_run_verifies_again():
    outcome = dict(FACTS["_jetson_spec_outcome"], unsettled=True)
    assert R.summary(facts(_jetson_spec_outcome=outcome), "t")["fingerprint"] is None


def test_in_sync_keeps_the_record_and_reconcile_keeps_it_with_this_runs_reasons_and_end():
    assert R.summary(facts(_jetson_spec_action="in_sync"), "t") == FACTS["_jetson_spec_record"]
    # Disabled on a host the loop never changed: nothing recorded, the outcome says it (no record is written).
    never = R.summary(facts(_jetson_spec_action="in_sync", _jetson_spec_record={},
                            _jetson_spec_outcome={"status": "disabled", "reasons": ["off, as asked"]}), "t")
    assert never == {"status": "disabled", "reasons": ["off, as asked"], "handoff": {}}
    reconciled = R.summary(facts(_jetson_spec_action="reconcile"), "t")
    assert reconciled == dict(FACTS["_jetson_spec_record"], reasons=["kept"], finished="t")


def test_a_missing_input_is_an_error_naming_it():
    broken = facts()
    del broken["_jetson_spec_gate"]
    with pytest.raises(ValueError, match="the run facts lack _jetson_spec_gate"):
        R.summary(broken, "t")


@pytest.mark.parametrize("value, reused", [(True, True), (False, False), (None, False), ("True", True),
                                           ("False", False), ("no", False)])
def test_baseline_reused_is_a_flag_whatever_ansible_core_rendered(value, reused):
    assert R.summary(facts(_jetson_spec_baseline_reused=value), "t")["baseline_reused"] is reused
