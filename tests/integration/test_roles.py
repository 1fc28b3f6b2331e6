"""The roles on real systemd hosts serving a real vLLM: enable, keep, revert, refuse, recover.

Hosts are systemd-nspawn containers (tests/nspawn/fleet.py) with Jetson identities from the
fixture roots; each runs the serve role's unit with the test bed's vLLM (CPU build, tiny models)
under its own systemd, on its own port. The loop is driven through ansible-playbook exactly as an
operator runs it (tests/integration/playbooks/roles/speculate.yml), with a shortened workload:

  concurrency [1, 8], 8 prompts per level (+2 warm-up), 32 tokens in, 64 out (32 where the verdict
  is far from every threshold or only the lifecycle is asserted), temperature 0

(short prompts keep decoding, not prefill, the bulk of the latency, as the plan's TTFT rule requires)

(the production default is the specification's 50 + 10 prompts of 2048 in / 128 out; see the
role's defaults). The scenarios share four hosts and run in file order:

  thor-accept  (Thor T5000, target-deep)  accept with draft-deep-1layer; idempotent re-run; re-runs after
                                          a JetPack upgrade 7.0 -> 7.2.1 (L4T R38 -> R39) and an operator's
                                          edit, a refusal, disabled, enabled again
  orin-reject  (AGX Orin 64GB, R36, target) reject with draft-heavy (acceptance ~1.0, but 8 times the
                                          target's depth: too expensive on any CPU);
                                          refusals (Orin Nano identity, concurrency 8); a power-mode change;
                                          a draft staged from a mirror (a corrupt copy refused first)
  thor-faults  (Thor T5000, target)       draft-badvocab (rejected at start-up); controller SIGKILLed
                                          mid-change (the guard restores) and during the candidate
                                          benchmark (the next run resumes); an operator's drop-in and a
                                          reboot mid-change; last, out of memory at start-up (simulated),
                                          then draft-random (rejected)
  thor-batch   (Thor T5000, SIMULATED speed) the one host whose vLLM is a simulator
                                          (tests/nspawn/jetson_batch_simulator.py): speculation that wins
                                          at c=1 and loses at c=8, and its batch-size-aware configuration
                                          kept (the real CPU build cannot show that case; the real-vLLM
                                          test of the same branch stays, on thor-accept)

Every host serves with --enforce-eager: the CPU build otherwise compiles the model with torch.compile
at every start (measured here: healthy after 57 s compiled, 25 s eager; decode 32 against 29 tok/s
without speculation, 77 against 72 with the accept pair's draft). The role tests restart vLLM about
20 times, so eager mode saves about 8 minutes and changes no outcome.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import http.server
import json
import re
import shutil
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import BIN, COLLECTIONS, ROLES_PLAYBOOK, TOP, _ansible_env, kill_playbook_when, play_roles, recap
# pytest fixture, used by name:
from vllm_testbed import testbed  # noqa: F401  pylint: disable=unused-import

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
LB = OUT / "lb"
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


def host_vars(name):
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
        "vllm_startup_timeout": 420,
        "jetson_spec_facts_root": nspawn.IDENTITY_DIR,
        "jetson_spec_method": "draft_model",
        "jetson_spec_num_speculative_tokens": 4,
        "jetson_spec_guard_timeout": 900,
        "jetson_spec_benchmark": WORKLOAD,
        # Long steps in the foreground: no poll adds up to its interval to each benchmark and start-up (the background
        # path, polled, is the compose, docker-run and fleet tests': their runs show ASYNC POLL lines).
        "jetson_spec_progress_interval": 0,
        # The outcome as Prometheus metrics for node_exporter's textfile collector (off by default).
        "jetson_spec_metrics_file": METRICS,
        "test_lb_dir": str(LB),
    }


class Fleet:
    def __init__(self):
        self.hosts = {name: nspawn.Host(name, identity=spec["identity"], vllm_port=spec["port"])
                      for name, spec in HOSTS.items()}
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(LB, ignore_errors=True)
        LB.mkdir()
        self.inventory = OUT / "inventory.json"
        self.runs = 0
        self._lock = threading.Lock()

    def up(self):
        for name, host in self.hosts.items():
            host.create()
            if HOSTS[name].get("simulator"):
                install_batch_simulator(host)
            host.boot()
        nspawn.write_inventory(self.inventory, self.hosts.values(),
                               host_vars={name: host_vars(name) for name in self.hosts})

    def down(self):
        for host in self.hosts.values():
            host.destroy()

    def reboot(self, name):
        """Power the host off (its systemd shuts down in order) and boot it again; /run starts empty."""
        host = self.hosts[name]
        host.stop(timeout=180)
        host.boot()
        nspawn.write_inventory(self.inventory, self.hosts.values(),
                               host_vars={n: host_vars(n) for n in self.hosts})

    def play(self, limit, extra=None, check=False, expect_rc=0, args=(), core=None):
        """ansible-playbook on one host; returns (rc, stdout+stderr). The output is kept under tests/output/roles.
        ``core``: the ansible-playbook of the oldest or newest supported ansible-core (conftest.COMPAT_CORES)."""
        with self._lock:
            self.runs += 1
            run = self.runs
        rc, out = play_roles(self.inventory, limit, OUT / f"run{run:02d}-{limit.replace(',', '+')}.log", extra=extra,
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
        log = LB / f"{name}.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [(line.split()[0], int(line.split()[1])) for line in lines]

    def lb_down(self, name):
        return (LB / f"{name}.conf").read_text().rstrip().endswith(" down;")

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


@pytest.fixture(scope="module")
def fleet(testbed):  # noqa: ARG001  (the test bed must be installed)
    fl = Fleet()
    try:
        fl.up()
        # The baseline service on every host (the serve role), once, all hosts in one run.
        fl.play(",".join(fl.hosts), extra={"test_run_speculative": False})
        yield fl
    finally:
        fl.down()


# --- the serve role ---------------------------------------------------------------------------------
def test_serve_role_deploys_a_healthy_baseline_with_secrets_in_a_root_only_file(fleet):
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
    req = urllib.request.Request(f"http://127.0.0.1:{HOSTS['thor-accept']['port']}/v1/models")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)  # noqa: S310
    assert err.value.code == 401


def test_serve_role_second_run_changes_nothing(fleet):
    pid = fleet.main_pid("orin-reject")
    _rc, out = fleet.play("orin-reject", extra={"test_run_speculative": False})
    assert recap(out, "orin-reject")["changed"] == 0
    assert fleet.main_pid("orin-reject") == pid


# A unit or compose file serve did not write (no `(jetson_llm.vllm.serve)` in its header) is copied before it is
# replaced (issue 36). On thor-batch: its simulator starts in about 2 s, and its first speculative run comes later.
BACKUP_DIR = "/var/lib/jetson_llm/serve-backups"
COPY_KEPT = re.compile(rf"a copy is kept at ({re.escape(BACKUP_DIR)}/vllm\.service\.[0-9]{{8}}T[0-9]{{6}}Z) ")


def hand_written(unit, note):
    """``unit`` as an operator who wrote it by hand has it: without the collection's header, with a note of theirs
    and their own Description= (what serve renders is otherwise the same, so the host serves the same either way)."""
    lines = unit.decode().splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    body = "".join(lines).replace("Description=vLLM OpenAI-compatible server", "Description=vLLM, set up by hand", 1)
    return f"# {note}\n{body}".encode()


def kept_copies(fleet, name):
    directory = fleet.hosts[name].path(BACKUP_DIR)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_serve_role_keeps_a_copy_of_a_hand_written_unit_before_it_replaces_it(fleet):
    name, serve_only = "thor-batch", {"test_run_speculative": False}
    unit = fleet.hosts[name].path(UNIT)
    unit_before = unit.read_bytes()
    assert b"(jetson_llm.vllm.serve)" in unit_before and kept_copies(fleet, name) == []
    operator = hand_written(unit_before, "vLLM on this Jetson, written by hand (ops ticket 4711)")
    assert b"jetson_llm.vllm.serve" not in operator and b"Description=vLLM, set up by hand" in operator
    unit.write_bytes(operator)
    try:
        # Check mode says where the copy would go, and copies and changes nothing.
        _rc, out = fleet.play(name, extra=serve_only, check=True)
        assert (f"{UNIT} was not written by jetson_llm.vllm.serve: it would be replaced, and a copy kept at "
                f"{BACKUP_DIR}/vllm.service.<UTC time of the run>") in out, out[-4000:]
        assert not fleet.hosts[name].path(BACKUP_DIR).exists() and unit.read_bytes() == operator

        # The run copies the operator's bytes (root only) before the template replaces them, and says where.
        _rc, out = fleet.play(name, extra=serve_only)
        found = COPY_KEPT.findall(out)
        assert len(found) == 1 and f"{UNIT} was not written by jetson_llm.vllm.serve" in out, out[-4000:]
        copy = fleet.hosts[name].path(found[0])
        assert kept_copies(fleet, name) == [copy.name]
        assert copy.read_bytes() == operator
        assert copy.stat().st_mode & 0o7777 == 0o600 and copy.stat().st_uid == 0
        assert fleet.hosts[name].path(BACKUP_DIR).stat().st_mode & 0o7777 == 0o700
        assert unit.read_bytes() == unit_before, "the unit is not the collection's again"
        assert healthy(name)

        # The unit is the collection's now: the next run copies nothing, changes nothing, restarts nothing.
        pid = fleet.main_pid(name)
        _rc, out = fleet.play(name, extra=serve_only)
        assert recap(out, name)["changed"] == 0 and "was not written by" not in out, out[-4000:]
        assert kept_copies(fleet, name) == [copy.name] and fleet.main_pid(name) == pid

        # Another hand-written version with one copy kept: only the newest copy remains.
        second = hand_written(unit_before, "vLLM on this Jetson, edited by hand again (ops ticket 4712)")
        unit.write_bytes(second)
        _rc, out = fleet.play(name, extra={**serve_only, "vllm_definition_backups_keep": 1})
        found = COPY_KEPT.findall(out)
        assert len(found) == 1 and "(root only; the last 1 copy is kept)" in out, out[-4000:]
        newest = fleet.hosts[name].path(found[0])
        assert newest.name > copy.name and kept_copies(fleet, name) == [newest.name]
        assert newest.read_bytes() == second
        assert unit.read_bytes() == unit_before and healthy(name)
    finally:
        # The host as the later tests expect it: the collection's unit, running, no copies.
        if unit.read_bytes() != unit_before:
            unit.write_bytes(unit_before)
            fleet.hosts[name].nsenter(["systemctl", "daemon-reload"])
            fleet.hosts[name].nsenter(["systemctl", "restart", "vllm.service"])
            wait_healthy(fleet, name)
        shutil.rmtree(fleet.hosts[name].path(BACKUP_DIR), ignore_errors=True)


# --- bad variables ---------------------------------------------------------------------------------
# One case per layer that checks the variables before anything changes; the checks' own tables are unit tests
# (tests/unit/plugins/module_utils/test_role_settings.py: every setting of both roles' role_setting_problems).
BAD_VARIABLES = [
    # serve's settings (role_setting_problems 'serve'): a line break, NaN, a managed flag in vllm_extra_args
    ({"vllm_model": "/models/x\nExecStartPre=/bin/rm -rf /"}, "vllm_model"),
    ({"vllm_gpu_memory_utilization": "nan"}, "vllm_gpu_memory_utilization"),
    ({"vllm_extra_args": ["--dtype", "float32", "--gpu-memory-utilization=0.5"]}, "--gpu-memory-utilization"),
    # serve's secrets check (the value never shown) and the unit's quoting (a control character)
    ({"vllm_hf_token": HF_TOKEN + "\n"}, "vllm_hf_token"),   # a YAML "|" block's trailing newline
    ({"vllm_api_key": API_KEY + "\n"}, "vllm_api_key"),
    ({"vllm_extra_args": ["--x", "100%\r\n"]}, "control character"),
    # speculative_decoding's settings (role_setting_problems 'speculative_decoding'): a count, a NaN share, a bound,
    # a benchmark dictionary's keys
    ({"jetson_spec_guard_timeout": "1e9"}, "jetson_spec_guard_timeout"),
    ({"jetson_spec_phase_shift": {"c1": "nan"}}, "jetson_spec_phase_shift"),
    ({"jetson_spec_c8_tolerance": 0.15}, "allowed: 0 to 0.1 (the loss at concurrency 8 tolerated"),
    ({"jetson_spec_confirm_benchmark": {"concurency": [1]}}, "jetson_spec_confirm_benchmark"),
    # the argument spec (choices), the sequential settings, the plan, the cohort verdicts
    ({"jetson_spec_method": "medusa"}, "jetson_spec_method"),
    ({"jetson_spec_measurement": "sequential", "jetson_spec_sequential": {"round_prompts": {"8": 12}}},
     "jetson_spec_sequential.round_prompts at concurrency 8 must be a multiple of 8"),
    ({"jetson_spec_num_speculative_tokens": 1000000000}, "num_speculative_tokens"),
    ({"jetson_spec_cohort_verdicts": "{\"k\": "}, "jetson_spec_cohort_verdicts"),
]


def test_bad_variables_fail_before_anything_changes(fleet):
    unit_before = fleet.read("thor-faults", UNIT)
    pid = fleet.main_pid("thor-faults")

    def play(extra):
        return fleet.play("thor-faults", extra={"jetson_spec_draft_model": str(MODELS / "draft-perfect"),
                                                "jetson_spec_fact_file": "/etc/ansible/facts.d/bad.fact", **extra},
                          expect_rc=2)[1]

    # Two runs at a time (each fails in its argument checks, before it touches the host): half the wall time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        outputs = list(pool.map(play, [extra for extra, _words in BAD_VARIABLES]))
    for (extra, words), out in zip(BAD_VARIABLES, outputs):
        assert words in out, f"{extra}: the failure does not name {words!r}:\n{out[-3000:]}"
        assert "Traceback" not in out
        assert recap(out, "thor-faults")["changed"] == 0, f"{extra}: something changed"
        assert fleet.read("thor-faults", UNIT) == unit_before
        assert fleet.main_pid("thor-faults") == pid
        assert not fleet.hosts["thor-faults"].path("/etc/ansible/facts.d/bad.fact").exists()


# --- accept ------------------------------------------------------------------------------------------
# The accept host's draft agrees with its target (acceptance ~100 %): K tuning tries K + 1. One step here
# (the short version; the role's default is 2).
ACCEPT_VARS = {"jetson_spec_draft_model": str(MODELS / "draft-deep-1layer"), "jetson_spec_tune_max_steps": 1}


def test_accept_enables_speculation_tunes_k_and_records_it(fleet):
    baseline_unit = fleet.read("thor-accept", UNIT)
    pid_before, calls = fleet.main_pid("thor-accept"), fleet.lb_calls("thor-accept")
    # With the newest ansible-core this collection supports (the oldest runs the reject, the batch simulator's keep
    # and a refusal): its enable path on a real systemd host with real vLLM.
    _rc, out = fleet.play("thor-accept", extra={**ACCEPT_VARS, **HOOK_VARS}, core="2.21")
    fact = fleet.fact("thor-accept")
    assert fact["status"] == "enabled", fact["reasons"]
    assert fact["verdict"] == "accept"
    assert fact["deltas"]["throughput_gain_c1"] >= 0.30 and fact["deltas"]["tpot_reduction_c1"] >= 0.20
    # TTFT reported next to TPOT (not credited to speculation), at both levels.
    assert fact["deltas"]["ttft_change_c1"] is not None and fact["deltas"]["ttft_change_c8"] is not None, fact["deltas"]
    assert any(r.startswith("TTFT p50 changed ") for r in fact["reasons"]), fact["reasons"]
    assert fact["speculative_config"]["model"] == str(MODELS / "draft-deep-1layer")
    assert fact["candidate_gpu_memory_utilization"] == pytest.approx(0.70)
    # The unit is the operator's (here: serve's), untouched; the change is the collection's committed drop-in.
    assert fleet.read("thor-accept", UNIT) == baseline_unit
    assert fleet.inside("thor-accept", CANDIDATE) is None, "the kept change is still only a candidate under /run"
    unit = fleet.inside("thor-accept", OVERLAY)
    assert unit is not None, "no committed overlay"
    assert 'ExecStart=\n' in unit and '"--gpu-memory-utilization" "0.7" "--speculative-config"' in unit, unit
    assert fleet.hosts["thor-accept"].path(OVERLAY).stat().st_mode & 0o777 == 0o644
    assert "speculative-config" in fleet.cmdline("thor-accept")
    # K tuning: K = 4 verified first, then one step, K = 5, verified the same way; the better one is kept and
    # the unit, the running process and the record agree on it.
    tuning = fact["tuning"]
    assert tuning["from_k"] == 4 and tuning["max_steps"] == 1
    assert [step["k"] for step in tuning["tried"]] == [5], tuning
    step = tuning["tried"][0]
    assert step["healthy"] is True and step["verdict"] in ("accept", "reject", "marginal", "undetermined"), step
    assert step["acceptance_c1"] is not None and step["throughput_c1"] > 0
    kept = tuning["kept_k"]
    assert kept == (5 if step["kept"] else 4)
    assert tuning["stopped"] == ("reached jetson_spec_tune_max_steps (1)" if step["kept"] else "num_speculative_tokens 5 was not better")
    assert fact["num_speculative_tokens"] == kept and fact["speculative_config"]["num_speculative_tokens"] == kept
    assert f'\\"num_speculative_tokens\\":{kept}' in unit, unit
    assert f'"num_speculative_tokens":{kept}' in fleet.cmdline("thor-accept")
    assert any(r.startswith("Tuning step 1, num_speculative_tokens 5: ") for r in fact["reasons"]), fact["reasons"]
    assert fact["service_sha256"] == fleet.baseline_sha("thor-accept")
    assert fact["overlay"] == OVERLAY
    # Written with the record: the outcome as Prometheus metrics (node_exporter's textfile collector), world-readable.
    prom = fleet.read("thor-accept", METRICS).decode()
    assert 'jetson_llm_vllm_speculative_status{service="vllm",status="enabled"} 1\n' in prom, prom
    assert 'jetson_llm_vllm_speculative_status{service="vllm",status="reverted"} 0\n' in prom, prom
    assert ('jetson_llm_vllm_speculative_throughput_change{service="vllm",concurrency="1"} %r\n'
            % float(fact["deltas"]["throughput_gain_c1"])) in prom, prom
    assert 'jetson_llm_vllm_speculative_num_speculative_tokens{service="vllm"} %d\n' % kept in prom, prom
    assert "jetson_llm_vllm_speculative_last_verification_timestamp_seconds" in prom
    assert fleet.hosts["thor-accept"].path(METRICS).stat().st_mode & 0o777 == 0o644
    assert healthy("thor-accept")
    # The guard was confirmed (disarmed): nothing will restore the old unit behind the operator's back.
    state = fleet.hosts["thor-accept"].nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() != "active"
    assert "ENABLED" in out
    # Out of its load balancer before the baseline benchmark, back once the tuned change was kept.
    fleet.assert_drained_around_the_change("thor-accept", pid_before, calls)


def test_the_troubleshooting_guide_commands_work_on_a_host_with_a_kept_change(fleet):
    """docs/troubleshooting.md's commands marked for a systemd host, run as written on thor-accept (a kept change)."""
    text = (TOP / "docs" / "troubleshooting.md").read_text()
    blocks = re.findall(r"<!-- systemd host -->\n```sh\n(.*?)```", text, re.S)
    commands = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert len(commands) >= 4, commands
    for command in commands:
        proc = fleet.hosts["thor-accept"].nsenter(["sh", "-c", command], check=False)
        assert proc.returncode == 0 and proc.stdout.strip(), (command, proc.stdout[-500:], proc.stderr[-500:])
    # what the guide says they show: the record's status, the kept overlay last in the unit, and its header
    record = fleet.hosts["thor-accept"].nsenter(["sh", "-c", commands[0]]).stdout
    assert '"status": "enabled"' in record
    shown = fleet.hosts["thor-accept"].nsenter(["systemctl", "cat", "vllm.service"]).stdout
    assert shown.rstrip().split("\n# /")[-1].startswith("etc/systemd/system/vllm.service.d/zz-jetson-llm-speculative-1-kept.conf")
    assert "Until then this file resets ExecStart=" in shown


