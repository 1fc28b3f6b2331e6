"""A fleet playbook whose host pattern (or --limit) matches no host fails with a clear message; it used to end green.

ansible-playbook only warns "Could not match supplied host pattern" and exits 0 when a play's pattern matches nothing,
so a scheduled AWX job or a typo in -e jetson_spec_hosts looked like a fleet in sync. Every fleet playbook starts with
a play that checks it (playbooks/tasks/check_hosts.yml). Run here with the real ansible-playbook on local-connection
hosts; the positive case is the report playbook, which only reads.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import BIN, _ansible_env

PLAYBOOKS = ("enable_speculation", "disable_speculation", "benchmark", "facts", "report")


def play(args, tmp_path):
    proc = subprocess.run([str(BIN / "ansible-playbook")] + args, cwd=tmp_path, env=_ansible_env(), text=True,
                          capture_output=True, check=False, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_a_pattern_that_matches_nothing_fails_before_anything_runs(name, tmp_path):
    rc, out = play(["-i", "localhost,", f"jetson_llm.vllm.{name}"], tmp_path)
    assert rc != 0, out[-2000:]
    assert 'The host pattern \\"jetsons\\" matches no host of the inventory (1 host(s): localhost)' in out, out[-2000:]
    assert "Nothing was done" in out
    # nothing ran after the check: no task of the fleet play
    assert "TASK [Speculative decoding" not in out and "TASK [Read the recorded outcome" not in out


def test_a_limit_outside_the_pattern_fails_and_a_matching_one_runs(tmp_path):
    fact = tmp_path / "jetson_vllm_speculative.fact"
    fact.write_text(json.dumps({"schema": 1, "status": "refused", "reasons": ["test"]}))
    (tmp_path / "inv").write_text("[jetsons]\norin-1 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
                                  "[others]\nthor-9 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n")
    common = ["-i", "inv", "jetson_llm.vllm.report", "-e", f"jetson_spec_fact_file={fact}",
              "-e", f"jetson_spec_report_dir={tmp_path / 'reports'}"]
    rc, out = play(common + ["--limit", "thor-9"], tmp_path)
    assert rc != 0 and 'with --limit \\"thor-9\\" matches no host' in out, out[-2000:]
    assert not (tmp_path / "reports").exists()
    rc, out = play(common + ["--limit", "orin-1"], tmp_path)
    assert rc == 0, out[-3000:]
    assert (tmp_path / "reports" / "fleet-report.json").exists(), sorted(p.name for p in (tmp_path / "reports").iterdir())


@pytest.mark.parametrize("part", ["rest", "Others", "canaries\n"])
def test_a_rollout_part_that_is_none_of_the_three_fails_before_any_host_is_read(part, tmp_path):
    (tmp_path / "inv").write_text("[jetsons]\norin-1 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n")
    rc, out = play(["-i", "inv", "jetson_llm.vllm.enable_speculation", "-e", json.dumps({"jetson_spec_rollout_part": part})],
                   tmp_path)
    assert rc != 0, out[-2000:]
    assert f"jetson_spec_rollout_part is {json.dumps(json.dumps(part))[1:-1]}; allowed: all" in out, out[-2000:]
    assert "Nothing was done" in out and "TASK [Reach the host]" not in out
