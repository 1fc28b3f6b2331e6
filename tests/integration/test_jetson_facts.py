# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration: the real ansible-playbook / ansible / ansible-doc running jetson_facts.

The playbook asserts each fixture host against its inventory expectations; these tests also
read the module results from the json callback and check them from Python.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import BIN, TOP, run_module, run_playbook

PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
PLAYBOOK = PLAYBOOKS / "jetson_facts.yml"
INVENTORY = PLAYBOOKS / "jetson_facts_inventory" / "hosts.yml"
FIXTURES = TOP / "tests" / "fixtures" / "rootfs"
ORIN_IMAGE = "ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"


def _json_env(ansible_env):
    return dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")


def _gather_results(proc):
    """{host: result of the jetson_facts task} from json callback output."""
    data = json.loads(proc.stdout)
    tasks = data["plays"][0]["tasks"]
    gather = [t for t in tasks if t["task"]["name"] == "Gather Jetson facts below the fixture root"]
    assert len(gather) == 1
    return gather[0]["hosts"], data["stats"]


@pytest.fixture(scope="module")
def playbook_run(ansible_env):
    return run_playbook(PLAYBOOK, inventory=INVENTORY, env=_json_env(ansible_env))


@pytest.fixture(scope="module")
def check_run(ansible_env):
    return run_playbook(PLAYBOOK, inventory=INVENTORY, env=_json_env(ansible_env), args=["--check"])


def _inventory_hosts():
    return yaml.safe_load(INVENTORY.read_text())["fixtures"]["hosts"]


def test_inventory_covers_every_fixture():
    assert sorted(_inventory_hosts()) == sorted(p.name for p in FIXTURES.iterdir())


def test_playbook_asserts_pass_on_every_host(playbook_run):
    hosts, stats = _gather_results(playbook_run)
    assert sorted(hosts) == sorted(_inventory_hosts())
    for host, counts in stats.items():
        assert counts["failures"] == 0 and counts["unreachable"] == 0, host
        assert counts["ok"] == 2 and counts["changed"] == 0, (host, counts)


@pytest.mark.parametrize("host", sorted(_inventory_hosts()))
def test_facts_from_output(playbook_run, host):
    hosts, _stats = _gather_results(playbook_run)
    result = hosts[host]
    expect = _inventory_hosts()[host]["expect"]
    facts = result["ansible_facts"]["jetson"]
    assert result["changed"] is False
    assert facts["is_jetson"] is expect["is_jetson"]
    assert facts["variant"] == expect["variant"]
    assert facts["l4t"]["version"] == expect["l4t"]
    assert facts["memory"]["total_mb"] == expect["total_mb"]
    assert facts["vllm_runtime"]["path"] == expect["runtime"]
    assert facts["speculation"]["eagle3_supported"] is expect["eagle3"]
    # what the module warned about (operator alerts) is also in the facts
    for warning in result.get("warnings", []):
        assert warning in facts["warnings"]


def test_specific_facts_from_output(playbook_run):
    hosts, _stats = _gather_results(playbook_run)
    thor = hosts["thor-t5000"]["ansible_facts"]["jetson"]
    assert thor["vllm_runtime"]["forbidden_images"] == [ORIN_IMAGE]
    assert thor["speculation"]["default_num_speculative_tokens"] == 5
    assert thor["compatible"] == ["nvidia,p4071-0000+p3834-0008", "nvidia,p3834-0008", "nvidia,tegra264"]
    assert hosts["thor-boot-control"]["ansible_facts"]["jetson"]["variant_source"] == "nv_boot_control"
    assert hosts["thor-memory"]["ansible_facts"]["jetson"]["variant_source"] == "memtotal"
    assert hosts["dpkg-only"]["ansible_facts"]["jetson"]["l4t"]["source"] == "dpkg"
    assert "DGX Spark" in hosts["dgx-spark-like"]["ansible_facts"]["jetson"]["reason"]
    orin32 = hosts["orin-agx-32gb"]
    assert any("MODE_30W" in w and "not MAXN" in w for w in orin32["warnings"])
    assert not hosts["orin-agx-64gb"].get("warnings")