def test_idempotent_second_run_restarts_nothing_and_sends_no_request(fleet):
    fleet.assert_second_run_changes_nothing("thor-accept", {**ACCEPT_VARS, **HOOK_VARS})


# The runs that follow the first (AWX schedules, re-runs): an AWX survey sends every value as a string.
SURVEY_STRINGS = {"jetson_spec_keep_marginal": "false", "jetson_spec_force_verify": "no",
                  "jetson_spec_allow_small_devices": "False", "jetson_spec_expected_concurrency": "1",
                  "jetson_spec_num_speculative_tokens": "4", "jetson_spec_min_throughput_gain": "0.3",
                  "jetson_spec_c8_tolerance": "0.02", "jetson_spec_tune_max_steps": "1", "vllm_max_model_len": "1024",
                  "vllm_port": str(HOSTS["thor-accept"]["port"])}


def test_awx_survey_strings_are_the_same_run_nothing_restarts(fleet):
    fleet.assert_second_run_changes_nothing("thor-accept", {**ACCEPT_VARS, **SURVEY_STRINGS})
    assert "in_sync" in fleet.play("thor-accept", extra={**ACCEPT_VARS, **SURVEY_STRINGS}, check=True)[1]


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


# The operator, not serve, owns the unit from here on (test_run_serve: false), as on a fleet whose units are
# hand-made or NVIDIA's: serve would otherwise render its own unit again.
OPERATOR_VARS = {**ACCEPT_VARS, "test_run_serve": False, "jetson_spec_tune_max_steps": 0}


