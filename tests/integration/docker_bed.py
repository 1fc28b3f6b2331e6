"""What the two Docker suites share (test_compose.py: a compose service; test_docker_unit.py: a systemd unit that
runs ``docker run``): the engine on this machine, the test bed's image and the way a container gets the test bed.

Both run the real Docker Engine started by .ci/run (with ``--add-runtime=nvidia=runc``: the NVIDIA runtime's name,
runc's behaviour, as the CPU build needs no GPU) and the real vLLM of the test bed inside a container.
"""
from __future__ import annotations

import subprocess
import sys

from conftest import TOP

sys.path.insert(0, str(TOP / "tests" / "nspawn"))
import fleet as nspawn  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = "localhost/jetson-llm-vllm-testbed:1"
DOCKER_CLI = "/usr/bin/docker"
COMPOSE_PLUGIN_DIR = "/usr/libexec/docker/cli-plugins"
DOCKER_SOCKET = "/run/docker.sock"
TESTBED = nspawn.TESTBED
COMPILE_CACHE = nspawn.COMPILE_CACHE
MODEL = "target"
# Longer prompts than the systemd suites' (the container's prefill is part of what the role measures there too);
# 32 tokens out, as the systemd suites' SHORT_WORKLOAD: the container tests' draft is a random one (a reject far
# from every threshold), and the random draft's slow candidate is most of each loop's benchmark time.
WORKLOAD = {"concurrency": [1, 8], "num_prompts": 8, "warmup_prompts": 2, "input_len": 128, "output_len": 32,
            "temperature": 0}


def docker(*args, check=True, timeout=120):
    proc = subprocess.run([DOCKER_CLI, *args], text=True, capture_output=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def container_vars(service, port, api_key, runtime, config_dir):
    """The serve role's variables for the test bed's vLLM in a container (the test bed and the compile cache bound
    in at the same paths), serving ``target`` on loopback ``port``."""
    return {
        "vllm_service_name": service,
        "vllm_runtime": "container",
        "vllm_image": IMAGE,
        "vllm_container_runtime": runtime,
        "vllm_container_entrypoint": str(TESTBED / "venv" / "bin" / "vllm"),
        "vllm_cache_mounts": [{"src": str(TESTBED), "dest": str(TESTBED)},
                              {"src": str(COMPILE_CACHE), "dest": "/root/.cache/vllm"}],
        "vllm_model": str(TESTBED / "models" / MODEL),
        "vllm_served_model_name": MODEL,
        "vllm_host": "127.0.0.1",
        "vllm_port": port,
        "vllm_max_model_len": 1024,
        "vllm_gpu_memory_utilization": 0.75,
        # The engine core in the API server's process (a start-up of about 15 s instead of 27 on the CI machine),
        # as the role fleet runs it; the fleet and benchmark tests keep vLLM's default.
        "vllm_environment": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
        "vllm_extra_args": ["--dtype", "bfloat16", "--enforce-eager"],
        "vllm_api_key": api_key,
        # 900 s: these run beside the static suites (make test's phase 1); on CI's 2 cores a compose start-up beside
        # ansible-test sanity and units once took more than 420 s (7 December).
        "vllm_startup_timeout": 900,
        "vllm_config_dir": str(config_dir),
        "jetson_spec_facts_root": nspawn.IDENTITY_DIR,
        "jetson_spec_progress_interval": 2,
    }
