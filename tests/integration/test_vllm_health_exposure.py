"""vllm_health warns when vLLM listens beyond the host without an API key (through the real `ansible` CLI)."""
from __future__ import annotations

import sys

from conftest import TOP, run_module

sys.path.insert(0, str(TOP / "tests" / "utils"))
from fake_vllm import FakeVLLM  # noqa: E402  pylint: disable=wrong-import-position

MODULE = "jetson_llm.vllm.vllm_health"


def _health(sim, **extra):
    return run_module(MODULE, {"endpoint": sim.url, "model": "fake-model", "timeout": 30, **extra})


def test_listening_on_every_address_without_a_key_is_a_warning():
    with FakeVLLM(ttft=0.001, itl=0.001) as sim:
        result = _health(sim, listen_host="0.0.0.0")
    assert result["healthy"] is True and result["exposed"] is True
    text = " ".join(result.get("warnings", []))
    assert "vLLM listens on every address of this host" in text and "without an API key" in text, result
    assert "vllm_host: 127.0.0.1" in text


def test_loopback_or_a_key_is_not_exposed():
    key = "sk-exposure-test-key"
    with FakeVLLM(ttft=0.001, itl=0.001) as sim:
        loopback = _health(sim, listen_host="127.0.0.1")
    with FakeVLLM(ttft=0.001, itl=0.001, api_key=key) as sim:
        keyed = _health(sim, listen_host="0.0.0.0", api_key=key)
    for result in (loopback, keyed):
        assert result["healthy"] is True and result["exposed"] is False, result
        assert not any("listens on" in w for w in result.get("warnings", [])), result
    assert key not in str(keyed)