def test_an_operator_edit_and_a_jetpack_upgrade_after_a_kept_change_re_verify_and_keep_the_operator_flag(fleet):
    """Between two runs of a kept change, what a fleet sees: JetPack upgraded (7.0 -> 7.2.1, L4T R38 -> R39) and
    an operator's flag added to the unit. The next run names both changes, re-measures the baseline and verifies
    again (in one pass: each trigger alone is a row of the decision table, tests/unit/test_lifecycle.py)."""
    name = "thor-accept"
    before = fleet.fact(name)
    assert before["status"] == "enabled" and fleet.inside(name, OVERLAY) is not None
    release = fleet.hosts[name].path(nspawn.IDENTITY_DIR + "/etc/nv_tegra_release")
    assert release.read_text().startswith("# R38 ")
    release.write_bytes((nspawn.FIXTURES / "orin-agx-r39" / "etc" / "nv_tegra_release").read_bytes())
    unit = fleet.read(name, UNIT).decode()
    assert '"--enforce-eager"' in unit and "--max-num-seqs" not in unit
    edited = unit.replace('"--enforce-eager"', '"--enforce-eager" --max-num-seqs 4', 1)
    fleet.hosts[name].path(UNIT).write_text(edited)
    restart_by_hand(fleet, name)
    # Until the next run the committed overlay's ExecStart (the old command line plus the two flags) is what runs.
    assert "--max-num-seqs" not in fleet.cmdline(name) and "speculative-config" in fleet.cmdline(name)
    _rc, out = fleet.play(name, extra=OPERATOR_VARS)
    # (the debug message is printed as JSON: its quotes are escaped)
    changed = re.search(r"changed since the recorded outcome: .*", out)
    assert changed, out[-3000:]
    for part in ('baseline.jetpack \\"7.0\\" -> \\"7.2.1\\"', 'baseline.l4t \\"38.2.0\\" -> \\"39.2.1\\"',
                 "baseline.service (the unit, a drop-in or a compose file other than the overlay"):
        assert part in changed.group(0), (part, changed.group(0))
    fact = assert_record_is_reality(fleet, name)
    assert fact["baseline_reused"] is False, "the stored baseline was measured without the operator's flag"
    assert (before["jetson"]["l4t"], fact["jetson"]["l4t"]) == ("38.2.0", "39.2.1")
    assert (before["jetson"]["jetpack"], fact["jetson"]["jetpack"]) == ("7.0", "7.2.1")
    assert fact["fingerprint"] != before["fingerprint"] and fact["started"] != before["started"]
    # The operator's edit is kept, in the file and in what runs, whatever the verdict.
    assert fleet.read(name, UNIT).decode() == edited
    assert "--max-num-seqs 4" in fleet.cmdline(name), fleet.cmdline(name)
    assert fact["service_sha256"] == fleet.baseline_sha(name)
    if fact["status"] == "enabled":
        overlay_text = fleet.inside(name, OVERLAY)
        assert "--max-num-seqs 4" in overlay_text and "speculative-config" in fleet.cmdline(name)
    else:
        fleet.assert_no_overlay(name)
    # The same run again: in sync.
    _rc, out = fleet.play(name, extra=OPERATOR_VARS)
    assert recap(out, name)["changed"] == 0, out[-3000:]


def test_re_runs_after_a_kept_change_refuse_disable_and_enable_again_with_record_equal_to_reality(fleet):
    assert fleet.fact("thor-accept")["status"] == "enabled" and "speculative-config" in fleet.cmdline("thor-accept")
    # Concurrency 8 now: the plan refuses, and the speculation that runs is removed before `refused` is recorded.
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_expected_concurrency": 8})
    fact = assert_record_is_reality(fleet, "thor-accept")
    assert fact["status"] == "refused" and any("concurrency" in r for r in fact["reasons"]), fact["reasons"]
    assert any(r.startswith("Speculation was removed") for r in fact["reasons"]), fact["reasons"]
    fleet.assert_no_overlay("thor-accept")
    assert healthy("thor-accept") and "REFUSED" in out
    # The same run again: nothing to do.
    pid = fleet.main_pid("thor-accept")
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_expected_concurrency": "8"})
    assert recap(out, "thor-accept")["changed"] == 0, out[-3000:]
    assert fleet.main_pid("thor-accept") == pid
    # Disabled on purpose: nothing speculative runs, so nothing changes and the refusal stays recorded.
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_state": "disabled"})
    fact = assert_record_is_reality(fleet, "thor-accept")
    assert fact["status"] == "refused" and "in_sync" in out, fact["reasons"]
    assert recap(out, "thor-accept")["changed"] == 0, out[-3000:]
    assert fleet.main_pid("thor-accept") == pid
    # A run with other inputs then verifies again, not taken from the old record: the next test's run (one
    # verification for both).


# A token budget per step that fits the baseline's batch of 8 (8 tokens) but not the speculative one
# (8 x (K + 1) = 40): vLLM then schedules fewer sequences per step, and concurrency 8 loses while
# concurrency 1 (5 tokens) still gains. A Jetson with a small --max-num-batched-tokens (memory) behaves
# the same way. vLLM picks each step's K from the requests it scheduled, and only 16 // 5 = 3 fit a
# speculative step, so the role lowers N from 4 to 2 (with N = 4 the batch never grows past 3 while
# speculating and K never drops to 0: measured -13.7 % at c=8, the same as without the setting).
# The serve role deploys the new baseline first (its variables changed); measured sequentially (the
# role's other measurement mode), with 32 output tokens to keep it short. The queueing makes c=8
# noisy, so this host tolerates a measured c=8 loss of 5 % (c8_tolerance).
# Measured with the modules on this test bed (eager, 16 prompts per level), baseline / planned K=4 /
# batch-size-aware N=2, tok/s: output 32: c=1 26.1 / 41.8 / 45.7, c=8 79.2 / 57.6 / 61.3;
# output 128: c=1 28.7 / 61.0 / 67.0, c=8 115.1 / 106.2 / 92.3. Speculation is off at c=8 with N=2, yet
# c=8 still loses, with a draft 4 times smaller too (draft-deep-tiny, tests/benchmarks/tuning.py: -19 %
# at c=8 with TPOT at the baseline's), most likely because the waves' prefills, when few requests run
# and speculation is on, compete with it for the 16-token budget. So the kept branch is not expected on
# this CPU test bed (docs/performance.md); the test asserts whichever branch the verdict takes, and the
# kept branch is asserted on the simulated host (test_simulated_jetson_keeps_batch_size_aware_speculation_...).
BATCH_AWARE_VARS = {**ACCEPT_VARS, "jetson_spec_benchmark": dict(WORKLOAD, output_len=32),
                    "vllm_extra_args": ["--dtype", "float32", "--enforce-eager", "--max-num-batched-tokens", "16",
                                        "--max-num-seqs", "8"],
                    "jetson_spec_measurement": "sequential", "jetson_spec_tune_max_steps": 0,
                    # the smallest sequential baseline (two whole waves at c=8; the role's default is 24)
                    "jetson_spec_sequential": {"baseline_prompts": 16},
                    "jetson_spec_c8_tolerance": 0.05}


