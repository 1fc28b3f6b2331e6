"""The role tests' shared hosts and helpers: the roles on real systemd hosts serving a real vLLM.

Used by test_roles.py (thor-accept, thor-batch: the outcomes that rest on measured speed; run alone, the
integration's timed part) and test_roles_lifecycle.py (orin-reject, thor-faults: refusals, rejects far from every
threshold, interruptions; no outcome rests on a close measurement, so they run beside the static suites). Each file
boots its own hosts (module fixture: fleet_of()), keeps its output under tests/output/roles/<group> and its stand-in
load balancer there, so the two can run at once.

Hosts are systemd-nspawn containers (tests/nspawn/fleet.py) with Jetson identities from the
fixture roots; each runs the serve role's unit with the test bed's vLLM (CPU build, tiny models)
under its own systemd, on its own port. The loop is driven through ansible-playbook exactly as an
operator runs it (tests/integration/playbooks/roles/speculate.yml), with a shortened workload:

  concurrency [1, 8], 8 prompts per level (+2 warm-up), 32 tokens in, 64 out (32 where the verdict
  is far from every threshold or only the lifecycle is asserted), temperature 0

(short prompts keep decoding, not prefill, the bulk of the latency, as the plan's TTFT rule requires)

(the production default is the specification's 50 + 10 prompts of 2048 in / 128 out; see the
role's defaults). The scenarios of each file run in file order on its hosts:

  thor-accept  (Thor T5000, target-deep)  accept with draft-deep-1layer; idempotent re-run; re-runs after
                                          a JetPack upgrade 7.0 -> 7.2.1 (L4T R38 -> R39) and an operator's
                                          edit, a refusal, disabled, enabled again            (test_roles.py)
  thor-batch   (Thor T5000, SIMULATED speed) the one host whose vLLM is a simulator
                                          (tests/nspawn/jetson_batch_simulator.py): speculation that wins
                                          at c=1 and loses at c=8, and its batch-size-aware configuration
                                          kept (the real CPU build cannot show that case; the real-vLLM
                                          test of the same branch stays, on thor-accept)     (test_roles.py)
  orin-reject  (AGX Orin 64GB, R36, target) reject with draft-heavy (acceptance ~1.0, but 8 times the
                                          target's depth: too expensive on any CPU);
                                          refusals (Orin Nano identity, concurrency 8); a power-mode change;
                                          a draft staged from a mirror (a corrupt copy refused first)
                                                                                   (test_roles_lifecycle.py)
  thor-faults  (Thor T5000, target)       draft-badvocab (rejected at start-up); controller SIGKILLed
                                          mid-change (the guard restores) and during the candidate
                                          benchmark (the next run resumes); an operator's drop-in and a
                                          reboot mid-change; last, out of memory at start-up (simulated),
                                          then draft-random (rejected)                     (test_roles_lifecycle.py)

Every host serves with --enforce-eager: the CPU build otherwise compiles the model with torch.compile
at every start (measured here: healthy after 57 s compiled, 25 s eager; decode 32 against 29 tok/s
without speculation, 77 against 72 with the accept pair's draft). The role tests restart vLLM about
20 times, so eager mode saves about 8 minutes and changes no outcome.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import COLLECTIONS, ROLES_PLAYBOOK, TOP, _ansible_env, play_roles, recap
sys.path.insert(0, str(TOP / "tests" / "nspawn"))
import fleet as nspawn  # noqa: E402  pylint: disable=wrong-import-position

_ansible_env()  # links the collection under .build/collections
sys.path.insert(0, str(COLLECTIONS))
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay as _overlay  # noqa: E402  pylint: disable=wrong-import-position

PLAYBOOK = ROLES_PLAYBOOK
OUT = TOP / "tests" / "output" / "roles"
TESTBED = nspawn.TESTBED
MODELS = TESTBED / "models"
API_KEY = "rt-key-Jq8Xw3Lp5Zc7"
HF_TOKEN = "hf_rtTokenNeverShown4Vq9"
UNIT = "/etc/systemd/system/vllm.service"
FACT = "/etc/ansible/facts.d/jetson_vllm_speculative.fact"
METRICS = "/var/lib/node_exporter/textfile_collector/jetson_vllm_speculative.prom"
# The speculative change is a drop-in of the collection's own: a candidate under /run (the host's own tmpfs, so
# read from inside the host), moved to /etc once kept. The unit itself is never written.
OVERLAY = "/etc/systemd/system/vllm.service.d/zz-jetson-llm-speculative-1-kept.conf"
CANDIDATE = "/run/systemd/system/vllm.service.d/zz-jetson-llm-speculative-2-candidate.conf"
# The runs that assert the drain (kept, reverted, killed mid-change, a failed revert, and the re-runs after them) name
# drain and undrain hooks (jetson_spec_drain_tasks, _undrain_tasks; the others do not: about 13 more tasks per run
# through the nsenter connection): the hooks edit a stand-in load balancer on the controller, one nginx upstream file
# per host (tests/integration/playbooks/roles/lb_hook.yml), and log each call with the vLLM process serving at that
# moment. The role notes a drain on the host. The hooks are not part of the fingerprint: a run with them and one
# without are the same inputs.
HOOKS = TOP / "tests" / "integration" / "playbooks" / "roles"
HOOK_VARS = {"jetson_spec_drain_tasks": str(HOOKS / "lb_drain.yml"),
             "jetson_spec_undrain_tasks": str(HOOKS / "lb_undrain.yml")}
DRAIN_MARKER = "/var/lib/jetson_llm/speculative/vllm.drained.json"

# 64 output tokens: the accept pair's verdict is as clear as with 128 (measured here, c=1 22 -> 75 tok/s, c=8
# 135 -> 202 tok/s) at half the benchmark time, which is most of this suite's time with the vLLM start-ups.
WORKLOAD = {"concurrency": [1, 8], "num_prompts": 8, "warmup_prompts": 2, "input_len": 32, "output_len": 64,
            "temperature": 0}
# Where only the lifecycle is asserted (interruptions, an operator's drop-in) or the verdict is far from every
# threshold (a draft that costs 70 %, a random draft, a start-up that fails): shorter outputs.
SHORT_WORKLOAD = dict(WORKLOAD, output_len=32)

# dtype: on CPUs without AVX-512 BF16 (this machine: AVX2), vLLM's bfloat16 matmuls fall back to a
# compute-bound path ("Failed to create oneDNN linear") where verifying 5 tokens costs 5 decode steps,
# so no draft can pay. In float32 the 108 M target is memory-bound as a Jetson's GPU is, and its
# 1-layer draft pays (measured here: 28.0 -> 72.6 tok/s at c=1, acceptance 100 %).
HOSTS = {
    "thor-accept": dict(identity="thor-t5000", port=8211, model="target-deep", dtype="float32"),
    "orin-reject": dict(identity="orin-agx-64gb", port=8212, model="target", dtype="bfloat16"),  # JetPack 6 (R36)
    "thor-faults": dict(identity="thor-t5000", port=8213, model="target", dtype="bfloat16"),
    # SIMULATED: its "vllm" is tests/nspawn/jetson_batch_simulator.py (the models are only read for their config).
    "thor-batch": dict(identity="thor-t5000", port=8214, model="target-deep", dtype="float32", simulator=True),
}
# The batch simulator in its host: an executable named vllm (so the unit's ExecStart reads "vllm serve"
# as on a Jetson), fake_vllm.py beside it (its HTTP interface), and its speed profile.
BATCH_SIMULATOR_DIR = "/opt/jetson-batch-simulator/bin"
BATCH_SIMULATOR_PROFILE = {"acceptance": {"default": 0.8}, "step_jitter": 0.02, "startup_s": 2.0}


def host_vars(name, lb_dir, startup_timeout=420):
    spec = HOSTS[name]
    vllm = f"{BATCH_SIMULATOR_DIR}/vllm" if spec.get("simulator") else str(TESTBED / "venv" / "bin" / "vllm")
    return {
        "vllm_runtime": "native",
        "vllm_native_command": [vllm, "serve"],
        "vllm_model": str(MODELS / spec["model"]),
        "vllm_served_model_name": spec["model"],
        "vllm_host": "127.0.0.1",
        "vllm_port": spec["port"],
        "vllm_max_model_len": 1024,
        "vllm_gpu_memory_utilization": 0.75,
        # JETSON_TEST_PATTERN: Environment= takes $ literally (systemd does not expand variables there).
        # VLLM_ENABLE_V1_MULTIPROCESSING=0: vLLM's engine core in the API server's process, a start-up of about 15 s
        # instead of 27 on the CI machine (one Python and torch import fewer) for the role runs' many restarts;
        # so do the compose and docker-run tests; the fleet and benchmark tests run vLLM's default (a separate
        # engine-core process).
        "vllm_environment": {"VLLM_CPU_KVCACHE_SPACE": "1", "JETSON_TEST_PATTERN": "a$b%c",
                             "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
        "vllm_extra_args": ["--dtype", spec["dtype"], "--enforce-eager"],
        "vllm_api_key": API_KEY,
        "vllm_hf_token": HF_TOKEN,
        "vllm_startup_timeout": startup_timeout,
        "jetson_spec_facts_root": nspawn.IDENTITY_DIR,
        "jetson_spec_method": "draft_model",
        "jetson_spec_num_speculative_tokens": 4,
        # More than a cold start plus the verification benchmark (the role's rule): twice the start-up wait, at least 900.
        "jetson_spec_guard_timeout": max(900, 2 * startup_timeout),
        "jetson_spec_benchmark": WORKLOAD,
        # Long steps in the foreground: no poll adds up to its interval to each benchmark and start-up (the background
        # path, polled, is the compose, docker-run and fleet tests': their runs show ASYNC POLL lines).
        "jetson_spec_progress_interval": 0,
        # The outcome as Prometheus metrics for node_exporter's textfile collector (off by default).
        "jetson_spec_metrics_file": METRICS,
        "test_lb_dir": str(lb_dir),
    }


class Fleet:
    """Some of HOSTS (``names``), their output under tests/output/roles/``group``. ``startup_timeout``: the
    serve role's and the tests' wait for a healthy vLLM (longer where the static suites share the CPU)."""

    def __init__(self, names, group, startup_timeout=420):
        self.hosts = {name: nspawn.Host(name, identity=HOSTS[name]["identity"], vllm_port=HOSTS[name]["port"])
                      for name in names}
        self.out = OUT / group
        self.out.mkdir(parents=True, exist_ok=True)
        self.lb = self.out / "lb"
        self.startup_timeout = startup_timeout
        shutil.rmtree(self.lb, ignore_errors=True)
        self.lb.mkdir()
        self.inventory = self.out / "inventory.json"
        self.runs = 0
        self._lock = threading.Lock()

    def up(self):
        for name, host in self.hosts.items():
            host.create()
            if HOSTS[name].get("simulator"):
                install_batch_simulator(host)
            host.boot()
        nspawn.write_inventory(self.inventory, self.hosts.values(),
                               host_vars={name: self.host_vars(name) for name in self.hosts})

    def down(self):
        for host in self.hosts.values():
            host.destroy()

    def host_vars(self, name):
        return host_vars(name, self.lb, self.startup_timeout)

    def reboot(self, name):
        """Power the host off (its systemd shuts down in order) and boot it again; /run starts empty."""
        host = self.hosts[name]
        host.stop(timeout=180)
        host.boot()
        nspawn.write_inventory(self.inventory, self.hosts.values(),
                               host_vars={n: self.host_vars(n) for n in self.hosts})

    def play(self, limit, extra=None, check=False, expect_rc=0, args=(), core=None):
        """ansible-playbook on one host; returns (rc, stdout+stderr). The output is kept under self.out.
        ``core``: the ansible-playbook of the oldest or newest supported ansible-core (conftest.COMPAT_CORES)."""
        with self._lock:
            self.runs += 1
            run = self.runs
        rc, out = play_roles(self.inventory, limit, self.out / f"run{run:02d}-{limit.replace(',', '+')}.log", extra=extra,
                             secrets=(API_KEY, HF_TOKEN), expect_rc=expect_rc, check=check, args=args, core=core)
        if core is not None:
            assert out.startswith(f"# ansible-playbook [core {core}."), out[:200]
        return rc, out

    # --- what is on the host --------------------------------------------------------------------
    def read(self, name, path):
        return self.hosts[name].path(path).read_bytes()

    def sha(self, name, path):
        return hashlib.sha256(self.read(name, path)).hexdigest()

    def fact(self, name):
        return json.loads(self.read(name, FACT))

    def inside(self, name, path):
        """A file as the running host sees it (its /run is its own tmpfs), or None."""
        proc = self.hosts[name].nsenter(["cat", path], check=False)
        return proc.stdout if proc.returncode == 0 else None

    def baseline_sha(self, name):
        """The digest the role records for the service without its overlay (unit + other drop-ins)."""
        return _overlay.read_baseline(str(self.hosts[name].root), "vllm", UNIT)["sha256"]

    def assert_no_overlay(self, name):
        assert self.inside(name, OVERLAY) is None and self.inside(name, CANDIDATE) is None, "an overlay is left"
        assert "speculative-config" not in self.cmdline(name)

    def main_pid(self, name):
        out = self.hosts[name].nsenter(["systemctl", "show", "vllm.service", "-p", "MainPID", "--value"]).stdout
        return int(out.strip())

    def cmdline(self, name):
        pid = self.main_pid(name)
        return self.hosts[name].nsenter(["cat", f"/proc/{pid}/cmdline"]).stdout.replace("\0", " ")

    # --- the load balancer's stand-in (the drain hooks) ---------------------------------------------
    def lb_calls(self, name):
        """The hooks' calls so far: [(drain or undrain, vLLM's MainPID then)]."""
        log = self.lb / f"{name}.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [(line.split()[0], int(line.split()[1])) for line in lines]

    def lb_down(self, name):
        return (self.lb / f"{name}.conf").read_text().rstrip().endswith(" down;")

    def assert_drained_around_the_change(self, name, pid_before, calls_before):
        """This run drained the host before its first restart and put it back after its last one; nothing is left."""
        calls = self.lb_calls(name)[len(calls_before):]
        assert calls == [("drain", pid_before), ("undrain", self.main_pid(name))], calls
        assert not self.lb_down(name), "the host is still marked down in its load balancer"
        assert self.inside(name, DRAIN_MARKER) is None, "the drain marker is left"

    def assert_second_run_changes_nothing(self, name, extra):
        """The same run again: the recorded outcome is used, nothing restarts, no request reaches vLLM, no drain."""
        calls = self.lb_calls(name)
        pid = self.main_pid(name)
        requests_before = self.metric(name, "vllm:request_success_total")
        fact_before = self.read(name, FACT)
        _rc, out = self.play(name, extra=extra)
        assert recap(out, name)["changed"] == 0, out[-4000:]
        assert self.main_pid(name) == pid
        assert self.metric(name, "vllm:request_success_total") == requests_before
        assert self.read(name, FACT) == fact_before
        assert "recorded earlier" in out
        assert self.lb_calls(name) == calls, "a run that changes nothing drained the host"

    def metric(self, name, metric):
        """Sum of a Prometheus counter of the host's vLLM (all label sets)."""
        text = get(name, "/metrics")
        return sum(float(m.group(1)) for m in re.finditer(rf"^{re.escape(metric)}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def install_batch_simulator(host):
    """Put the SIMULATOR (not vLLM) in a test host's root, before it boots."""
    bindir = host.path(BATCH_SIMULATOR_DIR)
    bindir.mkdir(parents=True, exist_ok=True)
    source = (TOP / "tests" / "nspawn" / "jetson_batch_simulator.py").read_text()
    (bindir / "vllm").write_text("#!/usr/bin/python3\n" + source)
    (bindir / "vllm").chmod(0o755)
    shutil.copyfile(TOP / "tests" / "utils" / "fake_vllm.py", bindir / "fake_vllm.py")
    (bindir / "fake_vllm.py").chmod(0o644)
    host.path("/etc/jetson-batch-simulator.json").write_text(json.dumps(BATCH_SIMULATOR_PROFILE))


def get(name, path):
    req = urllib.request.Request(f"http://127.0.0.1:{HOSTS[name]['port']}{path}",
                                 headers={"Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 (loopback only)
        return resp.read().decode()


def healthy(name):
    try:
        models = json.loads(get(name, "/v1/models"))
    except OSError:
        return False
    return HOSTS[name]["model"] in [m["id"] for m in models["data"]]


def assert_no_secret(text, where):
    for secret in (API_KEY, HF_TOKEN):
        assert secret not in text, f"a secret appears in {where}"


def task_output(out, name):
    """What ansible-playbook printed for the first task whose name contains ``name`` (up to the next task)."""
    start = re.search(r"^TASK \[[^\n]*" + re.escape(name), out, re.M)
    assert start, f"no task {name!r} ran:\n{out[-3000:]}"
    end = re.search(r"^(?:TASK|RUNNING HANDLER|PLAY RECAP) ", out[start.end():], re.M)
    return out[start.start():start.end() + (end.start() if end else len(out))]


def assert_record_is_reality(fleet, name, fact_file=FACT):
    """The record says enabled exactly when the running process has --speculative-config."""
    fact = json.loads(fleet.read(name, fact_file))
    assert fact["status"] != "pending", fact
    assert (fact["status"] == "enabled") == ("speculative-config" in fleet.cmdline(name)), fact["reasons"]
    assert fact["schema"] == 1
    return fact


def restart_by_hand(fleet, name):
    """What an operator does after editing a unit: daemon-reload, restart, wait until it serves."""
    host = fleet.hosts[name]
    host.nsenter(["systemctl", "daemon-reload"])
    host.nsenter(["systemctl", "restart", "vllm.service"], timeout=120)
    wait_healthy(fleet, name)


def wait_healthy(fleet, name, timeout=None):
    deadline = time.monotonic() + (timeout or fleet.startup_timeout)
    while not healthy(name):
        assert time.monotonic() < deadline, fleet.hosts[name].nsenter(
            ["systemctl", "status", "--no-pager", "vllm.service"], check=False).stdout[-2000:]
        time.sleep(2)


def fleet_of(names, group, startup_timeout=420):
    """A module fixture's body: boot ``names``, deploy the baseline service on all of them in one serve run, yield
    the Fleet, destroy the hosts."""
    fl = Fleet(names, group, startup_timeout)
    try:
        fl.up()
        fl.play(",".join(fl.hosts), extra={"test_run_speculative": False})
        yield fl
    finally:
        fl.down()


def check_baseline_deployed(fleet):
    """Every host serves its model after the serve role, its secrets only in a root-only file (never in the unit, the
    command line or systemctl show), and the key really protects the server."""
    for name in fleet.hosts:
        assert healthy(name), f"{name} does not serve its model after the serve role"
        unit = fleet.read(name, UNIT).decode()
        assert "--speculative-config" not in unit
        assert '"--gpu-memory-utilization" \\\n    "0.75"' in unit
        assert "EnvironmentFile=/etc/vllm/vllm.env" in unit
        env_file = fleet.hosts[name].path("/etc/vllm/vllm.env")
        assert oct(env_file.stat().st_mode & 0o777) == "0o600" and env_file.stat().st_uid == 0
        assert f"VLLM_API_KEY='{API_KEY}'" in env_file.read_text()
        assert_no_secret(unit, f"{name}'s unit")
        assert_no_secret(fleet.cmdline(name), f"{name}'s vLLM command line")
        show = fleet.hosts[name].nsenter(["systemctl", "show", "vllm.service"]).stdout
        assert_no_secret(show, f"systemctl show on {name}")
        # What the process really got (systemctl show would print the value escaped for a shell).
        environ = fleet.hosts[name].nsenter(["cat", f"/proc/{fleet.main_pid(name)}/environ"]).stdout.split("\0")
        assert "JETSON_TEST_PATTERN=a$b%c" in environ, [e for e in environ if e.startswith("JETSON_TEST")]
        # The key really protects the server: no key, no models.
        req = urllib.request.Request(f"http://127.0.0.1:{HOSTS[name]['port']}/v1/models")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)  # noqa: S310
        assert err.value.code == 401
