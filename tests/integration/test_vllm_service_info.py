# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration: the real `ansible` and `ansible-doc` CLIs running vllm_service_info on offline roots.

The fixture roots (tests/fixtures/services/roots) hold real unit and compose files; with `root`
set nothing runs on this machine (no systemctl, no docker). The live paths are covered by the unit
tests with captured outputs and by the role tests on systemd-nspawn hosts.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import BIN, TOP, run_module

MODULE = "jetson_llm.vllm.vllm_service_info"
ROOTS = TOP / "tests" / "fixtures" / "services" / "roots"
SECRETS = ("hf_unitLEAKEDvalue123", "hf_envfileSECRETvalue", "sk-unitLEAKEDkey", "hf_envfileNATIVEsecret",
           "sk-envfileAPIKEY", "sk-dockerAPIKEYleak", "hf_composeINLINEsecret", "hf_composeENVFILEsecret",
           "sk-composeSTRINGkey", "sk-jsonENVFILE", "hf_capturedSECRET")


def _ansible(args, env, check=False):
    """Run the module through `ansible` with the default callback at -vvv; return the whole output."""
    cmd = [str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", MODULE,
           "-a", json.dumps(args), "-vvv"]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=TOP, env=env, text=True, capture_output=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("root, args, model, spec_method, runtime", [
    ("docker-run-orin", {"name": "vllm"}, "Qwen/Qwen3-8B", "eagle3", "container"),
    ("native-venv", {"name": "vllm"}, "/srv/models/Qwen3-8B", None, "native"),
    ("dropin", {"name": "vllm.service"}, "/srv/models/target", "draft_model", "native"),
    ("template", {"name": "vllm@qwen3-8b"}, "/srv/models/qwen3-8b", "ngram", "native"),
    ("compose-list", {"name": "vllm"}, "Qwen/Qwen3-32B", "eagle3", "container"),
    ("compose-string", {"name": "llm", "manager": "compose", "project_src": "/srv/llm"},
     "/models/Qwen2.5-7B-Instruct", "ngram", "container"),
])
def test_offline_roots(ansible_env, root, args, model, spec_method, runtime):
    result = run_module(MODULE, dict(args, root=str(ROOTS / root)), env=ansible_env)
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    service = result["service"]
    assert service["exists"] is True
    assert service["runtime"] == runtime
    assert service["serve"]["model"] == model
    assert (service["serve"]["speculative_config"] or {}).get("method") == spec_method
    assert service["running"] is None and service["state"]["status"] == "unknown"
    assert service["drift"] is False


@pytest.mark.parametrize("root", ["docker-run-orin", "native-venv", "compose-list", "compose-string",
                                  "compose-json", "docker-entrypoint-args", "nspawn-native"])
def test_no_secret_in_any_output(ansible_env, root):
    name = "llm" if root == "compose-string" else "vllm"
    args = {"name": name, "root": str(ROOTS / root)}
    if root == "compose-string":
        args["project_src"] = "/srv/llm"
    rc, output = _ansible(args, ansible_env)
    assert rc == 0, output
    assert '"changed": false' in output
    for secret in SECRETS:
        assert secret not in output


def test_check_mode(ansible_env):
    args = {"name": "vllm", "root": str(ROOTS / "native-venv")}
    normal = run_module(MODULE, args, env=ansible_env)
    checked = run_module(MODULE, args, env=ansible_env, check_mode=True)
    assert checked["changed"] is False
    assert checked["service"] == normal["service"]


def test_fifo_instead_of_unit_does_not_block(ansible_env, tmp_path):
    folder = tmp_path / "etc" / "systemd" / "system"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "vllm.service")
    result = run_module(MODULE, {"name": "vllm", "root": str(tmp_path)}, env=ansible_env)
    assert result["service"]["exists"] is True and result["service"]["configured"] is None
    assert any("a FIFO, not a regular file" in warning for warning in result["warnings"])


@pytest.mark.parametrize("args, fragment", [
    ({"name": "vllm", "root": "/nonexistent/jetson-root"}, "root /nonexistent/jetson-root does not exist"),
    ({"name": "vllm", "manager": "podman"}, "value of manager must be one of: systemd, compose, auto"),
])
def test_bad_options(ansible_env, args, fragment):
    result = run_module(MODULE, args, env=ansible_env)
    assert result.get("failed") is True
    assert fragment in result["msg"]


def test_ansible_doc_renders(ansible_env):
    proc = subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", "module", MODULE], cwd=TOP, env=ansible_env,
                          text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)[MODULE]
    assert sorted(doc["doc"]["options"]) == ["manager", "name", "project_src", "root", "unit_path"]
    assert doc["doc"]["attributes"]["check_mode"]["support"] == "full"
    returned = doc["return"]["service"]["contains"]
    assert sorted(returned) == sorted(["name", "manager", "exists", "file", "env_files", "runtime", "image", "state",
                                       "configured", "running", "serve", "drift", "drift_reasons", "compose"])
    assert sorted(returned["compose"]["contains"]) == ["base_files", "files", "overlay", "project", "project_dir"]
