"""Shared helpers for the integration suites (real ansible-playbook runs).

Everything here runs the real tools from the project's virtualenv against the collection
linked at .build/collections (see tests/utils/collection.sh).
"""
from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
COLLECTIONS = TOP / ".build" / "collections"
BIN = Path(sys.executable).parent


def _ansible_env(extra=None):
    subprocess.run([str(TOP / "tests" / "utils" / "collection.sh"), "link"], check=True,
                   stdout=subprocess.DEVNULL)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        # Targets run modules with the system Python and its standard library only (a stock
        # JetPack has no pip packages); this proves the modules need nothing else.
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    })
    if extra:
        env.update(extra)
    return env


@pytest.fixture(scope="session")
def ansible_env():
    """Environment for running ansible-* commands against this collection."""
    return _ansible_env()


def run_playbook(playbook, inventory=None, extra_vars=None, env=None, check=True, args=()):
    """Run ansible-playbook; return the CompletedProcess (stdout/stderr as text)."""
    cmd = [str(BIN / "ansible-playbook"), str(playbook)]
    if inventory:
        cmd += ["-i", str(inventory)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += list(args)
    proc = subprocess.run(cmd, cwd=TOP, env=env or _ansible_env(), text=True,
                          capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"ansible-playbook failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def run_module(module, args, env=None, check_mode=False):
    """Run one module on localhost through the real `ansible` CLI; return its result dict.

    Uses the json stdout callback so the module's return value is parsed exactly.
    """
    environment = env or _ansible_env()
    environment = dict(environment, ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
                       ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    cmd = [str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", module]
    if args:  # `-a '{}'` would be taken as free-form text, not as an empty argument dict
        cmd += ["-a", json.dumps(args)]
    if check_mode:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=TOP, env=environment, text=True, capture_output=True,
                          check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"no JSON from ansible:\n{proc.stdout}\n{proc.stderr}") from exc
    plays = data["plays"]
    result = plays[0]["tasks"][0]["hosts"]["localhost"]
    return result


ROLES_PLAYBOOK = TOP / "tests" / "integration" / "playbooks" / "roles" / "speculate.yml"
#: The oldest and newest ansible-core the collection supports (meta/runtime.yml), in the venvs tests/utils/compat.sh
#: makes (``make compat-venvs``, a prerequisite of ``make integration``).
COMPAT_CORES = ("2.18", "2.21")


def compat_playbook(core):
    """(ansible-playbook of ansible-core ``core`` from tests/utils/compat.sh's venv, its ``--version`` first line);
    fails when the venv is missing (never a skip)."""
    found = sorted((TOP / ".build" / "compat").glob(f"ansible-core-{core}.*/bin/ansible-playbook"))
    if not found:
        pytest.fail(f"no ansible-core {core} venv under .build/compat (run `make compat-venvs`)", pytrace=False)
    version = subprocess.run([str(found[-1]), "--version"], capture_output=True, text=True, check=True,
                             timeout=120).stdout.splitlines()[0]
    assert f"[core {core}." in version, version
    return found[-1], version


def _site_packages():
    """The project venv's site-packages: its ``ansible`` package brings community.docker (the nsenter connection,
    docker_compose_v2) for the other ansible-core's ansible-playbook too."""
    import ansible  # pylint: disable=import-outside-toplevel
    return Path(ansible.__file__).resolve().parents[1]


def play_roles(inventory, limit, log_path, extra=None, secrets=(), expect_rc=0, check=False, args=(), timeout=2400,
               core=None):
    """ansible-playbook of the roles' test playbook on ``limit``, as an operator runs it (``--diff``, the default
    callback). Keeps the output (with its run time) in ``log_path``, fails when one of ``secrets`` appears in it or
    when the return code is not ``expect_rc`` (None: any). ``core``: run the ansible-playbook of that ansible-core
    (one of COMPAT_CORES) instead of the project venv's; its version is the log's first line. Returns
    (rc, stdout + stderr)."""
    playbook, version = (BIN / "ansible-playbook", None) if core is None else compat_playbook(core)
    cmd = [str(playbook), "-i", str(inventory), str(ROLES_PLAYBOOK), "--limit", limit, "--diff"]
    if extra:
        cmd += ["-e", json.dumps(extra)]
    if check:
        cmd.append("--check")
    cmd += list(args)
    env = _ansible_env({"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_DISPLAY_ARGS_TO_STDOUT": "0"})
    if core is not None:
        env["PATH"] = f"{playbook.parent}{os.pathsep}{env['PATH']}"
        env["ANSIBLE_COLLECTIONS_PATH"] = f"{COLLECTIONS}{os.pathsep}{_site_packages()}"
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=TOP, env=env, text=True, capture_output=True, timeout=timeout, check=False)
    out = proc.stdout + proc.stderr
    if version is not None:
        out = f"# {version}\n" + out
    Path(log_path).write_text(out + f"\n# {time.monotonic() - started:.0f} s\n")
    for number, secret in enumerate(secrets, 1):
        assert secret not in out, f"secret #{number} appears in the ansible-playbook output ({log_path})"
    if expect_rc is not None and proc.returncode != expect_rc:
        raise AssertionError(f"ansible-playbook on {limit} ended with {proc.returncode}, expected {expect_rc}:\n"
                             f"{out[-6000:]}")
    return proc.returncode, out


def recap(out, host):
    """The PLAY RECAP counters of ``host`` in ansible-playbook's output (an assertion error when missing)."""
    match = re.search(rf"^{re.escape(host)}\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", out, re.M)
    assert match, f"no PLAY RECAP line for {host}"
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


def process_tree(pid):
    """``pid`` and every process below it (by /proc's parent links), whatever session or group it moved to."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill_tree(pid):
    """SIGKILL ``pid`` and every descendant: frozen first (SIGSTOP, until no new one appears), so none forks or is
    re-parented away between the listing and the kill. ansible-core's workers call os.setsid(), so killing
    ansible-playbook's process group alone leaves the in-flight task running (and racing the next run)."""
    seen = set()
    for _round in range(10):
        tree = set(process_tree(pid))
        _signal_all(tree - seen, signal.SIGSTOP)
        if tree <= seen:
            break
        seen |= tree
    _signal_all(seen, signal.SIGKILL)
    return sorted(seen)


def kill_playbook_when(cmd, log_path, ready, what, timeout):
    """Run ``cmd`` (ansible-playbook) and SIGKILL it, with everything it started, once ``ready(output)`` is true.

    The controller dies as a killed AWX job or a removed execution environment would: no handler, no rescue, no
    clean-up, and the in-flight task dies with it (every descendant is killed, the task's module on the host
    included: kill_tree). Fails when the playbook ends first, ``what`` does not happen within ``timeout`` s, or a
    process of the run is still alive afterwards. Returns the output.
    """
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=TOP, env=_ansible_env(), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if ready(log_path.read_text(errors="replace")):
                    break
                assert proc.poll() is None, \
                    f"ansible-playbook ended before {what}:\n{log_path.read_text(errors='replace')[-3000:]}"
                time.sleep(0.5)
            else:
                pytest.fail(f"{what} did not happen within {timeout} s")
            killed = kill_tree(proc.pid)
            proc.wait(timeout=30)
            deadline = time.monotonic() + 30
            while any(_alive(pid) for pid in killed) and time.monotonic() < deadline:
                time.sleep(0.2)
            survivors = [pid for pid in killed if _alive(pid)]
            assert not survivors, f"processes of the killed run are still alive: {survivors}"
        finally:
            if proc.poll() is None:
                kill_tree(proc.pid)
    return log_path.read_text(errors="replace")


def _alive(pid):
    """Whether ``pid`` still runs (a zombie waiting for its new parent to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
