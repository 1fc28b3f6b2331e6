"""A SIMULATED Jetson fleet of many systemd-nspawn hosts (20 in CI, 100+ in a scale run) from one shared root.

Each host is a real systemd host (tests/nspawn/fleet.py's :class:`fleet.Host`: systemd-nspawn, reached with
``nsenter`` and Ansible's ``community.docker.nsenter`` connection), but cheap:

* ONE root for all hosts, shared read-only: the cached Debian tarball (``fleet.build_root()``) extracted once
  under ``CACHE/sim-roots/<digest>`` (reused while the tarball's mtime and size and the simulator's sources are
  the same: see shared_root()), with the batch SIMULATOR of a Jetson vLLM server
  (tests/nspawn/jetson_batch_simulator.py, not vLLM) installed as ``/opt/jetson-batch-simulator/bin/vllm``, and
  tiny model directories (``/opt/models/<name>``, a ``config.json`` each: what the simulator checks at start-up);
* per host an overlay (``mount -t overlay``: lowerdir = the shared root, upperdir and workdir under
  ``SIM_DIR/<fleet>/<host>``), booted from its merged directory. What the host writes (the collection's
  ``vllm.service``, facts, drop-ins) lands in its upper layer and survives a reboot of that host (stop + boot);
* per host its own ``/etc/hostname``, its Jetson identity (a fixture root under ``/opt/jetson-identity``, as in
  fleet.py), its simulator profile (``/etc/jetson-batch-simulator.json``: speeds, acceptance, ``startup_s``) and
  its own vLLM port (the hosts share this machine's network).

No vLLM test bed and no compile cache are bound in: the simulator needs neither.

Fault helpers (real, no mocks): :meth:`SimFleet.unreachable` / :meth:`SimFleet.reachable`,
:meth:`SimFleet.fill_disk` / :meth:`SimFleet.unfill`, :meth:`SimFleet.crash_service`.

Command line (``make scale`` style measurements)::

    python tests/nspawn/sim_fleet.py measure --hosts 100 --parallel 10 --serve
    python tests/nspawn/sim_fleet.py sweep scale100      # what a killed run of that fleet left

Many hosts need a larger inotify budget than the default (see check_inotify()). Two fleets with the same name
(``SIM_DIR/<name>``) must not run at once: up() first removes what an earlier run of that name left.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet  # noqa: E402  pylint: disable=wrong-import-position
from fleet import FleetError, _run  # noqa: E402  pylint: disable=wrong-import-position

SIM_ROOTS = fleet.CACHE / "sim-roots"
SIM_DIR = Path(os.environ.get("JETSON_LLM_SIMFLEET_DIR", "/var/tmp/jetson_llm_simfleet"))
SIMULATOR_BIN = "/opt/jetson-batch-simulator/bin"
SIMULATOR_PROFILE = "/etc/jetson-batch-simulator.json"
MODELS_DIR = "/opt/models"
#: Model directories in the shared root: what a unit's ``serve /opt/models/target`` and a speculative
#: config's ``"model": "/opt/models/draft"`` point at. The simulator reads nothing but their config.json.
MODELS = ("target", "draft")
_SOURCES = (fleet.TOP / "tests" / "nspawn" / "jetson_batch_simulator.py",
            fleet.TOP / "tests" / "utils" / "fake_vllm.py")
_MODEL_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 512,
                 "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "max_position_embeddings": 1024, "jetson_llm_note": "simulated fleet: no weights"}
#: Default simulator profile of a host (jetson_batch_simulator.PROFILE holds every key and its default).
DEFAULT_PROFILE = {"startup_s": 0.5}
UNIT = "/etc/systemd/system/vllm.service"


def simulator_unit(port: int, model="target", extra_args=""):
    """A minimal vllm.service running the simulator on ``port`` (Restart=on-failure, like the serve role's unit).
    The tests write it where the collection would not; the collection's own unit replaces it."""
    return f"""[Unit]
Description=vLLM (jetson_batch_simulator, a SIMULATOR) - sim fleet test unit

[Service]
ExecStart={SIMULATOR_BIN}/vllm serve {MODELS_DIR}/{model} --served-model-name {model} --port {port} {extra_args}
Restart=on-failure
RestartSec=1

[Install]
WantedBy=multi-user.target
"""


def profile_keys():
    """The keys a simulator profile may hold (jetson_batch_simulator.PROFILE; it refuses any other at start)."""
    utils = str(fleet.TOP / "tests" / "utils")
    if utils not in sys.path:
        sys.path.insert(0, utils)
    import jetson_batch_simulator  # pylint: disable=import-outside-toplevel
    return set(jetson_batch_simulator.PROFILE)


def _stamp(tarball: Path) -> str:
    """What the shared root was built from: the tarball's mtime and size, and the simulator's sources."""
    stat = tarball.stat()
    digest = hashlib.sha256()
    for source in _SOURCES:
        digest.update(source.read_bytes())
    digest.update(json.dumps(_MODEL_CONFIG, sort_keys=True).encode())
    return f"{tarball} mtime_ns={stat.st_mtime_ns} size={stat.st_size} sources={digest.hexdigest()}\n"


def _install_simulator(root: Path):
    """The batch SIMULATOR (not vLLM) as ``vllm`` in ``root``, as test_roles' install_batch_simulator() does,
    and the model directories' config.json."""
    bindir = root / SIMULATOR_BIN.lstrip("/")
    bindir.mkdir(parents=True, exist_ok=True)
    simulator, fake = _SOURCES
    (bindir / "vllm").write_text("#!/usr/bin/python3\n" + simulator.read_text())
    (bindir / "vllm").chmod(0o755)
    shutil.copyfile(fake, bindir / "fake_vllm.py")
    (bindir / "fake_vllm.py").chmod(0o644)
    for model in MODELS:
        mdir = root / MODELS_DIR.lstrip("/") / model
        mdir.mkdir(parents=True, exist_ok=True)
        (mdir / "config.json").write_text(json.dumps(_MODEL_CONFIG, indent=2) + "\n")


def shared_root() -> Path:
    """The shared read-only root: ``SIM_ROOTS/<digest of its stamp>``, extracted from ``fleet.build_root()``'s
    tarball once, with the simulator installed; reused while the tarball and the sources are the same.

    A changed tarball or simulator gives a new directory beside the old ones (an flock serialises concurrent
    callers), so hosts still running on an older root keep it; a root is removed only when no mounted overlay
    uses it as its lowerdir. A fleet that called this but has not mounted yet may race with such a removal."""
    tarball = fleet.build_root()
    stamp = _stamp(tarball)
    root = SIM_ROOTS / hashlib.sha256(stamp.encode()).hexdigest()[:16]
    stamp_file = root.with_name(root.name + ".stamp")
    SIM_ROOTS.mkdir(parents=True, exist_ok=True)
    with open(SIM_ROOTS / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if root.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
            return root
        new = root.with_name(root.name + ".new")
        shutil.rmtree(new, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        new.mkdir()
        _run(["tar", "--numeric-owner", "--zstd", "-xf", str(tarball), "-C", str(new)], timeout=600)
        _install_simulator(new)
        new.rename(root)
        stamp_file.write_text(stamp)
        _remove_unused_roots(keep=root)
    return root


def _remove_unused_roots(keep: Path):
    """Remove the roots under SIM_ROOTS other than ``keep`` that no mounted overlay uses."""
    with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
        mounts = mountinfo.read()
    for other in SIM_ROOTS.iterdir():
        if not other.is_dir() or other == keep or other.suffix == ".new":
            continue
        if f"lowerdir={other}," in mounts or f"lowerdir={other}:" in mounts:
            continue
        shutil.rmtree(other, ignore_errors=True)
        other.with_name(other.name + ".stamp").unlink(missing_ok=True)


def _mountpoints_under(directory: Path):
    """Mount points at or below ``directory`` in this mount namespace, deepest first."""
    prefix = str(directory).rstrip("/")
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
        for line in mountinfo:
            point = line.split()[4].encode().decode("unicode_escape")  # \040 etc. are octal escapes
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(set(points), key=len, reverse=True)


def _umount(point: str, attempts=25):
    """Unmount ``point``; retries while busy (a container's last processes exiting), then detaches it lazily."""
    for _attempt in range(attempts):
        if _run(["umount", point], check=False).returncode == 0:
            return
        if point not in _mountpoints_under(Path(point)):
            return
        time.sleep(0.2)
    _run(["umount", "--lazy", point])


def _nspawn_pids_under(directory: Path):
    """PIDs of systemd-nspawn processes whose ``-D`` root is at or below ``directory`` (left by any run)."""
    prefix = str(directory).rstrip("/") + "/"
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and argv[0].endswith("systemd-nspawn") and "-D" in argv:
            root = argv[argv.index("-D") + 1] if argv.index("-D") + 1 < len(argv) else ""
            if (root.rstrip("/") + "/").startswith(prefix):
                pids.append(int(proc.name))
    return pids


#: inotify instances one booted host holds (measured, systemd 252: PID 1 five, dbus-daemon one, logind one).
INOTIFY_PER_HOST = 7
INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")


def _inotify_instances_in_use() -> int:
    """inotify file descriptors held by root's processes (an upper bound of its inotify instances)."""
    count = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != 0:
                continue
            count += sum(1 for fd in (proc / "fd").iterdir() if os.readlink(fd) == "anon_inode:inotify")
        except OSError:
            continue
    return count


def check_inotify(hosts: int):
    """Make room for ``hosts`` more hosts in root's inotify budget, or fail early with the fix.

    Every host's processes run as this machine's root (no user namespace), so all hosts share root's inotify
    budget (fs.inotify.max_user_instances, 128 by default). Past it the next host's systemd dies at start ("Failed
    to create control group inotify object: Too many open files", "Failed to allocate manager object"): about 20
    hosts by default. As root (the only way to boot these hosts), the limit is raised as a test-host set-up step,
    as starting dockerd is; it lasts until this machine reboots.
    """
    limit = int(INOTIFY_LIMIT.read_text())
    need = _inotify_instances_in_use() + INOTIFY_PER_HOST * hosts
    if need <= limit:
        return
    wanted = max(1024, 2 * need)
    if os.geteuid() == 0:
        try:
            INOTIFY_LIMIT.write_text(f"{wanted}\n")
            print(f"sim_fleet: fs.inotify.max_user_instances {limit} -> {wanted} for {hosts} hosts", file=sys.stderr)
            return
        except OSError as exc:
            raise FleetError(f"{hosts} hosts need about {need} inotify instances for root, "
                             f"fs.inotify.max_user_instances is {limit} and cannot be raised here ({exc})") from exc
    raise FleetError(f"{hosts} hosts need about {need} inotify instances for root, fs.inotify.max_user_instances "
                     f"is {limit}: raise it first, e.g. sysctl -w fs.inotify.max_user_instances={wanted}")


def _pss_kib(pid: int) -> int:
    """Proportional set size of one process (KiB; shared pages divided among their users), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def mem_available_kib() -> int:
    """MemAvailable of this machine (KiB)."""
    with open("/proc/meminfo", encoding="utf-8") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    raise FleetError("no MemAvailable in /proc/meminfo")


@dataclass
class SimHost(fleet.Host):
    """A :class:`fleet.Host` booted from an overlay of the shared root (see the module docstring).

    ``profile``: this host's simulator profile (jetson_batch_simulator.PROFILE keys: speeds, ``acceptance``,
    ``startup_s``), merged over ``DEFAULT_PROFILE``. ``base``: this host's directory (upper, work, merged,
    console log). Connection and commands are fleet.Host's (``nsenter()``, ``inventory_vars()``, ``path()``,
    ``stop()``).
    """

    profile: dict = field(default_factory=dict)
    base: Path = field(default=SIM_DIR / "default")

    def __post_init__(self):
        self.upper = self.base / "upper"
        self.work = self.base / "work"
        self.root = self.base / "merged"
        self.log = self.base / "console.log"

    def create(self, lower: Path | None = None):
        """Mount this host's overlay over ``lower`` (default: :func:`shared_root`) and write its own files."""
        lower = lower or shared_root()
        unknown = sorted(set(self.profile) - profile_keys())
        if unknown:
            raise FleetError(f"{self.name}: unknown simulator profile keys {unknown}")
        if self.base.exists():
            self.destroy()
        for directory in (self.upper, self.work, self.root):
            directory.mkdir(parents=True)
        _run(["mount", "-t", "overlay", f"jetson-sim-{self.name}", "-o",
              f"lowerdir={lower},upperdir={self.upper},workdir={self.work}", str(self.root)])
        self.path("/etc/hostname").write_text(self.name + "\n")
        with open(self.path("/etc/hosts"), "a", encoding="utf-8") as hosts:
            hosts.write(f"127.0.1.1 {self.name}\n")
        if self.identity:
            src = fleet.FIXTURES / self.identity
            if not src.is_dir():
                raise FleetError(f"{self.name}: no fixture root {src}")
            shutil.copytree(src, self.path(fleet.IDENTITY_DIR), symlinks=True)
        self.path(SIMULATOR_PROFILE).write_text(json.dumps({**DEFAULT_PROFILE, **self.profile}, indent=2) + "\n")
        return self

    def boot(self, timeout=120):
        """Boot the merged root; return once its systemd is ``running`` (or ``degraded``).

        Not fleet.Host.boot(): that one binds the vLLM test bed and the compile cache into every host, which a
        simulated host does not need (and a fleet of 100 should not share read-write); and here a timeout, an
        early exit and a failed state each raise a FleetError naming the host, with its console's last lines.
        """
        cmd = ["systemd-nspawn", "-b", "-D", str(self.root), f"--machine={self.name}", "--register=no",
               "--keep-unit", "--console=passive", *self.extra_binds]
        with open(self.log, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.nspawn_pid = proc.pid
        deadline = time.monotonic() + timeout
        state = "not started"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise FleetError(f"{self.name}: systemd-nspawn exited ({proc.returncode}): {self._console_tail()}")
            try:
                children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            except OSError:
                children = []
            if children:
                self.init_pid = int(children[0])
                try:
                    state = self.nsenter(["systemctl", "is-system-running", "--wait"], check=False,
                                         timeout=max(1.0, deadline - time.monotonic())).stdout.strip()
                except subprocess.TimeoutExpired:
                    break
                if state in ("running", "degraded"):
                    return self
                if state in ("maintenance", "stopping"):  # "offline": PID 1 is not systemd yet, wait
                    raise FleetError(f"{self.name}: systemd is {state}: {self._console_tail()}")
            time.sleep(0.2)
        raise FleetError(f"{self.name} did not boot within {timeout} s (systemd: {state}): {self._console_tail()}")

    def _console_tail(self, chars=1500):
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no console log)"

    def reboot(self, timeout=120):
        """Power off (SIGTERM to systemd-nspawn: the host's systemd shuts down in order) and boot the same overlay
        again. PID 1 changes: write the inventory again afterwards."""
        self.stop()
        return self.boot(timeout=timeout)

    def destroy(self):
        """Stop the host, unmount everything under its directory, remove the directory."""
        self.stop()
        for pid in _nspawn_pids_under(self.base):
            _kill_nspawn(pid)
        for point in _mountpoints_under(self.base):
            _umount(point)
        if _mountpoints_under(self.base):
            raise FleetError(f"{self.name}: still mounted under {self.base}: {_mountpoints_under(self.base)}")
        shutil.rmtree(self.base, ignore_errors=True)

    def pss_kib(self) -> int:
        """Memory of this host: the PSS of every process in its PID namespace plus its systemd-nspawn (KiB)."""
        if self.init_pid is None:
            return 0
        try:
            pidns = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        except OSError:
            return 0
        total = _pss_kib(self.nspawn_pid) if self.nspawn_pid else 0
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    if os.readlink(proc / "ns" / "pid") == pidns:
                        total += _pss_kib(int(proc.name))
                except OSError:
                    continue
        return total

    def health(self, timeout=2.0) -> bool:
        """Whether the host's simulator answers GET /health on its port (from this machine)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.vllm_port}/health",  # noqa: S310 (loopback)
                                        timeout=timeout) as resp:
                return resp.status == 200
        except OSError:
            return False


def _kill_nspawn(pid: int, timeout=20):
    """SIGTERM a systemd-nspawn process (not necessarily our child), SIGKILL its group after ``timeout`` s."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    if Path(f"/proc/{pid}").exists():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