def test_after_a_refusal_a_c8_regression_tries_batch_size_aware_speculation_measured_sequentially(fleet):
    """Also the last step of the re-runs above: the host's record says ``refused`` (concurrency 8), and a run
    with other inputs verifies again, with the record equal to what runs at the end."""
    assert fleet.fact("thor-accept")["status"] == "refused"
    _rc, out = fleet.play("thor-accept", extra=BATCH_AWARE_VARS)
    assert_record_is_reality(fleet, "thor-accept")
    lkg = fleet.read("thor-accept", UNIT)
    assert b"--max-num-batched-tokens" in lkg and b"speculative-config" not in lkg
    fact = fleet.fact("thor-accept")
    assert "Benchmark the running service (candidate)" in out, "the changed serve variables did not re-verify the host"
    assert fact["measurement"]["mode"] == "sequential" and fact["measurement"]["requests"] is not None
    batch = fact["batch_aware"]
    assert batch is not None, f"the planned configuration did not pass at c=1 and regress at c=8: {fact['reasons']}"
    # Shown beyond the tolerance, or (c=8 is noisy on this CPU: 96.63 % interval -47 % to +75 % in a CI run) an open
    # regression that decide_undetermined=point_estimate settles as one: either way reverted because of concurrency 8.
    assert any("regresses at concurrency 8" in r or "settles an open regression as a regression" in r
               for r in fact["reasons"]), fact["reasons"]
    # N lowered for the token budget, and said why.
    assert batch["max_batch"] == 2, batch
    assert "--max-num-batched-tokens 16 fits only 3 request(s) with 4 draft tokens" in batch["limit_reason"], batch
    assert batch["tried"] is True and batch["healthy"] is True, batch
    assert batch["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 65536, 0]]
    # The verdict read the server's own counters above 2 requests at a time. vLLM 0.32's CPU build runs the V1 model
    # runner (Model Runner V2 needs Triton: "using the V1 model runner instead"), which honours K = 0: at c=8 next to
    # nothing was drafted, so nothing is discounted (the other branch, vllm#51510, is test_speculative_verdict.py's).
    drafting = batch["drafting"]
    assert drafting["off_above"] == 2 and drafting["ignored"] is False, drafting
    assert drafting["levels"]["8"]["share"] is not None and drafting["levels"]["8"]["share"] < 0.5, drafting
    assert any(r.startswith("The planned configuration passed at concurrency 1 but regressed at concurrency 8")
               and "tried speculating only up to 2 requests" in r for r in fact["reasons"]), fact["reasons"]
    unit = (fleet.inside("thor-accept", OVERLAY) or "").encode()
    if batch["kept"]:
        # Both rules pass with speculation off above 2 requests at a time: kept, and the record says so.
        assert fact["status"] == "enabled" and fact["verdict"] == "accept", fact["reasons"]
        assert fact["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 65536, 0]]
        assert b"num_speculative_tokens_per_batch_size" in unit
        assert "num_speculative_tokens_per_batch_size" in fleet.cmdline("thor-accept")
        assert fact["tuning"] is None, "K tuning does not run on a batch-size-aware configuration"
    else:
        # Not kept (what this CPU test bed measures, above): back to the baseline, byte for byte.
        assert fact["status"] == "reverted", fact["reasons"]
        assert batch["verdict"] in ("reject", "marginal", "undetermined") and batch["deltas"], batch
        assert batch["deltas"] != fact["deltas"], "the batch-size-aware attempt has its own measurement"
        fleet.assert_no_overlay("thor-accept")
    assert fleet.read("thor-accept", UNIT) == lkg
    assert fact["service_sha256"] == fleet.baseline_sha("thor-accept")
    assert healthy("thor-accept")


def test_check_mode_shows_the_planned_unit_and_changes_nothing(fleet):
    unit_before = fleet.sha("orin-reject", UNIT)
    pid = fleet.main_pid("orin-reject")
    _rc, out = fleet.play("orin-reject", check=True,
                          extra={"jetson_spec_draft_model": str(MODELS / "draft-heavy")})
    assert CANDIDATE in out and re.search(r'^\+ExecStart=\S.*"--speculative-config" ', out, re.M), \
        "check mode did not show the planned overlay (diff)"
    assert fleet.inside("orin-reject", CANDIDATE) is None
    assert fleet.sha("orin-reject", UNIT) == unit_before
    assert fleet.main_pid("orin-reject") == pid
    assert not fleet.hosts["orin-reject"].path(FACT).exists()

    # The same host as an Orin Nano (its device files): EAGLE-3 and drafts are refused there, but the memory-free
    # ngram, asked for by name, is planned like any method (vLLM's default window written out, the utilisation
    # unchanged) and would be verified by the benchmark; check mode shows it and changes nothing.
    nano = fleet.hosts["orin-reject"].path("/opt/jetson-identity-nano")
    if not nano.exists():
        shutil.copytree(nspawn.FIXTURES / "orin-nano-8gb-super", nano, symlinks=True)
    _rc, out = fleet.play("orin-reject", check=True,
                          extra={"jetson_spec_facts_root": "/opt/jetson-identity-nano", "jetson_spec_method": "ngram"})
    planned = re.search(r'^\+ExecStart=\S.*"--speculative-config" (\S+)', out, re.M)
    assert planned, "check mode did not show the ngram overlay on the Nano:\n" + out[-3000:]
    config = json.loads(json.loads(planned.group(1)))
    assert config == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5,
                      "prompt_lookup_min": 5}, config
    assert "asked for by name" in " ".join(out.split())
    assert fleet.inside("orin-reject", CANDIDATE) is None
    assert fleet.sha("orin-reject", UNIT) == unit_before
    assert fleet.main_pid("orin-reject") == pid


# --- reject ------------------------------------------------------------------------------------------
# draft-heavy, not draft-perfect: a copy of the target gains 5 to 40 % at c=1 on an AVX-512 BF16 / AMX CPU,
# around the 30 % bar (docs/performance.md), so its verdict depends on the machine; this one is a reject anywhere.
# The host declares the test bed's shift between phases (aa_probe.py: about 8 %) and reverts what is not shown;
# -73 % is far beyond both, so the verdict is still a reject shown by the (wider) intervals.
# max_ttft_increase at its largest (10 = +1000 %): the rule is on and passed to the verdict, without deciding it.
REJECT_VARS = {"jetson_spec_draft_model": str(MODELS / "draft-heavy"), "jetson_spec_benchmark": SHORT_WORKLOAD,
               "jetson_spec_phase_shift": {"c1": 0.08, "c8": 0.08}, "jetson_spec_decide_undetermined": "undetermined",
               "jetson_spec_max_ttft_increase": 10}


def test_reject_restores_the_unit_byte_for_byte_and_serves_again(fleet):
    unit_before = fleet.read("orin-reject", UNIT)
    pid_before, calls = fleet.main_pid("orin-reject"), fleet.lb_calls("orin-reject")
    # With the oldest ansible-core this collection supports (the newest runs the bad-vocabulary revert).
    _rc, _out = fleet.play("orin-reject", extra={**REJECT_VARS, **HOOK_VARS}, core="2.18")
    fact = fleet.fact("orin-reject")
    assert fact["status"] == "reverted", fact["reasons"]
    assert fact["verdict"] == "reject", fact["reasons"]
    assert any("phase_shift: 8.0 % at concurrency 1, 8.0 % at concurrency 8" in r for r in fact["reasons"]), \
        fact["reasons"]
    assert fact["deltas"]["acceptance_rate"] > 0.9, "the draft is exact: reverted for its cost, not its acceptance"
    assert any(r.startswith("TTFT p50 changed ") and r.endswith("; max_ttft_increase 1000.0 % at concurrency 1.")
               for r in fact["reasons"]), fact["reasons"]
    assert fleet.read("orin-reject", UNIT) == unit_before
    assert "speculative-config" not in fleet.cmdline("orin-reject")
    assert healthy("orin-reject")
    assert fact["revert_check"]["ratio"] > 0
    fleet.assert_no_overlay("orin-reject")
    assert fact["service_sha256"] == fleet.baseline_sha("orin-reject")
    # Back in its load balancer after the revert, serving the restored service.
    fleet.assert_drained_around_the_change("orin-reject", pid_before, calls)


def test_refusals_change_nothing(fleet):
    unit_before = fleet.sha("orin-reject", UNIT)
    pid = fleet.main_pid("orin-reject")
    nano = fleet.hosts["orin-reject"].path("/opt/jetson-identity-nano")
    if not nano.exists():
        shutil.copytree(nspawn.FIXTURES / "orin-nano-8gb-super", nano, symlinks=True)
    # One refusal with each of the oldest and newest ansible-core this collection supports.
    for extra, words, core in (
        ({"jetson_spec_facts_root": "/opt/jetson-identity-nano"}, "Orin Nano", "2.18"),
        ({"jetson_spec_expected_concurrency": 8}, "concurrency", "2.21"),
    ):
        _rc, out = fleet.play("orin-reject", extra={"jetson_spec_draft_model": str(MODELS / "draft-perfect"),
                                                    "jetson_spec_fact_file": "/etc/ansible/facts.d/refusal.fact", **extra},
                              core=core)
        fact = json.loads(fleet.read("orin-reject", "/etc/ansible/facts.d/refusal.fact"))
        assert fact["status"] == "refused"
        assert words in " ".join(fact["reasons"]), fact["reasons"]
        assert fact["handoff"]["actions"], "a refusal names what to try next"
        assert "REFUSED" in out
        assert fleet.sha("orin-reject", UNIT) == unit_before
        assert fleet.main_pid("orin-reject") == pid


def test_an_orin_nano_asked_for_ngram_runs_it_on_real_vllm_and_the_benchmark_decides(fleet):
    """The Nano refuses EAGLE-3 and drafts (above), but ngram (no draft weights), asked for by name, is started and
    measured like any method: real vLLM serves with prompt lookup (its counters move), at the baseline's utilisation.
    The bar is set out of reach (1000 %) so the verdict reverts whatever this CPU measures, and the host ends on its
    baseline, byte for byte, with the record saying so."""
    fact_file = "/etc/ansible/facts.d/nano-ngram.fact"
    unit_before = fleet.read("orin-reject", UNIT)
    nano = fleet.hosts["orin-reject"].path("/opt/jetson-identity-nano")
    if not nano.exists():
        shutil.copytree(nspawn.FIXTURES / "orin-nano-8gb-super", nano, symlinks=True)
    _rc, out = fleet.play("orin-reject", extra={
        "jetson_spec_facts_root": "/opt/jetson-identity-nano", "jetson_spec_method": "ngram",
        "jetson_spec_benchmark": SHORT_WORKLOAD, "jetson_spec_fact_file": fact_file,
        "jetson_spec_min_throughput_gain": 10.0, "jetson_spec_tune_max_steps": 0})
    fact = json.loads(fleet.read("orin-reject", fact_file))
    assert fact["status"] == "reverted", fact["reasons"]
    attempt = fact["attempts"][0]
    assert attempt["healthy"] is True, attempt
    assert attempt["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5,
                                             "prompt_lookup_min": 5}, attempt
    assert float(attempt["gpu_memory_utilization"]) == float(fact["baseline_gpu_memory_utilization"]), attempt
    assert "asked for by name" in " ".join(out.split()), "the run did not warn that ngram was tried on the Nano"
    candidate = json.loads(fleet.read("orin-reject", "/var/lib/jetson_llm/speculative/vllm.candidate.json"))
    c1 = [r for r in candidate["runs"] if r["concurrency"] == 1][0]
    assert c1["spec_decode"] and c1["spec_decode"]["drafts"] > 0, "the candidate did not speculate with ngram"
    assert fleet.read("orin-reject", UNIT) == unit_before
    fleet.assert_no_overlay("orin-reject")
    assert_record_is_reality(fleet, "orin-reject", fact_file)
    assert healthy("orin-reject")


def test_a_host_without_the_vllm_service_is_skipped_with_a_reason_and_rc_0(fleet):
    fact_file = "/etc/ansible/facts.d/nosuch.fact"
    _rc, out = fleet.play("orin-reject", extra={"test_run_serve": False, "vllm_service_name": "nosuch",
                                                "jetson_spec_fact_file": fact_file,
                                                "jetson_spec_draft_model": str(MODELS / "draft-perfect")})
    fact = json.loads(fleet.read("orin-reject", fact_file))
    assert fact["status"] == "skipped" and "no vLLM service nosuch" in " ".join(fact["reasons"]), fact
    assert "SKIPPED" in out
    assert not fleet.hosts["orin-reject"].path("/etc/systemd/system/nosuch.service").exists()


def test_a_power_mode_or_clock_change_is_a_new_baseline_and_the_run_says_so(fleet):
    """MAXN -> 15 W (nvpmodel), or the clocks locked by jetson_clocks, between two runs: the recorded outcome no
    longer holds (check mode: no benchmark). The fixture root has no /sys, so the recorded clock state is unknown
    (left out of the fingerprint); sysfs files shaped as a Jetson's make it known."""
    status = fleet.hosts["orin-reject"].path(nspawn.IDENTITY_DIR + "/var/lib/nvpmodel/status")
    sysfs = fleet.hosts["orin-reject"].path(nspawn.IDENTITY_DIR + "/sys")
    before = status.read_text()
    assert before.startswith("pmode:0000") and not sysfs.exists()
    pid = fleet.main_pid("orin-reject")
    try:
        _rc, out = fleet.play("orin-reject", extra=REJECT_VARS, check=True)
        assert "in_sync" in out, "the same run is in sync before the change"
        status.write_text("pmode:0001 fmode:quiet\n")
        _rc, out = fleet.play("orin-reject", extra=REJECT_VARS, check=True)
        # (the debug message is printed as JSON: its quotes are escaped)
        assert 'verify - ' in out and 'baseline.power_mode \\"MAXN\\" -> \\"MODE_15W\\"' in out, out[-3000:]
        status.write_text(before)
        # sudo jetson_clocks: every CPU's minimum frequency raised to its maximum.
        for cpu in range(2):
            cpufreq = sysfs / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"
            cpufreq.mkdir(parents=True)
            (cpufreq / "scaling_min_freq").write_text("2201600\n")
            (cpufreq / "scaling_max_freq").write_text("2201600\n")
        _rc, out = fleet.play("orin-reject", extra=REJECT_VARS, check=True)
        assert 'verify - ' in out and "baseline.clocks_locked null -> true" in out, out[-3000:]
        assert "baseline.power_mode" not in out
    finally:
        status.write_text(before)
        shutil.rmtree(sysfs, ignore_errors=True)
    assert fleet.main_pid("orin-reject") == pid


# --- draft weights staged from a mirror before the change -------------------------------------------
class MirrorHandler(http.server.BaseHTTPRequestHandler):
    """A site mirror: the test bed's model directories, each with a SHA256SUMS made from its files; with
    ``server.corrupt`` set, that file is served with one byte changed (as a bad disk or a half-synced mirror would)."""

    def log_message(self, *args):
        pass

    def _body(self):
        name, _sep, rel = self.path.lstrip("/").partition("/")
        root = MODELS / name
        if not name or not root.is_dir() or ".." in rel.split("/"):
            return None
        if rel == "SHA256SUMS":
            return "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(root)}\n"
                           for p in sorted(root.rglob("*")) if p.is_file()).encode()
        path = root / rel
        if not path.is_file():
            return None
        data = path.read_bytes()
        if self.server.corrupt == f"{name}/{rel}":
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    def _answer(self, head):
        data = self._body()
        self.server.requests.append((self.command, self.path))
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self._answer(False)

    def do_HEAD(self):  # noqa: N802
        self._answer(True)


