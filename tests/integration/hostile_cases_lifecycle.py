"""Hostile inputs for speculative_state and speculative_record (format: tests/integration/hostile.py).

AWX-survey values that are neither booleans nor numbers, a FIFO or a directory where the record belongs,
records JSON cannot carry (NaN, infinity) or with an unknown status. speculative_state runs against a
service that does not exist here, so it only reads.
"""
from __future__ import annotations

import os
import tempfile

from hostile import Hostile

STATE = "jetson_llm.vllm.speculative_state"
RECORD = "jetson_llm.vllm.speculative_record"
OVERLAY = "jetson_llm.vllm.speculative_overlay"
SPEC = {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 4}
FIFO = os.path.join(tempfile.gettempdir(), "hostile-lifecycle-record-%d.fifo" % os.getuid())
if not os.path.exists(FIFO):
    os.mkfifo(FIFO)
# A compose project whose compose.yaml is a FIFO (a reader that opened it would wait for a writer forever).
FIFO_PROJECT = os.path.join(tempfile.gettempdir(), "hostile-compose-fifo-%d" % os.getuid())
os.makedirs(FIFO_PROJECT, exist_ok=True)
if not os.path.exists(os.path.join(FIFO_PROJECT, "compose.yaml")):
    os.mkfifo(os.path.join(FIFO_PROJECT, "compose.yaml"))


# Damaged records the next run must read as "no record" (verify again), never as a crash or the operator's fault.
DAMAGED = os.path.join(tempfile.gettempdir(), "hostile-damaged-records-%d" % os.getuid())
os.makedirs(DAMAGED, exist_ok=True)
for _name, _content in (("nested.fact", "[" * 1048000),
                        ("infinite.fact", '{"schema": 1, "status": "enabled", "baseline_gpu_memory_utilization": 1e999}'),
                        ("text-number.fact", '{"schema": 1, "status": "enabled", "baseline_gpu_memory_utilization": "lots"}'),
                        ("newer.fact", '{"schema": 99, "status": "enabled"}')):
    with open(os.path.join(DAMAGED, _name), "w") as _handle:
        _handle.write(_content)
# A regular file where the record's directory belongs.
PARENT_FILE = os.path.join(DAMAGED, "facts.d")
with open(PARENT_FILE, "w") as _handle:
    _handle.write("not a directory\n")
# A compose project whose compose.yaml nests deeper than any parser's recursion (a 1 MB "[[[[...").
NESTED_PROJECT = os.path.join(tempfile.gettempdir(), "hostile-compose-nested-%d" % os.getuid())
os.makedirs(NESTED_PROJECT, exist_ok=True)
with open(os.path.join(NESTED_PROJECT, "compose.yaml"), "w") as _handle:
    _handle.write("services:\n  vllm:\n    command: " + "[" * 1048000 + "\n")
# A compose project that serves a speculators-format checkpoint (vLLM speculates without --speculative-config).
SPECULATORS_PROJECT = os.path.join(tempfile.gettempdir(), "hostile-compose-speculators-%d" % os.getuid())
os.makedirs(SPECULATORS_PROJECT, exist_ok=True)
with open(os.path.join(SPECULATORS_PROJECT, "compose.yaml"), "w") as _handle:
    _handle.write("services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n"
                  "    command: [\"RedHatAI/Qwen3-8B-speculator.eagle3\", \"--port\", \"8000\"]\n")
EVIL = "-Hlc@evil.service"   # systemctl would read it as -H lc@evil.service: connect to the host evil.service


def state(**extra):
    args = {"name": "hostile-no-such-vllm", "fact_file": "{tmp}/none.fact", "guard_unit": "hostile-guard"}
    args.update(extra)
    return args


