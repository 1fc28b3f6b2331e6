"""The outcome record's one owner (module_utils/_decision/record.py): read its schema, refuse a newer one, write only
valid records."""
from __future__ import annotations

import json

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import record as R

# A record as this release writes it, abridged from a demo host.
RECORD = {"schema": R.SCHEMA_VERSION, "status": "enabled", "reasons": ["Accepted."], "fingerprint": "f" * 64,
          "service_sha256": "a" * 64,
          "speculative_config": {"method": "draft_model", "model": "/models/d", "num_speculative_tokens": 4},
          "baseline_gpu_memory_utilization": 0.75, "candidate_gpu_memory_utilization": 0.7}


def test_a_record_is_read_keeping_every_key():
    record, problem = R.parse(json.dumps(RECORD, indent=4).encode())
    assert problem is None
    assert record == RECORD


def test_a_record_of_a_newer_schema_is_an_error_naming_both_versions():
    with pytest.raises(R.NewerSchema, match="the record has schema 7 and this release of jetson_llm.vllm reads "
                                            "schema %d: it was written by a newer release" % R.SCHEMA_VERSION):
        R.parse(json.dumps(dict(RECORD, schema=7)))


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'"enabled"', "not a JSON object"),
    (b'{"schema": 1, "status": "maybe"}', "unknown status 'maybe'"),
    (b'{"schema": 1, "reasons": []}', "unknown status None"),
    (b'{"status": "enabled"}', "the record has no schema (this collection writes schema 1)"),
    (b'{"status": "enabled", "schema": "1"}', "invalid schema"),
    (b'{"status": "enabled", "schema": 0}', "invalid schema"),
    (b'{"status": "enabled", "schema": true}', "invalid schema"),
    (b"\xff\xfe", "not UTF-8"),
    (b" " * (R.MAX_RECORD_BYTES + 1), "larger than"),
    # Damaged beyond the parser's reach: a clear problem (the host is verified again), never a crash.
    (b"[" * R.MAX_RECORD_BYTES, "nests arrays or objects more than 64 deep"),
    (b'{"schema": 1, "status": "enabled", "baseline_gpu_memory_utilization": 1e999}', "1e999 (infinite as a float"),
    (b'{"schema": 1, "status": "enabled", "baseline_gpu_memory_utilization": NaN}', "NaN (not a number JSON can carry"),
    (b'{"schema": 1, "status": "enabled", "baseline_gpu_memory_utilization": "lots"}',
     "the record field baseline_gpu_memory_utilization is 'lots', not a number or null"),
    (b'{"schema": 1, "status": "enabled", "tuning": {"from_k": 2.5}}', "the record field tuning.from_k is 2.5, not an integer"),
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


def test_numbers_are_written_as_numbers_whatever_the_templating_made_of_them():
    """ansible-core 2.18 (Jinja2 not native) renders a lone "{{ 4 }}" as "4" and "{{ none }}" as "": the record
    written is the same as under 2.19+, so a record does not depend on the ansible-core that wrote it."""
    as_218 = {"status": "reverted", "reasons": [], "baseline_gpu_memory_utilization": "0.75",
              "candidate_gpu_memory_utilization": "", "num_speculative_tokens": "4", "baseline_age_s": "12",
              "revert_check": {"baseline_throughput_tok_s": "120.5", "restored_throughput_tok_s": "118",
                               "ratio": "0.979", "at_baseline_speed": True},
              "batch_aware": {"tried": True, "max_batch": "4"}, "tuning": {"from_k": "3", "tried": []}}
    native = {"status": "reverted", "reasons": [], "baseline_gpu_memory_utilization": 0.75,
              "candidate_gpu_memory_utilization": None, "num_speculative_tokens": 4, "baseline_age_s": 12.0,
              "revert_check": {"baseline_throughput_tok_s": 120.5, "restored_throughput_tok_s": 118.0,
                               "ratio": 0.979, "at_baseline_speed": True},
              "batch_aware": {"tried": True, "max_batch": 4}, "tuning": {"from_k": 3, "tried": []}}
    assert R.dumps(as_218) == R.dumps(native)
    written = json.loads(R.dumps(as_218))
    assert written["batch_aware"]["max_batch"] == 4 and isinstance(written["batch_aware"]["max_batch"], int)
    assert written["revert_check"]["ratio"] == 0.979 and written["candidate_gpu_memory_utilization"] is None
    assert as_218["batch_aware"]["max_batch"] == "4", "the caller's record is not changed in place"


