"""The outcome record's one owner (module_utils/_decision/record.py): read any schema, write only valid records."""
from __future__ import annotations

import json

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import record as R

# A record as the previous release wrote it (schema 1: no "schema" key), abridged from a demo host.
V1 = {"status": "enabled", "reasons": ["Accepted."], "fingerprint": "f" * 64, "service_sha256": "a" * 64,
      "speculative_config": {"method": "draft_model", "model": "/models/d", "num_speculative_tokens": 4},
      "baseline_gpu_memory_utilization": 0.75, "candidate_gpu_memory_utilization": 0.7}


def test_a_schema_1_record_is_migrated_keeping_every_key():
    record, problem = R.parse(json.dumps(V1, indent=4).encode())
    assert problem is None
    assert record == dict(V1, schema=R.SCHEMA_VERSION)


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'"enabled"', "not a JSON object"),
    (b'{"status": "maybe"}', "unknown status 'maybe'"),
    (b'{"reasons": []}', "unknown status None"),
    (b'{"status": "enabled", "schema": 99}', "newer than this collection"),
    (b'{"status": "enabled", "schema": "2"}', "invalid schema"),
    (b'{"status": "enabled", "schema": true}', "invalid schema"),
    (b"\xff\xfe", "not UTF-8"),
    (b" " * (R.MAX_RECORD_BYTES + 1), "larger than"),
])
def test_a_damaged_record_reads_as_none_with_the_problem_said(data, words):
    record, problem = R.parse(data)
    assert record == {}
    assert words in problem


def test_no_file_is_no_record_and_no_problem():
    assert R.parse(None) == ({}, None)


def test_dumps_stamps_the_schema_and_is_stable():
    text = R.dumps({"status": "reverted", "reasons": ["x"], "b": 1, "a": 2})
    assert text.endswith("}\n")
    assert json.loads(text)["schema"] == R.SCHEMA_VERSION
    assert text == R.dumps(json.loads(text))
    assert R.parse(text)[0] == json.loads(text)


@pytest.mark.parametrize("record, words", [
    ([], "must be a dictionary"),
    ({"status": "on"}, "status 'on'"),
    ({"status": "enabled", "reasons": "because"}, "list of strings"),
    ({"status": "enabled", "reasons": [1]}, "list of strings"),
    ({"status": "enabled", "deltas": {"gain": float("nan")}}, "JSON cannot carry"),
    ({"status": "enabled", "deltas": {"gain": float("inf")}}, "JSON cannot carry"),
])
def test_an_invalid_record_is_never_written(record, words):
    with pytest.raises(R.RecordError) as err:
        R.dumps(record)
    assert words in str(err.value)
