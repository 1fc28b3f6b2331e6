"""Scale run of the cohort rollout on a SIMULATED Jetson fleet (``make scale``; not part of ``make test``).

    python tests/nspawn/scale.py --hosts 100 [--keep] [--out reports/scale]

N systemd-nspawn hosts from one shared root (tests/nspawn/sim_fleet.py), each serving the Jetson batch
SIMULATOR (tests/nspawn/jetson_batch_simulator.py, not vLLM) as its ``vllm.service``, about 20x a Jetson's
speed (test_cohorts.PAYS: 2 ms per step where the simulator's Jetson default is 20 ms and more; a small
workload, test_cohorts.GROUP_VARS). Everything else is real: ansible-playbook, the collection's roles, each
host's systemd, the HTTP benchmarks, the verdicts.

Cohorts, with their known true effects (the simulator profile is the hardware's truth):

  pays     Thor T5000, speculation pays at c=1 and c=8 (PAYS)          canary kept, twins confirmed: enabled
  c8loses  AGX Orin 64GB, pays at c=1, loses at c=8 (C8_LOSES)         the planned K (3 on an Orin) is never kept:
           the role tries speculating up to 4 requests at a time (num_speculative_tokens_per_batch_size) and
           keeps it when both rules pass (expected; c8 tolerance 5 % as test_roles' simulated host), else reverts:
           both are defined outcomes, the summary says which one ran; the twins then follow the canary
  nano     Orin Nano 8GB Super: refused by the rules (no benchmark)      refused
  nx       Orin NX 16GB: refused by the rules                            refused
  single   AGX Orin 32GB, a cohort of one host (PAYS): the full protocol enabled

Planted faults (all in the paying cohort, in the first batch of the play of the other hosts):

  a  pays-loses      its own speculation loses (LOSES): the confirmation must catch it (verified on its own, reverted)
  b  pays-crash      its vLLM is SIGKILLed during its confirmation (or candidate) benchmark: reverted or failed,
                     the previous service running, its record equal to what runs
  c  pays-unreach-*  made unreachable when the play of the other hosts starts, restored after the run: reported
                     unreachable, the rest go on, the repeat resumes them
  d  pays-diskfull   a 64k tmpfs full over /etc/ansible/facts.d during the first run: failed, service unchanged
  e  the controller  SIGKILLed (the whole process tree) when the play of the other hosts reaches its second batch;
                     the run is repeated and must converge

Three runs: the killed one, the repeat (converges: every host has a final outcome), a third one (a no-op: changed=0
for every host, no vllm.service start). After each, every host's record must match what runs (status enabled iff
the running ExecStart has --speculative-config). With at most 20 hosts, a fourth run verifies the same fleet host by
host (jetson_spec_force_verify, every baseline measured again) for ``device_s_per_host_protocol``.

Writes ``<out>/fleet-report.json`` (the playbook's JSON twin of the fleet report, jetson_spec_report_dir=<out>),
``<out>/summary.json`` and the runs' logs (``<out>/run-*.log``); tears the fleet down unless ``--keep`` (KEEP=1).
Exits 1 when a fault's ``ok`` is false, a record does not match what runs, the repeat does not converge, the third
run is not a no-op or a host's outcome is not the expected one.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))
import sim_fleet  # noqa: E402  pylint: disable=wrong-import-position
from conftest import (  # noqa: E402  pylint: disable=wrong-import-position
    BIN, TOP, _ansible_env, kill_tree, process_tree)
from test_cohorts import FACT, GROUP_VARS, LOSES, PAYS, Cohorts  # noqa: E402  pylint: disable=wrong-import-position

#: Pays at c=1 (x1.5 with K = 3), loses at c=8 (-16 %): each verified token costs 0.6 ms, so a batch of 8 verifying
#: K + 1 tokens each is compute-bound (the simulator's step model, jetson_batch_simulator.step_ms()).
C8_LOSES = dict(PAYS, target_token_ms=0.6, draft_weight_ms=0.1, draft_token_ms=0.1)
SIMULATOR_SPEEDUP = 20
#: cohort -> (Jetson identity fixture, simulator profile, host variables, share of the fleet)
COHORTS = {
    "pays": ("thor-t5000", PAYS, {}, 0.45),
    "c8loses": ("orin-agx-64gb", C8_LOSES, {"jetson_spec_c8_tolerance": 0.05}, 0.25),
    "nano": ("orin-nano-8gb-super", PAYS, {}, 0.15),
    "nx": ("orin-nx-16gb", PAYS, {}, None),  # the rest
    "single": ("orin-agx-32gb", PAYS, {}, 1),
}
REFUSED = ("nano", "nx")
LOSING, CRASH, DISKFULL = "pays-loses", "pays-crash", "pays-diskfull"
UNREACHABLE = ("pays-unreach-1", "pays-unreach-2")
FAULT_HOSTS = (LOSING, CRASH, *UNREACHABLE, DISKFULL)
FACTS_DIR = str(Path(FACT).parent)
BASE_PORT = 18000
OTHERS_PLAY = "PLAY [The other hosts"
CANARY_PLAY = "PLAY [The canaries"
BENCH_TASK = re.compile(r": Benchmark the (kept configuration briefly|running service \(candidate)")
#: Tasks whose time is device time: every benchmark (baseline, candidate, confirmation, tuning, batch-size-aware,
#: the restored service's check) and every restart with its wait until the service serves.
DEVICE_TASK = re.compile(r": (Benchmark the (running service|kept configuration briefly|restored service briefly)"
                         r"|Restart the systemd service|Wait until the service serves the model)")
RESULT = re.compile(r"^(ok|changed|failed|fatal|skipping|unreachable): \[([^\]]+)\]")
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def plan_hosts(count):
    """[(name, cohort)] for ``count`` hosts: the canaries first, then the fault hosts (the first batch of the other
    hosts' play), then the rest interleaved across cohorts (so every batch mixes them)."""
    sizes = {cohort: max(2, round(COHORTS[cohort][3] * count)) for cohort in ("pays", "c8loses", "nano")}
    sizes["pays"] = max(sizes["pays"], 2 + len(FAULT_HOSTS))
    sizes["single"] = 1
    sizes["nx"] = count - sum(sizes.values())
    if sizes["nx"] < 1:
        raise SystemExit(f"--hosts {count} is too small for the cohorts and faults (20 at least)")
    sizes["pays"] -= len(FAULT_HOSTS)  # the fault hosts are paying hosts with their own names
    names = {cohort: [f"{cohort}-{i:03d}" for i in range(size)] for cohort, size in sizes.items()}
    plan = [(names[cohort].pop(0), cohort) for cohort in ("pays", "c8loses", "single")]
    plan += [(name, "pays") for name in FAULT_HOSTS]
    while any(names.values()):
        for cohort, left in names.items():
            if left:
                plan.append((left.pop(0), cohort))
    assert len(plan) == count, (len(plan), count)
    return plan


class Run:
    """One ansible-playbook run, read line by line: the output to a log, per-host device time (DEVICE_TASK, from
    the task's banner to that host's result), the controller's peak RSS (sampled), and hooks on lines."""

    def __init__(self, cmd, env, log_path):
        self.cmd, self.env, self.log_path = cmd, env, log_path
        self.device = {}
        self.peak_rss_kib = 0
        self.lines = []
        self.batch = set()          # hosts seen since the last PLAY banner (the current batch)
        self.plays = []             # PLAY banners so far
        self.task = ""
        self.killed = False
        self.proc = None
        self._task_started = 0.0
        self._finished = {}

    def _sample_rss(self):
        """Sum of VmRSS over the controller's process tree in this PID namespace (host-side modules excluded)."""
        own_ns = os.readlink("/proc/self/ns/pid")
        while self.proc.poll() is None:
            total = 0
            for pid in process_tree(self.proc.pid):
                with contextlib.suppress(OSError, ValueError):
                    if os.readlink(f"/proc/{pid}/ns/pid") != own_ns:
                        continue
                    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
                        total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
            self.peak_rss_kib = max(self.peak_rss_kib, total)
            time.sleep(0.5)

    def _close_task(self):
        if DEVICE_TASK.search(self.task):
            for host, finished in self._finished.items():
                self.device[host] = self.device.get(host, 0.0) + finished - self._task_started
        self._finished = {}

    def run(self, on_line=None):
        """Run to the end (or until ``on_line(self, line)`` kills it); returns (rc, wall s, children's CPU s)."""
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        with open(self.log_path, "w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=TOP, env=self.env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
            sampler = threading.Thread(target=self._sample_rss, daemon=True)
            sampler.start()
            try:
                for line in self.proc.stdout:
                    log.write(line)
                    line = line.rstrip("\n")
                    self.lines.append(line)
                    now = time.monotonic()
                    if line.startswith("PLAY ["):
                        self._close_task()
                        self.task, self.batch = "", set()
                        self.plays.append(line)
                    elif line.startswith("TASK ["):
                        self._close_task()
                        self.task, self._task_started = line, now
                    else:
                        match = RESULT.match(line)
                        if match:
                            host = match.group(2).split(" -> ")[0]
                            self.batch.add(host)
                            if match.group(1) != "skipping":
                                self._finished[host] = now
                    if on_line is not None and not self.killed:
                        on_line(self, line)
                self._close_task()
                self.proc.wait(timeout=120)
            finally:
                if self.proc.poll() is None:  # this script failed (or was interrupted) mid-run
                    kill_tree(self.proc.pid)
                    self.proc.wait(timeout=60)
            sampler.join(timeout=5)
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        return self.proc.returncode, time.monotonic() - started, cpu

    def kill(self):
        """SIGKILL ansible-playbook and everything it started (conftest.kill_tree), as a killed AWX job dies."""
        self.killed = True
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=60)

    @property
    def output(self):
        return "\n".join(self.lines)


def recap_counts(output):
    """{host: {ok, changed, unreachable, failed, skipped}} of the PLAY RECAP."""
    keys = ("ok", "changed", "unreachable", "failed", "skipped")
    return {m.group(1): dict(zip(keys, map(int, m.groups()[1:]))) for m in RECAP.finditer(output)}


class ScaleRun:
    """The fleet, its inventory and the runs; collects the figures and the checks of summary.json."""

    def __init__(self, hosts, out, keep):
        self.out, self.keep = Path(out), keep
        self.plan = plan_hosts(hosts)
        self.cohort_of = dict(self.plan)
        self.batch_size = 8 if hosts <= 20 else 25
        self.forks = max(10, self.batch_size)
        sim_hosts = []
        for index, (name, cohort) in enumerate(self.plan):
            identity, profile, _vars, _share = COHORTS[cohort]
            sim_hosts.append(sim_fleet.SimHost(name, identity=identity, vllm_port=BASE_PORT + index,
                                               profile=LOSES if name == LOSING else profile))
        self.fleet = sim_fleet.SimFleet(sim_hosts, name=f"scale{hosts}", parallel=10, boot_timeout=300)
        self.cohorts = Cohorts(self.fleet, self.out / "inventory.json", self.out)
        self.env = _ansible_env({"ANSIBLE_FORKS": str(self.forks), "PYTHONUNBUFFERED": "1",
                                 "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"})
        self.summary = {"hosts": hosts, "simulator": "jetson_batch_simulator (a SIMULATOR, not vLLM)",
                        "simulator_speedup": SIMULATOR_SPEEDUP, "batch_size": self.batch_size, "forks": self.forks,
                        "runs": {}, "faults": {}, "checks": {}}
        self.device = {}
        self.cpu = 0.0
        self.peak_rss_kib = 0

    # --- set-up -------------------------------------------------------------------------------------------------
    def host_vars(self):
        """Per-host variables: the cohort's, and jetson_spec_canary on each cohort's chosen canary."""
        result = {}
        for name, cohort in self.plan:
            hvars = dict(COHORTS[cohort][2])
            if name.endswith("-000") and cohort not in REFUSED:
                hvars["jetson_spec_canary"] = True
            result[name] = hvars
        return result

    def up(self):
        """Boot the fleet, write the inventory, deploy the baseline service (the serve role) on every host."""
        started = time.monotonic()
        self.fleet.up()
        self.summary["boot_s"] = round(time.monotonic() - started, 1)
        self.out.mkdir(parents=True, exist_ok=True)
        for stale in ("cohort-verdicts.json", "fleet-report.html", "summary.json", "fleet-report*.json", "run-*.log"):
            for path in self.out.glob(stale):
                path.unlink()
        shutil.rmtree(self.out / "per-host-protocol", ignore_errors=True)
        self.fleet.write_inventory(self.cohorts.inventory, group_vars=GROUP_VARS, host_vars=self.host_vars())
        started = time.monotonic()
        rc, _wall, _cpu = Run([str(BIN / "ansible-playbook"), "-i", str(self.cohorts.inventory),
                               str(TOP / "tests" / "integration" / "playbooks" / "roles" / "speculate.yml"),
                               "-e", json.dumps({"test_run_speculative": False})],
                              self.env, self.out / "run-0-serve.log").run()
        if rc != 0:
            raise sim_fleet.FleetError(f"the serve role failed ({rc}): see {self.out / 'run-0-serve.log'}")
        self.summary["serve_s"] = round(time.monotonic() - started, 1)

    # --- runs ---------------------------------------------------------------------------------------------------
    def rollout(self, label, on_line=None, report_dir=None, extra=None):
        """enable_speculation.yml on the fleet; returns (Run, rc, started epoch)."""
        extra_vars = {"jetson_spec_report_dir": str(report_dir or self.out), "jetson_spec_canary_size": 3,
                      "jetson_spec_batch_size": self.batch_size, "jetson_spec_max_fail_percentage": 60,
                      **(extra or {})}
        cmd = [str(BIN / "ansible-playbook"), "-i", str(self.cohorts.inventory), "jetson_llm.vllm.enable_speculation",
               "-e", json.dumps(extra_vars)]
        run = Run(cmd, self.env, self.out / f"run-{label}.log")
        started_epoch = time.time() - 1
        rc, wall, cpu = run.run(on_line)
        self.summary["runs"][label] = {"rc": rc, "wall_s": round(wall, 1), "controller_cpu_s": round(cpu, 1),
                                       "peak_rss_mb": round(run.peak_rss_kib / 1024, 1), "killed": run.killed,
                                       "device_s": round(sum(run.device.values()), 1)}
        print(f"scale: run {label}: rc={rc} {wall:.0f} s wall, {cpu:.0f} s controller CPU", flush=True)
        return run, rc, started_epoch

    def first_run(self):
        """Run 1: the faults c (unreachable), b (crash) and d (disk full) planted, the controller killed (e)."""
        pids = {name: self.fleet.main_pid(name) for name in self.fleet.hosts}
        self.fleet.fill_disk(DISKFULL, FACTS_DIR)
        crashed = {}

        def steps():
            """Steps the crash host's simulator ran since it started (None: it does not answer)."""
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.fleet[CRASH].vllm_port}/_sim/steps",  # noqa: S310
                                            timeout=2) as resp:
                    return sum(sum(ks.values()) for ks in json.loads(resp.read())["steps"].values())
            return None

        def crash_when_serving():
            """SIGKILL the crash host's vLLM once the benchmark's requests run (its step count grows)."""
            before = steps() or 0
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (steps() or 0) <= before:
                time.sleep(0.05)
            crashed["pid"] = self.fleet.crash_service(CRASH)
            crashed["at"] = time.time()

        def on_line(run, line):
            if line.startswith(OTHERS_PLAY):
                others = [banner for banner in run.plays if banner.startswith(OTHERS_PLAY)]
                if len(others) == 1:
                    for name in UNREACHABLE:
                        self.fleet.unreachable(name)
                elif len(others) == 2:
                    run.kill()
            elif line.startswith("TASK [") and BENCH_TASK.search(line) and "thread" not in crashed:
                # the crash host is in the batch running this benchmark (its result lines came since the banner)
                if CRASH in run.batch and any(b.startswith(OTHERS_PLAY) for b in run.plays):
                    crashed["thread"] = threading.Thread(target=crash_when_serving, daemon=True)
                    crashed["thread"].start()

        try:
            run, rc, started = self.rollout("1-killed", on_line)
        finally:
            for name in UNREACHABLE:
                self.fleet.reachable(name)
            if "thread" in crashed:
                crashed["thread"].join(timeout=90)
            self.fleet.unfill(DISKFULL, FACTS_DIR)
        shutil.copyfile(self.out / "fleet-report.json", self.out / "fleet-report-run1.json")
        return run, rc, started, pids, crashed

    # --- checks -------------------------------------------------------------------------------------------------
    def execstart(self, name):
        return self.fleet[name].nsenter(["systemctl", "show", "-p", "ExecStart", "--value", "vllm.service"]).stdout

    def records_match(self, label):
        """{host: problem} of the hosts whose record does not match what runs (status enabled iff the running
        ExecStart has --speculative-config); also stored in the summary's checks."""
        problems = {}
        for name in self.fleet.hosts:
            fact = self.cohorts.fact(name)
            enabled = bool(fact) and fact.get("status") == "enabled"
            speculating = "--speculative-config" in self.execstart(name)
            if enabled != speculating:
                problems[name] = (f"record {fact.get('status') if fact else None}, ExecStart "
                                  f"{'with' if speculating else 'without'} --speculative-config")
        self.summary["checks"][f"records_match_after_{label}"] = {"ok": not problems, "mismatches": problems}
        return problems

    def fault(self, key, expected, observed, ok):
        self.summary["faults"][key] = {"expected": expected, "observed": observed, "ok": bool(ok)}
        print(f"scale: fault {key}: {'ok' if ok else 'NOT OK'}: {observed}", flush=True)

    def check_first_run(self, run, rc, started, pids, crashed):
        """Faults a, b, c, d as the first run left them (its report was written after the first batch)."""
        report = {row["host"]: row for row in json.loads((self.out / "fleet-report-run1.json").read_text())["hosts"]}
        fact = self.cohorts.fact(LOSING) or {}
        reasons = fact.get("reasons") or []
        self.fault("a_confirmation_catches_a_losing_twin",
                   "reverted, cohort.role verified, a reason starting 'The confirmation failed'",
                   {"status": fact.get("status"), "role": (fact.get("cohort") or {}).get("role"),
                    "reasons": [r[:160] for r in reasons[:3]]},
                   fact.get("status") == "reverted" and (fact.get("cohort") or {}).get("role") == "verified"
                   and any(r.startswith("The confirmation failed") for r in reasons))
        crash_fact = self.cohorts.fact(CRASH) or {}
        active = self.fleet[CRASH].nsenter(["systemctl", "is-active", "vllm.service"], check=False).stdout.strip()
        status = report.get(CRASH, {}).get("status")
        speculating = "--speculative-config" in self.execstart(CRASH)
        record_ok = (crash_fact.get("status") == "enabled") == speculating
        self.fault("b_crash_during_benchmark",
                   "reverted or failed, the previous service running (no --speculative-config), record = reality",
                   {"crashed_pid": crashed.get("pid"), "report_status": status,
                    "record_status": crash_fact.get("status"), "service": active, "speculating": speculating,
                    "reason": (report.get(CRASH, {}).get("reason") or "")[:200]},
                   "pid" in crashed and status in ("reverted", "failed") and active == "active"
                   and not speculating and record_ok)
        self.crash_status_run1 = status  # pylint: disable=attribute-defined-outside-init
        self.summary["faults_run1_unreachable"] = {name: report.get(name, {}).get("status") for name in UNREACHABLE}
        disk = report.get(DISKFULL, {})
        unchanged = (self.fleet.main_pid(DISKFULL) == pids[DISKFULL]
                     and self.cohorts.starts_since(DISKFULL, started) == 0
                     and "--speculative-config" not in self.execstart(DISKFULL))
        self.fault("d_disk_full_where_the_record_is_written", "failed, its service unchanged (same PID, no start)",
                   {"status": disk.get("status"), "reason": (disk.get("reason") or "")[:200],
                    "service_unchanged": unchanged},
                   disk.get("status") == "failed" and unchanged)
        self.summary["checks"]["run1_killed"] = {"ok": run.killed, "rc": rc}

    def expected_outcome(self, name, c8_canary_status):
        """The status a host must end with (after the repeat), from its cohort and its planted fault."""
        cohort = self.cohort_of[name]
        if name == LOSING:
            return "reverted"
        if name == CRASH:  # failed in run 1: resumed (and confirmed) by the repeat
            return "enabled" if self.crash_status_run1 == "failed" else "reverted"
        if cohort in REFUSED:
            return "refused"
        if cohort == "c8loses":
            return c8_canary_status if c8_canary_status in ("enabled", "reverted") else "enabled or reverted"
        return "enabled"

    def check_outcomes(self, label):
        """Every host's record status against its expected outcome; the c8loses cohort's branch, stated."""
        facts = {name: self.cohorts.fact(name) or {} for name in self.fleet.hosts}
        canary = facts["c8loses-000"]
        spec = canary.get("speculative_config") or {}
        if canary.get("status") == "enabled":
            branch = ("kept batch-size-aware: num_speculative_tokens_per_batch_size "
                      f"{spec.get('num_speculative_tokens_per_batch_size')}")
            branch_ok = bool(spec.get("num_speculative_tokens_per_batch_size"))
        else:
            branch, branch_ok = f"{canary.get('status')} (the planned configuration not kept)", \
                canary.get("status") == "reverted"
        wrong = {}
        for name in self.fleet.hosts:
            expected = self.expected_outcome(name, canary.get("status"))
            if facts[name].get("status") != expected:
                wrong[name] = {"expected": expected, "observed": facts[name].get("status")}
        counts = {}
        for name, fact in facts.items():
            cohort_counts = counts.setdefault(self.cohort_of[name], {})
            cohort_counts[fact.get("status")] = cohort_counts.get(fact.get("status"), 0) + 1
        keys = {(fact.get("cohort") or {}).get("key") for fact in facts.values()}
        self.summary["cohort_keys"] = {"count": len(keys - {None}), "hosts_without_a_cohort (refused by the rules)":
                                       sum(1 for fact in facts.values() if not (fact.get("cohort") or {}).get("key"))}
        self.summary["checks"][f"outcomes_after_{label}"] = {
            "ok": not wrong and branch_ok, "wrong": wrong, "c8loses_branch": branch, "by_cohort": counts}
        return wrong

    # --- the whole run ------------------------------------------------------------------------------------------
    def add(self, run, label):
        for host, seconds in run.device.items():
            self.device[host] = self.device.get(host, 0.0) + seconds
        self.cpu += self.summary["runs"][label]["controller_cpu_s"]
        self.peak_rss_kib = max(self.peak_rss_kib, run.peak_rss_kib)

    def main(self):
        wall0 = time.monotonic()
        self.up()
        run, rc, started, pids, crashed = self.first_run()
        self.add(run, "1-killed")
        canary_device = {c: run.device.get(f"{c}-000", 0.0) for c in ("pays", "c8loses", "single")}
        self.check_first_run(run, rc, started, pids, crashed)
        self.records_match("run1")

        run, rc, _started = self.rollout("2-repeat")
        self.add(run, "2-repeat")
        shutil.copyfile(self.out / "fleet-report.json", self.out / "fleet-report-run2.json")
        self.records_match("run2")
        status = self.cohorts.status()
        unfinished = {n: s for n, (s, _r) in status.items() if s not in ("enabled", "reverted", "refused")}
        self.summary["checks"]["repeat_converges"] = {"ok": rc == 0 and not unfinished, "rc": rc,
                                                      "unfinished": unfinished}
        resumed = {name: status.get(name, ("?", ""))[0] for name in UNREACHABLE}
        run1 = self.summary["faults_run1_unreachable"]
        self.fault("c_unreachable_mid_batch", "unreachable in run 1 (the rest went on), resumed by the repeat: enabled",
                   {"run1": run1, "repeat": resumed},
                   set(run1.values()) == {"unreachable"} and set(resumed.values()) == {"enabled"})
        self.fault("e_controller_killed", "the killed run repeated converges (rc 0, every host a final outcome)",
                   {"killed": self.summary["checks"]["run1_killed"], "repeat_rc": rc, "unfinished": unfinished},
                   self.summary["checks"]["run1_killed"]["ok"] and rc == 0 and not unfinished)

        run, rc, started = self.rollout("3-noop")
        self.add(run, "3-noop")
        self.records_match("run3")
        counts = recap_counts(run.output)
        starts = {name: self.cohorts.starts_since(name, started) for name in self.fleet.hosts}
        changed = {host: c["changed"] for host, c in counts.items() if c["changed"]}
        started_again = {name: n for name, n in starts.items() if n}
        self.summary["checks"]["third_run_is_a_noop"] = {
            "ok": rc == 0 and not changed and not started_again and set(self.fleet.hosts) <= set(counts),
            "rc": rc, "changed": changed, "vllm_starts": started_again}
        tasks = [counts[name]["ok"] + counts[name]["skipped"] for name in self.fleet.hosts if name in counts]
        self.summary["noop_rerun_s"] = self.summary["runs"]["3-noop"]["wall_s"]
        self.summary["noop_tasks_per_host"] = {"mean": round(sum(tasks) / max(1, len(tasks)), 1),
                                               "max": max(tasks, default=None)}
        self.check_outcomes("run3")
        shutil.copyfile(self.out / "fleet-report.json", self.out / "fleet-report-main.json")
        self.per_host_protocol(canary_device)
        self.summary["wall_s"] = round(time.monotonic() - wall0, 1)

    def per_host_protocol(self, canary_device):
        """device_s_per_host_protocol: measured (at most 20 hosts: a fourth run with jetson_spec_force_verify and
        every baseline measured again, its own report directory), else estimated from each cohort's canary."""
        verifying = {}
        for name, cohort in self.plan:
            if cohort not in REFUSED:
                verifying[cohort] = verifying.get(cohort, 0) + 1
        estimate = sum(canary_device[c] * n for c, n in verifying.items())
        self.summary["device_s_per_host_protocol_estimate"] = {
            "value": round(estimate, 1), "canary_device_s": {c: round(s, 1) for c, s in canary_device.items()},
            "definition": "each cohort's canary's device time in run 1 (the full protocol) x its cohort's hosts that "
                          "verify (refused cohorts: 0)"}
        if self.summary["hosts"] > 20:
            self.summary["device_s_per_host_protocol"] = round(estimate, 1)
            self.summary["device_s_per_host_protocol_method"] = "estimated from each cohort's canary (hosts > 20)"
            return
        report_dir = self.out / "per-host-protocol"
        shutil.rmtree(report_dir, ignore_errors=True)
        run, rc, _started = self.rollout("4-per-host-protocol", report_dir=report_dir,
                                         extra={"jetson_spec_force_verify": True, "jetson_spec_baseline_max_age": 1})
        self.records_match("run4_per_host_protocol")
        self.summary["device_s_per_host_protocol"] = round(sum(run.device.values()), 1)
        self.summary["device_s_per_host_protocol_method"] = (
            f"measured: a fourth run on the same fleet with jetson_spec_force_verify=true and "
            "jetson_spec_baseline_max_age=1 (every verifying host baselines, benchmarks and restarts on its own), "
            f"rc {rc}")

    def finish(self):
        """The figures, summary.json, the main run's fleet report as <out>/fleet-report.json; returns the exit code."""
        main_report = self.out / "fleet-report-main.json"
        if main_report.exists():
            shutil.copyfile(main_report, self.out / "fleet-report.json")
        self.summary.update({
            "cohorts": len(COHORTS),
            "cohort_hosts": {c: {"identity": COHORTS[c][0], "hosts": sum(1 for _n, k in self.plan if k == c)}
                             for c in COHORTS},
            "controller_cpu_s": round(self.cpu, 1),
            "peak_rss_mb": round(self.peak_rss_kib / 1024, 1),
            "children_max_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            "device_s": round(sum(self.device.values()), 1),
            "device_s_definition": (
                "sum over hosts and the three runs of the wall time of every benchmark task (baseline, candidate, "
                "confirmation, tuning, batch-size-aware, the restored service's check) and every restart-and-wait "
                "task, from the task's banner to that host's result (forks >= batch size: a batch's hosts start "
                "together); simulated time, x simulator_speedup on a Jetson"),
            "controller_cpu_s_definition": "RUSAGE_CHILDREN user+system deltas over runs 1-3 (a killed run's "
                                           "unreaped workers are not counted)",
            "peak_rss_mb_definition": "max over 0.5 s samples of the VmRSS sum of ansible-playbook's process tree "
                                      "in this PID namespace (runs 0-4)",
        })
        protocol = self.summary.get("device_s_per_host_protocol")
        if protocol:
            self.summary["device_s_ratio"] = round(self.summary["device_s"] / protocol, 3)
        failures = [key for key, value in self.summary["faults"].items() if not value["ok"]]
        failures += [key for key, value in self.summary["checks"].items() if not value.get("ok", True)]
        self.summary["ok"] = not failures
        self.summary["not_ok"] = failures
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        print(json.dumps(self.summary, indent=2))
        return 0 if not failures else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--keep", action="store_true", default=os.environ.get("KEEP", "0") == "1",
                        help="leave the fleet up (KEEP=1)")
    parser.add_argument("--out", default=str(TOP / "reports" / "scale"))
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (systemd-nspawn hosts)")
    scale = ScaleRun(args.hosts, args.out, args.keep)
    code = 1
    try:
        scale.main()
    except Exception as exc:  # pylint: disable=broad-except
        scale.summary["error"] = f"{type(exc).__name__}: {exc}"[:4000]
        print(f"scale: ERROR {scale.summary['error']}", file=sys.stderr, flush=True)
    finally:
        with contextlib.suppress(Exception):
            code = scale.finish()
        if "error" in scale.summary:
            code = 1
        if scale.keep:
            print(f"scale: the fleet stays up (KEEP): python tests/nspawn/sim_fleet.py sweep {scale.fleet.name}")
        else:
            scale.fleet.down()
    return code


if __name__ == "__main__":
    sys.exit(main())
