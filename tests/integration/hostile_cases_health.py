"""Hostile inputs for vllm_health (format: tests/integration/hostile.py).

Names that a command would read as options, paths and numbers out of range, and servers that never answer or
trickle their answer: every run ends within its ``timeout``, whatever ``request_timeout`` and ``request_deadline``
say. The watched unit does not exist here, so the module only reads.
"""
from __future__ import annotations

from hostile import Hostile

HEALTH = "jetson_llm.vllm.vllm_health"
EVIL = "-Hlc@evil.service"


def health(**extra):
    args = {"endpoint": "{endpoint}", "model": "fake-model", "timeout": 3, "interval": 0.5}
    args.update(extra)
    return args


CASES = [
    Hostile("health-name-leading-dash", HEALTH, health(name=EVIL), expect=(EVIL, 'starts with "-"', "allowed:")),
    Hostile("health-compose-name-leading-dash", HEALTH, health(name="--version", manager="compose",
                                                               project_src="{tmp}"),
            expect=("--version", 'starts with "-"')),
    Hostile("health-name-crlf", HEALTH, health(name="vllm\r\nx"), expect=("a carriage return",)),
    Hostile("health-project-src-relative", HEALTH, health(name="vllm", manager="compose", project_src="opt/vllm"),
            expect=("project_src", "opt/vllm", "not an absolute path")),
    Hostile("health-project-src-nul", HEALTH, health(name="vllm", manager="compose", project_src="/opt/\u0000vllm"),
            expect=("project_src", "a NUL byte")),
    Hostile("health-timeout-too-large", HEALTH, health(timeout=10 ** 9), expect=("timeout", "86400")),
    Hostile("health-interval-nan", HEALTH, health(interval=float("nan")), expect=("interval",)),
    Hostile("health-model-crlf", HEALTH, health(model="m\r\nx"), expect=("model", "control characters")),
    # A look at the server never outlasts the wait: timeout 3 s bounds it, not request_deadline's 120 s.
    Hostile("health-models-trickle-past-the-timeout", HEALTH, health(request_timeout=2),
            server="models_endless_body", expect=("not healthy", "timeout"), max_seconds=20),
    Hostile("health-trickles-a-byte-a-second", HEALTH, health(request_timeout=2),
            server="health_trickle", expect=("not healthy", "timeout"), max_seconds=20),
    # ... and with fail_when_unhealthy false, a result (not a failure) in the same time.
    Hostile("health-trickle-reported", HEALTH, health(request_timeout=2, fail_when_unhealthy=False),
            server="models_endless_body", outcome="ok", max_seconds=20),
]
