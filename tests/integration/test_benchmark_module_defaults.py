"""module_defaults for the jetson_llm.vllm.vllm action group reach vllm_benchmark (ansible-playbook).

The simulator requires an API key: the benchmark only succeeds when both endpoint and api_key come
from the group's defaults (the task sets neither).
"""
from __future__ import annotations

import sys

import yaml

from conftest import TOP, run_playbook

sys.path.insert(0, str(TOP / "tests" / "utils"))
from fake_vllm import FakeVLLM  # noqa: E402  pylint: disable=wrong-import-position

PLAYBOOK = TOP / "tests" / "integration" / "playbooks" / "vllm_module_defaults.yml"
KEY = "sk-group-defaults-key"


def test_the_vllm_group_lists_every_module_with_the_endpoint_options():
    groups = yaml.safe_load((TOP / "meta" / "runtime.yml").read_text())["action_groups"]
    users = sorted(path.stem for path in (TOP / "plugins" / "modules").glob("*.py")
                   if "jetson_llm.vllm.endpoint" in path.read_text())
    assert sorted(groups["vllm"]) == users and users


def test_module_defaults_for_the_group_set_endpoint_and_api_key():
    with FakeVLLM(ttft=0.001, itl=0.001, api_key=KEY) as sim:
        proc = run_playbook(PLAYBOOK, inventory="localhost,", extra_vars={"sim_url": sim.url, "sim_api_key": KEY})
        completions = len(sim.completions)
    assert "ok=2" in proc.stdout and "failed=0" in proc.stdout, proc.stdout
    assert completions == 2
    assert KEY not in proc.stdout + proc.stderr


def test_without_the_group_defaults_the_key_is_missing():
    """The same task without module_defaults fails: the defaults above really came from the group."""
    with FakeVLLM(ttft=0.001, itl=0.001, api_key=KEY) as sim:
        proc = run_playbook(PLAYBOOK, inventory="localhost,", check=False,
                            extra_vars={"sim_url": sim.url, "sim_api_key": ""})
    assert proc.returncode != 0
    assert "requires an API key" in proc.stdout, proc.stdout
