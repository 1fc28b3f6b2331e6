"""Cohorts on real systemd hosts: enable_speculation.yml verifies once per cohort, and its canary's verdict gates
the others (docs/fleet.md).

Five systemd-nspawn hosts (tests/nspawn/sim_fleet.py: one shared root, an overlay each) whose vLLM is the
Jetson batch SIMULATOR (tests/nspawn/jetson_batch_simulator.py, not vLLM: real vLLM stays on the loop's own
tests, test_roles.py). Simulated speeds are about 20x a Jetson's. Known true effects, per host:

  thor-1  Thor T5000, speculation pays (c=1 x2.2, c=8 +40 %)   canary of the Thor cohort: full protocol, kept
  thor-2  Thor T5000, the same                                   confirms the canary's configuration
  thor-3  Thor T5000, PLANTED: its draft is 15x slower           same cohort; the confirmation must catch it
  orin-1  AGX Orin 64GB, speculation loses                       canary of the Orin cohort: reverted
  orin-2  AGX Orin 64GB, the same                                follows the revert: never restarted

The cohort is what the hosts' facts and inputs say (module, software, service, plan, verdict settings,
workload); the speed profile is the hardware's truth, which only a measurement shows.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

import ansible_runner  # tests/requirements.txt: a missing runner fails the suite, never skips it
import pytest

from conftest import BIN, TOP, _ansible_env, recap, run_playbook

sys.path.insert(0, str(TOP / "tests" / "nspawn"))
import sim_fleet  # noqa: E402  pylint: disable=wrong-import-position

OUT = TOP / "tests" / "output" / "cohorts"
# The rollouts keep each host's cohort in a persistent fact cache, as an operator's or AWX's would (the last test).
FACT_CACHE = OUT / "fact-cache"
FACT_CACHE_ENV = _ansible_env({"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(FACT_CACHE)})
COHORT_INVENTORY = TOP / "inventories" / "cohorts.yml"
FACT = "/etc/ansible/facts.d/jetson_vllm_speculative.fact"
BASE_PORT = 18600
# The simulator's speeds (ms): a memory-bound target whose batch of 8 stays memory-bound with K = 4.
PAYS = {"target_weight_ms": 2.0, "target_token_ms": 0.05, "prefill_token_ms": 0.005, "draft_weight_ms": 0.2,
        "draft_token_ms": 0.025, "draft_prefill_token_ms": 0.0005, "acceptance": {"default": 0.8},
        "step_jitter": 0.02, "startup_s": 0.5}
LOSES = dict(PAYS, draft_weight_ms=3.0)
HOSTS = {
    "thor-1": ("thor-t5000", PAYS),
    "thor-2": ("thor-t5000", PAYS),
    "thor-3": ("thor-t5000", LOSES),
    "orin-1": ("orin-agx-64gb", LOSES),
    "orin-2": ("orin-agx-64gb", LOSES),
}
WORKLOAD = {"concurrency": [1, 8], "num_prompts": 8, "warmup_prompts": 2, "input_len": 32, "output_len": 64,
            "temperature": 0}
GROUP_VARS = {
    "vllm_runtime": "native",
    "vllm_native_command": [f"{sim_fleet.SIMULATOR_BIN}/vllm", "serve"],
    "vllm_model": f"{sim_fleet.MODELS_DIR}/target",
    "vllm_served_model_name": "target",
    "vllm_host": "127.0.0.1",
    "vllm_max_model_len": 1024,
    "vllm_startup_timeout": 60,
    "jetson_spec_method": "draft_model",
    "jetson_spec_draft_model": f"{sim_fleet.MODELS_DIR}/draft",
    "jetson_spec_num_speculative_tokens": 4,
    "jetson_spec_benchmark": WORKLOAD,
    "jetson_spec_guard_timeout": 600,
    "jetson_spec_progress_interval": 0,
    # one K tuning step on the canary (the role's default is 2): the twins get K as tuned either way
    "jetson_spec_tune_max_steps": 1,
    # the confirmation's short run, shorter still (the test's 8-request workload; at least 8 are needed)
    "jetson_spec_confirm_benchmark": {"num_prompts": 12, "warmup_prompts": 2},
}


# Two Thor twins in one site (a disruption group): with the default budget (one host of a group restarting at a time),
# they never change in the same batch.
SITES = {"thor-2": {"jetson_spec_disruption_group": "site-a"}, "thor-3": {"jetson_spec_disruption_group": "site-a"}}


class Cohorts:
    def __init__(self, fleet, inventory, report_dir):
        self.fleet, self.inventory, self.report_dir = fleet, inventory, report_dir

    def status(self):
        """{host: status} of the fleet report on the controller."""
        report = json.loads((self.report_dir / "fleet-report.json").read_text())
        return {row["host"]: (row["status"], row["reason"]) for row in report["hosts"]}

    def fact(self, name):
        path = self.fleet[name].path(FACT)
        return json.loads(path.read_text()) if path.exists() else None

    def starts_since(self, name, epoch):
        """How many times vllm.service started on ``name`` since ``epoch`` (its journal)."""
        out = self.fleet[name].nsenter(["journalctl", "-u", "vllm.service", f"--since=@{int(epoch)}", "-o", "cat",
                                        "--no-pager"], check=False).stdout
        return sum(1 for line in out.splitlines() if line.startswith("Started "))

    def start_times(self, name, epoch):
        """The times (epoch seconds) vllm.service started on ``name`` since ``epoch`` (its journal)."""
        out = self.fleet[name].nsenter(["journalctl", "-u", "vllm.service", f"--since=@{int(epoch)}", "-o", "short-unix",
                                        "--no-pager"], check=False).stdout
        return [float(line.split()[0]) for line in out.splitlines() if " Started " in line]

    def rollout(self, extra=None):
        started = time.time() - 1
        proc = run_playbook("jetson_llm.vllm.enable_speculation", inventory=self.inventory, check=False,
                            extra_vars={"jetson_spec_report_dir": str(self.report_dir), "jetson_spec_canary_size": 2,
                                        "jetson_spec_batch_size": 3, **(extra or {})}, env=FACT_CACHE_ENV)
        (OUT / f"rollout-{int(started)}.log").write_text(proc.stdout + proc.stderr)
        return proc, started


def cohort_fleet(hosts, name, out, base_port, host_vars=None):
    """Boot ``hosts`` ({name: (identity, simulator profile)}) as a simulated fleet, deploy the baseline service on
    every host, and yield its Cohorts (inventory and report directory under ``out``); the fleet goes down after."""
    if os.geteuid() != 0 or not shutil.which("systemd-nspawn"):
        pytest.skip("needs root and systemd-nspawn (make nspawn)")
    out.mkdir(parents=True, exist_ok=True)
    sim_hosts = [sim_fleet.SimHost(host, identity=identity, vllm_port=base_port + index, profile=profile)
                 for index, (host, (identity, profile)) in enumerate(sorted(hosts.items()))]
    fleet = sim_fleet.SimFleet(sim_hosts, name=name)
    fleet.up()
    try:
        inventory = fleet.write_inventory(out / "inventory.json", group_vars=GROUP_VARS, host_vars=host_vars)
        run_playbook(TOP / "tests" / "integration" / "playbooks" / "roles" / "speculate.yml", inventory=inventory,
                     extra_vars={"test_run_speculative": False})
        report_dir = out / "reports"
        shutil.rmtree(report_dir, ignore_errors=True)
        yield Cohorts(fleet, inventory, report_dir)
    finally:
        fleet.down()


@pytest.fixture(scope="module")
def cohorts():
    shutil.rmtree(FACT_CACHE, ignore_errors=True)
    yield from cohort_fleet(HOSTS, "cohorts", OUT, BASE_PORT, host_vars=SITES)


def test_one_canary_per_cohort_gates_its_twins_kept_is_confirmed_reverted_is_followed(cohorts):
    pids = {name: cohorts.fleet.main_pid(name) for name in HOSTS}
    proc, started = cohorts.rollout()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    out = proc.stdout
    facts = {name: cohorts.fact(name) for name in HOSTS}
    thor_key, orin_key = facts["thor-1"]["cohort"]["key"], facts["orin-1"]["cohort"]["key"]
    assert thor_key != orin_key
    assert all(facts[n]["cohort"]["key"] == thor_key for n in ("thor-2", "thor-3"))
    assert facts["orin-2"]["cohort"]["key"] == orin_key
    assert "thor-1: CANARY of cohort " + thor_key in out and "orin-1: CANARY of cohort " + orin_key in out

    # The canaries ran the full protocol: the Thor one kept (and tuned K), the Orin one reverted.
    canary = facts["thor-1"]
    assert canary["status"] == "enabled" and canary["cohort"]["role"] == "verified", canary["reasons"]
    assert canary["baseline"] and any(run["concurrency"] == 8 for run in canary["candidate"])
    assert facts["orin-1"]["status"] == "reverted" and facts["orin-1"]["cohort"]["role"] == "verified"

    # thor-2 confirmed: the canary's configuration (K as tuned), one restart, no baseline benchmark, a short run
    # at concurrency 1 only, the confirmation's figures recorded.
    twin = facts["thor-2"]
    assert twin["status"] == "enabled" and twin["verdict"] == "confirmed", twin["reasons"]
    assert twin["cohort"]["role"] == "confirmed" and twin["cohort"]["canary"] == "thor-1"
    assert twin["speculative_config"] == canary["speculative_config"]
    assert twin["baseline"] == [] and [run["concurrency"] for run in twin["candidate"]] == [1]
    confirmation = twin["cohort"]["confirmation"]
    assert confirmation["confirmed"] and confirmation["conclusive"], confirmation
    assert confirmation["figures"]["host_tpot_ms"] <= confirmation["figures"]["threshold_tpot_ms"]
    assert cohorts.starts_since("thor-2", started) == 1
    assert "num_speculative_tokens" in cohorts.fleet["thor-2"].nsenter(
        ["systemctl", "show", "-p", "ExecStart", "--value", "vllm.service"]).stdout

    # thor-3 (planted: its speculation loses): not kept on the cohort's word; verified on its own and reverted.
    planted = facts["thor-3"]
    assert planted["status"] == "reverted" and planted["cohort"]["role"] == "verified", planted["reasons"]
    assert planted["cohort"]["confirmation"]["confirmed"] is False
    assert any(reason.startswith("The confirmation failed") for reason in planted["reasons"]), planted["reasons"]
    assert planted["baseline"], "a host that fails confirmation measures its own baseline"
    assert "speculative-config" not in cohorts.fleet["thor-3"].nsenter(
        ["systemctl", "show", "-p", "ExecStart", "--value", "vllm.service"]).stdout

    # orin-2 follows its canary's revert: recorded with the canary's name and evidence, never restarted.
    follower = facts["orin-2"]
    assert follower["status"] == "reverted" and follower["cohort"]["role"] == "followed", follower["reasons"]
    assert follower["cohort"]["canary"] == "orin-1"
    assert any("its canary orin-1 was reverted" in reason for reason in follower["reasons"]), follower["reasons"]
    assert follower["verdict"] == facts["orin-1"]["verdict"]
    assert cohorts.fleet.main_pid("orin-2") == pids["orin-2"] and cohorts.starts_since("orin-2", started) == 0

    # The disruption budget: thor-2 and thor-3 (site-a) would share the other hosts' first batch of 3 (orin-2, thor-2,
    # thor-3); thor-3 waits for the next one, so its first restart comes after thor-2's whole batch.
    assert "Batches: canaries 2, other hosts 2+1; held for the disruption budget: thor-3" in out, out[-4000:]
    thor2, thor3 = cohorts.start_times("thor-2", started), cohorts.start_times("thor-3", started)
    thor2_done = datetime.datetime.fromisoformat(facts["thor-2"]["finished"].replace("Z", "+00:00")).timestamp()
    assert len(thor2) == 1 and thor3 and thor2[0] < thor2_done < min(thor3), (thor2, thor2_done, thor3)

    # The cohort verdicts are saved on the controller (the next run's gate) and the report names every host.
    saved = json.loads((cohorts.report_dir / "cohort-verdicts.json").read_text())
    assert {key: value["status"] for key, value in saved.items()} == {thor_key: "enabled", orin_key: "reverted"}
    assert saved[thor_key]["canary"] == "thor-1" and saved[thor_key]["evidence"]["acceptance_rate"] > 0.5
    report = json.loads((cohorts.report_dir / "fleet-report.json").read_text())
    assert {row["host"]: row["status"] for row in report["hosts"]} == {name: fact["status"] for name, fact in facts.items()}
    lines = {entry["key"]: (entry["canary"], entry["by_status"]) for entry in report["counts"]["cohorts"]}
    assert lines == {thor_key: ("thor-1", {"enabled": 2, "reverted": 1}), orin_key: ("orin-1", {"reverted": 2})}
    assert f"Cohort {thor_key} (" in out and "canary thor-1 (enabled); enabled 2, reverted 1" in out
    for name in HOSTS:
        assert recap(out, name)["failed"] == 0, out[-3000:]


def test_a_second_run_restarts_nothing_and_measures_nothing(cohorts):
    before = {name: cohorts.fact(name) for name in HOSTS}
    proc, started = cohorts.rollout()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for name in HOSTS:
        assert cohorts.starts_since(name, started) == 0, name
        assert cohorts.fact(name) == before[name], f"{name}: the record was rewritten"
        # changed=0 everywhere, the controller-side report and saved verdicts included (credited to a host)
        assert recap(proc.stdout, name)["changed"] == 0, proc.stdout[-4000:]
    assert "CANARY" not in proc.stdout, "hosts in sync need no canary"


def _events(artifacts):
    events = [json.loads(path.read_text()) for path in sorted((artifacts / "job_events").glob("*.json"))]
    return sorted(events, key=lambda event: event["counter"])


def test_a_failed_canary_stops_its_cohort_and_the_awx_job_publishes_it(cohorts, tmp_path, monkeypatch):
    """New verdict settings for the Orin hosts (a new cohort), and the Orin canary's disk full where its record goes
    (a 64k tmpfs over /etc/ansible/facts.d): the canary fails before any change, orin-2 is not attempted (its
    cohort stopped), the Thor hosts stay in sync: with the default failure budget (20 %), one failed canary of
    five hosts stops its cohort, not the run. Run as AWX runs a job (ansible-runner): the failed cohort's
    verdict is in the job's artifacts for the next job of a workflow, not in the controller's saved verdicts."""
    fleet = cohorts.fleet
    saved_before = json.loads((cohorts.report_dir / "cohort-verdicts.json").read_text())
    orin_vars = {"jetson_spec_min_throughput_gain": 0.31}
    inventory = fleet.write_inventory(tmp_path / "inventory.json", group_vars=GROUP_VARS,
                                      host_vars={"orin-1": orin_vars, "orin-2": orin_vars})
    pids = {name: fleet.main_pid(name) for name in HOSTS}
    started = time.time() - 1
    fleet.fill_disk("orin-1", "/etc/ansible/facts.d")
    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    env = _ansible_env()
    monkeypatch.setenv("PATH", env["PATH"])
    try:
        result = ansible_runner.run(
            private_data_dir=str(private), playbook="jetson_llm.vllm.enable_speculation", inventory=str(inventory),
            ident="stop", quiet=True,
            extravars={"jetson_spec_report_dir": str(cohorts.report_dir), "jetson_spec_canary_size": 2,
                       "jetson_spec_batch_size": 3},
            envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "PATH", "ANSIBLE_NOCOLOR")})
    finally:
        fleet.unfill("orin-1", "/etc/ansible/facts.d")
    artifacts = private / "artifacts" / "stop"
    stdout = (artifacts / "stdout").read_text(errors="replace")
    (OUT / "runner-stop.log").write_text(stdout)
    assert result.status == "failed", stdout[-4000:]
    status = cohorts.status()
    assert status["orin-1"][0] == "failed" and "No space left on device" in status["orin-1"][1], status["orin-1"]
    assert status["orin-2"][0] == "not_attempted", status["orin-2"]
    assert "its canary orin-1 failed" in status["orin-2"][1] and "this cohort stops here" in status["orin-2"][1]
    for name in HOSTS:
        assert fleet.main_pid(name) == pids[name] and cohorts.starts_since(name, started) == 0, name
    assert {status[name][0] for name in ("thor-1", "thor-2")} == {"enabled"}
    assert "orin-2: CANARY" not in stdout and "orin-1: CANARY of cohort" in stdout
    stats = [event for event in _events(artifacts) if event["event"] == "playbook_on_stats"][-1]["event_data"]
    published = stats["artifact_data"]["jetson_spec_cohort_verdicts"]
    assert [(value["canary"], value["status"]) for value in published.values()] == [("orin-1", "failed")], published
    assert stats["artifact_data"]["jetson_spec_results"]["orin-2"]["status"] == "not_attempted"
    # a failure gates this run only: the controller keeps the verdicts it had
    assert json.loads((cohorts.report_dir / "cohort-verdicts.json").read_text()) == saved_before


def test_a_cohort_is_a_group_before_the_next_run_so_one_command_disables_it(cohorts):
    """The rollouts above kept each host's cohort key in the fact cache: inventories/cohorts.yml (constructed) groups
    the hosts by cohort before a run starts, and disable_speculation with --limit cohort_<key> removes speculation
    from that cohort only, with no benchmark and no other host touched."""
    facts = {name: cohorts.fact(name) for name in HOSTS}
    thor_key, orin_key = facts["thor-1"]["cohort"]["key"], facts["orin-1"]["cohort"]["key"]
    inventory = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(cohorts.inventory), "-i", str(COHORT_INVENTORY),
                                "--list"], cwd=TOP, env=FACT_CACHE_ENV, text=True, capture_output=True, check=True)
    groups = json.loads(inventory.stdout)
    assert sorted(groups[f"cohort_{thor_key}"]["hosts"]) == ["thor-1", "thor-2", "thor-3"], groups.keys()
    assert sorted(groups[f"cohort_{orin_key}"]["hosts"]) == ["orin-1", "orin-2"], groups.keys()

    pids = {name: cohorts.fleet.main_pid(name) for name in HOSTS}
    started = time.time() - 1
    proc = run_playbook("jetson_llm.vllm.disable_speculation", inventory=cohorts.inventory, check=False,
                        extra_vars={"jetson_spec_report_dir": str(cohorts.report_dir)}, env=FACT_CACHE_ENV,
                        args=["-i", str(COHORT_INVENTORY), "--limit", f"cohort_{thor_key}"])
    (OUT / "disable-cohort.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for name in ("thor-1", "thor-2"):
        assert cohorts.fact(name)["status"] == "disabled", cohorts.fact(name)["reasons"]
        assert cohorts.starts_since(name, started) == 1, name
    for name in ("thor-1", "thor-2", "thor-3"):
        assert "speculative-config" not in cohorts.fleet[name].nsenter(
            ["systemctl", "show", "-p", "ExecStart", "--value", "vllm.service"]).stdout, name
    assert cohorts.fact("thor-3") == facts["thor-3"], "a host that does not speculate was recorded again"
    for name in ("orin-1", "orin-2"):
        assert not re.search(rf"^{name}\s*:", proc.stdout, re.M), f"{name} is outside the cohort but was in the run"
        assert cohorts.fleet.main_pid(name) == pids[name] and cohorts.fact(name) == facts[name], name
    assert "Benchmark the running service" not in proc.stdout, "disabling a cohort ran a benchmark"
