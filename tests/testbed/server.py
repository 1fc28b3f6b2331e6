"""Start and stop a real vLLM server (CPU build) from the test bed.

Importable (standard library only, any Python 3.8+) and a CLI:

    python3 tests/testbed/server.py serve target [--speculative-config JSON] [--api-key K] [--port P] [-- VLLM ARGS]
    python3 tests/testbed/server.py serve target-deep --speculative-config \
        '{"method":"draft_model","model":"draft-deep-1layer","num_speculative_tokens":4}'

``serve`` starts the server, waits until /health answers 200, prints the URL and keeps it running
until Ctrl-C (or SIGTERM). A model given by name is taken from ``$TESTBED/models``; a
``"model"`` value in the speculative config that names a test-bed model is expanded to its path.

From Python::

    with VllmServer("target", speculative_config={...}) as srv:
        urllib.request.urlopen(srv.url + "/v1/models")

The command is exactly what a Jetson runs (``vllm serve DIR --port P ...``), from
``$TESTBED/venv/bin/vllm``, with ``VLLM_CPU_KVCACHE_SPACE=1`` (GiB) and vLLM's compile cache kept
under ``$TESTBED/vllm-cache`` so later starts of the same configuration are faster.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_START_TIMEOUT = 600.0
STOP_GRACE = 30.0
# CPU priority of the server (process nice and autogroup nice); see VllmServer._deprioritise.
DEFAULT_NICE = 10


def testbed_dir() -> Path:
    return Path(os.environ.get("JETSON_LLM_TESTBED", "/var/cache/jetson_llm_vllm"))


def install_hint() -> str:
    top = Path(__file__).resolve().parents[2]
    return (f"install it with `make testbed` in {top} (that is `tests/testbed/install.sh && "
            f"{testbed_dir()}/venv/bin/python tests/testbed/make_models.py`; ~2-6 min, ~3.5 GB; "
            "JETSON_LLM_TESTBED chooses another cache directory)")


class TestbedMissing(RuntimeError):
    """The test bed (venv or models) is not installed."""


class ServerError(RuntimeError):
    """vLLM did not start, died, or did not become healthy in time."""


def check_testbed(models=("target",)) -> Path:
    """Return the test bed directory, or raise TestbedMissing naming what is missing and how to fix it."""
    base = testbed_dir()
    missing = []
    if not (base / "stamps" / "install").is_file() or not os.access(base / "venv" / "bin" / "vllm", os.X_OK):
        missing.append(f"the vLLM venv ({base / 'venv'})")
    for name in models:
        if not (base / "models" / name / ".recipe.json").is_file():
            missing.append(f"the model {name!r} ({base / 'models' / name})")
    if missing:
        raise TestbedMissing(f"real vLLM test bed incomplete: missing {', '.join(missing)}; {install_hint()}")
    return base


def model_path(name_or_path) -> str:
    """A test-bed model name (``target``...) -> its directory; paths are returned unchanged."""
    text = str(name_or_path)
    if os.sep in text:
        return text
    return str(testbed_dir() / "models" / text)


def free_port(host="127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def http_get(url, timeout=5.0, headers=None):
    """GET url -> (status, body text); (None, reason) when nothing answers."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # nosec: 127.0.0.1 only
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        return None, str(getattr(exc, "reason", exc))


