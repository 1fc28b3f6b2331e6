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


def state(**extra):
    args = {"name": "hostile-no-such-vllm", "fact_file": "{tmp}/none.fact", "last_known_good": "{tmp}/none.lkg",
            "guard_unit": "hostile-guard"}
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
    Hostile("overlay-name-crlf", OVERLAY, {"name": "vllm\r\nExecStart=/bin/sh", "state": "absent"},
            expect=("not a systemd service name",)),
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
            expect=("not an absolute path",)),
    Hostile("overlay-compose-name-traversal", OVERLAY, {"name": "../vllm", "manager": "compose",
                                                        "project_src": "{tmp}", "state": "absent"},
            expect=("../vllm", "not a compose service name")),
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
