"""The compose path on a real Docker Engine with Compose v2 and a real vLLM: serve, then reject and revert.

Set-up: ``make docker`` (tests/docker/setup.sh): bookworm's docker.io (Engine 20.10, dockerd started in
the background), trixie's Compose v2 and ``localhost/jetson-llm-vllm-testbed:1``, an image imported from
the nspawn root (python3.11, libnuma1, g++, openssl). The container runs the test bed's vLLM venv and
models (bound from /var/cache/jetson_llm_vllm) with ``runtime: runc`` (no NVIDIA runtime here), on the
host network, port 8221.

Two Ansible hosts manage the SAME compose project (same files, same Docker Engine):

* ``compose-local``: this machine, ``ansible_connection=local``. The serve role runs here, exactly as
  an operator runs it on a Docker host.
* ``compose-guarded``: a systemd-nspawn host (tests/nspawn/fleet.py) sharing this machine's network,
  with the Docker CLI and the Compose plugin bound in read-only and this machine's
  ``/run/docker.sock``, and the test's state directory bound at the same path. The speculative_decoding
  role runs here. Why: the role's guard (confirmed commit) is a transient systemd timer armed with
  ``systemd-run``; this machine's PID 1 is not systemd (``ps -p 1``), so ``systemd-run`` cannot work
  on it. In the nspawn host systemd is PID 1: the guard is really armed there, and its restore
  command (``cp`` + ``docker compose ... up``) would run there against the same engine.

The speculative change is an override file of the collection's own in the project directory
(``jetson-llm-speculative-2-candidate.yaml`` until kept, then ``jetson-llm-speculative-1-kept.yaml``), named with
``-f`` after the project's files in every compose call: the compose file is never written. The target is
``target-deep`` in float32 (as the systemd suite's thor-accept: its one-layer draft pays on this CPU).

Workload (shortened; the production default is the specification's): concurrency [1, 8], 8 prompts
per level (+2 warm-up), 128 tokens in, 32 out, temperature 0. In file order:

1. serve deploys the project; then an operator adds a ``compose.override.yaml`` (``--max-num-seqs 8`` and a second
   service), which serve names too (Compose reads it without ``-f``); a second serve run changes nothing;
2. ``draft-deep-1layer`` is kept: the override is committed (the operator's flag in it), serve and the role run again
   without a restart;
3. ``draft-random`` (acceptance ~0, slower) is rejected: the kept override is removed for the baseline, the candidate
   after the verdict, the compose files never written;
4. the controller is SIGKILLed as the revert of a rejected candidate begins (the guard must still be armed), then the
   host reboots: the boot-time guard unit recreates the service from the project's files (the container would
   otherwise keep the candidate's configuration), and the next run resumes at once.
The operator's second service is never recreated.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import BIN, ROLES_PLAYBOOK as PLAYBOOK, TOP, kill_playbook_when, play_roles, recap
from docker_bed import (COMPILE_CACHE, COMPOSE_PLUGIN_DIR, DOCKER_CLI, DOCKER_SOCKET, IMAGE, TESTBED, WORKLOAD,
                        container_vars, docker, nspawn)
# pytest fixture, used by name:
from vllm_testbed import testbed  # noqa: F401  pylint: disable=unused-import

OUT = TOP / "tests" / "output" / "compose"
SERVICE = "vllm-compose-test"
PORT = 8221
API_KEY = "ct-key-Rk4Np8Wd2Hs6"
HF_TOKEN = "hf_ctTokenNeverShown7Bx3"

REVERT_MIN_RATIO = 0.25
# The served model (float32: see tests/integration/test_roles.py, thor-accept) and the drafts.
MODEL = "target-deep"
MODELS = TESTBED / "models"
GOOD_DRAFT = str(MODELS / "draft-deep-1layer")
RANDOM_DRAFT = str(MODELS / "draft-random")
KEPT = "jetson-llm-speculative-1-kept.yaml"
CANDIDATE = "jetson-llm-speculative-2-candidate.yaml"
BOOT_GUARD = f"/etc/systemd/system/jetson-spec-boot-guard-{SERVICE}.service"
SPEC_VARS = {"test_run_serve": False, "jetson_spec_method": "draft_model", "jetson_spec_num_speculative_tokens": 4,
             "jetson_spec_tune_max_steps": 0, "jetson_spec_guard_timeout": 1800, "jetson_spec_benchmark": WORKLOAD,
             "jetson_spec_revert_min_ratio": REVERT_MIN_RATIO,
             # long steps polled every 2 s, so even these short ones show they are alive (asserted once)
             "jetson_spec_progress_interval": 2}


def assert_no_secret(text, where):
    for secret in (API_KEY, HF_TOKEN):
        assert secret not in text, f"a secret appears in {where}"


def get(path, key=API_KEY):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers=headers)
    with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 (loopback only)
        return resp.read().decode()


def healthy():
    try:
        models = json.loads(get("/v1/models"))
    except OSError:
        return False
    return MODEL in [m["id"] for m in models["data"]]


class ComposeBed:
    """The state directory, the two Ansible hosts and the compose project they share."""

    def __init__(self):
        OUT.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="jetson_llm_compose.", dir="/var/tmp"))
        self.tmp.chmod(0o755)
        self.compose_dir = self.tmp / "compose"
        self.config_dir = self.tmp / "etc-vllm"
        self.state_dir = self.tmp / "state"
        self.fact_file = self.tmp / "facts.d" / "jetson_vllm_speculative.fact"
        self.identity = self.tmp / "identity"
        shutil.copytree(nspawn.FIXTURES / "thor-t5000", self.identity, symlinks=True)
        self.project = self.compose_dir / SERVICE
        self.compose_file = self.project / "compose.yaml"
        self.override = self.project / "compose.override.yaml"  # the operator's (test_serve_names_the_operators_...)
        self.env_file = self.config_dir / f"{SERVICE}.env"
        self.inventory = OUT / "inventory.json"
        self.guarded = nspawn.Host("compose-guarded", vllm_port=PORT, extra_binds=(
            f"--bind={self.tmp}",
            f"--bind-ro={DOCKER_CLI}",
            f"--bind-ro={COMPOSE_PLUGIN_DIR}",
            f"--bind={DOCKER_SOCKET}",
        ))
        self.runs = 0

    def host_vars(self):
        return {
            **container_vars(SERVICE, PORT, API_KEY, "runc", self.config_dir),
            "vllm_model": str(MODELS / MODEL),
            "vllm_served_model_name": MODEL,
            "vllm_extra_args": ["--dtype", "float32", "--enforce-eager"],
            "vllm_service_manager": "compose",
            "vllm_hf_token": HF_TOKEN,
            "vllm_compose_dir": str(self.compose_dir),
            "vllm_facts_root": str(self.identity),
            "jetson_spec_facts_root": str(self.identity),
            "jetson_spec_state_dir": str(self.state_dir),
            "jetson_spec_fact_file": str(self.fact_file),
        }

    def up(self):
        COMPILE_CACHE.mkdir(parents=True, exist_ok=True)
        self.guarded.create().boot()
        # The Docker CLI and Compose in the nspawn host talk to this machine's engine.
        version = self.guarded.nsenter(["docker", "compose", "version", "--short"]).stdout.strip()
        assert version, "docker compose does not answer inside the nspawn host"
        self.guarded.nsenter(["docker", "image", "inspect", IMAGE])
        self.write_inventory()

    def write_inventory(self):
        inv = {"all": {"vars": self.host_vars(), "hosts": {
            "compose-local": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"},
            "compose-guarded": self.guarded.inventory_vars(),
        }}}
        self.inventory.write_text(json.dumps(inv, indent=2) + "\n")

    def reboot_guarded(self):
        """Power the Ansible host that runs the role off and boot it again (its systemd shuts down in order, /run
        starts empty). The Docker Engine is this machine's: the container keeps running with the configuration it
        was created with, as dockerd starts a container with a restart policy again after a real reboot."""
        self.guarded.stop(timeout=180)
        self.guarded.boot()
        self.write_inventory()

    def overlay(self, name):
        """This collection's override file ``name`` in the project directory (text), or None."""
        path = self.project / name
        return path.read_text() if path.exists() else None

    def cmd(self):
        return self.inspect()["Config"]["Cmd"]

    def assert_record_is_reality(self):
        fact = self.fact()
        runs = "--speculative-config" in self.cmd()
        assert (fact["status"] == "enabled") == runs, (fact["status"], self.cmd())
        return fact

    def down(self):
        if self.compose_file.exists():
            subprocess.run([DOCKER_CLI, "compose", "-f", str(self.compose_file), "down", "--timeout", "30"],
                           capture_output=True, timeout=180, check=False)
        logs = docker("ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={SERVICE}", check=False).stdout.split()
        if logs:
            docker("rm", "-f", *logs, check=False)
        self.guarded.destroy()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def play(self, limit, extra=None, expect_rc=0):
        self.runs += 1
        return play_roles(self.inventory, limit, OUT / f"run{self.runs:02d}-{limit}.log", extra=extra,
                          secrets=(API_KEY, HF_TOKEN), expect_rc=expect_rc, timeout=1500)[1]

    def container(self):
        ids = docker("ps", "-q", "--no-trunc", "--filter", f"label=com.docker.compose.project={SERVICE}",
                     "--filter", f"label=com.docker.compose.service={SERVICE}").stdout.split()
        assert len(ids) == 1, f"expected one running container of the compose service, found {ids}"
        return ids[0]

    def inspect(self):
        return json.loads(docker("inspect", self.container()).stdout)[0]

    def fact(self):
        return json.loads(self.fact_file.read_text())