@pytest.fixture
def mirror():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    server.daemon_threads = True
    server.corrupt = None
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/"
    yield server
    server.shutdown()
    server.server_close()


STAGED = "/var/lib/jetson_llm/models/draft-random"


def test_a_draft_staged_from_a_mirror_is_checked_before_any_restart_and_real_vllm_starts_from_it(fleet, mirror):
    """jetson_spec_stage: the draft comes from a site mirror over HTTP (a real server on the loopback; the hosts share
    this machine's network), checked file by file against the mirror's SHA256SUMS before the service is touched. A
    corrupt copy fails the run before any restart (the host serves as before, nothing is left staged); a good one is
    staged and real vLLM starts the candidate from the staged directory (the random draft: reverted, as sure as the
    ngram run above). Its own fact file, as the ngram run."""
    name, fact_file = "orin-reject", "/etc/ansible/facts.d/staged.fact"
    host = fleet.hosts[name]
    stage_vars = {"jetson_spec_draft_model": STAGED, "jetson_spec_stage": {"draft_model": mirror.url + "draft-random/"},
                  "jetson_spec_benchmark": SHORT_WORKLOAD, "jetson_spec_fact_file": fact_file,
                  "jetson_spec_min_throughput_gain": 10.0, "jetson_spec_tune_max_steps": 0}
    unit_before, pid = fleet.read(name, UNIT), fleet.main_pid(name)
    mirror.corrupt = "draft-random/model.safetensors"
    rc, out = fleet.play(name, extra=stage_vars, expect_rc=2)
    assert rc == 2
    flat = " ".join(out.split())
    assert "draft-random/model.safetensors has SHA-256 " in flat and "a corrupt or changed copy, refused" in flat, \
        out[-3000:]
    fact = json.loads(fleet.read(name, fact_file))
    assert fact["status"] == "failed" and any("a corrupt or changed copy, refused" in r for r in fact["reasons"]), fact
    assert fleet.main_pid(name) == pid, "the service was restarted for a draft that was never staged"
    assert fleet.read(name, UNIT) == unit_before
    fleet.assert_no_overlay(name)
    assert not host.path(STAGED).exists()
    assert not [p for p in host.path(STAGED).parent.iterdir() if ".partial-" in p.name]
    assert ("GET", "/draft-random/SHA256SUMS") in mirror.requests

    mirror.corrupt, mirror.requests[:] = None, []
    _rc, out = fleet.play(name, extra=stage_vars)
    fact = json.loads(fleet.read(name, fact_file))
    assert fact["status"] == "reverted", fact["reasons"]
    attempt = fact["attempts"][0]
    assert attempt["healthy"] is True and attempt["speculative_config"]["model"] == STAGED, attempt
    for path in (MODELS / "draft-random").iterdir():
        assert host.path(f"{STAGED}/{path.name}").read_bytes() == path.read_bytes(), path.name
    assert ("GET", "/draft-random/model.safetensors") in mirror.requests
    candidate = json.loads(fleet.read(name, "/var/lib/jetson_llm/speculative/vllm.candidate.json"))
    assert candidate["runs"][0]["spec_decode"]["drafts"] > 0, "the candidate did not speculate with the staged draft"
    assert fleet.read(name, UNIT) == unit_before
    fleet.assert_no_overlay(name)
    assert_record_is_reality(fleet, name, fact_file)
    assert healthy(name)