class SimFleet:
    """Many :class:`SimHost` of one fleet, under ``SIM_DIR/<name>``; also a context manager (up, then down).

    ``hosts``: the SimHost objects (their ``base`` is set here). ``parallel``: how many hosts boot (or stop) at
    once. ``boot_timeout``: seconds one host may take from the start of its own boot to ``running``.
    """

    def __init__(self, hosts, name="simfleet", base_dir: Path = SIM_DIR, parallel=10, boot_timeout=120):
        self.name = name
        self.dir = Path(base_dir) / name
        self.parallel = parallel
        self.boot_timeout = boot_timeout
        self.hosts = {}
        for host in hosts:
            if host.name in self.hosts:
                raise FleetError(f"two hosts named {host.name}")
            host.base = self.dir / host.name
            host.__post_init__()
            self.hosts[host.name] = host
        ports = [h.vllm_port for h in self.hosts.values()]
        if len(set(ports)) != len(ports):
            raise FleetError(f"hosts share a vLLM port (they share this machine's network): {sorted(ports)}")
        self._blocked = {}      # name -> the PID whose /proc entry is hidden (unreachable())
        self.timings = {}

    @classmethod
    def generate(cls, count, identities, profiles=None, prefix="sim", base_port=18000, **kwargs):
        """A fleet of ``count`` hosts ``<prefix>-000``..., identities (fixture names) and ``profiles`` (dicts,
        optional) assigned round robin, ports ``base_port`` + index."""
        profiles = profiles or [{}]
        hosts = [SimHost(f"{prefix}-{i:03d}", identity=identities[i % len(identities)], vllm_port=base_port + i,
                         profile=dict(profiles[i % len(profiles)])) for i in range(count)]
        return cls(hosts, name=kwargs.pop("name", prefix), **kwargs)

    def __getitem__(self, name) -> SimHost:
        return self.hosts[name]

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()

    # --- life cycle --------------------------------------------------------------------------------------------
    def _each(self, action, hosts):
        """Run ``action(host)`` for ``hosts``, ``self.parallel`` at a time; {name: exception} of those that failed."""
        failures = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, self.parallel)) as pool:
            futures = {pool.submit(action, host): host.name for host in hosts}
            for future in concurrent.futures.as_completed(futures):
                error = future.exception()
                if error is not None:
                    failures[futures[future]] = error
        return failures

    def up(self, keep_on_failure=False):
        """Prepare the shared root, check the inotify budget (check_inotify()), then create and boot every host
        (``parallel`` at a time).

        When a host fails, raises a FleetError naming every failed host and why; unless ``keep_on_failure``, the
        fleet is torn down first (down()). Records ``timings`` (seconds) and ``mem_available_before_kib``.
        """
        started = time.monotonic()
        lower = shared_root()
        self.timings["shared_root_s"] = time.monotonic() - started
        self._sweep()
        check_inotify(len(self.hosts))
        self.mem_available_before_kib = mem_available_kib()  # pylint: disable=attribute-defined-outside-init
        self.dir.mkdir(parents=True, exist_ok=True)
        booted = time.monotonic()
        failures = self._each(lambda host: host.create(lower).boot(timeout=self.boot_timeout), self.hosts.values())
        self.timings["boot_s"] = time.monotonic() - booted
        if failures:
            message = "; ".join(f"{name}: {error}" for name, error in sorted(failures.items()))
            if not keep_on_failure:
                self.down()
            raise FleetError(f"{len(failures)} of {len(self.hosts)} hosts failed to come up: {message}")
        return self

    def _sweep(self):
        """Whatever an earlier run of this fleet left (processes, mounts, directories): gone."""
        for pid in _nspawn_pids_under(self.dir):
            _kill_nspawn(pid)
        for point in _mountpoints_under(self.dir):
            _umount(point)
        if _mountpoints_under(self.dir):
            raise FleetError(f"cannot unmount {_mountpoints_under(self.dir)}")
        shutil.rmtree(self.dir, ignore_errors=True)

    def down(self):
        """Stop every host (``parallel`` at a time), then sweep: kill any systemd-nspawn still running from this
        fleet's directory, unmount every mount under it (overlays), restore unreachable hosts, remove the
        directory. Safe after a failed or partial up() and when called twice. Raises if something stays."""
        for name in list(self._blocked):
            with contextlib.suppress(FleetError):
                self.reachable(name)
        self._each(lambda host: host.stop(), self.hosts.values())
        self._sweep()
        left = _nspawn_pids_under(self.dir) + _mountpoints_under(self.dir)
        if left or self.dir.exists():
            raise FleetError(f"{self.name}: left behind: {left or self.dir}")

    def write_inventory(self, path: Path, host_vars=None, group_vars=None):
        """A YAML (JSON) inventory: every host in group ``jetsons``, with its connection variables
        (fleet.Host.inventory_vars()), ``vllm_port``, ``jetson_spec_facts_root`` when it has an identity, then
        ``host_vars[name]``; ``group_vars`` as the group's vars. Write it again after a reboot (PID 1 changes)."""
        host_vars = host_vars or {}
        hosts = {}
        for name, host in self.hosts.items():
            hvars = {**host.inventory_vars(), "vllm_port": host.vllm_port}
            if host.identity:
                hvars["jetson_spec_facts_root"] = fleet.IDENTITY_DIR
            hosts[name] = {**hvars, **host_vars.get(name, {})}
        inventory = {"all": {"children": {"jetsons": {"hosts": hosts, "vars": dict(group_vars or {})}}}}
        path = Path(path)
        path.write_text(json.dumps(inventory, indent=2) + "\n")
        return path

    def memory(self):
        """Memory now: {'per_host_pss_kib': {name: KiB}, 'mean_pss_kib', 'used_since_up_kib' (MemAvailable drop)}."""
        per_host = {name: host.pss_kib() for name, host in self.hosts.items()}
        return {"per_host_pss_kib": per_host, "mean_pss_kib": sum(per_host.values()) // max(1, len(per_host)),
                "used_since_up_kib": getattr(self, "mem_available_before_kib", mem_available_kib())
                - mem_available_kib()}

    def serve_all(self, timeout=120):
        """Write simulator_unit() as vllm.service in every host, start it, and wait until each answers /health."""
        def serve(host):
            host.path(UNIT).write_text(simulator_unit(host.vllm_port))
            host.nsenter(["systemctl", "daemon-reload"])
            host.nsenter(["systemctl", "start", "vllm.service"])
            deadline = time.monotonic() + timeout
            while not host.health():
                if time.monotonic() > deadline:
                    journal = host.nsenter(["journalctl", "-u", "vllm.service", "--no-pager", "-n", "20"],
                                           check=False).stdout
                    raise FleetError(f"{host.name}: no /health on port {host.vllm_port} within {timeout} s:\n"
                                     f"{journal}")
                time.sleep(0.3)
        failures = self._each(serve, self.hosts.values())
        if failures:
            raise FleetError("; ".join(f"{name}: {error}" for name, error in sorted(failures.items())))

    # --- faults ---------------------------------------------------------------------------------------------
    def unreachable(self, name):
        """Make Ansible's connection to host ``name`` FAIL while the host and its services keep running.
        Undo with :meth:`reachable` (down() undoes it too).

        Mechanism: an empty directory is bind-mounted over ``/proc/<PID 1 of the host>`` in this machine's mount
        namespace. The community.docker.nsenter connection runs ``nsenter --ipc --mount --net --pid --uts
        --target=<ansible_nsenter_pid> -- /bin/sh -c ...`` for every command; nsenter must open
        ``/proc/<pid>/ns/*``, which no longer exist, so it exits 1 ("cannot open /proc/<pid>/ns/ipc") before
        anything runs in the host. Ansible's first command of a task (creating its remote temporary directory,
        ActionBase._make_tmp_path) then fails with a non-zero exit, which raises AnsibleConnectionFailure: the host
        is reported UNREACHABLE, not as a failed module. The host's processes are not touched (the simulator keeps
        serving on its port); only its door from the controller is shut, as a network partition would for SSH.
        (The kernel refuses mounts over /proc/<pid>/ns/* entries; over /proc/<pid> itself it allows them, and
        drops such a mount by itself when that process ends.) fleet.Host.nsenter() fails too meanwhile.
        """
        host = self.hosts[name]
        if host.init_pid is None:
            raise FleetError(f"{name} is not running")
        if name in self._blocked:
            return
        empty = self.dir / ".unreachable"
        empty.mkdir(parents=True, exist_ok=True)
        _run(["mount", "--bind", "-o", "ro", str(empty), f"/proc/{host.init_pid}"])
        self._blocked[name] = host.init_pid

    def reachable(self, name):
        """Undo :meth:`unreachable`: unmount the directory hiding ``/proc/<PID 1>``; nsenter and Ansible work
        again."""
        pid = self._blocked.pop(name, None)
        if pid is not None and Path(f"/proc/{pid}").is_mount():
            _run(["umount", f"/proc/{pid}"])

    def fill_disk(self, name, path, size="64k"):
        """Make writes under directory ``path`` of host ``name`` fail with ENOSPC, as on a full disk.
        Undo with :meth:`unfill` (stopping the host also drops it).

        Mechanism: inside the host's mount namespace (nsenter), the directory's current content is saved to /run,
        a tmpfs of ``size`` is mounted over the directory, the content is restored into it, and a file
        ``.jetson-fill`` takes every remaining block. Existing files stay readable; any write of data fails with
        ENOSPC (creating an empty file or renaming still succeeds: inodes are not exhausted). A dedicated mount is
        needed because the host's own root (overlay on a disk with plenty of space) never fills.
        """
        script = f"""set -e
d={shlex.quote(path)}
save=/run/jetson-fill-$(echo "$d" | tr / _).tar
mkdir -p "$d"
mountpoint -q "$d" && {{ echo "$d is a mount point already" >&2; exit 3; }}
tar -C "$d" -cf "$save" .
mount -t tmpfs -o size={shlex.quote(size)},mode=0755 jetson-fill "$d"
tar -C "$d" -xf "$save"
if cat /dev/zero > "$d/.jetson-fill" 2>/dev/null; then echo "filled nothing?" >&2; exit 4; fi
if printf x >> "$d/.jetson-fill" 2>/dev/null; then echo "$d is not full" >&2; exit 5; fi
"""
        self.hosts[name].nsenter(["/bin/sh", "-c", script])

    def unfill(self, name, path):
        """Undo :meth:`fill_disk`: the fill file is removed, the directory's content as it is now (writes made
        while it was full included) is copied back onto the real directory, and the tmpfs is unmounted."""
        script = f"""set -e
d={shlex.quote(path)}
save=/run/jetson-fill-$(echo "$d" | tr / _).tar
mountpoint -q "$d" || {{ echo "$d is not filled" >&2; exit 3; }}
rm -f "$d/.jetson-fill"
tar -C "$d" -cf "$save.now" .
umount "$d"
find "$d" -mindepth 1 -delete
tar -C "$d" -xf "$save.now"
rm -f "$save" "$save.now"
"""
        self.hosts[name].nsenter(["/bin/sh", "-c", script])

    def main_pid(self, name, unit="vllm.service") -> int:
        """The main PID of ``unit`` in host ``name`` (in the host's PID namespace; 0 when it does not run)."""
        out = self.hosts[name].nsenter(["systemctl", "show", unit, "-p", "MainPID", "--value"]).stdout
        return int(out.strip() or 0)

    def crash_service(self, name, unit="vllm.service") -> int:
        """Kill the main process of ``unit`` (the simulated vLLM) in host ``name`` with SIGKILL, as the kernel's
        OOM killer would; returns the killed PID (host's PID namespace). systemd then sees the service exit on
        signal KILL: with ``Restart=on-failure`` it restarts it, otherwise the unit is ``failed``
        (``Result=signal``). Undo: ``systemctl restart`` it (or let Restart= do it)."""
        pid = self.main_pid(name, unit)
        if not pid:
            raise FleetError(f"{name}: {unit} has no main process to kill")
        self.hosts[name].nsenter(["kill", "-KILL", str(pid)])
        return pid