@pytest.fixture(scope="module")
def bed(testbed):  # noqa: F811  pylint: disable=redefined-outer-name,unused-argument
    if docker("info", check=False).returncode != 0:
        pytest.fail("no Docker Engine answers (run `make docker`: tests/docker/setup.sh)", pytrace=False)
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail(f"no image {IMAGE} (run `make docker`)", pytrace=False)
    if not Path(COMPOSE_PLUGIN_DIR, "docker-compose").is_file():
        pytest.fail(f"no Compose v2 plugin in {COMPOSE_PLUGIN_DIR} (run `make docker`)", pytrace=False)
    cb = ComposeBed()
    try:
        cb.up()
        yield cb
    finally:
        cb.down()


def test_serve_role_deploys_a_healthy_compose_service_without_secrets_in_sight(bed):
    bed.play("compose-local", extra={"test_run_speculative": False})
    assert healthy(), "the compose service does not serve its model after the serve role"
    text = bed.compose_file.read_text()
    assert_no_secret(text, "the compose file")
    compose = yaml.safe_load(text)
    service = compose["services"][SERVICE]
    assert isinstance(service["command"], list), "command: is not a YAML list"
    assert service["command"][0] == str(MODELS / MODEL)
    assert "--speculative-config" not in service["command"]
    assert service["image"] == IMAGE and service["runtime"] == "runc"
    # The env file: root only, holds both secrets, mounted read-only.
    st = bed.env_file.stat()
    assert oct(st.st_mode & 0o777) == "0o600" and st.st_uid == 0
    assert API_KEY in bed.env_file.read_text() and HF_TOKEN in bed.env_file.read_text()
    # docker inspect shows neither secret anywhere (Config.Env, Cmd, Entrypoint, Args, labels...).
    info = bed.inspect()
    assert_no_secret(json.dumps(info), "docker inspect")
    for field in (info["Config"]["Env"], info["Config"]["Cmd"], info["Config"]["Entrypoint"], info["Args"]):
        assert_no_secret(json.dumps(field), "docker inspect Config.Env/Cmd/Entrypoint/Args")
    assert "VLLM_CPU_KVCACHE_SPACE=1" in info["Config"]["Env"]
    assert info["HostConfig"]["Runtime"] == "runc"
    assert any(m["Source"] == str(bed.env_file) and not m["RW"] for m in info["Mounts"]), \
        "the env file is not mounted read-only"
    # The key really protects the server.
    with pytest.raises(urllib.error.HTTPError) as err:
        get("/v1/models", key=None)
    assert err.value.code == 401