CASES = [
    Hostile("state-survey-boolean-neither", STATE, state(inputs={"keep_marginal": "maybe"}),
            expect=("keep_marginal", "maybe")),
    Hostile("state-survey-number-neither", STATE, state(inputs={"expected_concurrency": "eight"}),
            expect=("expected_concurrency", "eight")),
    Hostile("state-workload-concurrency-text", STATE, state(workload={"concurrency": ["1", "many"]}),
            expect=("concurrency",)),
    Hostile("state-force-verify-neither", STATE, state(force_verify="sometimes"), expect=("force_verify", "sometimes")),
    Hostile("state-unknown-input", STATE, state(inputs={"keep_marginl": False}), expect=("keep_marginl",)),
    Hostile("state-record-is-a-fifo", STATE, state(fact_file=FIFO), outcome="ok",
            expect=("is ignored", "cannot be read"), max_seconds=30),
    # Names reach systemctl and docker as operands: one that starts with "-" would be read as an option.
    Hostile("state-name-leading-dash", STATE, state(name=EVIL), expect=(EVIL, 'starts with "-"', "allowed: letters")),
    Hostile("state-guard-unit-leading-dash", STATE, state(guard_unit="-Hroot@evil"),
            expect=("guard_unit", "-Hroot@evil", 'starts with "-"')),
    Hostile("state-compose-name-leading-dash", STATE, state(name="--help", manager="compose", project_src="{tmp}"),
            expect=("--help", 'starts with "-"')),
    Hostile("state-fact-file-nul", STATE, state(fact_file="/etc/ansible/facts.d/x\u0000.fact"),
            expect=("fact_file", "a NUL byte")),
    # The drain marker: a FIFO there is a drain noted (never opened: a reader would wait for a writer), a bad path
    # fails with the option's name.
    Hostile("state-drain-marker-is-a-fifo", STATE, state(drain_marker=FIFO), outcome="ok", max_seconds=30),
    Hostile("state-drain-marker-relative", STATE, state(drain_marker="-x/vllm.drained.json"),
            expect=("drain_marker", "-x/vllm.drained.json")),
    Hostile("state-fact-file-relative", STATE, state(fact_file="facts.d/jetson_vllm_speculative.fact"),
            expect=("fact_file", "facts.d/jetson_vllm_speculative.fact", "not an absolute path")),
    Hostile("state-project-src-crlf", STATE, state(manager="compose", project_src="/opt/vllm\r\n/x"),
            expect=("project_src", "a carriage return")),
    # Damaged records: ignored with the reason, the host verified again; never a traceback, never "your inputs".
    Hostile("state-record-nested-too-deep", STATE, state(fact_file=os.path.join(DAMAGED, "nested.fact")),
            outcome="ok", expect=("is ignored", "nests arrays or objects", "verified again")),
    Hostile("state-record-infinite-number", STATE, state(fact_file=os.path.join(DAMAGED, "infinite.fact")),
            outcome="ok", expect=("is ignored", "1e999", "verified again")),
    Hostile("state-record-number-is-text", STATE, state(fact_file=os.path.join(DAMAGED, "text-number.fact")),
            outcome="ok", expect=("is ignored", "baseline_gpu_memory_utilization is 'lots'", "verified again")),
    # A newer release's record is not this one's to overwrite: the run stops, naming both schemas.
    Hostile("state-record-newer-schema", STATE, state(fact_file=os.path.join(DAMAGED, "newer.fact")),
            outcome="failed", expect=("newer.fact", "schema 99", "reads schema 1", "Nothing was changed")),
    Hostile("record-path-nul", RECORD, {"path": "{tmp}/x\u0000.fact", "record": {"status": "enabled"}},
            expect=("path", "a NUL byte")),
    Hostile("record-parent-is-a-file", RECORD, {"path": PARENT_FILE + "/jetson.fact", "record": {"status": "enabled"}},
            expect=(PARENT_FILE, "a regular file, not a directory", "Nothing was changed")),
    Hostile("record-metrics-file-relative", RECORD, {"path": "{tmp}/m.fact", "metrics_file": "m.prom",
                                                     "record": {"status": "enabled"}},
            expect=("metrics_file", "m.prom", "not an absolute path"), writes="{tmp}/m.fact"),
    Hostile("record-nan", RECORD, {"path": "{tmp}/nan.fact", "record": {"status": "enabled", "deltas": {"gain": float("nan")}}},
            expect=("JSON cannot carry",), writes="{tmp}/nan.fact"),
    Hostile("record-inf", RECORD, {"path": "{tmp}/inf.fact", "record": {"status": "enabled", "x": float("inf")}},
            expect=("JSON cannot carry",), writes="{tmp}/inf.fact"),
    Hostile("record-unknown-status", RECORD, {"path": "{tmp}/s.fact", "record": {"status": "on"}},
            expect=("status", "on", "enabled, reverted"), writes="{tmp}/s.fact"),
    Hostile("record-reasons-not-strings", RECORD, {"path": "{tmp}/r.fact", "record": {"status": "enabled", "reasons": [1]}},
            expect=("reasons",), writes="{tmp}/r.fact"),
    Hostile("record-path-is-a-fifo", RECORD, {"path": FIFO, "record": {"status": "enabled"}},
            expect=("not a regular file",), max_seconds=30),
    Hostile("record-relative-path", RECORD, {"path": "facts/x.fact", "record": {"status": "enabled"}},
            expect=("absolute",)),
    # The overlay's path is built from the name: nothing may escape /run/systemd/system or /etc/systemd/system.
    Hostile("overlay-name-path-traversal", OVERLAY, {"name": "../../tmp/hostile-overlay", "state": "absent"},
            expect=("not a systemd service name", "../../tmp/hostile-overlay"), writes="/tmp/hostile-overlay.service.d"),
    Hostile("overlay-name-leading-dash", OVERLAY, {"name": EVIL, "state": "absent"},
            expect=(EVIL, 'starts with "-"', "nothing was changed")),
    Hostile("overlay-compose-name-leading-dash", OVERLAY, {"name": "-p", "manager": "compose", "project_src": "{tmp}",
                                                           "state": "absent"},
            expect=("'-p'", 'starts with "-"', "nothing was changed")),
    # NaN is not JSON: written into --speculative-config, vLLM would refuse it only when the service starts.
    Hostile("overlay-config-nan", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate",
                                            "speculative_config": dict(SPEC, num_speculative_tokens=float("nan")),
                                            "gpu_memory_utilization": 0.5},
            expect=("speculative_config.num_speculative_tokens is nan", "JSON cannot carry"),
            writes="/run/systemd/system/hostile-no-such-vllm.service.d"),
    Hostile("overlay-config-infinity-nested", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate",
                                                        "speculative_config": dict(SPEC, extra={"x": [float("inf")]}),
                                                        "gpu_memory_utilization": 0.5},
            expect=("speculative_config.extra.x[0] is inf",),
            writes="/run/systemd/system/hostile-no-such-vllm.service.d"),
    Hostile("overlay-compose-file-nested-too-deep", OVERLAY,
            {"name": "vllm", "manager": "compose", "project_src": NESTED_PROJECT, "state": "candidate",
             "speculative_config": SPEC, "gpu_memory_utilization": 0.5},
            expect=("compose.yaml nests", "nothing was changed"), max_seconds=60,
            writes=NESTED_PROJECT + "/jetson-llm-speculative-2-candidate.yaml"),
    # A service that speculates from a speculators checkpoint never gets a second speculative configuration.
    Hostile("overlay-compose-speculators-checkpoint", OVERLAY,
            {"name": "vllm", "manager": "compose", "project_src": SPECULATORS_PROJECT, "state": "candidate",
             "speculative_config": SPEC, "gpu_memory_utilization": 0.5},
            expect=("already speculates", "RedHatAI/Qwen3-8B-speculator.eagle3", "Nothing was changed"),
            writes=SPECULATORS_PROJECT + "/jetson-llm-speculative-2-candidate.yaml"),
    # The earlier-release migration ("put the last-known-good copy back") is gone: no copy can replace a definition.
    Hostile("overlay-legacy-copy-option-removed", OVERLAY,
            {"name": "vllm", "manager": "compose", "project_src": "{tmp}", "state": "absent",
             "legacy_last_known_good": "{tmp}/empty.copy"},
            expect=("legacy_last_known_good",)),
    Hostile("overlay-name-crlf", OVERLAY, {"name": "vllm\r\nExecStart=/bin/sh", "state": "absent"},
            expect=("a carriage return", "allowed: letters")),
    Hostile("overlay-utilisation-nan", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate",
                                                 "speculative_config": SPEC, "gpu_memory_utilization": float("nan")},
            expect=("gpu_memory_utilization", "nan", "at most 1"),
            writes="/run/systemd/system/hostile-no-such-vllm.service.d"),
    Hostile("overlay-utilisation-above-one", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate",
                                                       "speculative_config": SPEC, "gpu_memory_utilization": 1.5},
            expect=("1.5", "at most 1"), writes="/run/systemd/system/hostile-no-such-vllm.service.d"),
    Hostile("overlay-candidate-without-config", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate"},
            expect=("speculative_config",)),
    Hostile("overlay-no-such-unit", OVERLAY, {"name": "hostile-no-such-vllm", "state": "candidate",
                                              "speculative_config": SPEC, "gpu_memory_utilization": 0.5},
            expect=("hostile-no-such-vllm.service", "cannot be read"),
            writes="/run/systemd/system/hostile-no-such-vllm.service.d"),
    Hostile("overlay-commit-without-candidate", OVERLAY, {"name": "hostile-no-such-vllm", "state": "committed"},
            expect=("no candidate overlay", "nothing was changed")),
    # Compose: the override file is built from project_src; the project's own files are only read.
    Hostile("overlay-compose-relative-project", OVERLAY, {"name": "vllm", "manager": "compose",
                                                          "project_src": "opt/vllm/vllm", "state": "absent"},
            expect=("opt/vllm/vllm", "not an absolute path")),
    Hostile("overlay-compose-project-crlf", OVERLAY, {"name": "vllm", "manager": "compose",
                                                      "project_src": "/opt/vllm\r\n/x", "state": "absent"},
            expect=("project_src", "a carriage return", "absolute path")),
    Hostile("overlay-compose-name-traversal", OVERLAY, {"name": "../vllm", "manager": "compose",
                                                        "project_src": "{tmp}", "state": "absent"},
            expect=("../vllm", "is not a compose service name")),
    Hostile("overlay-compose-without-project-src", OVERLAY, {"name": "vllm", "manager": "compose", "state": "absent"},
            expect=("project_src",)),
    Hostile("overlay-compose-no-compose-file", OVERLAY, {"name": "vllm", "manager": "compose", "project_src": "{tmp}",
                                                         "state": "candidate", "speculative_config": SPEC,
                                                         "gpu_memory_utilization": 0.5},
            expect=("compose.yaml cannot be read", "nothing was changed"),
            writes="{tmp}/jetson-llm-speculative-2-candidate.yaml"),
    Hostile("overlay-compose-file-is-a-fifo", OVERLAY, {"name": "vllm", "manager": "compose",
                                                        "project_src": FIFO_PROJECT, "state": "candidate",
                                                        "speculative_config": SPEC, "gpu_memory_utilization": 0.5},
            expect=("a FIFO", "nothing was changed"), max_seconds=30,
            writes=FIFO_PROJECT + "/jetson-llm-speculative-2-candidate.yaml"),
]
