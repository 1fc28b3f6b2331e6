"""The outcome_record and outcome_summary filters read and build records through their one owner
(module_utils/_decision/record.py)."""
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.outcome_record import outcome_record, outcome_summary
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import record as R

RECORD = {"schema": R.SCHEMA_VERSION, "status": "enabled", "reasons": ["Accepted."], "fingerprint": "f" * 64}


def test_the_outcome_record_filter_reads_through_the_owner():
    assert outcome_record(json.dumps(RECORD)) == RECORD
    newer = json.dumps(dict(RECORD, schema=R.SCHEMA_VERSION + 1))
    assert outcome_record(newer) == {}
    assert "schema %d and this release" % (R.SCHEMA_VERSION + 1) in outcome_record(newer, problem=True)
    assert outcome_record("") == {} and outcome_record("", problem=True) == ""
    assert outcome_record("{oops") == {} and "not JSON" in outcome_record("{oops", problem=True)


def test_outcome_summary_names_its_bad_inputs():
    with pytest.raises(AnsibleFilterError, match="takes the run's variables by name"):
        outcome_summary(["_jetson_spec_action"], "2026-12-07T00:00:00Z")
    with pytest.raises(AnsibleFilterError, match="finished is int"):
        outcome_summary({}, 0)
    with pytest.raises(AnsibleFilterError, match="the run facts lack _jetson_spec_action"):
        outcome_summary({}, "2026-12-07T00:00:00Z")


def test_outcome_summary_reads_the_lookups_unset_marker_as_nothing():
    # The role's vars lookup gives '__unset__' for a variable the run did not set (its default=none means no default).
    base = dict.fromkeys(R.SUMMARY_INPUTS, "__unset__")
    base.update(_jetson_spec_action="verify", _jetson_spec_outcome={"status": "reverted", "reasons": ["r"]},
                _jetson_spec_baseline_gmu=0.75, ansible_facts={})
    nothing = {name: (None if value == "__unset__" else value) for name, value in base.items()}
    summary = outcome_summary(base, "t")
    assert summary == outcome_summary(nothing, "t")
    assert summary["status"] == "reverted" and "__unset__" not in json.dumps(summary)