OPERATOR_OVERRIDE = "compose.override.yaml"


def sidecar():
    """The id of the operator's second service's container (it must never be recreated by this collection)."""
    ids = docker("ps", "-q", "--no-trunc", "--filter", f"label=com.docker.compose.project={SERVICE}",
                 "--filter", "label=com.docker.compose.service=sidecar").stdout.split()
    assert len(ids) == 1, f"expected one running sidecar container, found {ids}"
    return ids[0]


def test_serve_names_the_operators_override_file_too(bed):
    """An operator's compose.override.yaml beside serve's compose.yaml: a flag of theirs and a second service. Compose
    reads it without -f, so every compose call of the collection (which names its files) must name it too."""
    base_command = yaml.safe_load(bed.compose_file.read_text())["services"][SERVICE]["command"]
    bed.override.write_text(yaml.safe_dump({"services": {
        SERVICE: {"command": base_command + ["--max-num-seqs", "8"]},
        "sidecar": {"image": IMAGE, "command": ["sleep", "infinity"], "network_mode": "none", "init": True}}}))
    compose_before = bed.compose_file.read_bytes()
    out = bed.play("compose-local", extra={"test_run_speculative": False})
    assert recap(out, "compose-local")["changed"] >= 1, out[-3000:]
    assert healthy() and "--max-num-seqs" in bed.cmd() and "--speculative-config" not in bed.cmd()
    assert bed.compose_file.read_bytes() == compose_before
    files = bed.inspect()["Config"]["Labels"]["com.docker.compose.project.config_files"].split(",")
    assert files == [str(bed.compose_file), str(bed.override)], files
    sidecar()


