"""The outcome_record filter reads records through their one owner (module_utils/_decision/record.py)."""
import json

from ansible_collections.jetson_llm.vllm.plugins.filter.outcome_record import outcome_record
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import record as R

V1 = {"status": "enabled", "reasons": ["Accepted."], "fingerprint": "f" * 64}


def test_the_outcome_record_filter_reads_through_the_owner():
    assert outcome_record(json.dumps(V1)) == dict(V1, schema=R.SCHEMA_VERSION)
    assert outcome_record("") == {} and outcome_record("", problem=True) == ""
    assert outcome_record("{oops") == {} and "not JSON" in outcome_record("{oops", problem=True)
