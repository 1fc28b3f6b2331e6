"""Pytest fixtures for the real vLLM test bed (tests/testbed, docs/testbed.md).

Test files import what they use::

    from vllm_testbed import testbed, vllm_baseline, vllm_spec  # noqa: F401  (pytest fixtures)

(tests/integration is on sys.path: pytest's default "prepend" import mode puts each test file's
directory there.)

* ``testbed``: paths of the installed test bed. FAILS (never skips) when it is not installed,
  saying how to install it.
* ``vllm_baseline``: a real ``vllm serve`` of the ``target`` model, no speculation.
* ``vllm_spec``: the same target with the perfect draft (a copy of the target),
  ``{"method": "draft_model", "num_speculative_tokens": 4}``, protected by ``--api-key``
  (``SPEC_API_KEY``): every request to it needs the key.
* ``vllm_spec_mtp``, ``vllm_spec_dflash``: a target with its own MTP layer (method mtp), and ``target`` with a
  DFlash draft (method dflash): random drafters, so ~0 accepted; they prove the path runs.
* ``vllm_dead_endpoint``: the URL of a real vLLM that refused to start (a draft whose vocabulary
  size differs from the target's) and exited: nothing listens there any more.

Each server runs in its own session (like a systemd service or a container) at a lower CPU priority
(nice 10, also for its kernel autogroup): a CPU-only vLLM keeps ~2 cores busy, and on a 2-core
machine the module (run by an ansible worker in yet another session) was otherwise starved and read
whole completions at once. See tests/testbed/server.py and docs/testbed.md.

Servers are started once per test session (even when several test files import the fixtures),
launched together when the session needs more than one (start-up is mostly torch.compile:
~1.5 min on 2 cores), and stopped at the end of the session. Their logs are under
tests/output/testbed/ (tests/output/testbed/<lane>/ in make test).
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
# One directory per lane of make test (JETSON_TEST_LANE, set by the Makefile): two pytest sessions at once start
# servers of the same names.
LOG_DIR = TOP / "tests" / "output" / "testbed" / os.environ.get("JETSON_TEST_LANE", "")


def _load_server_module():
    name = "jetson_llm_testbed_server"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOP / "tests" / "testbed" / "server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


testbed_server = _load_server_module()
VllmServer = testbed_server.VllmServer
ServerError = testbed_server.ServerError
TestbedMissing = testbed_server.TestbedMissing
http_get = testbed_server.http_get

ALL_MODELS = ("tokenizer", "target", "draft-perfect", "draft-random", "draft-badvocab", "target-deep",
              "draft-deep-1layer", "draft-deep-tiny", "draft-heavy", "target-mtp", "draft-dflash")
# A fixed, recognisable key: tests assert it never appears in any output.
SPEC_API_KEY = "tb-key-7Qv3Zk9Lm2Xw"
NUM_SPEC_TOKENS = 4
MTP_SPEC_TOKENS = 2
# DFlash as speculative_plan plans it on an AGX Orin (r39) with the draft-dflash model: K 3, one draft TP rank.
DFLASH_SPEC_TOKENS = 3


@dataclass(frozen=True)
class Testbed:
    root: Path
    venv: Path
    vllm: Path
    python: Path
    models: Path

    def model(self, name: str) -> Path:
        return self.models / name


def _testbed() -> Testbed:
    root = testbed_server.check_testbed(models=ALL_MODELS)
    venv = root / "venv"
    return Testbed(root=root, venv=venv, vllm=venv / "bin" / "vllm", python=venv / "bin" / "python",
                   models=root / "models")


# --- servers shared by the whole session ---------------------------------------------------------
# --enforce-eager, as the role tests' hosts: without it every start compiles the model with torch.compile
# (three servers launched together took 127 s to be healthy in CI, most of it compiling).
EAGER = ["--enforce-eager"]
PER_REQUEST_SPEC_METRICS = ["--per-request-spec-decode-metrics", "summary"]


def _specs(tb: Testbed):
    return {
        "baseline": dict(model=str(tb.model("target")), name="target", extra_args=EAGER),
        # With vLLM's per-request speculative metrics (vllm#48915, 0.29+), which the benchmark reads first.
        "spec": dict(model=str(tb.model("target")), name="target-spec", api_key=SPEC_API_KEY,
                     extra_args=EAGER + PER_REQUEST_SPEC_METRICS,
                     speculative_config={"method": "draft_model", "model": str(tb.model("draft-perfect")),
                                         "num_speculative_tokens": NUM_SPEC_TOKENS}),
        # An independent random draft: acceptance ~0, slower than no speculation on any CPU (a sure reject).
        "spec_random": dict(model=str(tb.model("target")), name="target-random", api_key=SPEC_API_KEY,
                            extra_args=EAGER,
                            speculative_config={"method": "draft_model", "model": str(tb.model("draft-random")),
                                                "num_speculative_tokens": NUM_SPEC_TOKENS}),
        # The target's own MTP layer (method mtp, no draft model); K as speculative_plan plans it on an Orin.
        "spec_mtp": dict(model=str(tb.model("target-mtp")), name="target-mtp", extra_args=EAGER,
                         speculative_config={"method": "mtp", "num_speculative_tokens": MTP_SPEC_TOKENS}),
        # A DFlash draft (random: ~0 accepted; the CPU platform runs DFlash's kernels in C++), the plan's config.
        "spec_dflash": dict(model=str(tb.model("target")), name="target-dflash", extra_args=EAGER,
                            speculative_config={"draft_tensor_parallel_size": 1, "method": "dflash",
                                                "model": str(tb.model("draft-dflash")),
                                                "num_speculative_tokens": DFLASH_SPEC_TOKENS}),
        # Rejected at start-up (~15 s): "Target and draft model should have the same vocabulary size".
        "dead": dict(model=str(tb.model("target")), name="target-dead", extra_args=EAGER,
                     speculative_config={"method": "draft_model", "model": str(tb.model("draft-badvocab")),
                                         "num_speculative_tokens": NUM_SPEC_TOKENS}),
        # Rejected at start-up: suffix decoding needs the arctic-inference package, which the CPU test bed cannot
        # have (its only release is an sdist that builds CUDA ops).
        "dead_suffix": dict(model=str(tb.model("target")), name="target-suffix", extra_args=EAGER,
                            speculative_config={"method": "suffix", "num_speculative_tokens": NUM_SPEC_TOKENS}),
    }


FIXTURE_OF = {"vllm_baseline": "baseline", "vllm_spec": "spec", "vllm_spec_random": "spec_random",
              "vllm_spec_mtp": "spec_mtp", "vllm_spec_dflash": "spec_dflash", "vllm_dead_endpoint": "dead"}
_servers = {}   # key -> VllmServer (launched)
_failures = {}  # key -> exception from wait_ready, re-raised for every later user
_lock = threading.Lock()


def _launch(tb: Testbed, keys):
    specs = _specs(tb)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    for key in keys:
        if key not in _servers:
            srv = VllmServer(log_path=LOG_DIR / f"vllm-{key}.log", **specs[key])
            if srv.log_path.exists():
                srv.log_path.unlink()
            _servers[key] = srv.launch()


def _needed(request):
    """Server keys that any collected test of this session uses (to launch them together)."""
    keys = set()
    for item in getattr(request.session, "items", []):
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in FIXTURE_OF:
                keys.add(FIXTURE_OF[fixture])
    return keys


def _server(request, tb: Testbed, key: str):
    with _lock:
        if key in _failures:
            pytest.fail(f"vLLM server {key!r} failed earlier in this session: {_failures[key]}", pytrace=False)
        # The dead server is only launched on its own: it exits within seconds.
        _launch(tb, sorted((_needed(request) - {"dead"}) | {key}) if key != "dead" else [key])
    srv = _servers[key]
    try:
        srv.wait_ready()
    except ServerError as exc:
        _failures[key] = exc
        pytest.fail(str(exc), pytrace=False)
    return srv


def refusal_logs(tb: Testbed, keys):
    """{key: the whole log} of servers that must refuse their configuration at start-up (launched together, alone
    in the session's servers, and waited for until they exit). A server that becomes healthy fails the test."""
    with _lock:
        _launch(tb, keys)
    logs = {}
    for key in keys:
        srv = _servers[key]
        try:
            srv.wait_ready(timeout=300)
        except ServerError:
            srv.stop()
            logs[key] = srv.log_path.read_text(errors="replace")
            continue
        srv.stop()
        pytest.fail(f"vLLM {key!r} started although its configuration must be refused: {srv.command()}", pytrace=False)
    return logs


def stop_all():
    for srv in list(_servers.values()):
        srv.stop()


atexit.register(stop_all)


@pytest.fixture(scope="session")
def testbed():
    """The installed test bed; a loud failure (with the install command) when it is missing."""
    try:
        return _testbed()
    except TestbedMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def vllm_baseline(request, testbed):  # pylint: disable=redefined-outer-name
    """Real vLLM serving ``target`` (served name "target"), no speculation, no api key."""
    srv = _server(request, testbed, "baseline")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def vllm_spec(request, testbed):  # pylint: disable=redefined-outer-name
    """Real vLLM serving ``target`` (served name "target-spec") with the perfect draft, K=4, api key SPEC_API_KEY."""
    srv = _server(request, testbed, "spec")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def vllm_spec_random(request, testbed):  # pylint: disable=redefined-outer-name
    """Real vLLM serving ``target`` (served name "target-random") with the random draft, K=4, api key SPEC_API_KEY."""
    srv = _server(request, testbed, "spec_random")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def vllm_spec_mtp(request, testbed):  # pylint: disable=redefined-outer-name
    """Real vLLM serving ``target-mtp`` (served name "target-mtp") with method mtp, K=MTP_SPEC_TOKENS, no api key."""
    srv = _server(request, testbed, "spec_mtp")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def vllm_spec_dflash(request, testbed):  # pylint: disable=redefined-outer-name
    """Real vLLM serving ``target`` (served name "target-dflash") with the DFlash draft, K=DFLASH_SPEC_TOKENS."""
    srv = _server(request, testbed, "spec_dflash")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def vllm_dead_endpoint(testbed):  # pylint: disable=redefined-outer-name
    """URL of a real vLLM that refused its configuration at start-up and exited (nothing listens)."""
    with _lock:
        _launch(testbed, ["dead"])
    srv = _servers["dead"]
    try:
        srv.wait_ready(timeout=300)
    except ServerError as exc:
        if "same vocabulary size" not in str(exc):
            pytest.fail(f"vLLM with a bad-vocabulary draft failed, but not as expected: {exc}", pytrace=False)
        srv.stop()
        return srv.url
    srv.stop()
    pytest.fail("vLLM started with a draft whose vocabulary size differs from the target's; "
                "expected it to refuse (the test bed's draft-badvocab model is wrong)", pytrace=False)
    return None