def test_serve_role_second_run_changes_nothing(bed):
    before = bed.container()
    out = bed.play("compose-local", extra={"test_run_speculative": False})
    assert recap(out, "compose-local")["changed"] == 0, out[-4000:]
    assert bed.container() == before, "the second serve run replaced the container"
    assert healthy()


# The keep is judged at concurrency 1 only, where 8 requests give an interval (the accept pair is +100 % or more
# there): at concurrency 8 one wave of 8 requests gives no interval, so a keep would rest on a point estimate of a
# change that is about zero on this CPU, and a fresh machine once measured -4.7 % there and reverted. A test that
# asserts a keep on real vLLM measures enough to decide every level it judges.
KEEP_VARS = dict(SPEC_VARS, jetson_spec_draft_model=GOOD_DRAFT, jetson_spec_benchmark=dict(WORKLOAD, concurrency=[1]))
# The random draft loses at concurrency 1 already (acceptance ~0, about -20 % here): measured there only, with its
# own baseline (6 requests: another workload than the kept change's, so no test judges by another's measurement).
RANDOM_VARS = dict(SPEC_VARS, jetson_spec_draft_model=RANDOM_DRAFT,
                   jetson_spec_benchmark=dict(WORKLOAD, concurrency=[1], num_prompts=6))


