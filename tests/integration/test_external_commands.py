"""No module passes an operand to an external command without ``--`` before it.

The modules that run commands (speculative_state, speculative_overlay, vllm_health, vllm_service_info) run here
through the real ``ansible`` CLI with recording stand-ins for ``systemctl``, ``journalctl`` and ``docker`` first on
the PATH: each logs its argv and answers like a host whose service is stopped (systemd) or whose compose container
exists (docker). Every logged command that carries an operand (the unit, the timer, the container) must have ``--``
before it, so a name or an id can never be read as an option, whatever check let it through. The names here are
ordinary ones: the check that refuses a leading ``-`` has its own hostile cases (hostile_cases_lifecycle.py,
hostile_cases_health.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from conftest import BIN, TOP, _ansible_env

SERVICE = "shimvllm"
CONTAINER = "c0ffee1234"
GUARD = "jetson-spec-guard-shimvllm"
#: The operands the modules pass: a unit, a timer, a container id (the compose service name only ever goes into a
#: --filter value here).
OPERANDS = {SERVICE, SERVICE + ".service", GUARD + ".timer", CONTAINER}

SHIM = textwrap.dedent('''\
    #!/usr/bin/python3
    """A recording stand-in for %(name)s (tests/integration/test_external_commands.py)."""
    import json, os, sys
    with open(os.environ["SHIM_LOG"], "a") as log:
        log.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
    argv = sys.argv[1:]
    name = os.path.basename(sys.argv[0])
    if name == "systemctl" and argv[:1] == ["show"]:
        print("ActiveState=inactive\\nSubState=dead\\nLoadState=loaded\\nMainPID=0\\nNRestarts=0\\nFragmentPath=\\n"
              "NeedDaemonReload=no\\nActiveEnterTimestamp=")
    elif name == "docker" and argv[:1] == ["ps"]:
        print("%(container)s")
    elif name == "docker" and argv[:1] == ["inspect"]:
        print(json.dumps([{"Id": "%(container)s", "State": {"Status": "exited", "Pid": 0, "ExitCode": 1},
                           "RestartCount": 0, "Config": {"Cmd": ["vllm", "serve", "/m"], "Env": []}}]))
    elif name == "docker" and argv[:2] == ["compose", "version"]:
        sys.exit(1)   # no Compose v2: the modules find the container by its labels
    sys.exit(0)
''')


@pytest.fixture(scope="module")
def shims(tmp_path_factory):
    top = tmp_path_factory.mktemp("shims")
    bin_dir = top / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "journalctl", "docker"):
        path = bin_dir / name
        path.write_text(SHIM % {"name": name, "container": CONTAINER})
        path.chmod(0o755)
    project = top / "project"
    project.mkdir()
    (project / "compose.yaml").write_text("services:\n  %s:\n    image: x\n    command: [vllm, serve, /m]\n" % SERVICE)
    return top


def run(module, args, shims, log):
    env = _ansible_env({"PATH": f"{shims / 'bin'}{os.pathsep}{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                        "SHIM_LOG": str(log), "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
                        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    proc = subprocess.run([str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m",
                           f"jetson_llm.vllm.{module}", "-a", json.dumps(args)],
                          cwd=TOP, env=env, text=True, capture_output=True, check=False, timeout=180)
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    return result


CALLS = [
    ("speculative_state", {"name": SERVICE, "fact_file": "{tmp}/none.fact", "guard_unit": GUARD}),
    ("speculative_state", {"name": SERVICE, "manager": "compose", "project_src": "{project}",
                           "fact_file": "{tmp}/none.fact", "guard_unit": GUARD}),
    ("speculative_overlay", {"name": SERVICE, "state": "absent"}),
    ("vllm_service_info", {"name": SERVICE, "manager": "systemd"}),
    ("vllm_health", {"name": SERVICE, "endpoint": "http://127.0.0.1:9", "timeout": 1, "interval": 0.5,
                     "fail_when_unhealthy": False}),
    ("vllm_health", {"name": SERVICE, "manager": "compose", "project_src": "{project}",
                     "endpoint": "http://127.0.0.1:9", "timeout": 1, "interval": 0.5, "fail_when_unhealthy": False}),
]


def test_every_operand_of_every_command_comes_after_double_dash(shims, tmp_path):
    log = tmp_path / "commands.log"
    for module, args in CALLS:
        args = json.loads(json.dumps(args).replace("{tmp}", str(tmp_path)).replace("{project}", str(shims / "project")))
        result = run(module, args, shims, log)
        assert not result.get("failed"), (module, result.get("msg"))
    commands = [json.loads(line) for line in log.read_text().splitlines()]
    seen = set()
    for argv in commands:
        for index, word in enumerate(argv):
            if word in OPERANDS:
                assert "--" in argv[:index], f"{word!r} is not after '--' in {argv}"
                seen.add((argv[0], argv[1], word))
    # The test saw the commands it is about: systemctl show of the unit and of the guard's timer, journalctl of the
    # unit, docker inspect and docker logs of the container.
    assert ("systemctl", "show", SERVICE + ".service") in seen, commands
    assert ("systemctl", "show", GUARD + ".timer") in seen, commands
    assert ("docker", "inspect", CONTAINER) in seen, commands
    assert ("docker", "logs", CONTAINER) in seen, commands
    assert any(argv[0] == "journalctl" and "--unit=%s.service" % SERVICE in argv for argv in commands), commands
