"""speculative_plan and speculative_verdict through the real `ansible` CLI (system Python on the target).

The rules themselves are unit-tested (tests/unit/plugins/module_utils/test_speculative_*.py);
these tests prove the module plumbing: argument spec, fail_json on invalid input, check mode,
warnings, and that the returned values survive Ansible's result handling unchanged.
"""
from __future__ import annotations

import json
import shlex

from conftest import run_module

THOR = {
    "is_jetson": True, "reason": None, "generation": "thor", "product_line": "thor-agx", "variant": "thor-t5000",
    "l4t": {"version": "38.2.0", "major": 38, "minor": 2, "patch": 0, "source": "nv_tegra_release"},
    "memory": {"total_mb": 125772, "available_mb": 117940, "swap_total_mb": 0, "swap_free_mb": 0},
    "vllm_runtime": {"path": "upstream", "image": "vllm/vllm-openai:latest", "min_vllm_version": "0.20",
                     "forbidden_images": ["ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"], "notes": []},
}
BASELINE = {"config": {"concurrency": [1]},
            "runs": [{"concurrency": 1, "failed": 0, "ttft_ms_p50": 180.0, "e2e_latency_ms_p50": 2900.0}]}
PLAN = {"jetson": THOR, "target_model": "meta-llama/Llama-3.1-8B-Instruct", "expected_concurrency": 1,
        "baseline_gpu_memory_utilization": 0.75, "vllm_version": "0.20.1", "draft_size_mb": 1000,
        "baseline_benchmark": BASELINE}


def _bench(tput1, tpot1, tput8, acceptance=None, **config):
    def run(conc, tput, tpot):
        return {"concurrency": conc, "throughput_tok_s": tput, "tpot_ms_p50": tpot, "failed": 0, "completed": 50,
                "errors": [], "metrics_polluted": False,
                "spec_decode": None if acceptance is None else {"acceptance_rate": acceptance}}
    cfg = {"input_len": 2048, "output_len": 128, "num_prompts": 50, "dataset": "builtin", "prompt_set_id": "ab" * 32,
           "concurrency": [1, 8], "temperature": 0.0, "ignore_eos": True}
    cfg.update(config)
    return {"model": "meta-llama/Llama-3.1-8B-Instruct", "config": cfg,
            "runs": [run(1, tput1, tpot1), run(8, tput8, 30.0)]}


def test_plan_module_enables_eagle3_on_thor():
    result = run_module("jetson_llm.vllm.speculative_plan", PLAN)
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    assert result["enable"] is True and result["method"] == "eagle3"
    assert result["speculative_config_json"] == (
        '{"draft_tensor_parallel_size":1,"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",'
        '"num_speculative_tokens":5}')
    assert result["gpu_memory_utilization"] == 0.7
    # vLLM 0.20.1 predates the fix of vllm#48894 (0.27.0): the known-bad table's warning, naming the head's 2048
    assert len(result["decision_warnings"]) == 1, result["decision_warnings"]
    assert result["decision_warnings"][0].startswith("vLLM 0.20.1 predates the fix of vllm#48894")
    assert "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: 2048, published)" in result["decision_warnings"][0]
    assert run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, vllm_version="0.27.0"))["decision_warnings"] == []
    # the value goes into a single-quoted ExecStart / shell word unchanged
    words = shlex.split("vllm serve x --speculative-config '%s'" % result["speculative_config_json"])
    assert json.loads(words[-1]) == result["speculative_config"]


def test_plan_module_refusal_is_not_a_failure_and_warns():
    result = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, expected_concurrency=8, vllm_version="unknown"))
    assert result.get("failed") is not True, result
    assert result["enable"] is False and result["refused_by"] == ["concurrency"]
    assert result["handoff"]["actions"] == ["lower_concurrency", "no_speculation"]
    assert any("vLLM version unknown" in w for w in result["decision_warnings"])


def test_plan_module_check_mode_gives_the_same_decision():
    normal = run_module("jetson_llm.vllm.speculative_plan", PLAN)
    checked = run_module("jetson_llm.vllm.speculative_plan", PLAN, check_mode=True)
    for key in ("enable", "speculative_config_json", "gpu_memory_utilization", "reasons"):
        assert checked[key] == normal[key]


def test_plan_module_fails_on_hostile_model_id():
    result = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, draft_model="acme/x\nExecStartPre=/bin/sh"))
    assert result["failed"] is True
    assert "draft_model" in result["msg"] and "line break" in result["msg"]


def test_plan_module_fails_on_unquoted_yaml_version():
    result = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, vllm_version=0.2))
    assert result["failed"] is True and "quote it" in result["msg"]


