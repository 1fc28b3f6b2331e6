"""Hostile inputs for vllm_service_info (format: tests/integration/hostile.py).

Bad options, paths where names belong, FIFOs and device nodes where a unit, compose or environment
file belongs, and fixture roots full of secrets (API keys and tokens on command lines, in
Environment=, environment files, compose `environment:` and env files) that must appear nowhere in
the output. Every case runs on an offline root (`root`), so nothing runs on the machine.

The FIFO roots are created when this file is imported, under the system temporary directory.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from hostile import Hostile

MODULE = "jetson_llm.vllm.vllm_service_info"
ROOTS = Path(__file__).resolve().parents[1] / "fixtures" / "services" / "roots"
SECRETS = ("hf_unitLEAKEDvalue123", "hf_envfileSECRETvalue", "sk-unitLEAKEDkey", "hf_envfileNATIVEsecret",
           "sk-envfileAPIKEY", "sk-dockerAPIKEYleak", "hf_composeINLINEsecret", "hf_composeENVFILEsecret",
           "sk-composeSTRINGkey", "sk-jsonENVFILE", "hf_capturedSECRET")


def _root(name):
    return str(ROOTS / name)


def _fifo_root(name, rels, unit_text=None):
    """A root under the temporary directory with FIFOs at ``rels`` (and a unit file when given)."""
    root = os.path.join(tempfile.gettempdir(), "hostile-service-%s-%d" % (name, os.getuid()))
    for rel in rels:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            os.mkfifo(path)
    if unit_text is not None:
        path = os.path.join(root, "etc/systemd/system/vllm.service")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(unit_text)
    return root


FIFO_UNIT = _fifo_root("unit", ["etc/systemd/system/vllm.service"])
FIFO_ENV = _fifo_root("envfile", ["etc/vllm/vllm.env"],
                      "[Service]\nEnvironmentFile=/etc/vllm/vllm.env\nExecStart=/usr/bin/vllm serve ${MODEL}\n")
FIFO_COMPOSE = _fifo_root("compose", ["opt/vllm/vllm/compose.yaml"])
DEVICE_UNIT = os.path.join(tempfile.gettempdir(), "hostile-service-device-%d" % os.getuid())
os.makedirs(os.path.join(DEVICE_UNIT, "etc", "systemd", "system"), exist_ok=True)
if not os.path.lexists(os.path.join(DEVICE_UNIT, "etc", "systemd", "system", "vllm.service")):
    # a character device like /dev/zero (reading it would never end); the suite runs as root
    os.mknod(os.path.join(DEVICE_UNIT, "etc", "systemd", "system", "vllm.service"), stat.S_IFCHR | 0o644,
             os.makedev(1, 5))

CASES = [
    Hostile("service-root-missing", MODULE, {"name": "vllm", "root": "/nonexistent/jetson-root"},
            expect=("/nonexistent/jetson-root", "does not exist")),
    Hostile("service-root-is-a-file", MODULE, {"name": "vllm", "root": "/etc/hostname"},
            expect=("/etc/hostname", "not a directory")),
    Hostile("service-manager-unknown", MODULE, {"name": "vllm", "manager": "podman"},
            expect=("manager", "podman", "systemd, compose, auto")),
    Hostile("service-name-is-a-path", MODULE, {"name": "/etc/systemd/system/vllm.service", "root": _root("empty")},
            expect=("/etc/systemd/system/vllm.service", "unit_path")),
    Hostile("service-name-empty", MODULE, {"name": "", "root": _root("empty")}, expect=("name must be",)),
    Hostile("service-name-newline", MODULE, {"name": "vllm\n", "root": _root("empty")},
            expect=("is not a unit or compose service name",)),
    Hostile("service-compose-dot-service", MODULE,
            {"name": "vllm.service", "manager": "compose", "root": _root("empty")}, expect=("ends with .service",)),
    # FIFOs and devices where files belong: refused at once with a warning, never read
    Hostile("service-unit-fifo", MODULE, {"name": "vllm", "root": FIFO_UNIT}, outcome="ok",
            expect=("a FIFO, not a regular file",), max_seconds=30),
    Hostile("service-envfile-fifo", MODULE, {"name": "vllm", "root": FIFO_ENV}, outcome="ok",
            expect=("EnvironmentFile /etc/vllm/vllm.env", "a FIFO"), max_seconds=30),
    Hostile("service-compose-fifo", MODULE, {"name": "vllm", "manager": "compose", "root": FIFO_COMPOSE},
            outcome="ok", expect=("a FIFO, not a regular file",), max_seconds=30),
    Hostile("service-unit-device", MODULE, {"name": "vllm", "root": DEVICE_UNIT}, outcome="ok",
            expect=("a character device",), max_seconds=30),
    # secrets everywhere in real files: masked or never read into the result
    Hostile("service-secrets-docker-run", MODULE, {"name": "vllm", "root": _root("docker-run-orin")}, outcome="ok",
            secrets=SECRETS),
    Hostile("service-secrets-native", MODULE, {"name": "vllm", "root": _root("native-venv")}, outcome="ok",
            secrets=SECRETS),
    Hostile("service-secrets-api-key-after-image", MODULE, {"name": "vllm", "root": _root("docker-entrypoint-args")},
            outcome="ok", secrets=SECRETS),
    Hostile("service-secrets-compose", MODULE, {"name": "vllm", "root": _root("compose-list")}, outcome="ok",
            secrets=SECRETS),
    Hostile("service-secrets-compose-string", MODULE,
            {"name": "llm", "project_src": "/srv/llm", "root": _root("compose-string")}, outcome="ok",
            expect=("env_file /etc/vllm/secrets.env does not exist",), secrets=SECRETS),
    Hostile("service-secrets-compose-json", MODULE, {"name": "vllm", "root": _root("compose-json")}, outcome="ok",
            secrets=SECRETS),
    # broken content: a warning and a result, not a crash
    Hostile("service-speculative-config-bad-json", MODULE, {"name": "vllm", "root": _root("bad-json")},
            outcome="ok", expect=("--speculative-config is not valid JSON",)),
    Hostile("service-unknown-specifier", MODULE, {"name": "vllm", "root": _root("unknown-specifier")},
            outcome="ok", expect=("specifier %b",)),
    Hostile("service-drop-in-without-reset", MODULE, {"name": "vllm", "root": _root("dropin-no-reset")},
            outcome="ok", expect=("2 ExecStart= lines",)),
]
