"""NVIDIA's Jetson recipe for real: a systemd unit whose ExecStart is ``docker run --runtime nvidia ...``.

The unit runs in a systemd-nspawn host (systemd as PID 1: the unit, its MainPID, the journal and the
guard are real) with this machine's Docker CLI and socket bound in, so ``docker run`` starts the
container on this machine's real Docker Engine (tests/docker/setup.sh), which has a runtime named
``nvidia`` configured to be ``runc`` (``dockerd --add-runtime=nvidia=runc``): the same command line as on
a Jetson, minus the GPU. The container runs the test bed's real vLLM (CPU build) from the image
``localhost/jetson-llm-vllm-testbed:1``, on the host network, port 8231.

What it shows, end to end through ansible-playbook: the serve role deploys the unit; the
speculative_decoding role reads the running ``docker run`` command line (MainPID's /proc cmdline),
starts the candidate with ``--speculative-config``, checks that the running process has it, benchmarks,
rejects the random draft and restores the unit byte for byte; the container ran with the ``nvidia``
runtime throughout. Then a re-run with the same inputs changes nothing.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import TOP, play_roles, recap
from docker_bed import COMPILE_CACHE, DOCKER_CLI, DOCKER_SOCKET, IMAGE, MODEL, TESTBED, WORKLOAD, container_vars, docker, nspawn
# pytest fixture, used by name:
from vllm_testbed import testbed  # noqa: F401  pylint: disable=unused-import

OUT = TOP / "tests" / "output" / "docker-unit"
SERVICE = "vllm-docker-unit"
PORT = 8231
API_KEY = "du-key-Tz3Lm9Qv1Xc5"
UNIT = f"/etc/systemd/system/{SERVICE}.service"
FACT = "/etc/ansible/facts.d/jetson_vllm_speculative.fact"
SPEC_VARS = {"jetson_spec_method": "draft_model", "jetson_spec_draft_model": str(TESTBED / "models" / "draft-random"),
             "jetson_spec_num_speculative_tokens": 4, "jetson_spec_guard_timeout": 1800,
             # the random draft loses at concurrency 1 already (-79 % here): measured there only
             "jetson_spec_benchmark": dict(WORKLOAD, concurrency=[1]), "jetson_spec_revert_min_ratio": 0.25,
             "jetson_spec_progress_interval": 2}


class DockerUnitBed:
    def __init__(self):
        OUT.mkdir(parents=True, exist_ok=True)
        # Bound at the same path in the nspawn host: the engine resolves the unit's --volume sources (the
        # secrets file) on this machine.
        self.tmp = Path(tempfile.mkdtemp(prefix="jetson_llm_docker_unit.", dir="/var/tmp"))
        self.tmp.chmod(0o755)
        self.config_dir = self.tmp / "etc-vllm"
        self.host = nspawn.Host("thor-docker", identity="thor-t5000", vllm_port=PORT, extra_binds=(
            f"--bind={self.tmp}", f"--bind-ro={DOCKER_CLI}", f"--bind={DOCKER_SOCKET}"))
        self.inventory = OUT / "inventory.json"
        self.runs = 0

    def host_vars(self):
        return {**container_vars(SERVICE, PORT, API_KEY, "nvidia", self.config_dir), "vllm_service_manager": "systemd"}

    def up(self):
        COMPILE_CACHE.mkdir(parents=True, exist_ok=True)
        self.host.create()
        # The serve role's unit Requires=docker.service. The engine runs outside this host (its socket is bound
        # in), so docker.service here is a stand-in that succeeds only while that engine answers.
        unit = self.host.path("/etc/systemd/system/docker.service")
        unit.parent.mkdir(parents=True, exist_ok=True)
        unit.write_text("[Unit]\nDescription=Docker Engine of the machine running this host (bound socket)\n\n"
                        "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/bin/docker info\n")
        self.host.boot()
        self.host.nsenter(["docker", "image", "inspect", IMAGE])
        nspawn.write_inventory(self.inventory, [self.host], host_vars={self.host.name: self.host_vars()})

    def down(self):
        docker("rm", "-f", SERVICE, check=False)
        self.host.destroy()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def play(self, extra=None, expect_rc=0):
        self.runs += 1
        return play_roles(self.inventory, self.host.name, OUT / f"run{self.runs:02d}.log", extra=extra,
                          secrets=(API_KEY,), expect_rc=expect_rc, timeout=1800)[1]

    def inspect(self):
        return json.loads(docker("inspect", SERVICE).stdout)[0]

    def main_pid_cmdline(self):
        pid = self.host.nsenter(["systemctl", "show", SERVICE + ".service", "-p", "MainPID", "--value"]).stdout.strip()
        return self.host.nsenter(["cat", f"/proc/{pid}/cmdline"]).stdout.split("\0")

    def fact(self):
        return json.loads(self.host.path(FACT).read_text())


def healthy():
    import urllib.request  # pylint: disable=import-outside-toplevel
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/models", headers={"Authorization": f"Bearer {API_KEY}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 (loopback only)
            return MODEL in [m["id"] for m in json.loads(resp.read())["data"]]
    except OSError:
        return False


@pytest.fixture(scope="module")
def bed(testbed):  # noqa: F811  pylint: disable=redefined-outer-name,unused-argument
    if docker("info", check=False).returncode != 0:
        pytest.fail("no Docker Engine answers (run `make docker`: tests/docker/setup.sh)", pytrace=False)
    runtimes = json.loads(docker("info", "--format", "{{json .Runtimes}}").stdout)
    if "nvidia" not in runtimes:
        pytest.fail("the Docker Engine has no runtime named nvidia (tests/docker/setup.sh configures nvidia=runc)",
                    pytrace=False)
    db = DockerUnitBed()
    try:
        db.up()
        yield db
    finally:
        db.down()


def test_the_docker_run_unit_is_deployed_and_runs_with_the_nvidia_runtime(bed):
    bed.play(extra={"test_run_speculative": False})
    assert healthy(), "the docker run unit does not serve its model"
    unit = bed.host.path(UNIT).read_text()
    assert 'ExecStart=/usr/bin/docker run --rm --name "vllm-docker-unit"' in unit, unit
    assert '--runtime "nvidia"' in unit and API_KEY not in unit
    argv = bed.main_pid_cmdline()
    assert argv[:2] == ["/usr/bin/docker", "run"] and "--runtime" in argv and "nvidia" in argv, argv
    info = bed.inspect()
    assert info["HostConfig"]["Runtime"] == "nvidia"
    assert API_KEY not in json.dumps(info)


def test_the_loop_on_a_docker_run_unit_rejects_a_random_draft_and_restores_the_unit(bed):
    unit_before = bed.host.path(UNIT).read_bytes()
    container_before = bed.inspect()["Id"]
    out = bed.play(extra={"test_run_serve": False, **SPEC_VARS})
    fact = bed.fact()
    assert fact["status"] == "reverted" and fact["verdict"] == "reject", fact["reasons"]
    # The candidate really ran: the running docker run had --speculative-config (checked by the role after the
    # restart) and was benchmarked; the restored one has not.
    assert fact["attempts"] and fact["attempts"][0]["healthy"] is True, fact["attempts"]
    assert fact["candidate"], "the candidate was not benchmarked"
    assert "--speculative-config" not in bed.main_pid_cmdline()
    assert bed.host.path(UNIT).read_bytes() == unit_before
    for path in (f"/run/systemd/system/{SERVICE}.service.d/zz-jetson-llm-speculative-2-candidate.conf",
                 f"/etc/systemd/system/{SERVICE}.service.d/zz-jetson-llm-speculative-1-kept.conf"):  # no overlay left
        assert bed.host.nsenter(["test", "!", "-e", path], check=False).returncode == 0, f"{path} is left"
    info = bed.inspect()
    assert info["Id"] != container_before and info["HostConfig"]["Runtime"] == "nvidia"
    assert "--speculative-config" not in info["Args"]
    assert healthy()
    assert "REVERTED" in out


def test_the_same_run_again_changes_nothing(bed):
    container = bed.inspect()["Id"]
    out = bed.play(extra={"test_run_serve": False, **SPEC_VARS})
    assert recap(out, bed.host.name)["changed"] == 0, out[-4000:]
    assert bed.inspect()["Id"] == container
    assert "in_sync" in out
