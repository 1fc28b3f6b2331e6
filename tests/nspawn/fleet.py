"""Real systemd hosts for the role tests (and the demo fleet): systemd-nspawn containers.

Each host is a Debian 12 root (tests/nspawn/build_root.sh, cached as a tarball) extracted under
``FLEET_DIR/<name>`` and booted with its own systemd as PID 1. Ansible reaches it with the
``community.docker.nsenter`` connection (``ansible_nsenter_pid`` = the host's PID 1 as seen from
here). The hosts share this machine's network namespace, so each serves vLLM on its own port.

Bound into every host:

* the vLLM test bed (``/var/cache/jetson_llm_vllm``, read-only): the venv and the tiny models, at
  the same path, so a unit's ``ExecStart=/var/cache/jetson_llm_vllm/venv/bin/vllm serve ...`` is
  the native command a Jetson runs;
* a shared torch.compile cache (read-write, outside the clone): the same model configuration
  starts in well under half the time on a second start.

A host's Jetson identity (device tree, /etc/nv_tegra_release, nvpmodel state, /proc/meminfo of a
real device) cannot be the container's own (/proc and /sys are the kernel's): it is a copy of a
fixture root under ``/opt/jetson-identity`` in the host, read through ``jetson_facts``' ``root``
option (the role variable ``jetson_spec_facts_root``).

Only real components: real systemd (PID 1 in the container), real ``systemctl``/``journalctl``.
cgroup limits are not enforced inside (cgroup v1 read-only), and ``/proc/sys`` is read-only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("JETSON_LLM_NSPAWN_CACHE", "/var/cache/jetson_llm_nspawn"))
TESTBED = Path(os.environ.get("JETSON_LLM_TESTBED", "/var/cache/jetson_llm_vllm"))
FLEET_DIR = Path(os.environ.get("JETSON_LLM_FLEET_DIR", "/var/tmp/jetson_llm_fleet"))
COMPILE_CACHE = CACHE / "vllm-compile-cache"
FIXTURES = TOP / "tests" / "fixtures" / "rootfs"
IDENTITY_DIR = "/opt/jetson-identity"


# The CPU build of vLLM keeps both cores of a 2-core machine busy while it generates; on a Jetson the
# model runs on the GPU. With kernel autogroup scheduling (each session, so each systemd service and
# each ansible worker, is one CPU group of equal weight) the benchmark client on the host was starved
# for the whole of a request: vLLM streamed every token on time, the client read them all at once
# (seen in CI: 8 of 8 requests with TTFT = latency, TPOT 0.008 ms, and vllm_benchmark rightly refused
# the level). So in these test hosts vllm.service runs at a lower CPU priority, as the test-bed
# servers do (tests/testbed/server.py): task nice 10 and nice 10 for its autogroup. A drop-in, not the
# unit: the roles own the unit's bytes (and compare them), a drop-in is the operator's. Only CPU
# priority; nothing the roles read or decide on changes.
CPU_PRIORITY_DROPIN = "50-test-cpu-priority.conf"
CPU_PRIORITY_CONF = """# jetson_llm test host: the CPU build of vLLM must not starve the benchmark client (tests/nspawn/fleet.py)
[Service]
Nice=10
ExecStartPost=-/bin/sh -c 'echo 10 > /proc/$MAINPID/autogroup'
"""


class FleetError(RuntimeError):
    """A test host could not be built, booted or reached."""


def _run(cmd, timeout=120, check=True, **kwargs):
    proc = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False, **kwargs)
    if check and proc.returncode != 0:
        raise FleetError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def build_root():
    """The cached root tarball (builds it on first use; about 1 to 2 minutes)."""
    _run([str(TOP / "tests" / "nspawn" / "build_root.sh")], timeout=900)
    tarball = CACHE / "root.tar.zst"
    if not tarball.is_file():
        raise FleetError(f"no root tarball at {tarball} after build_root.sh")
    return tarball


@dataclass
class Host:
    name: str
    identity: str | None = None        # a fixture under tests/fixtures/rootfs/ (None: no Jetson files)
    vllm_port: int = 8000
    extra_binds: tuple = ()            # more systemd-nspawn --bind/--bind-ro options
    root: Path = field(init=False)
    nspawn_pid: int | None = field(default=None, init=False)
    init_pid: int | None = field(default=None, init=False)

    def __post_init__(self):
        self.root = FLEET_DIR / self.name
        self.log = FLEET_DIR / f"{self.name}.console.log"

    # --- life cycle ------------------------------------------------------------------------
    def create(self):
        tarball = build_root()
        if self.root.exists():
            self.destroy()
        self.root.mkdir(parents=True)
        _run(["tar", "--numeric-owner", "--zstd", "-xf", str(tarball), "-C", str(self.root)], timeout=300)
        (self.root / "etc" / "hostname").write_text(self.name + "\n")
        with open(self.root / "etc" / "hosts", "a", encoding="utf-8") as hosts:
            hosts.write(f"127.0.1.1 {self.name}\n")
        if self.identity:
            src = FIXTURES / self.identity
            if not src.is_dir():
                raise FleetError(f"no fixture root {src}")
            shutil.copytree(src, self.root / IDENTITY_DIR.lstrip("/"), symlinks=True)
        dropin = self.root / "etc" / "systemd" / "system" / "vllm.service.d" / CPU_PRIORITY_DROPIN
        dropin.parent.mkdir(parents=True, exist_ok=True)
        dropin.write_text(CPU_PRIORITY_CONF)
        return self

    def boot(self, timeout=90):
        COMPILE_CACHE.mkdir(parents=True, exist_ok=True)
        binds = [f"--bind-ro={TESTBED}", f"--bind={COMPILE_CACHE}:/root/.cache/vllm", *self.extra_binds]
        cmd = ["systemd-nspawn", "-b", "-D", str(self.root), f"--machine={self.name}", "--register=no",
               "--keep-unit", "--console=passive", *binds]
        with open(self.log, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.nspawn_pid = proc.pid
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise FleetError(f"systemd-nspawn for {self.name} exited ({proc.returncode}): "
                                 f"{self.log.read_text(errors='replace')[-2000:]}")
            children = _run(["ps", "--ppid", str(proc.pid), "-o", "pid="], check=False).stdout.split()
            if children:
                self.init_pid = int(children[0])
                state = self.nsenter(["systemctl", "is-system-running", "--wait"], timeout=max(1, deadline - time.monotonic()),
                                     check=False).stdout.strip()
                if state in ("running", "degraded"):
                    return self
            time.sleep(0.2)
        raise FleetError(f"{self.name} did not boot within {timeout} s")

    def stop(self, timeout=20):
        if self.nspawn_pid is None:
            return
        try:
            os.kill(self.nspawn_pid, signal.SIGTERM)
        except ProcessLookupError:
            self.nspawn_pid = None
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.nspawn_pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                if not Path(f"/proc/{self.nspawn_pid}").exists():
                    break
            time.sleep(0.2)
        else:
            os.killpg(self.nspawn_pid, signal.SIGKILL)
        self.nspawn_pid = self.init_pid = None

    def destroy(self):
        self.stop()
        if self.root.exists():
            shutil.rmtree(self.root)

    # --- use --------------------------------------------------------------------------------
    def nsenter(self, cmd, timeout=60, check=True, **kwargs):
        if self.init_pid is None:
            raise FleetError(f"{self.name} is not running")
        return _run(["nsenter", "-t", str(self.init_pid), "-a", *cmd], timeout=timeout, check=check, **kwargs)

    def path(self, inside: str) -> Path:
        """A path inside the host, seen from here."""
        return self.root / inside.lstrip("/")

    def inventory_vars(self):
        return {
            "ansible_connection": "community.docker.nsenter",
            "ansible_nsenter_pid": self.init_pid,
            "ansible_python_interpreter": "/usr/bin/python3",
        }


def write_inventory(path: Path, hosts, host_vars=None, group_vars=None):
    """A YAML inventory (JSON is YAML) naming each host with its connection variables."""
    host_vars = host_vars or {}
    inv = {"all": {"vars": dict(group_vars or {}), "hosts": {}}}
    for host in hosts:
        inv["all"]["hosts"][host.name] = {**host.inventory_vars(), **host_vars.get(host.name, {})}
    path.write_text(json.dumps(inv, indent=2) + "\n")
    return path


def demo_hosts(inventory: Path):
    """The hosts of a demo inventory (inventories/demo/hosts.yml): name -> Host (identity from demo_identity)."""
    # Controller side: the project venv has PyYAML.
    import yaml  # pylint: disable=import-outside-toplevel

    hosts = {}

    def walk(group):
        for name, hvars in (group.get("hosts") or {}).items():
            hvars = hvars or {}
            hosts[name] = Host(name, identity=hvars.get("demo_identity"), vllm_port=int(hvars.get("vllm_port", 8000)))
        for child in (group.get("children") or {}).values():
            walk(child or {})
    for group in (yaml.safe_load(inventory.read_text()) or {}).values():
        walk(group or {})
    return hosts


def demo_up(inventory: Path):
    """Create and boot every host of a demo inventory, writing each PID 1 to FLEET_DIR/<name>.pid."""
    hosts = demo_hosts(inventory)
    for host in hosts.values():
        host.create().boot()
        (FLEET_DIR / f"{host.name}.pid").write_text(f"{host.init_pid}\n")
        print(f"  {host.name}: booted ({host.identity or 'no Jetson identity'}), vLLM port {host.vllm_port}")
    return hosts


def demo_down(inventory: Path):
    for name in demo_hosts(inventory):
        _down_by_name(name)
        (FLEET_DIR / f"{name}.pid").unlink(missing_ok=True)


def demo_reboot(inventory: Path, name: str):
    """Power one demo host off (its systemd shuts down in order) and boot it again from the same root: /run starts
    empty, as after a reboot. Writes its new PID 1 to FLEET_DIR/<name>.pid."""
    host = demo_hosts(inventory)[name]
    _stop_by_name(name)
    host.boot()
    (FLEET_DIR / f"{host.name}.pid").write_text(f"{host.init_pid}\n")
    print(f"  {host.name}: rebooted, PID 1 {host.init_pid}")
    return host


def _stop_by_name(name, timeout=180):
    """Stop the nspawn process whose command line names --machine=<name> (SIGTERM: the host shuts down in order)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"systemd-nspawn") and f"--machine={name}".encode() in cmdline:
            os.kill(int(proc.name), signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while Path(f"/proc/{proc.name}").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            if Path(f"/proc/{proc.name}").exists():
                os.kill(int(proc.name), signal.SIGKILL)


def _down_by_name(name):
    """Stop the nspawn process whose command line names --machine=<name>, then remove its root."""
    _stop_by_name(name, timeout=20)
    shutil.rmtree(FLEET_DIR / name, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build (or reuse) the cached root tarball")
    up = sub.add_parser("up", help="create and boot one host; print its PID 1")
    up.add_argument("name")
    up.add_argument("--identity")
    down = sub.add_parser("down", help="stop and remove a host (by name)")
    down.add_argument("name")
    for cmd in ("demo-up", "demo-down"):
        sub.add_parser(cmd, help=f"{cmd.split('-')[1]} every host of a demo inventory").add_argument("inventory", type=Path)
    reboot = sub.add_parser("demo-reboot", help="reboot one host of a demo inventory (make demo KEEP=1)")
    reboot.add_argument("inventory", type=Path)
    reboot.add_argument("name")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        print(build_root())
    elif args.cmd == "up":
        host = Host(args.name, identity=args.identity).create().boot()
        print(json.dumps({"name": host.name, "nspawn_pid": host.nspawn_pid, "init_pid": host.init_pid}))
    elif args.cmd == "down":
        _down_by_name(args.name)
    elif args.cmd == "demo-up":
        demo_up(args.inventory)
    elif args.cmd == "demo-down":
        demo_down(args.inventory)
    elif args.cmd == "demo-reboot":
        demo_reboot(args.inventory, args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