@pytest.mark.parametrize("field, words", [
    ({"batch_aware": {"max_batch": "4.5"}}, "batch_aware.max_batch is '4.5', not an integer or null"),
    ({"num_speculative_tokens": True}, "num_speculative_tokens is True, not an integer"),
    ({"baseline_gpu_memory_utilization": "nan"}, "baseline_gpu_memory_utilization is nan, not a number"),
    ({"baseline_gpu_memory_utilization": float("inf")}, "is inf, not a number"),
    ({"revert_check": {"ratio": "fast"}}, "revert_check.ratio is 'fast', not a number or null"),
    ({"tuning": {"from_k": [4]}}, "tuning.from_k is [4], not an integer"),
])
def test_a_number_that_is_not_one_is_a_clear_error(field, words):
    with pytest.raises(R.RecordError) as caught:
        R.dumps(dict({"status": "enabled", "reasons": []}, **field))
    assert words in str(caught.value)


# --- the record as Prometheus metrics (node_exporter's textfile collector) ---------------------------------------
ENABLED = {"status": "enabled", "service": "vllm", "num_speculative_tokens": 3, "finished": "2026-12-03T09:00:00.123456Z",
           "deltas": {"throughput_gain_c1": 0.3636, "throughput_change_c8": -0.0159, "acceptance_rate": 0.72}}


def _samples(text):
    """{(name, labels): value} of a textfile-collector text, checking its shape line by line."""
    import re  # pylint: disable=import-outside-toplevel
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            assert kind == "gauge" and name.startswith("jetson_llm_vllm_speculative_")
            typed.add(name)
            continue
        if line.startswith("# HELP ") or not line:
            continue
        match = re.match(r'^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)+)\} (-?[0-9.e+-]+)$', line)
        assert match, "not a textfile-collector sample: %r" % line
        assert match.group(1) in typed, "a sample before its TYPE line"
        samples[(match.group(1), match.group(2))] = float(match.group(3))
    assert text.endswith("\n")
    return samples


def test_metrics_of_a_kept_change():
    samples = _samples(R.metrics(ENABLED, "vllm"))
    prefix = "jetson_llm_vllm_speculative_"
    assert samples[(prefix + "status", 'service="vllm",status="enabled"')] == 1
    assert samples[(prefix + "status", 'service="vllm",status="reverted"')] == 0
    assert sum(v for (name, _labels), v in samples.items() if name == prefix + "status") == 1
    assert samples[(prefix + "throughput_change", 'service="vllm",concurrency="1"')] == 0.3636
    assert samples[(prefix + "throughput_change", 'service="vllm",concurrency="8"')] == -0.0159
    assert samples[(prefix + "acceptance_rate", 'service="vllm"')] == 0.72
    assert samples[(prefix + "num_speculative_tokens", 'service="vllm"')] == 3
    assert samples[(prefix + "last_verification_timestamp_seconds", 'service="vllm"')] == 1796288400


def test_metrics_leave_out_what_the_record_lacks_and_never_write_nan():
    text = R.metrics({"status": "refused", "deltas": {"throughput_gain_c1": float("nan"), "acceptance_rate": None},
                      "finished": "yesterday"}, 'odd"name\nx')
    assert "nan" not in text.lower() and "inf" not in text.lower()
    samples = _samples(text)
    assert {name for name, _labels in samples} == {"jetson_llm_vllm_speculative_status"}
    assert ("jetson_llm_vllm_speculative_status", 'service="odd\\"name\\nx",status="refused"') in samples