# --- start-up failures, a bad draft, a killed controller --------------------------------------------
def test_draft_with_another_vocabulary_is_classified_config_rejected_and_reverted(fleet):
    unit_before = fleet.read("thor-faults", UNIT)
    _rc, out = fleet.play("thor-faults", extra={"jetson_spec_draft_model": str(MODELS / "draft-badvocab"),
                                                "jetson_spec_benchmark": SHORT_WORKLOAD,
                                                "jetson_spec_fact_file": "/etc/ansible/facts.d/badvocab.fact"},
                          core="2.21")
    fact = json.loads(fleet.read("thor-faults", "/etc/ansible/facts.d/badvocab.fact"))
    assert fact["status"] == "reverted", fact["reasons"]
    # The page cache is dropped before the candidate starts (a Jetson identity: jetson_spec_drop_caches auto), and
    # the attempt records MemAvailable before and after; an nspawn host's /proc/sys is read-only, and the run says so.
    memory = fact["attempts"][0]["memory"]
    assert memory["available_before_mb"] > 0 and memory["available_after_mb"] > 0, memory
    assert memory["page_cache_dropped"] is (fleet.hosts["thor-faults"].nsenter(
        ["sh", "-c", "test -w /proc/sys/vm/drop_caches"], check=False).returncode == 0), memory
    assert ("MB before dropping the page cache" if memory["page_cache_dropped"]
            else "The page cache could not be dropped") in out
    assert fact["attempts"][0]["failure"] == "config_rejected"
    assert "same vocabulary size" in fact["attempts"][0]["evidence"], fact["attempts"][0]
    assert len(fact["attempts"]) == 1, "a rejected config is not retried"
    assert fleet.read("thor-faults", UNIT) == unit_before
    assert healthy("thor-faults")


# Suffix decoding refused at start-up (no arctic-inference on the CPU test bed) takes this same path; its real
# vLLM text is classified in test_vllm_startup_real.py, its plan (no draft, no lower utilisation) is a unit test.


def test_controller_killed_mid_change_the_guard_restores_the_previous_service(fleet):
    host = fleet.hosts["thor-faults"]
    unit_before = fleet.read("thor-faults", UNIT)
    guard = 60  # the shortest allowed, so the test does not wait long; the start-up timeout stays the role's (420 s here)
    cmd = [str(BIN / "ansible-playbook"), "-i", str(fleet.inventory), str(PLAYBOOK), "--limit", "thor-faults",
           "-e", json.dumps({"jetson_spec_draft_model": str(MODELS / "draft-perfect"), "jetson_spec_guard_timeout": guard,
                             "jetson_spec_force_verify": True, "jetson_spec_benchmark": SHORT_WORKLOAD})]
    # Kill the controller as soon as the speculative overlay is in place and restarted.
    kill_playbook_when(
        cmd, OUT / "killed-controller.log",
        lambda _out: "speculative-config" in (fleet.inside("thor-faults", CANDIDATE) or "")
        and "speculative-config" in fleet.cmdline("thor-faults"),
        "the speculative service", 600)
    # The killed run left its trace: a change in flight.
    assert fleet.fact("thor-faults")["status"] == "pending"
    # Nobody is left to revert: the guard must, within its timeout plus a restart.
    deadline = time.monotonic() + guard + 300
    while time.monotonic() < deadline:
        if fleet.inside("thor-faults", CANDIDATE) is None and healthy("thor-faults") \
                and "speculative-config" not in fleet.cmdline("thor-faults"):
            break
        time.sleep(2)
    else:
        diag = "\n".join(host.nsenter(cmd, check=False).stdout[-3000:] for cmd in (
            ["systemctl", "list-timers", "--all", "--no-pager"],
            ["journalctl", "--no-pager", "-o", "short-monotonic", "-u", "jetson-spec-guard-vllm.service",
             "-u", "jetson-spec-guard-vllm.timer"],
            ["systemctl", "status", "--no-pager", "vllm.service"],
            ["journalctl", "--no-pager", "-o", "short-monotonic", "-n", "60", "_PID=1"]))
        pytest.fail(f"the guard did not restore the previous service:\n{diag}")
    # It was the guard (a transient unit of the host's systemd), not anything else, that restored it.
    journal = host.nsenter(["journalctl", "--no-pager", "-o", "cat", "_PID=1"]).stdout
    assert "jetson_llm.vllm guard for vllm" in journal, "the guard never ran"
    # The next run finds a consistent host: the interrupted change is recorded as reverted, nothing is pending.
    _rc, out = fleet.play("thor-faults", extra={"jetson_spec_draft_model": str(MODELS / "draft-perfect"),
                                                "jetson_spec_benchmark": SHORT_WORKLOAD, "jetson_spec_state": "disabled"})
    fact = fleet.fact("thor-faults")
    assert fact["status"] in ("reverted", "disabled")
    assert "stopped in the middle of the change" in out
    assert fleet.read("thor-faults", UNIT) == unit_before
    fleet.assert_no_overlay("thor-faults")
    assert healthy("thor-faults")


def test_controller_killed_during_the_candidate_benchmark_the_next_run_rolls_it_back_at_once(fleet):
    """No waiting for the guard: the next run rolls the running candidate back itself, decides again and records
    what runs, in one run. (That it then verifies again in the same run: the reboot test below.)"""
    host = fleet.hosts["thor-faults"]
    unit_before = fleet.read("thor-faults", UNIT)
    extra = {"jetson_spec_draft_model": str(MODELS / "draft-perfect"), "jetson_spec_tune_max_steps": 0,
             "jetson_spec_benchmark": SHORT_WORKLOAD, **HOOK_VARS}
    cmd = [str(BIN / "ansible-playbook"), "-i", str(fleet.inventory), str(PLAYBOOK), "--limit", "thor-faults",
           "-e", json.dumps(extra)]
    killed = kill_playbook_when(cmd, OUT / "killed-controller-candidate.log",
                                lambda out: "Benchmark the running service (candidate)" in out,
                                "the candidate benchmark", 900)
    # The previous change on this host was interrupted (recorded as not settled), so this run verified again. (Whether
    # it re-used the baseline the guard test stored depends on the order the tests run in: not asserted here.)
    assert fleet.fact("thor-faults")["status"] == "pending"
    assert "speculative-config" in fleet.cmdline("thor-faults")
    guard = host.nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False).stdout.strip()
    assert guard == "active", "the guard is armed while the candidate runs"
    # Out of its load balancer, and the host says so, until a run puts it back.
    assert fleet.lb_down("thor-faults") and fleet.inside("thor-faults", DRAIN_MARKER) is not None
    calls = fleet.lb_calls("thor-faults")
    assert calls[-1][0] == "drain", calls
    # Check mode on the interrupted host: it says what it would do and changes nothing.
    pid = fleet.main_pid("thor-faults")
    _rc, out = fleet.play("thor-faults", extra=extra, check=True)
    assert "resume - A previous run stopped in the middle of the change" in out, out[-3000:]
    assert fleet.fact("thor-faults")["status"] == "pending" and fleet.main_pid("thor-faults") == pid
    assert fleet.lb_calls("thor-faults") == calls and fleet.inside("thor-faults", DRAIN_MARKER) is not None, \
        "check mode ran a hook or removed the drain marker"
    # At once, as soon as the operator sees it, speculation switched off: the candidate is rolled back by this run
    # (the guard, armed for 900 s, never fired), and the record says what runs.
    _rc, out = fleet.play("thor-faults", extra={**extra, "jetson_spec_state": "disabled"})
    assert "A previous run stopped in the middle of the change" in out
    fact = assert_record_is_reality(fleet, "thor-faults")
    assert fact["status"] in ("reverted", "disabled"), fact["reasons"]
    assert "speculative-config" not in fleet.cmdline("thor-faults") and fleet.main_pid("thor-faults") != pid
    assert "changed: [thor-faults]" in task_output(out, "speculative_decoding : Remove the speculative overlay"), \
        "this run did not remove the candidate itself:\n" + out[-4000:]
    guard = host.nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False).stdout.strip()
    assert guard != "active", "the guard of the interrupted run is still armed"
    assert healthy("thor-faults")
    assert fleet.read("thor-faults", UNIT) == unit_before
    fleet.assert_no_overlay("thor-faults")
    # The interrupted run's drain is undone by this one, after its last restart (the host stayed out meanwhile; it
    # drains again, idempotent, when what it decides after the roll-back restarts vLLM).
    assert "puts it back at the end of its next run on this host" in out, out[-3000:]
    new = fleet.lb_calls("thor-faults")[len(calls):]
    assert new[-1] == ("undrain", fleet.main_pid("thor-faults")) and [c[0] for c in new[:-1]] in ([], ["drain"]), new
    assert not fleet.lb_down("thor-faults") and fleet.inside("thor-faults", DRAIN_MARKER) is None


