"""The Jetson batch SIMULATOR's logic (tests/nspawn/jetson_batch_simulator.py), which one role test host
serves instead of vLLM: K per batch size as vLLM picks it, the start-up checks, the speed model's costs,
and the command line the collection reads as a vLLM one."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import serve_args as _serve_args

TOP = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(TOP / "tests" / "utils"))  # fake_vllm, imported by the simulator
_SPEC = importlib.util.spec_from_file_location("jetson_batch_simulator", TOP / "tests" / "nspawn" / "jetson_batch_simulator.py")
sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sim)

PLANNED = {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 4}
BATCH_AWARE = dict(PLANNED, num_speculative_tokens_per_batch_size=[[1, 4, 4], [5, 65536, 0]])


@pytest.mark.parametrize("spec, batch, k", [
    (None, 1, 0), (None, 8, 0),
    (PLANNED, 1, 4), (PLANNED, 8, 4),
    (BATCH_AWARE, 1, 4), (BATCH_AWARE, 4, 4), (BATCH_AWARE, 5, 0), (BATCH_AWARE, 8, 0), (BATCH_AWARE, 70000, 0),
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[[1, 2, 3], [3, 8, 1]]), 100, 1),  # the last carries on
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[[2, 8, 3]]), 1, 0),               # below the first range
])
def test_k_per_batch_size(spec, batch, k):
    assert sim.k_for(spec, batch) == k


@pytest.mark.parametrize("spec, words", [
    ([], "must be a JSON object"),
    (dict(PLANNED, num_speculative_tokens=0), "num_speculative_tokens must be a positive integer"),
    (dict(PLANNED, num_speculative_tokens=True), "num_speculative_tokens must be a positive integer"),
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[[1, 4]]), "[low, high, K] ranges"),
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[[4, 1, 4]]), "[low, high, K] ranges"),
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[[1, 4, 5]]), "0 <= K <= num_speculative_tokens"),
    (dict(PLANNED, num_speculative_tokens_per_batch_size=[]), "[low, high, K] ranges"),
    (dict(PLANNED, model="/nonexistent/draft"), "has no config.json"),
])
def test_bad_speculative_configs_are_refused_at_start_up(spec, words):
    assert words in sim.check_spec(spec)


def test_a_good_config_starts(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert sim.check_spec(dict(BATCH_AWARE, model=str(tmp_path))) is None


def test_the_speed_model_gains_alone_and_loses_in_a_batch_of_8():
    """The defaults' expected tokens per ms (acceptance 0.8 per drafted token, K = 4: 3.36 tokens a step)."""
    p = sim.PROFILE
    tokens = (1 - 0.8 ** 5) / (1 - 0.8)
    assert sim.step_ms(p, 1, 0, 0, False) == pytest.approx(24.0)
    assert sim.step_ms(p, 1, 4, 0, True) == pytest.approx(20 + 4 * 5 + 4 * (2 + 0.8))
    alone = (tokens / sim.step_ms(p, 1, 4, 0, True)) / (1 / sim.step_ms(p, 1, 0, 0, False))
    batch = (8 * tokens / sim.step_ms(p, 8, 4, 0, True)) / (8 / sim.step_ms(p, 8, 0, 0, False))
    assert alone == pytest.approx(1.576, abs=0.005) and batch == pytest.approx(0.818, abs=0.005)
    # prefill: the target's per prompt token, plus the draft's whenever one is configured (even at K = 0)
    assert sim.step_ms(p, 0, 0, 32, False) == pytest.approx(20 + 16)
    assert sim.step_ms(p, 8, 0, 32, True) - sim.step_ms(p, 8, 0, 32, False) == pytest.approx(32 * 0.05)


def test_unknown_profile_keys_are_refused(tmp_path, capsys):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"target_weight_ms": 10, "weight_ms": 3}))
    with pytest.raises(SystemExit) as exc:
        sim.load_profile(str(path))
    assert exc.value.code == 1 and "unknown keys weight_ms" in capsys.readouterr().err
    path.write_text(json.dumps({"target_weight_ms": 10}))
    assert sim.load_profile(str(path))["target_weight_ms"] == 10


def test_its_command_line_reads_as_vllm_serve():
    argv = ["/opt/jetson-batch-simulator/bin/vllm", "serve", "/models/target", "--served-model-name", "target",
            "--port", "8214", "--dtype", "float32", "--speculative-config", json.dumps(BATCH_AWARE)]
    info, problems = _serve_args.analyse_command(argv)
    assert problems == [] and info["runtime"] == "native"
    assert info["serve"]["model"] == "/models/target"
    args = sim.parse(argv[1:])
    assert (args.model, args.port, args.served_model_name) == ("/models/target", 8214, ["target"])
    assert json.loads(args.speculative_config) == BATCH_AWARE


def test_a_failing_engine_ends_the_process(monkeypatch, capsys):
    """Streams must not wait on a dead engine while /health still answers."""
    exits = []
    monkeypatch.setattr(sim.os, "_exit", exits.append)
    engine = sim.Engine(sim.fake_vllm.FakeVLLM(), dict(sim.PROFILE), None, 8)

    def broken():
        raise ZeroDivisionError("boom")
    monkeypatch.setattr(engine, "_loop", broken)
    engine.run()
    assert exits == [1] and "the engine failed: ZeroDivisionError('boom')" in capsys.readouterr().err
