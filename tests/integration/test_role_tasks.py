"""The speculative_decoding role's batch-size-aware decision, run by the real ansible-playbook.

tests/integration/test_roles.py drives the attempt itself on real vLLM (N lowered from 4 to 2 under a
16-token budget, started, measured, judged). The other branch, a budget so small that no batch size
can turn speculation off, must record why and start nothing; it needs no service, so it runs here on
the controller through the role's own tasks (tests/integration/playbooks/roles/batch_aware_tasks.yml).
"""
from __future__ import annotations

import json
import re
import subprocess

from conftest import BIN, TOP, _ansible_env, run_playbook

PLAYBOOK = TOP / "tests" / "integration" / "playbooks" / "roles" / "batch_aware_tasks.yml"


def _decide(tmp_path, extra_args, **extra):
    proc = run_playbook(PLAYBOOK, inventory="localhost,",
                        extra_vars={"out_dir": str(tmp_path), "vllm_extra_args": extra_args, **extra}, check=False)
    return proc


def test_budget_too_small_for_any_batch_size_records_not_tried_and_starts_nothing(tmp_path):
    # 9 tokens per step fit one request with 4 draft tokens (9 // 5 = 1): N would be 0.
    proc = _decide(tmp_path, ["--dtype", "float32", "--max-num-batched-tokens", "9"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"Start the batch-size-aware configuration\] \*+\nskipping: \[localhost\]", proc.stdout), proc.stdout
    assert "start.yml for localhost" not in proc.stdout, "no service start may be attempted"
    decided = json.loads((tmp_path / "decided.json").read_text())
    batch = decided["batch_aware"]
    assert batch["tried"] is False and batch["kept"] is False and batch["max_batch"] == 0, batch
    assert batch["speculative_config"] is None and batch["verdict"] is None and batch["deltas"] == {}, batch
    assert "--max-num-batched-tokens 9 fits 1 request(s) with 4 draft tokens" in batch["limit_reason"], batch
    assert "no batch size can turn speculation off" in batch["limit_reason"], batch
    assert batch["summary"].startswith("The planned configuration passed at concurrency 1 but regressed at "
                                       "concurrency 8 (verdict reject); batch-size-aware speculation was not tried: "
                                       "--max-num-batched-tokens 9"), batch["summary"]
    assert batch["first_reasons"] == ["Throughput at concurrency 8 fell 19.3 % (limit: no decrease)."]
    # The configuration judged from here on is still the planned one: nothing to keep.
    assert decided["attempt"]["speculative_config"] == {"method": "draft_model", "model": "/models/draft",
                                                        "num_speculative_tokens": 4}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decided.json"], "no benchmark output was written"


def test_last_budget_option_wins_and_a_larger_k_needs_more_room(tmp_path):
    # vLLM's argparse keeps the last --max-num-batched-tokens; with K = 7 even 15 tokens fit 1 request.
    attempt = {"speculative_config": {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 7},
               "gpu_memory_utilization": 0.85}
    proc = _decide(tmp_path, ["--max-num-batched-tokens", "4096", "--max-num-batched-tokens=15"],
                   _jetson_spec_attempt=attempt)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    batch = json.loads((tmp_path / "decided.json").read_text())["batch_aware"]
    assert batch["tried"] is False and batch["max_batch"] == 0, batch
    assert "--max-num-batched-tokens 15 fits 1 request(s) with 7 draft tokens" in batch["limit_reason"], batch


def test_a_run_without_the_model_fails_at_the_role_entry_naming_it_and_ansible_doc_says_it_is_required(tmp_path):
    """vllm_model is the serve role's variable, and speculative_decoding cannot run without it: its own spec says so,
    so ansible-doc lists it required and a bare run stops at the role's argument check, before any task."""
    playbook = tmp_path / "bare.yml"
    playbook.write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n  roles:\n"
                        "    - jetson_llm.vllm.speculative_decoding\n")
    proc = run_playbook(playbook, inventory="localhost,", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "missing required arguments: vllm_model" in proc.stdout, proc.stdout
    tasks = re.findall(r"^TASK \[([^\]]*)\]", proc.stdout, re.M)
    assert len(tasks) == 1 and tasks[0].startswith(
        "jetson_llm.vllm.speculative_decoding : Validating arguments against arg spec"), tasks
    doc = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", "--json", "jetson_llm.vllm.speculative_decoding"],
                         env=_ansible_env(), text=True, capture_output=True, check=True)
    options = json.loads(doc.stdout)["jetson_llm.vllm.speculative_decoding"]["entry_points"]["main"]["options"]
    assert options["vllm_model"]["required"] is True, options["vllm_model"]