class VllmServer:
    """One real `vllm serve` process on 127.0.0.1, started in its own process group."""

    def __init__(self, model="target", name=None, port=None, host="127.0.0.1", speculative_config=None,
                 api_key=None, extra_args=(), log_path=None, max_model_len=1024, env=None, nice=DEFAULT_NICE):
        self.model = model_path(model)
        self.name = name or Path(self.model).name
        self.host = host
        self.port = port
        self.api_key = api_key
        if isinstance(speculative_config, str):
            speculative_config = json.loads(speculative_config)
        if speculative_config and "model" in speculative_config:
            speculative_config = dict(speculative_config, model=model_path(speculative_config["model"]))
        self.speculative_config = speculative_config
        self.extra_args = list(extra_args)
        self.max_model_len = max_model_len
        self.env = env or {}
        self.nice = nice
        self.log_path = Path(log_path) if log_path else None
        self.proc = None
        self.started_s = None  # seconds from launch to healthy
        self._log = None
        self._t_launch = None

    # --- command -------------------------------------------------------------------------------
    def command(self):
        vllm = str(testbed_dir() / "venv" / "bin" / "vllm")
        cmd = [vllm, "serve", self.model, "--host", self.host, "--port", str(self.port),
               "--served-model-name", self.name, "--max-model-len", str(self.max_model_len),
               "--dtype", "bfloat16"]
        if self.speculative_config:
            cmd += ["--speculative-config", json.dumps(self.speculative_config, separators=(",", ":"))]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        return cmd + self.extra_args

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log_tail(self, lines=40) -> str:
        if not self.log_path or not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    # --- life cycle ----------------------------------------------------------------------------
    def launch(self):
        """Start the process without waiting for it to be ready (see wait_ready)."""
        if self.proc is not None:
            raise ServerError(f"server {self.name} already launched (pid {self.proc.pid})")
        check_testbed(models=())
        if not Path(self.model, "config.json").is_file():
            raise TestbedMissing(f"no model at {self.model}; {install_hint()}")
        if self.port is None:
            self.port = free_port(self.host)
        if self.log_path is None:
            fd, path = tempfile.mkstemp(prefix=f"vllm-{self.name}-{self.port}-", suffix=".log")
            os.close(fd)
            self.log_path = Path(path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update({"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": str(testbed_dir() / "vllm-cache"),
                    "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
                    "PYTHONUNBUFFERED": "1"})
        env.update(self.env)
        self._log = open(self.log_path, "ab")  # pylint: disable=consider-using-with
        self._log.write(("$ " + " ".join(self.command()) + "\n").encode())
        self._log.flush()
        self._t_launch = time.monotonic()
        nice = self.nice

        def _child():  # in the child, before exec
            os.setsid()  # own session and process group, like a systemd service or a container
            if nice:
                os.nice(nice)

        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log,  # pylint: disable=consider-using-with
                                     stderr=subprocess.STDOUT, env=env, preexec_fn=_child)  # pylint: disable=subprocess-popen-preexec-fn
        if nice:
            self._deprioritise(nice)
        return self

    def _deprioritise(self, nice):
        """Lower the server's CPU group priority (kernel autogroup) so benchmark clients are not starved.

        With autogroup scheduling (sched_autogroup_enabled=1, the default) each session is one CPU
        group. A CPU-only vLLM keeps ~2 cores busy while it generates, and on a 2-core machine a
        client in another session (the ansible worker that runs a module calls setsid) was then
        starved for ~100 ms at a time: the server streamed every token on time, the client read them
        all at once (TTFT ~ E2EL, TPOT ~ 0). On a Jetson the model runs on the GPU, not the CPU.
        """
        path = Path(f"/proc/{self.proc.pid}/autogroup")
        try:
            if path.exists():
                path.write_text(str(nice))
        except OSError:
            pass  # not allowed or not supported: the per-task nice set in the child still applies

    def wait_ready(self, timeout=DEFAULT_START_TIMEOUT):
        """Wait for /health 200; raise ServerError with the log tail on early exit or timeout."""
        if self.proc is None:
            raise ServerError("server not launched")
        if self.started_s is not None:
            return self
        deadline = self._t_launch + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ServerError(f"vLLM ({self.name}, port {self.port}) exited with code {code} before "
                                  f"becoming healthy; log {self.log_path}:\n{self.log_tail()}")
            status, _body = http_get(self.url + "/health", timeout=2.0)
            if status == 200:
                self.started_s = time.monotonic() - self._t_launch
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise ServerError(f"vLLM ({self.name}, port {self.port}) not healthy after {timeout:.0f} s "
                                  f"(stopped it); log {self.log_path}:\n{self.log_tail()}")
            time.sleep(1.0)

    def start(self, timeout=DEFAULT_START_TIMEOUT):
        return self.launch().wait_ready(timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace=STOP_GRACE):
        """SIGTERM the process group, SIGKILL after `grace` seconds. Idempotent."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # The engine core and its workers share the group: make sure none is left behind.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        if self._log:
            self._log.close()
            self._log = None
        return proc.returncode

    def __enter__(self):
        return self.start() if self.proc is None else self.wait_ready()

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return f"VllmServer({self.name!r}, url={self.url!r}, spec={self.speculative_config!r})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run a real vLLM server from the jetson_llm test bed.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve", help="start a server and keep it running until interrupted")
    serve.add_argument("model", help="test-bed model name (target, target-deep, ...) or a model directory")
    serve.add_argument("--name", help="served model name (default: the directory name)")
    serve.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--speculative-config", help="JSON; a test-bed model name as \"model\" is expanded")
    serve.add_argument("--api-key")
    serve.add_argument("--max-model-len", type=int, default=1024)
    serve.add_argument("--log", help="log file (default: a temporary file)")
    serve.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT)
    serve.add_argument("--nice", type=int, default=DEFAULT_NICE,
                       help=f"CPU priority of the server, 0 = as the caller (default {DEFAULT_NICE}: benchmark clients first)")
    sub.add_parser("check", help="exit 0 when the test bed is installed, else say how to install it")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []  # more `vllm serve` arguments after --
    args = parser.parse_args(argv[:len(argv) - len(extra) - (1 if "--" in argv else 0)])

    if args.cmd == "check":
        try:
            print(check_testbed(models=("target", "draft-perfect", "draft-random", "draft-badvocab",
                                        "target-deep", "draft-deep-1layer", "draft-deep-tiny", "draft-heavy")))
        except TestbedMissing as exc:
            print(exc, file=sys.stderr)
            return 1
        return 0

    srv = VllmServer(args.model, name=args.name, port=args.port, speculative_config=args.speculative_config,
                     api_key=args.api_key, extra_args=extra, log_path=args.log, max_model_len=args.max_model_len,
                     nice=args.nice)

    def _interrupt(_signum, _frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        srv.launch()
        print(f"starting: {' '.join(srv.command())}\nlog: {srv.log_path}", flush=True)
        srv.wait_ready(args.timeout)
        print(f"ready in {srv.started_s:.0f} s: {srv.url} (model name {srv.name!r}); Ctrl-C stops it", flush=True)
        while srv.alive():
            time.sleep(1.0)
        print(f"vLLM exited with code {srv.proc.returncode}; log {srv.log_path}", file=sys.stderr)
        return 1
    except (ServerError, TestbedMissing) as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