def measure(count, parallel, identities, boot_timeout=300, serve=False):
    """Boot ``count`` hosts (``parallel`` at a time), print timing and memory as JSON, tear down. ``serve``: also
    start the simulator (simulator_unit()) in every host and wait for each /health."""
    sim = SimFleet.generate(count, identities, prefix=f"scale{count}", parallel=parallel, boot_timeout=boot_timeout)
    result = {"hosts": count, "parallel": parallel}
    try:
        sim.up()
        result.update(sim.timings)
        mem = sim.memory()
        result["mean_pss_kib"] = mem["mean_pss_kib"]
        result["used_since_up_kib"] = mem["used_since_up_kib"]
        if serve:
            started = time.monotonic()
            sim.serve_all()
            result["serve_s"] = round(time.monotonic() - started, 1)
            mem = sim.memory()
            result["mean_pss_kib_serving"] = mem["mean_pss_kib"]
            result["used_since_up_kib_serving"] = mem["used_since_up_kib"]
        result["upper_kib"] = int(_run(["du", "-skx", str(sim.dir)]).stdout.split()[0])
    except FleetError as exc:
        result["error"] = str(exc)[:4000]
    finally:
        stopped = time.monotonic()
        sim.down()
        result["down_s"] = round(time.monotonic() - stopped, 1)
    print(json.dumps(result, indent=2))
    return 0 if "error" not in result else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("root", help="build (or reuse) the shared root; print its path")
    meas = sub.add_parser("measure", help="boot N hosts, print timing and memory, tear down")
    meas.add_argument("--hosts", type=int, default=20)
    meas.add_argument("--parallel", type=int, default=10)
    meas.add_argument("--boot-timeout", type=int, default=300)
    meas.add_argument("--serve", action="store_true", help="also start the simulator in every host")
    meas.add_argument("--identities", default="orin-agx-64gb,thor-t5000,orin-nano-8gb-super")
    sweep = sub.add_parser("sweep", help="stop and remove whatever one fleet (by name) left under SIM_DIR")
    sweep.add_argument("name")
    args = parser.parse_args(argv)
    if args.cmd == "root":
        print(shared_root())
        return 0
    if args.cmd == "sweep":
        if not args.name.strip("/.") or "/" in args.name:
            parser.error("sweep needs one fleet's name (other fleets under SIM_DIR may be in use)")
        SimFleet([], name=args.name).down()
        return 0
    return measure(args.hosts, args.parallel, args.identities.split(","), args.boot_timeout, args.serve)


if __name__ == "__main__":
    sys.exit(main())