def test_a_kept_change_is_an_override_file_that_every_rerun_keeps(bed):
    compose_before = bed.compose_file.read_bytes()
    side = sidecar()
    stat_before = bed.compose_file.stat()
    out = bed.play("compose-guarded", extra=KEEP_VARS)
    fact = bed.assert_record_is_reality()
    assert fact["status"] == "enabled", fact.get("reasons")
    assert fact["verdict"] == "accept", fact.get("reasons")
    # The compose file was never written: the change is the kept override, the candidate is gone.
    assert bed.compose_file.read_bytes() == compose_before and bed.compose_file.stat().st_mtime == stat_before.st_mtime
    kept = bed.overlay(KEPT)
    assert kept is not None and bed.overlay(CANDIDATE) is None, "the kept override is not where it belongs"
    assert_no_secret(kept, "the kept override")
    command = yaml.safe_load(kept)["services"][SERVICE]["command"]
    base_command = yaml.safe_load(bed.override.read_text())["services"][SERVICE]["command"]
    assert base_command[-2:] == ["--max-num-seqs", "8"], "the baseline is the project's files, the operator's included"
    assert command[:len(base_command)] == base_command, "the override is not the project's command plus two flags"
    assert command[len(base_command):len(base_command) + 3] == ["--gpu-memory-utilization", "0.7", "--speculative-config"]
    assert len(command) == len(base_command) + 4
    assert json.loads(command[-1]) == fact["speculative_config"]
    # The running container was created from the project's file and the kept override (Compose's own label).
    info = bed.inspect()
    assert "--speculative-config" in info["Config"]["Cmd"]
    files = info["Config"]["Labels"]["com.docker.compose.project.config_files"].split(",")
    assert files[:2] == [str(bed.compose_file), str(bed.override)], files
    assert files[-1].endswith(("/" + KEPT, "/" + CANDIDATE)), files
    # Confirmed: the guard (timer and boot-time unit) is disarmed.
    assert not bed.guarded.path(BOOT_GUARD).exists(), "the boot-time guard is left after the change was confirmed"
    timer = bed.guarded.nsenter(["systemctl", "is-active", f"jetson-spec-guard-{SERVICE}.timer"], check=False)
    assert timer.stdout.strip() != "active"
    assert fact["service_sha256"] is not None
    # The long steps said what they do and showed they were alive while they ran (in the background, polled).
    assert "compose-guarded: benchmarking the baseline service, 8 requests (+2 warm-up) at concurrency 1," in out
    assert re.search(r"ASYNC POLL on compose-guarded: jid=\S+ started=(1|True) finished=(0|False)", out), out[-3000:]
    assert re.search(r'"msg": "compose-guarded: ENABLED \[c=1 \+\d+ % \([^]]*\): accept, kept\] - ', out), \
        "the outcome line does not say how sure the verdict is"
    # serve again (its compose call names the kept override): nothing changes, the same container runs.
    container = bed.container()
    out = bed.play("compose-local", extra={"test_run_speculative": False})
    assert recap(out, "compose-local")["changed"] == 0, out[-4000:]
    assert bed.container() == container and "--speculative-config" in bed.cmd()
    # the role again, the same inputs: in sync, no restart, no request.
    out = bed.play("compose-guarded", extra=KEEP_VARS)
    assert "in_sync - Recorded earlier, nothing changed since." in out, out[-3000:]
    assert recap(out, "compose-guarded")["changed"] == 0, out[-4000:]
    assert bed.container() == container
    assert bed.assert_record_is_reality()["status"] == "enabled"
    assert sidecar() == side, "the operator's other service was recreated"


def test_random_draft_is_rejected_and_the_compose_file_never_written(bed):
    compose_before = bed.compose_file.read_bytes()
    container_before = bed.container()
    out = bed.play("compose-guarded", extra=RANDOM_VARS)
    fact = bed.assert_record_is_reality()
    assert fact["status"] == "reverted", fact.get("reasons")
    assert fact["verdict"] == "reject", fact.get("reasons")
    assert fact["deltas"]["acceptance_rate"] is None or fact["deltas"]["acceptance_rate"] < 0.3
    assert bed.compose_file.read_bytes() == compose_before, "the compose file was written"
    assert bed.overlay(KEPT) is None and bed.overlay(CANDIDATE) is None, "an override is left after the revert"
    assert healthy(), "the service does not serve after the revert"
    assert fact["revert_check"]["ratio"] >= REVERT_MIN_RATIO
    info = bed.inspect()
    assert info["Id"] != container_before, "the speculative container never replaced the baseline one"
    assert "--speculative-config" not in info["Config"]["Cmd"]
    assert info["Config"]["Labels"]["com.docker.compose.project.config_files"] == f"{bed.compose_file},{bed.override}"
    assert_no_secret(json.dumps(info), "docker inspect after the revert")
    assert_no_secret(bed.fact_file.read_text(), "the recorded fact")
    # The guard was really armed in the nspawn host's systemd, and disarmed by the revert.
    journal = bed.guarded.nsenter(["journalctl", "-o", "cat", "--no-pager"]).stdout
    assert f"jetson_llm.vllm guard for {SERVICE}" in journal, "no trace of the guard timer in the host's journal"
    state = bed.guarded.nsenter(["systemctl", "is-active", f"jetson-spec-guard-{SERVICE}.timer"], check=False)
    assert state.stdout.strip() != "active", "the guard is still armed after the revert"
    assert not bed.guarded.path(BOOT_GUARD).exists()
    assert "REVERTED" in out or "reverted" in out


