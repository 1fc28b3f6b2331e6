"""The simulated fleet's own infrastructure (tests/nspawn/sim_fleet.py): many systemd-nspawn hosts booted from one
shared read-only root through per-host overlays, each serving the batch SIMULATOR (not vLLM), and the real fault
helpers (unreachable, full disk, killed service) that fleet tests build on.

Six hosts, two Jetson identities (fixtures ``thor-t5000`` and ``orin-nano-8gb-super``). Needs root and
systemd-nspawn (skips otherwise, like test_fleet.py). Prints how long up() took and the memory per host.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import BIN, TOP, _ansible_env

sys.path.insert(0, str(TOP / "tests" / "nspawn"))
import sim_fleet  # noqa: E402  pylint: disable=wrong-import-position

IDENTITIES = ("thor-t5000", "orin-nano-8gb-super")
PROFILES = ({"startup_s": 0.3, "acceptance": {"default": 0.9}}, {"startup_s": 0.3, "target_weight_ms": 35.0})
BASE_PORT = 18300
DROPIN_DIR = "/etc/systemd/system/vllm.service.d"
#: A write as a program makes it (dash's printf reports ENOSPC as "I/O error"): Python shows the errno.
WRITE = "import sys; f = open(sys.argv[1], 'w'); f.write('[Service]\\n'); f.close()"


def _needs_nspawn():
    if os.geteuid() != 0 or not shutil.which("systemd-nspawn"):
        pytest.skip("needs root and systemd-nspawn (make nspawn)")


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _leftovers(fleet_dir):
    """systemd-nspawn processes running from ``fleet_dir`` and its mounts (as /proc/mounts lists them).

    One per host: a systemd-nspawn caught while it forks its container (the child still carries its
    argv until it executes the init) is the same host, so a PID whose parent is listed is not counted.
    """
    with open("/proc/mounts", encoding="utf-8") as mounts:
        mounted = [line for line in mounts if str(fleet_dir) in line]
    pids = sim_fleet._nspawn_pids_under(fleet_dir)  # pylint: disable=protected-access
    return [pid for pid in pids if _parent(pid) not in pids], mounted


def _show(host, prop, unit="vllm.service"):
    return host.nsenter(["systemctl", "show", unit, "-p", prop, "--value"]).stdout.strip()


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def fleet():
    _needs_nspawn()
    sim = sim_fleet.SimFleet.generate(6, IDENTITIES, profiles=PROFILES, prefix="simtest", base_port=BASE_PORT,
                                      parallel=3, boot_timeout=120)
    try:
        started = time.monotonic()
        sim.up()
        up_s = time.monotonic() - started
        mem_booted = sim.memory()
        sim.serve_all(timeout=60)
        mem_serving = sim.memory()
        print(f"\nsim fleet: up() of {len(sim.hosts)} hosts took {up_s:.1f} s (shared root "
              f"{sim.timings['shared_root_s']:.1f} s, create + boot {sim.timings['boot_s']:.1f} s); memory per host "
              f"(PSS of its processes): {mem_booted['mean_pss_kib'] / 1024:.1f} MiB booted, "
              f"{mem_serving['mean_pss_kib'] / 1024:.1f} MiB serving; MemAvailable dropped by "
              f"{mem_serving['used_since_up_kib'] / 1024 / len(sim.hosts):.1f} MiB per host (noisy at 6 hosts)")
        yield sim
    finally:
        sim.down()


def ping(sim, tmp_path):
    """`ansible jetsons -m ping` on a freshly written inventory: {host: 'SUCCESS' | 'UNREACHABLE!' | ...}, output."""
    inventory = sim.write_inventory(tmp_path / "inventory.json")
    proc = subprocess.run([str(BIN / "ansible"), "jetsons", "-i", str(inventory), "-m", "ansible.builtin.ping"],
                          env=_ansible_env(), cwd=TOP, capture_output=True, text=True, timeout=300, check=False)
    status = dict(re.findall(r"^(\S+) \| (\S+)", proc.stdout, re.M))
    return status, proc.stdout + proc.stderr


def test_hosts_boot_from_one_root_with_their_own_identity_profile_and_port(fleet):
    identities = set()
    for host in fleet.hosts.values():
        assert host.nsenter(["hostname"]).stdout.strip() == host.name
        assert host.nsenter(["cat", "/etc/jetson-batch-simulator.json"]).stdout.strip() == \
            host.path("/etc/jetson-batch-simulator.json").read_text().strip()
        release = host.nsenter(["cat", f"{sim_fleet.fleet.IDENTITY_DIR}/etc/nv_tegra_release"]).stdout
        assert release == (sim_fleet.fleet.FIXTURES / host.identity / "etc" / "nv_tegra_release").read_text()
        identities.add(host.identity)
        assert host.health(), f"{host.name}: no /health on port {host.vllm_port}"
        assert _show(host, "ActiveState") == "active"
        # The root is shared: the host's own files are in its upper layer, the simulator only in the lower one.
        assert (host.upper / "etc" / "hostname").read_text().strip() == host.name
        assert not (host.upper / sim_fleet.SIMULATOR_BIN.lstrip("/") / "vllm").exists()
    assert identities == set(IDENTITIES)
    with open("/proc/mounts", encoding="utf-8") as mounts:
        overlays = [line for line in mounts if line.startswith("jetson-sim-simtest-")]
    lower = sim_fleet.shared_root()
    assert len(overlays) == 6 and all(f"lowerdir={lower}," in line for line in overlays), overlays


def test_unreachable_host_is_reported_unreachable_while_its_simulator_serves(fleet, tmp_path):
    name = "simtest-002"
    fleet.unreachable(name)
    try:
        status, out = ping(fleet, tmp_path)
        assert status.pop(name) == "UNREACHABLE!", out
        assert set(status.values()) == {"SUCCESS"} and len(status) == 5, out
        assert fleet[name].health(), "the simulator stopped answering while the host was unreachable"
    finally:
        fleet.reachable(name)
    status, out = ping(fleet, tmp_path)
    assert status == {host: "SUCCESS" for host in fleet.hosts}, out


def test_full_disk_makes_writes_fail_with_enospc(fleet, tmp_path):
    name = "simtest-003"
    host = fleet[name]
    host.nsenter(["mkdir", "-p", DROPIN_DIR])
    host.path(f"{DROPIN_DIR}/10-existing.conf").write_text("[Service]\nEnvironment=SIM_EXISTING=1\n")
    fleet.fill_disk(name, DROPIN_DIR)
    try:
        write = host.nsenter(["python3", "-c", WRITE, f"{DROPIN_DIR}/20-new.conf"], check=False)
        assert write.returncode != 0 and "[Errno 28] No space left on device" in write.stderr, write
        assert "SIM_EXISTING=1" in host.nsenter(["cat", f"{DROPIN_DIR}/10-existing.conf"]).stdout
        inventory = fleet.write_inventory(tmp_path / "inventory.json")
        args = json.dumps({"content": "[Service]\nNice=5\n", "dest": f"{DROPIN_DIR}/30-ansible.conf"})
        proc = subprocess.run([str(BIN / "ansible"), name, "-i", str(inventory), "-m", "ansible.builtin.copy",
                               "-a", args],
                              env=_ansible_env(), cwd=TOP, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode != 0 and f"{name} | FAILED!" in proc.stdout, proc.stdout + proc.stderr
        assert "No space left on device" in proc.stdout, proc.stdout
    finally:
        fleet.unfill(name, DROPIN_DIR)
    host.nsenter(["python3", "-c", WRITE, f"{DROPIN_DIR}/20-new.conf"])
    assert sorted(host.nsenter(["ls", "-A", DROPIN_DIR]).stdout.split()) == ["10-existing.conf", "20-new.conf"]
    assert host.nsenter(["mountpoint", "-q", DROPIN_DIR], check=False).returncode != 0


def test_crashed_service_is_killed_and_restarted_by_systemd(fleet):
    name = "simtest-004"
    host = fleet[name]
    restarts = int(_show(host, "NRestarts"))
    killed = fleet.crash_service(name)
    _wait(lambda: int(_show(host, "NRestarts")) == restarts + 1, 30, "systemd to restart the killed service")
    journal = host.nsenter(["journalctl", "-u", "vllm.service", "--no-pager"]).stdout
    assert "status=9/KILL" in journal, journal[-2000:]
    _wait(host.health, 30, f"{name}'s simulator to answer again")
    assert fleet.main_pid(name) not in (0, killed)


def test_reboot_keeps_what_the_host_wrote(fleet, tmp_path):
    name = "simtest-005"
    host = fleet[name]
    host.nsenter(["/bin/sh", "-c", "echo kept > /etc/jetson-sim-marker"])
    old_pid = host.init_pid
    host.reboot()
    assert host.init_pid != old_pid
    assert host.nsenter(["cat", "/etc/jetson-sim-marker"]).stdout == "kept\n"
    assert host.nsenter(["cat", sim_fleet.UNIT]).stdout == sim_fleet.simulator_unit(host.vllm_port)
    assert (host.upper / "etc" / "jetson-sim-marker").read_text() == "kept\n"
    status, out = ping(fleet, tmp_path)  # the new PID 1 in a new inventory
    assert status.get(name) == "SUCCESS", out


def test_down_after_a_failed_up_leaves_no_process_and_no_mount():
    _needs_nspawn()
    sim = sim_fleet.SimFleet.generate(2, IDENTITIES, prefix="simfail", base_port=BASE_PORT + 50, boot_timeout=0.05)
    try:
        with pytest.raises(sim_fleet.FleetError, match=r"simfail-00[01] did not boot within 0.05 s"):
            sim.up(keep_on_failure=True)
        pids, mounts = _leftovers(sim.dir)
        assert len(pids) == 2 and len(mounts) == 2, (pids, mounts)  # the failure really left both hosts behind
    finally:
        sim.down()
    assert _leftovers(sim.dir) == ([], [])
    assert not sim.dir.exists()


def test_down_leaves_no_process_and_no_mount(fleet):
    fleet.unreachable("simtest-001")   # down() must undo this mount too
    blocked = f"/proc/{fleet['simtest-001'].init_pid}"
    pids, mounts = _leftovers(fleet.dir)
    assert len(pids) == 6 and len(mounts) == 6, (pids, mounts)
    fleet.down()
    assert _leftovers(fleet.dir) == ([], [])
    with open("/proc/mounts", encoding="utf-8") as proc_mounts:
        assert not [line for line in proc_mounts if "jetson-sim-simtest" in line or line.split()[1] == blocked]
    assert not fleet.dir.exists()
