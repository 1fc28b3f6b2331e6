"""Every module on the Pythons of the JetPack releases: 3.8 (JetPack 5), 3.10 (JetPack 6), 3.12 (JetPack 7).

Each interpreter is a virtualenv made without pip from that CPython (so the module sees its standard
library only, as on a stock JetPack), and the real `ansible` CLI runs each module on it with
ANSIBLE_PYTHON_INTERPRETER. Offline calls (facts from a fixture root, the plan, the verdict, the
service reader, the record, the host state and the overlay on a host without the service) must
return exactly what the system Python (3.11, the reference) returns; the HTTP modules talk to a
REAL vLLM of the test bed (health: healthy; benchmark: every request completed, tokens counted).

The interpreters come from pyenv (/root/.pyenv/versions/3.X.*), or from TARGET_PYTHON_3_8 /
TARGET_PYTHON_3_10 / TARGET_PYTHON_3_12. A missing one fails the suite: it never skips.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, TOP, _ansible_env, run_module
from test_speculative_modules import PLAN, _bench
# pytest fixtures, used by name as test arguments
from vllm_testbed import testbed, vllm_baseline  # noqa: F401  pylint: disable=unused-import

TARGETS = ("3.8", "3.10", "3.12")
REFERENCE = "/usr/bin/python3"
VENVS = TOP / ".build" / "target-pythons"
ROOTFS = TOP / "tests" / "fixtures" / "rootfs"
SERVICE_ROOTS = TOP / "tests" / "fixtures" / "services" / "roots"
# Fields Ansible adds about the call itself, left out of the comparison.
VOLATILE = ("invocation", "_ansible_no_log")
# The offline root whose compose file (YAML) the targets' pip-less Pythons cannot read: no PyYAML.
NO_YAML_ROOT = SERVICE_ROOTS / "compose-list"


def _cpython(version):
    override = os.environ.get("TARGET_PYTHON_" + version.replace(".", "_"))
    found = [override] if override else sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python%s" % (version, version)))
    found = [exe for exe in found if exe and os.access(exe, os.X_OK)]
    if not found:
        pytest.fail("no CPython %s: install it (pyenv install %s) or set TARGET_PYTHON_%s to its interpreter"
                    % (version, version, version.replace(".", "_")), pytrace=False)
    return found[-1]


@pytest.fixture(scope="module", params=TARGETS)
def target_python(request):
    """(version, interpreter): a pip-less virtualenv of CPython ``version``."""
    version = request.param
    venv = VENVS / ("py" + version)
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([_cpython(version), "-m", "venv", "--without-pip", "--clear", str(venv)], check=True)
    out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out == version
    return version, str(python)


def _env(python):
    return _ansible_env({"ANSIBLE_PYTHON_INTERPRETER": python})


def _stable(result):
    return {key: value for key, value in result.items() if key not in VOLATILE}


def _offline_calls(tmp):
    """(module, args, check_mode): calls that need neither a network nor systemd."""
    record = {"schema": 1, "status": "refused", "reasons": ["a reason with \u00e9 and a \"quote\""],
              "fingerprint": "ab" * 32}
    return [
        ("jetson_llm.vllm.jetson_facts", {"root": str(ROOTFS / "thor-t5000"), "run_nvpmodel": False}, False),
        ("jetson_llm.vllm.jetson_facts", {"root": str(ROOTFS / "orin-nano-8gb-super"), "run_nvpmodel": False}, True),
        ("jetson_llm.vllm.speculative_plan", PLAN, False),
        ("jetson_llm.vllm.speculative_plan", dict(PLAN, expected_concurrency=8, vllm_version="unknown"), False),
        ("jetson_llm.vllm.speculative_verdict", {"baseline": {"benchmark": _bench(44.0, 22.0, 251.0)},
                                                 "candidate": {"benchmark": _bench(60.0, 16.0, 255.0, acceptance=0.72)}},
         False),
        ("jetson_llm.vllm.speculative_verdict", {"baseline": _bench(44.0, 22.0, 251.0),
                                                 "candidate": _bench(60.0, 16.0, 240.0, acceptance=0.5),
                                                 "keep_marginal": True}, False),
        ("jetson_llm.vllm.vllm_service_info", {"name": "vllm", "root": str(SERVICE_ROOTS / "docker-run-orin")}, False),
        ("jetson_llm.vllm.vllm_service_info", {"name": "vllm.service", "root": str(SERVICE_ROOTS / "dropin")}, False),
        ("jetson_llm.vllm.vllm_service_info", {"name": "vllm", "root": str(NO_YAML_ROOT)}, False),
        ("jetson_llm.vllm.speculative_record", {"path": str(tmp / "record.fact"), "record": record}, False),
        ("jetson_llm.vllm.speculative_state", {"name": "jetson-no-such-vllm", "fact_file": str(tmp / "record.fact"),
                                               "guard_unit": "jetson-no-guard"},
         False),
        ("jetson_llm.vllm.speculative_overlay", {"name": "jetson-no-such-vllm.service", "state": "absent"}, True),
        ("jetson_llm.vllm.speculative_stage", {"source": str(_mirror(tmp)), "dest": str(tmp / "models" / "draft"),
                                               "min_free_mb": 0}, False),
    ]


def _mirror(tmp):
    """A model directory with its SHA256SUMS, as a site mirror publishes it (speculative_stage's source)."""
    mirror = tmp / "mirror" / "draft"
    (mirror / "tokenizer").mkdir(parents=True, exist_ok=True)
    files = {"config.json": b'{"model_type": "llama"}\n', "model.safetensors": bytes(range(256)) * 64,
             "tokenizer/vocab.json": b'{"a": 1}\n'}
    for name, data in files.items():
        (mirror / name).write_bytes(data)
    (mirror / "SHA256SUMS").write_text("".join("%s  %s\n" % (hashlib.sha256(data).hexdigest(), name)
                                               for name, data in sorted(files.items())))
    return mirror


def _run_all(calls, python, tmp):
    """Every call as one task of one playbook on localhost (one ansible-playbook run); the results in order."""
    tasks = []
    for module, args, check in calls:
        tasks.append({"name": module, module: args, "check_mode": check, "ignore_errors": True})
    playbook = tmp / "calls.yml"
    playbook.write_text(json.dumps([{"name": "Every module on one interpreter", "hosts": "localhost",
                                     "gather_facts": False, "tasks": tasks}]))
    env = dict(_env(python), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-c", "local", "-i", "localhost,", str(playbook)],
                          cwd=TOP, env=env, text=True, capture_output=True, check=False)
    try:
        plays = json.loads(proc.stdout)["plays"]
    except ValueError as exc:
        raise AssertionError("no JSON from ansible-playbook:\n%s\n%s" % (proc.stdout, proc.stderr)) from exc
    results = [task["hosts"]["localhost"] for task in plays[0]["tasks"]]
    assert len(results) == len(calls), proc.stdout[-3000:]
    return results


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(scratch directory, results) of the offline calls on the reference Python, once for every target."""
    tmp = tmp_path_factory.mktemp("reference")
    return tmp, _run_all(_offline_calls(tmp), REFERENCE, tmp)


def _normalise(result, tmp):
    """The result as text with this run's scratch directory replaced (each interpreter has its own)."""
    return json.loads(json.dumps(_stable(result)).replace(str(tmp), "<tmp>"))


def test_offline_modules_return_what_the_reference_python_returns(target_python, reference, tmp_path):  # pylint: disable=redefined-outer-name
    version, python = target_python
    ref_tmp, ref_results = reference
    tgt_tmp = tmp_path
    target = _run_all(_offline_calls(tgt_tmp), python, tgt_tmp)
    for (module, args, _check), ref, got in zip(_offline_calls(tgt_tmp), ref_results, target):
        assert not ref.get("failed"), (module, ref)
        if args.get("root") == str(NO_YAML_ROOT):
            # a compose file (YAML) on a target without PyYAML, read offline: a clear error naming what to
            # install (the reference, Debian's python3, has python3-yaml)
            assert got.get("failed") is True and "PyYAML is not installed" in got["msg"], (version, got)
            assert "install python3-yaml or the Docker Compose v2 plugin" in got["msg"]
            continue
        assert "module_stderr" not in got and "exception" not in got, (version, module, got)
        assert _normalise(got, tgt_tmp) == _normalise(ref, ref_tmp), "%s differs on Python %s" % (module, version)
    facts = target[0]["ansible_facts"]["jetson"]
    assert facts["is_jetson"] is True and facts["generation"] == "thor"
    assert target[2]["enable"] is True and target[2]["method"] == "eagle3"
    assert target[4]["verdict"] == "accept" and target[5]["verdict"] == "reject"
    # the record written on this Python reads back the same through the reference's state module
    assert json.loads((tgt_tmp / "record.fact").read_text()) == json.loads((ref_tmp / "record.fact").read_text())
    assert target[10]["record"]["status"] == "refused" and target[10]["rule"] == 1  # skip: no such service
    staged = target[-1]
    assert staged["changed"] is True and staged["copied_bytes"] == staged["bytes"] == 16384 + 24 + 9, staged
    assert (tgt_tmp / "models" / "draft" / "tokenizer" / "vocab.json").read_bytes() == b'{"a": 1}\n'


def test_http_modules_talk_to_real_vllm(target_python, vllm_baseline):
    version, python = target_python
    endpoint = "http://127.0.0.1:%d" % vllm_baseline.port
    health = run_module("jetson_llm.vllm.vllm_health", {"endpoint": endpoint, "model": vllm_baseline.name,
                                                        "timeout": 60}, env=_env(python))
    assert not health.get("failed"), (version, health)
    assert health["healthy"] is True
    result = run_module("jetson_llm.vllm.vllm_benchmark", {
        "endpoint": endpoint, "model": vllm_baseline.name, "input_len": 32, "output_len": 8, "num_prompts": 4,
        "warmup_prompts": 1, "concurrency": [1], "temperature": 0, "seed": 5, "request_timeout": 120,
    }, env=_env(python))
    assert not result.get("failed"), (version, result.get("msg"))
    run = result["benchmark"]["runs"][0]
    assert run["completed"] == 4 and run["failed"] == 0
    assert run["total_output_tokens"] > 0 and run["tpot_ms_p50"] > 0
    Path(TOP / "tests" / "output" / "target-pythons").mkdir(parents=True, exist_ok=True)
    (TOP / "tests" / "output" / "target-pythons" / ("benchmark-py%s.json" % version)).write_text(
        json.dumps(result["benchmark"], indent=1))