def test_killed_during_the_revert_then_a_reboot_the_boot_guard_restores_and_the_next_run_ends_it(bed):
    """SIGKILL to ansible-playbook as the revert of a rejected candidate begins: the guard must still be armed (it is
    disarmed only once the previous service is back). Then the host reboots: nothing but its boot runs the guard (the
    container would otherwise keep the configuration it was created with). The next run resumes at once."""
    compose_before, override_before = bed.compose_file.read_bytes(), bed.override.read_bytes()
    side = sidecar()
    timer = f"jetson-spec-guard-{SERVICE}.timer"
    # K = 3: new inputs, so the run verifies (the stored baseline is reused: same service, same workload).
    cmd = [str(BIN / "ansible-playbook"), "-i", str(bed.inventory), str(PLAYBOOK), "--limit", "compose-guarded",
           "-e", json.dumps(dict(RANDOM_VARS, jetson_spec_num_speculative_tokens=3))]
    log_path = OUT / "killed-during-revert.log"
    kill_playbook_when(cmd, log_path, lambda out: "Restore the last-known-good service and prove it healthy" in out,
                       "the revert", 900)
    assert_no_secret(log_path.read_text(), "the killed run's output")
    assert "The verdict is reject: reverting" in log_path.read_text()
    assert bed.fact()["status"] == "pending"
    armed = bed.guarded.nsenter(["systemctl", "is-active", timer], check=False).stdout.strip()
    assert armed == "active", "the guard was disarmed before the previous service was back"
    assert bed.guarded.path(BOOT_GUARD).exists(), "the boot-time guard was removed before the previous service was back"
    container = bed.container()
    phases = {"killed": time.monotonic()}
    bed.reboot_guarded()
    phases["booted"] = time.monotonic()
    # Nothing but the host's boot ran: its boot-time guard recreated the service from the project's files (the
    # operator's override included), whatever the killed revert had done already.
    deadline = time.monotonic() + 900  # the start-up timeout of docker_bed.container_vars
    while bed.overlay(CANDIDATE) is not None or not healthy() or bed.container() == container:
        assert time.monotonic() < deadline, bed.guarded.nsenter(
            ["journalctl", "--no-pager", "-o", "cat", "-u", f"jetson-spec-boot-guard-{SERVICE}.service"],
            check=False).stdout[-3000:]
        time.sleep(2)
    phases["healthy"] = time.monotonic()
    (OUT / "reboot-phases.txt").write_text("reboot (boot-time guard included) %.0f s, then healthy after %.0f s\n"
                                           % (phases["booted"] - phases["killed"], phases["healthy"] - phases["booted"]))
    running = bed.cmd()
    assert "--speculative-config" not in running and "--max-num-seqs" in running, running
    journal = bed.guarded.nsenter(["journalctl", "--no-pager", "-o", "short-monotonic", "-b", "-u",
                                   f"jetson-spec-boot-guard-{SERVICE}.service"]).stdout
    (OUT / "boot-guard-journal.txt").write_text(journal)
    assert "Finished" in journal or "Deactivated successfully" in journal, journal[-2000:]
    assert "Failed with result" not in journal, journal[-2000:]
    assert bed.fact()["status"] == "pending"
    # The next run resumes (nothing left to roll back, no restart), disabled on purpose.
    container = bed.container()
    out = bed.play("compose-guarded", extra=dict(RANDOM_VARS, jetson_spec_num_speculative_tokens=3,
                                                 jetson_spec_state="disabled"))
    assert "A previous run stopped in the middle of the change" in out
    fact = bed.assert_record_is_reality()
    assert fact["status"] in ("reverted", "disabled"), fact.get("reasons")
    assert bed.container() == container, "the recovery restarted a service the boot-time guard had already restored"
    assert bed.overlay(CANDIDATE) is None and bed.overlay(KEPT) is None
    assert bed.guarded.nsenter(["systemctl", "is-active", timer], check=False).stdout.strip() != "active"
    assert not bed.guarded.path(BOOT_GUARD).exists(), "the boot-time guard is left after the recovery"
    # The operator's files were never written, and their other service never recreated.
    assert bed.compose_file.read_bytes() == compose_before and bed.override.read_bytes() == override_before
    assert sidecar() == side, "the operator's other service was recreated"