# --- what operators do: their own drop-in, a reboot in the middle of a change ------------------------
FAULTS_VARS = {"test_run_serve": False, "jetson_spec_draft_model": str(MODELS / "draft-perfect"),
               "jetson_spec_tune_max_steps": 0, "jetson_spec_benchmark": SHORT_WORKLOAD}
OPERATOR_DROP_IN = "/etc/systemd/system/vllm.service.d/override.conf"


def wait_healthy(fleet, name, timeout=420):
    deadline = time.monotonic() + timeout
    while not healthy(name):
        assert time.monotonic() < deadline, fleet.hosts[name].nsenter(
            ["systemctl", "status", "--no-pager", "vllm.service"], check=False).stdout[-2000:]
        time.sleep(2)


def test_an_operator_drop_in_is_the_baseline_and_a_reboot_mid_change_is_resumed_in_the_next_run(fleet):
    """Two rows of the issue in one pass over thor-faults (one verification instead of two):
    systemctl edit's override.conf resetting ExecStart to the same command plus a flag, then a reboot
    while the candidate built on it is benchmarked."""
    name = "thor-faults"
    unit_before = fleet.read(name, UNIT)
    raw = _overlay.read_baseline(str(fleet.hosts[name].root), "vllm", UNIT)["exec_start_raw"]
    text = f"[Service]\nExecStart=\nExecStart={raw} --max-num-seqs 4\n"
    fleet.hosts[name].path(OPERATOR_DROP_IN).write_text(text)
    try:
        restart_by_hand(fleet, name)
        assert "--max-num-seqs 4" in fleet.cmdline(name) and "speculative-config" not in fleet.cmdline(name)
        cmd = [str(BIN / "ansible-playbook"), "-i", str(fleet.inventory), str(PLAYBOOK), "--limit", name,
               "-e", json.dumps({**FAULTS_VARS, "jetson_spec_force_verify": True})]
        kill_playbook_when(cmd, OUT / "killed-before-reboot.log",
                           lambda out: "Benchmark the running service (candidate)" in out, "the candidate benchmark", 900)
        # The candidate runs: the overlay (which sorts after override.conf) won, and it kept the operator's flag.
        running = fleet.cmdline(name)
        assert "speculative-config" in running and "--max-num-seqs 4" in running, running
        assert "--max-num-seqs 4" in (fleet.inside(name, CANDIDATE) or "")
        fleet.reboot(name)
        # Nothing but the host's own boot ran: /run is empty again, so systemd starts the baseline.
        wait_healthy(fleet, name)
        assert fleet.inside(name, CANDIDATE) is None and fleet.inside(name, OVERLAY) is None
        running = fleet.cmdline(name)
        assert "speculative-config" not in running and "--max-num-seqs 4" in running, running
        assert fleet.fact(name)["status"] == "pending"
        # The next run resumes (nothing to roll back) and verifies again, in that same run.
        _rc, out = fleet.play(name, extra=FAULTS_VARS)
        assert "A previous run stopped in the middle of the change" in out
        assert "Benchmark the running service (candidate)" in out, "the change was not tried again in the same run"
        fact = assert_record_is_reality(fleet, name)
        assert fact["status"] in ("enabled", "reverted"), fact["reasons"]
        assert any("stopped in the middle of the change" in r for r in fact["reasons"]), fact["reasons"]
        # Neither the unit nor the operator's drop-in was written, and the operator's flag runs whatever the verdict.
        assert fleet.read(name, UNIT) == unit_before
        assert fleet.read(name, OPERATOR_DROP_IN).decode() == text, "the operator's drop-in was written"
        assert "--max-num-seqs 4" in fleet.cmdline(name), "the operator's flag is gone from what runs"
        assert fact["service_sha256"] == fleet.baseline_sha(name)
        if fact["status"] == "enabled":
            assert "--max-num-seqs 4" in fleet.inside(name, OVERLAY)
        else:
            fleet.assert_no_overlay(name)
    finally:
        # The operator's drop-in goes; the next scenario's serve run deploys a new unit and restarts the service.
        fleet.hosts[name].path(OPERATOR_DROP_IN).unlink()
        fleet.play(name, extra={**FAULTS_VARS, "jetson_spec_state": "disabled"})


# --- the start-up retry path (thor-faults' last scenario: its unit is left behind the memory simulator) ---
SIMULATOR = "/usr/local/bin/jetson-memory-simulator"
SIMULATOR_CONFIG = "/etc/jetson-memory-simulator.json"


def test_startup_out_of_memory_lowers_then_tries_the_smaller_draft_a_random_one_that_is_reverted(fleet):
    """The start-up retry path, end to end, with the Jetson memory SIMULATOR in front of the real vLLM;
    the smaller draft that finally starts is a bad one (``draft-random``), so the real benchmark rejects it.

    The CPU build cannot run out of GPU memory, so tests/nspawn/jetson_memory_simulator.py (named as a
    simulator; the role tests' other one is the batch simulator of thor-batch) checks each start against a simulated 32 GiB unified memory and
    prints vLLM's own error text when it would fail; otherwise it execs the real vLLM unchanged.
    Sizes scale with the models' bytes on disk (target 1.5 GiB, draft-deep-1layer 5.7, draft-random
    1.5): the large draft fails vLLM's free-memory check at 0.70 and its KV-cache check at 0.65; the
    smaller draft starts at 0.65, is benchmarked like any candidate (acceptance ~0, slower) and the
    host goes back to its previous unit byte for byte.
    """
    host = fleet.hosts["thor-faults"]
    simulator = host.path(SIMULATOR)
    simulator.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TOP / "tests" / "nspawn" / "jetson_memory_simulator.py", simulator)
    simulator.chmod(0o644)
    target_bytes = (MODELS / "target" / "model.safetensors").stat().st_size
    assert (MODELS / "draft-random" / "model.safetensors").stat().st_size == target_bytes
    host.path(SIMULATOR_CONFIG).write_text(json.dumps({
        "total_gib": 32, "other_used_gib": 3, "activation_gib": 1, "kv_cache_needed_gib": 14,
        "gib_per_byte_on_disk": 1.5 / target_bytes}))
    through_simulator = {"vllm_native_command": ["/usr/bin/python3", SIMULATOR, "--config", SIMULATOR_CONFIG, "--",
                                                 str(TESTBED / "venv" / "bin" / "vllm"), "serve"]}
    fact_file = "/etc/ansible/facts.d/oom.fact"
    # The baseline (0.75, no draft) passes the simulated checks: the serve role restarts it behind the simulator.
    fleet.play("thor-faults", extra={**through_simulator, "test_run_speculative": False})
    assert healthy("thor-faults")
    assert "--max-num-seqs" not in fleet.cmdline("thor-faults"), "the previous scenario's operator drop-in still runs"
    unit_before = fleet.read("thor-faults", UNIT)
    assert SIMULATOR.encode() in unit_before

    fleet.play("thor-faults", extra={
        **through_simulator, "jetson_spec_fact_file": fact_file, "jetson_spec_benchmark": SHORT_WORKLOAD,
        "jetson_spec_draft_model": str(MODELS / "draft-deep-1layer"),
        "jetson_spec_smaller_draft_model": str(MODELS / "draft-random")})
    fact = json.loads(fleet.read("thor-faults", fact_file))
    attempts = fact["attempts"]
    assert [a["failure"] for a in attempts] == ["oom", "kv_cache", None], attempts
    assert [float(a["gpu_memory_utilization"]) for a in attempts] == [0.70, 0.65, 0.65], attempts
    drafts = ("draft-deep-1layer", "draft-deep-1layer", "draft-random")
    assert [a["speculative_config"]["model"] for a in attempts] == [str(MODELS / m) for m in drafts]
    assert "on startup is less than desired GPU memory utilization" in attempts[0]["evidence"], attempts[0]
    assert "larger than the available KV cache memory" in attempts[1]["evidence"], attempts[1]
    assert attempts[2]["healthy"] is True
    assert "failed to start: oom" in attempts[0]["summary"] and "healthy after" in attempts[2]["summary"]
    assert "SIMULATED" in host.nsenter(["journalctl", "--no-pager", "-o", "cat", "-u", "vllm.service"]).stdout
    # Attempt 3 was the real vLLM with a random draft, measured by the real benchmark: rejected and reverted.
    assert fact["candidate"], "the third attempt was benchmarked"
    assert fact["status"] == "reverted", fact["reasons"]
    assert fact["verdict"] == "reject", fact["reasons"]
    assert fact["deltas"]["acceptance_rate"] is None or fact["deltas"]["acceptance_rate"] < 0.3, fact["deltas"]
    assert fleet.read("thor-faults", UNIT) == unit_before
    assert "speculative-config" not in fleet.cmdline("thor-faults")
    assert healthy("thor-faults")


