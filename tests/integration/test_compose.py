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

Workload (shortened; the production default is the specification's): concurrency [1, 8], 8 prompts
per level (+2 warm-up), 128 tokens in, 32 out, temperature 0. The draft is ``draft-random`` (an
independent random draft with the target's tokenizer: acceptance ~0, slower), so the verdict is
reject and the role must put the compose file back byte for byte. Last, the controller is SIGKILLed
right after the guard is armed and the compose file changed: the guard alone (the role's
``_jetson_spec_restore_command``: ``cp`` the last-known-good file back, ``docker compose ... up
--force-recreate``, run by the nspawn host's systemd) must restore the service.

The revert check (a 10-prompt run right after the restart, against the baseline measured minutes
before) runs at ``jetson_spec_revert_min_ratio: 0.25`` here instead of the default 0.5: on this shared
2-core machine other engineers' vLLM servers (vLLM CPU pins its worker to core 0) and linters ran at the
same time (load average 10-14), and a correct restore measured 0.32 x the baseline once. 0.25 still
fails a restore that serves at a fraction of the baseline's speed.
"""
from __future__ import annotations

import hashlib
import json
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
from docker_bed import (COMPILE_CACHE, COMPOSE_PLUGIN_DIR, DOCKER_CLI, DOCKER_SOCKET, IMAGE, MODEL, TESTBED, WORKLOAD,
                        container_vars, docker, nspawn)
# pytest fixture, used by name:
from vllm_testbed import testbed  # noqa: F401  pylint: disable=unused-import

OUT = TOP / "tests" / "output" / "compose"
SERVICE = "vllm-compose-test"
PORT = 8221
API_KEY = "ct-key-Rk4Np8Wd2Hs6"
HF_TOKEN = "hf_ctTokenNeverShown7Bx3"

REVERT_MIN_RATIO = 0.25


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
        self.compose_file = self.compose_dir / SERVICE / "compose.yaml"
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
        inv = {"all": {"vars": self.host_vars(), "hosts": {
            "compose-local": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"},
            "compose-guarded": self.guarded.inventory_vars(),
        }}}
        self.inventory.write_text(json.dumps(inv, indent=2) + "\n")

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
    assert service["command"][0] == str(TESTBED / "models" / MODEL)
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


def test_serve_role_second_run_changes_nothing(bed):
    before = bed.container()
    out = bed.play("compose-local", extra={"test_run_speculative": False})
    assert recap(out, "compose-local")["changed"] == 0, out[-4000:]
    assert bed.container() == before, "the second serve run replaced the container"
    assert healthy()


def test_random_draft_is_rejected_and_the_compose_file_restored(bed):
    compose_before = bed.compose_file.read_bytes()
    container_before = bed.container()
    out = bed.play("compose-guarded", extra={
        "test_run_serve": False,
        "jetson_spec_method": "draft_model",
        "jetson_spec_draft_model": str(TESTBED / "models" / "draft-random"),
        "jetson_spec_num_speculative_tokens": 4,
        "jetson_spec_guard_timeout": 900,
        "jetson_spec_benchmark": WORKLOAD,
        "jetson_spec_revert_min_ratio": REVERT_MIN_RATIO,
    })
    fact = bed.fact()
    assert fact["status"] == "reverted", fact.get("reasons")
    assert fact["verdict"] == "reject", fact.get("reasons")
    assert fact["deltas"]["acceptance_rate"] is None or fact["deltas"]["acceptance_rate"] < 0.3
    assert bed.compose_file.read_bytes() == compose_before, "the compose file is not byte-identical after the revert"
    assert fact["service_sha256"] == hashlib.sha256(compose_before).hexdigest()
    assert healthy(), "the service does not serve after the revert"
    assert fact["revert_check"]["ratio"] >= REVERT_MIN_RATIO
    info = bed.inspect()
    assert info["Id"] != container_before, "the speculative container never replaced the baseline one"
    assert "--speculative-config" not in info["Config"]["Cmd"]
    assert_no_secret(json.dumps(info), "docker inspect after the revert")
    assert_no_secret(bed.fact_file.read_text(), "the recorded fact")
    # The guard was really armed in the nspawn host's systemd, and disarmed by the revert.
    journal = bed.guarded.nsenter(["journalctl", "-o", "cat", "--no-pager"]).stdout
    assert f"jetson_llm.vllm guard for {SERVICE}" in journal, "no trace of the guard timer in the host's journal"
    state = bed.guarded.nsenter(["systemctl", "is-active", f"jetson-spec-guard-{SERVICE}.timer"], check=False)
    assert state.stdout.strip() != "active", "the guard is still armed after the revert"
    assert "REVERTED" in out or "reverted" in out


def test_controller_killed_mid_change_the_guard_restores_the_compose_service(bed):
    """SIGKILL to ansible-playbook right after the guard is armed: the host's systemd timer alone
    puts the compose file back and recreates the baseline container; the next run records it."""
    compose_before = bed.compose_file.read_bytes()
    container_before = bed.container()
    guard, startup = 60, 30  # the shortest guard the role allows, so the test does not wait long
    timer = f"jetson-spec-guard-{SERVICE}.timer"
    cmd = [str(BIN / "ansible-playbook"), "-i", str(bed.inventory), str(PLAYBOOK), "--limit", "compose-guarded",
           "-e", json.dumps({"test_run_serve": False, "jetson_spec_method": "draft_model",
                             "jetson_spec_draft_model": str(TESTBED / "models" / "draft-random"),
                             "jetson_spec_num_speculative_tokens": 4, "jetson_spec_benchmark": WORKLOAD,
                             "jetson_spec_guard_timeout": guard, "vllm_startup_timeout": startup,
                             "jetson_spec_force_verify": True})]

    def changed_and_armed(_out):
        armed = bed.guarded.nsenter(["systemctl", "is-active", timer], check=False).stdout.strip() == "active"
        return armed and b"--speculative-config" in bed.compose_file.read_bytes()

    log_path = OUT / "killed-controller.log"
    kill_playbook_when(cmd, log_path, changed_and_armed, "the speculative compose file and the guard", 300)
    assert_no_secret(log_path.read_text(), "the killed run's output")
    assert bed.compose_file.read_bytes() != compose_before, "the change did not happen before the kill"
    # Nobody is left to revert: the guard must, within its timeout plus a start-up.
    deadline = time.monotonic() + guard + 420
    while time.monotonic() < deadline:
        # The guard must have finished: while compose recreates, the old (speculative) container may still answer on
        # the host network and the new one may already be inspectable.
        guard_state = bed.guarded.nsenter(["systemctl", "is-active", f"jetson-spec-guard-{SERVICE}.service"],
                                          check=False).stdout.strip()
        if guard_state not in ("active", "activating") and bed.compose_file.read_bytes() == compose_before \
                and healthy():
            info = bed.inspect()
            if "--speculative-config" not in info["Config"]["Cmd"] and info["State"]["Running"]:
                break
        time.sleep(3)
    else:
        pytest.fail("the guard did not restore the previous compose service")
    journal = bed.guarded.nsenter(["journalctl", "-u", f"jetson-spec-guard-{SERVICE}.service", "-o", "cat",
                                   "--no-pager"]).stdout
    assert "Deactivated successfully" in journal and "Failed with result" not in journal, \
        f"the guard's restore command did not succeed:\n{journal[-3000:]}"
    assert bed.container() != container_before, "the guard did not recreate the compose service"
    # The next run finds the interrupted change and checks the restored service (no restart: the file is
    # already the last-known-good one); disabled on purpose, so it does not verify again.
    container = bed.container()
    out = bed.play("compose-guarded", extra={"test_run_serve": False, "jetson_spec_method": "draft_model",
                                             "jetson_spec_draft_model": str(TESTBED / "models" / "draft-random"),
                                             "jetson_spec_guard_timeout": 900, "jetson_spec_state": "disabled"})
    assert "stopped in the middle of the change" in out
    fact = bed.fact()
    assert fact["status"] in ("reverted", "disabled"), fact.get("reasons")
    assert bed.container() == container, "the recovery restarted a service the guard had already restored"
    assert bed.compose_file.read_bytes() == compose_before
    assert healthy()