def test_check_mode_gives_the_same_facts(playbook_run, check_run):
    normal, _normal_stats = _gather_results(playbook_run)
    checked, stats = _gather_results(check_run)
    for host, counts in stats.items():
        assert counts["failures"] == 0 and counts["changed"] == 0, host
    for host in normal:
        assert checked[host]["ansible_facts"] == normal[host]["ansible_facts"], host


def test_running_system_is_not_a_jetson(ansible_env):
    # This CI machine is an x86/aarch64 server, not a Jetson: a fact, not a failure.
    # (run_module cannot pass an empty argument dict: `-a '{}'` is taken as raw params)
    result = run_module("jetson_llm.vllm.jetson_facts", {"run_nvpmodel": True}, env=ansible_env)
    assert not result.get("failed"), result
    facts = result["ansible_facts"]["jetson"]
    assert facts["is_jetson"] is False
    assert facts["reason"]
    assert facts["vllm_runtime"]["path"] == "unsupported"
    with open("/proc/meminfo") as handle:
        total_kb = int(next(line for line in handle if line.startswith("MemTotal:")).split()[1])
    assert facts["memory"]["total_mb"] == total_kb // 1024


def test_running_system_in_check_mode(ansible_env):
    result = run_module("jetson_llm.vllm.jetson_facts", {"root": "/"}, env=ansible_env, check_mode=True)
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert result["ansible_facts"]["jetson"]["is_jetson"] is False


@pytest.mark.parametrize("root, fragment", [
    ("/nonexistent/jetson-root", "does not exist"),
    (str(FIXTURES / "thor-t5000" / "proc" / "meminfo"), "is not a directory"),
])
def test_bad_root_fails(ansible_env, root, fragment):
    result = run_module("jetson_llm.vllm.jetson_facts", {"root": root}, env=ansible_env)
    assert result.get("failed") is True
    assert fragment in result["msg"] and root in result["msg"]


def test_ansible_doc_renders(ansible_env):
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", "module", "jetson_llm.vllm.jetson_facts"],
                          cwd=TOP, env=ansible_env, text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "jetson_llm.vllm.jetson_facts" in proc.stdout
    for word in ("root", "run_nvpmodel", "check_mode", "vllm_runtime", "max_performance", "EXAMPLES"):
        assert word in proc.stdout, word
    proc = subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", "module", "jetson_llm.vllm.jetson_facts"],
                          cwd=TOP, env=ansible_env, text=True, capture_output=True, check=False)
    doc = json.loads(proc.stdout)["jetson_llm.vllm.jetson_facts"]
    assert doc["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert sorted(doc["doc"]["options"]) == ["root", "run_nvpmodel"]


def test_fixture_fleet_table(ansible_env):
    """playbooks/fixture_facts.yml over the fixture roots prints one fleet facts table."""
    proc = run_playbook(TOP / "playbooks" / "fixture_facts.yml", inventory=TOP / "inventories" / "fixtures" / "hosts.yml",
                        env=_json_env(ansible_env))
    data = json.loads(proc.stdout)
    tasks = {t["task"]["name"]: t["hosts"] for t in data["plays"][0]["tasks"]}
    gathered = tasks["Gather Jetson facts"]
    assert sorted(gathered) == ["agx-orin-32-lab", "agx-orin-64", "build-server", "orin-nano-super", "orin-nx-16",
                                "thor-devkit"]
    table = tasks["Show the fleet facts table"]
    assert len(table) == 1  # printed once for the whole fleet
    lines = next(iter(table.values()))["msg"]
    assert lines[0].split()[:3] == ["host", "family", "/"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert sorted(rows) == sorted(gathered)
    assert "thor / thor-t5000" in rows["thor-devkit"] and "upstream" in rows["thor-devkit"]
    assert "MODE_30W (not max)" in rows["agx-orin-32-lab"] and rows["agx-orin-32-lab"].endswith(" 1")
    assert "not a Jetson" in rows["build-server"] and "unsupported" in rows["build-server"]
    assert "(super)" in rows["orin-nano-super"] and "no/no" in rows["orin-nano-super"]