def test_plan_module_fails_on_unknown_config_key():
    result = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, extra_config={"tensor_parallel_size": 2}))
    assert result["failed"] is True and "draft_tensor_parallel_size" in result["msg"]


def test_plan_module_fails_when_jetson_is_not_a_dict():
    result = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, jetson="thor"))
    assert result["failed"] is True and "jetson" in result["msg"]


def test_verdict_module_accepts_and_recommends():
    result = run_module("jetson_llm.vllm.speculative_verdict",
                        {"baseline": {"benchmark": _bench(44.0, 22.0, 251.0)},
                         "candidate": {"benchmark": _bench(60.0, 16.0, 255.0, acceptance=0.72)}})
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    assert result["verdict"] == "accept" and result["keep"] is True
    assert result["deltas"]["throughput_gain_c1"] == 0.3636
    assert result["recommendation"]["action"] == "raise_num_speculative_tokens"


def test_verdict_module_rejects_c8_regression():
    result = run_module("jetson_llm.vllm.speculative_verdict",
                        {"baseline": _bench(44.0, 22.0, 251.0), "candidate": _bench(60.0, 16.0, 240.0, acceptance=0.5),
                         "keep_marginal": True})
    assert result["verdict"] == "reject" and result["keep"] is False


def test_verdict_module_fails_on_mismatched_workloads():
    result = run_module("jetson_llm.vllm.speculative_verdict",
                        {"baseline": _bench(44.0, 22.0, 251.0), "candidate": _bench(60.0, 16.0, 255.0, output_len=256)})
    assert result["failed"] is True
    assert "config.output_len is 128 in the baseline and 256 in the candidate" in result["msg"]


def test_plan_module_next_step_after_an_out_of_memory_start():
    first = run_module("jetson_llm.vllm.speculative_plan", PLAN)
    assert first["next_step"] == "first_attempt"
    retry = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, smaller_draft_model="meta-llama/Llama-3.2-1B-Instruct", previous_attempt={
        "failure": "oom", "gpu_memory_utilization": first["gpu_memory_utilization"], "model": first["model"]}))
    assert retry.get("failed") is not True, retry
    assert retry["enable"] is True and retry["next_step"] == "lower_gpu_memory_utilization"
    assert retry["gpu_memory_utilization"] == 0.65


def test_plan_module_previous_attempt_checked_by_the_argument_spec():
    bad = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, previous_attempt={"failure": "melted"}))
    assert bad["failed"] is True and "melted" in bad["msg"] and "oom" in bad["msg"]
    missing = run_module("jetson_llm.vllm.speculative_plan", dict(PLAN, previous_attempt={"failure": "oom"}))
    assert missing["failed"] is True and "gpu_memory_utilization" in missing["msg"]


def test_plan_module_plans_dflash_and_a_local_gemma4_assistant_read_from_its_config(tmp_path):
    """The newer methods through the module: DFlash with its draft, and Gemma 4's MTP assistant told from a generic
    draft by the config.json the module reads on the host."""
    dflash = run_module("jetson_llm.vllm.speculative_plan",
                        dict(PLAN, target_model="Qwen/Qwen3-8B", method="dflash", vllm_version="0.32.0",
                             draft_model="z-lab/Qwen3-8B-DFlash-b16"))
    assert dflash.get("failed") is not True, dflash
    assert dflash["speculative_config"] == {"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16",
                                            "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}
    assert dflash["model_runner"] == "v2"
    for name, model_type in (("assistant", "gemma4_assistant"), ("generic", "llama")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"model_type": model_type}))
    args = dict(PLAN, target_model="google/gemma-4-E4B-it", vllm_version="0.32.0", draft_size_mb=None)
    assistant = run_module("jetson_llm.vllm.speculative_plan", dict(args, draft_model=str(tmp_path / "assistant")))
    assert assistant["method"] == "mtp" and assistant["speculative_config"]["model"] == str(tmp_path / "assistant")
    # a generic draft with method mtp: not an MTP drafter, so ignored (the target's own layers, as before)
    generic = run_module("jetson_llm.vllm.speculative_plan",
                         dict(args, method="mtp", draft_model=str(tmp_path / "generic")))
    assert generic["enable"] is True and generic["model"] is None, generic
    assert "model" not in generic["speculative_config"], generic
    assert any("draft_model are ignored" in w for w in generic["decision_warnings"]), generic["decision_warnings"]
    late = run_module("jetson_llm.vllm.speculative_plan",
                      dict(PLAN, vllm_version="0.34.0", extra_config={"parallel_drafting": True}))
    assert late.get("failed") is True and "refused by vLLM 0.34.0 for method eagle3" in late["msg"], late