# This verdict's 5 % tolerance at c=8, like every verdict of this file, is measured with nothing else running: make
# test runs the timed files alone (tests/utils/run_suites.sh, Makefile's INTEGRATION_TIMED).
# The kept branch of the same loop, on the one SIMULATED host (thor-batch; the CPU test bed cannot show it,
# above). Its "vllm" (tests/nspawn/jetson_batch_simulator.py) runs steps as vLLM's scheduler does, with a
# Jetson-like speed model: a step reads the weights once (20 ms) and costs 4 ms per token it verifies, so a
# lone request gains from K = 4 drafted tokens, each accepted with probability 0.8 until the first rejection
# (vLLM's acceptance rate 0.59, 3.36 tokens per step: +58 % tok/s), while a batch of 8 verifying 5 tokens
# each, with the draft's passes over 8 requests, loses (-18 %). Measured through the simulator with a plain
# client (6 and 16 prompts):
# c=1 41.0 / 62.9 / 66.2 tok/s, c=8 149.6 / 121.9 / 149.4 for baseline / planned K=4 / batch-size-aware N=4.
# Everything else is real: the roles through ansible-playbook, the host's systemd, the unit, the guard,
# vllm_benchmark's HTTP measurements, the verdict. The host allows a 5 % loss at c=8 (c8_tolerance, as thor-accept's batch-size-aware run): the
# batch-size-aware configuration is the baseline at c=8 within the host's phase-to-phase noise, and a
# zero tolerance would make the outcome a coin flip on that noise.
BATCH_SIM_VARS = {"jetson_spec_draft_model": str(MODELS / "draft-deep-1layer"), "jetson_spec_c8_tolerance": 0.05}


def sim_steps(name):
    """{batch size: {K: steps}} the batch simulator of ``name`` ran since it started."""
    steps = json.loads(get(name, "/_sim/steps"))["steps"]
    return {int(b): {int(k): n for k, n in ks.items()} for b, ks in steps.items()}


def test_simulated_jetson_keeps_batch_size_aware_speculation_when_c8_regresses(fleet):
    baseline_unit = fleet.read("thor-batch", UNIT)
    assert b"/opt/jetson-batch-simulator/bin/vllm" in baseline_unit and b"speculative-config" not in baseline_unit
    # The oldest supported ansible-core: its keep path (the real-vLLM keep runs with the newest).
    _rc, out = fleet.play("thor-batch", extra=BATCH_SIM_VARS, core="2.18")
    fact = fleet.fact("thor-batch")
    batch = fact["batch_aware"]
    assert batch is not None, f"the planned configuration did not pass at c=1 and regress at c=8: {fact['reasons']}"
    # The planned configuration (K = 4 at every batch size): a c=1 gain and a c=8 loss the intervals show.
    assert any(r.startswith("The planned configuration passed at concurrency 1 but regressed at concurrency 8")
               and "tried speculating only up to 4 requests" in r and "kept" in r for r in fact["reasons"]), fact["reasons"]
    assert batch["max_batch"] == 4 and batch["limit_reason"] in ("", None), batch
    assert batch["tried"] is True and batch["healthy"] is True, batch
    # ... kept: both rules pass once speculation stops above 4 requests at a time.
    assert batch["kept"] is True, fact["reasons"]
    assert fact["status"] == "enabled" and fact["verdict"] == "accept", fact["reasons"]
    assert batch["deltas"]["throughput_gain_c1"] >= 0.30 and batch["deltas"]["tpot_reduction_c1"] >= 0.20, batch
    assert batch["deltas"]["throughput_change_c8"] > -0.05, batch
    ranges = [[1, 4, 4], [5, 65536, 0]]
    assert fact["speculative_config"]["num_speculative_tokens_per_batch_size"] == ranges, fact["speculative_config"]
    assert fact["deltas"] == batch["deltas"], "the record judges by the kept (batch-size-aware) measurement"
    unit = fleet.inside("thor-batch", OVERLAY) or ""
    assert "num_speculative_tokens_per_batch_size" in unit and '"--gpu-memory-utilization" "0.7"' in unit, unit
    assert "num_speculative_tokens_per_batch_size" in fleet.cmdline("thor-batch")
    assert fact["service_sha256"] == fleet.baseline_sha("thor-batch")
    assert fact["tuning"] is None, "K tuning does not run on a batch-size-aware configuration"
    assert fleet.read("thor-batch", UNIT) == baseline_unit
    # What served since that start really is the kept configuration: K = 4 for a lone request, no
    # speculation in a batch of 8 (the simulator counts its steps by batch size and K).
    steps = sim_steps("thor-batch")
    assert steps.get(1, {}).get(4, 0) > 0 and set(steps[1]) == {4}, steps
    assert steps.get(8, {}).get(0, 0) > 0 and all(set(steps[b]) == {0} for b in steps if b > 4), steps
    state = fleet.hosts["thor-batch"].nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() != "active", "the guard was not disarmed"
    assert healthy("thor-batch")
    assert "ENABLED" in out
    fleet.assert_second_run_changes_nothing("thor-batch", BATCH_SIM_VARS)


def test_a_failure_after_the_change_whose_revert_fails_too_keeps_both_causes_and_says_what_to_do(fleet):
    """The one path no real component can be made to take on purpose: the change fails and so does the revert.

    Faults planted in thor-batch's SIMULATOR (tests/nspawn/jetson_batch_simulator.py, its profile's fault_* keys):
    its engine dies after a few steps with speculation (the candidate benchmark fails), and a start without
    --speculative-config fails (the previous service cannot come back). Last in the file: thor-batch is left with its
    guard armed, as a host whose revert failed is.
    """
    host = fleet.hosts["thor-batch"]
    profile = host.path("/etc/jetson-batch-simulator.json")
    # From the kept batch-size-aware change of the test above to a host without speculation, then a new verification.
    fleet.play("thor-batch", extra={**BATCH_SIM_VARS, "jetson_spec_state": "disabled"})
    assert "speculative-config" not in fleet.cmdline("thor-batch") and healthy("thor-batch")
    unit_before = fleet.read("thor-batch", UNIT)
    profile.write_text(json.dumps({**BATCH_SIMULATOR_PROFILE, "fault_crash_after_speculative_steps": 40,
                                   "fault_start_fails_without_speculation": True}))
    try:
        _rc, out = fleet.play("thor-batch", extra={**BATCH_SIM_VARS, **HOOK_VARS, "jetson_spec_tune_max_steps": 0},
                              expect_rc=2)
    finally:
        profile.write_text(json.dumps(BATCH_SIMULATOR_PROFILE))
    fact = fleet.fact("thor-batch")
    assert fact["status"] == "failed", fact
    reasons = fact["reasons"]
    # The cause first (the candidate benchmark), not the revert's failure that came after it.
    first = [r for r in reasons if r.startswith('Task "')]
    assert len(first) == 1 and first[0].startswith('Task "Benchmark the running service'), reasons
    revert = [r for r in reasons if r.startswith("REVERT FAILED")]
    assert len(revert) == 1, reasons
    # The revert's own task and message: the restored service never came up (the simulator's planted fault).
    assert revert[0].startswith('REVERT FAILED (task "Wait until the service serves the model'), revert
    assert "is not healthy" in revert[0], revert
    assert revert[0].endswith("then restart vllm."), revert
    assert "The previous service was restored" not in " ".join(reasons)
    assert "REVERT FAILED" in out and first[0][:60] in out, "the run's failure message shows both"
    # Not put back in its load balancer: the host cannot serve; the reasons say so, the drain stays noted.
    assert any("stays out of service (the undrain hook was not run)" in r for r in reasons), reasons
    assert fleet.lb_down("thor-batch") and fleet.inside("thor-batch", DRAIN_MARKER) is not None
    # The guard is still armed: the host keeps trying to restore itself.
    state = host.nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() == "active", "the guard must stay armed when the revert failed"
    # What the message tells the operator works (the fault is gone now): remove the overlays, restart.
    paths = re.search(r"remove (\S+) and (\S+), then restart", revert[0]).groups()
    assert CANDIDATE in paths and OVERLAY in paths, paths
    host.nsenter(["rm", "-f", *paths])
    host.nsenter(["systemctl", "daemon-reload"])
    host.nsenter(["systemctl", "restart", "vllm.service"])
    deadline = time.monotonic() + 60
    while not healthy("thor-batch") and time.monotonic() < deadline:
        time.sleep(1)
    assert healthy("thor-batch") and "speculative-config" not in fleet.cmdline("thor-batch")
    assert fleet.read("thor-batch", UNIT) == unit_before, "the unit itself was never written"
    # The next run, once the operator fixed the host, puts it back in its load balancer.
    fleet.play("thor-batch", extra={**BATCH_SIM_VARS, **HOOK_VARS, "jetson_spec_state": "disabled"})
    assert fleet.lb_calls("thor-batch")[-1] == ("undrain", fleet.main_pid("thor-batch"))
    assert not fleet.lb_down("thor-batch") and fleet.inside("thor-batch", DRAIN_MARKER) is None
