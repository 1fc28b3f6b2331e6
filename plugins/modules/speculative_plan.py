#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_plan
short_description: Decide whether and how a Jetson should use vLLM speculative decoding
version_added: 0.1.0
description:
  - Pure decision, runs anywhere and changes nothing. From the Jetson facts (M(jetson_llm.vllm.jetson_facts)), the
    target model and the baseline service settings, decide whether to add C(--speculative-config) to the
    C(vllm serve) command, with which method (EAGLE-3, a draft model, the target's own MTP layers or Gemma 4's MTP
    assistant, DFlash, n-gram prompt lookup or suffix decoding), which JSON, which
    C(num_speculative_tokens) and which lowered C(--gpu-memory-utilization).
  - "Families: Jetson Thor and AGX Orin may speculate. Orin NX and Orin Nano never use EAGLE-3; they use a draft
    model or MTP only with O(allow_small_devices=true), and the memory-free V(ngram) and V(suffix) when O(method)
    names them (with a warning; the benchmark decides). Xavier, unidentified devices and non-Jetson hosts are
    refused."
  - "Concurrency: up to O(max_good_concurrency) (2) is good; above it and below O(refuse_concurrency) (8) is
    allowed with a warning; O(refuse_concurrency) and more is refused."
  - "Method V(auto): EAGLE-3 when O(eagle3_head) is given, a draft model when O(draft_model) is given; else V(mtp)
    when the target carries its own MTP layers (a local target's C(config.json) declares
    C(num_nextn_predict_layers) or C(mtp_num_hidden_layers) > 0, at the top level or in C(text_config); otherwise
    the catalogue says so) and vLLM is 0.11+; else a published EAGLE-3 head (the catalogue), else a catalogued
    same-family draft, else refused: no published EAGLE-3 head and no draft, do not train one ad hoc. V(ngram) and
    V(suffix) are used only when asked for explicitly."
  - "V(mtp) with the target's own layers: no C(model) key (vLLM drafts with the target checkpoint); C(num_speculative_tokens) 4 on Thor, 2 on
    Orin; with n MTP layers known, a K above n must be a multiple of n (vLLM refuses others), so the default is
    rounded down and a given value that vLLM would refuse fails the task. Refused when the target's config.json
    declares no MTP layers."
  - "V(mtp) with O(draft_model): Gemma 4's MTP assistant (a separate MTP drafter checkpoint, C(model_type)
    C(gemma4_assistant) from vLLM 0.21, C(gemma4_unified_assistant) for the 12B from 0.23), written as the C(model)
    key and sized as a draft (refused for a target that is not Gemma 4); a O(draft_model) that is no assistant (by
    its local C(model_type), else its name C(gemma-4-...-assistant)) is ignored with a warning, as before. Method
    V(auto) plans it when O(draft_model) is such an assistant (vLLM would otherwise run it as a generic draft), the
    smaller-draft step keeps it (and a DFlash draft) of the same kind."
  - "V(dflash) (vLLM 0.20+, only when O(method) names it): a DFlash block-diffusion draft given as O(draft_model)
    (refused without one; a local draft needs C(dflash_config.mask_token_id) in its C(config.json) or a
    speculators C(dflash) config, as vLLM does), sized and stepped as a draft; a warning says it is not verified on
    Jetson by this collection and what vLLM needs for it (Triton; on 0.20 to 0.23 a non-causal attention backend)."
  - "Model runner: RV(model_runner) says which vLLM runner runs the method at O(vllm_version) (V1, Model Runner V2,
    or it depends on the model for 0.22 to 0.28), with a warning when V2 is the default but does not run the method
    (vLLM falls back to V1, and refuses to start with C(VLLM_USE_V2_MODEL_RUNNER=1))."
  - "Workload: speculation does not reduce TTFT-dominated latency. With O(baseline_benchmark), the plan is refused
    when TTFT is more than O(max_ttft_share) of the end-to-end latency at concurrency 1; without it, a warning."
  - "Runtime: Thor runs upstream vLLM 0.20+ (C(vllm/vllm-openai), never an upstream C(-cu12x) tag, which has no
    sm_110 kernels), NVIDIA's Thor image (C(ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor)) or a validated native
    vLLM 0.20+: the NVIDIA-AI-IOT Orin image is refused, an NVIDIA-AI-IOT tag that names no device gets a warning,
    another image gets a warning. Orin on L4T r39+ needs upstream vLLM 0.20+ (NVIDIA-AI-IOT images refused,
    another image warned about as on Thor); older Orin uses the NVIDIA-AI-IOT image; an Orin with an unknown L4T
    release is assumed pre-r39, with the warning M(jetson_llm.vllm.jetson_facts) gives. V(draft_model) needs vLLM
    0.15+, V(mtp) 0.11+ (with Gemma 4's assistant 0.21+, the 12B's 0.23+), V(suffix) 0.12+, V(dflash) 0.20+; any
    speculation needs vLLM 0.10+. An unknown vLLM version gives a warning; an upstream image tag that
    names another version than O(vllm_version) fails the task."
  - "Known-bad versions: a warning when the method and vLLM version fall in a range of the collection's table
    (docs/decision-rules.md): V(eagle3) before vLLM 0.27.0 (or of unknown version), whose draft sizes its rotary cache
    from its own C(max_position_embeddings) and crashes or loses acceptance beyond it (vllm#48894, fixed by
    vllm#49343); the warning names the head's value from its C(config.json) (local head) or the published value."
  - "Memory: the new C(gpu_memory_utilization) is the baseline minus O(gpu_memory_utilization_step) (0.05),
    rounded to 2 decimals; refused below O(min_gpu_memory_utilization), or when free memory minus the draft size
    would be below O(min_free_memory_after_draft_mb) (2048 MB). Near the ceiling (the baseline within one
    O(gpu_memory_utilization_step) of O(gpu_memory_utilization_ceiling), or above it) the free memory must be
    measured (O(free_memory_mb) or C(jetson.memory.available_mb)) and the draft size known; otherwise it is
    refused with the action to free memory first. V(ngram) and V(suffix) load no draft, so these checks do not
    apply to them; V(mtp) lowers the utilisation like a draft, and the target's own layers' size is known only from
    O(draft_size_mb) (an assistant is sized as a draft)."
  - "Draft size: O(draft_size_mb), else the catalogue's estimate for the head or draft, else the size of the weight
    files when the draft is a local path; else the headroom check is skipped with a warning."
  - "Start-up failures: with O(previous_attempt) the plan returns the next step in the specification's order: after
    a first out-of-memory one more O(gpu_memory_utilization_step) lower (not below the floor), then
    O(smaller_draft_model) at that value, then a refusal handing off to memory tuning. A rejected config re-checks
    the runtime rule and refuses (back to the non-speculative command). See RV(next_step)."
  - "C(num_speculative_tokens): 5 on Thor, 3 on Orin, at most 16. A larger O(num_speculative_tokens) is used only
    when O(measured_acceptance_rate) is above O(min_acceptance_for_more_tokens) (0.6); otherwise it is clamped to
    the default with a warning, or the task fails when O(strict=true)."
  - A refusal is a normal result (RV(enable=false) with RV(reasons) and a RV(handoff)), so fleets go on. Invalid
    input (wrong types, out-of-range numbers, unsafe model ids, unknown SpeculativeConfig keys) fails the task.
  - Every rule, with its default and its test, is listed in C(docs/decision-rules.md).
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.decision
options:
  jetson:
    description:
      - The Jetson facts, that is C(ansible_facts.jetson) from M(jetson_llm.vllm.jetson_facts).
      - Used keys are C(is_jetson), C(reason), C(generation), C(product_line), C(variant), C(l4t.major),
        C(vllm_runtime) (C(path), C(min_vllm_version), C(forbidden_images), C(notes)) and C(memory.available_mb).
        Missing keys count as unknown and lead to a refusal with a reason, not to a failure.
    type: dict
    required: true
  target_model:
    description:
      - The model the baseline service serves, as a Hugging Face repo id (C(owner/name)) or an absolute path.
      - "Quotes, whitespace, line breaks, C(%), C($) and shell or systemd characters are refused: the value is
        written into a unit file."
      - Catalogue matching is case-insensitive; absolute paths never match the catalogue.
    type: str
    required: true
  method:
    description:
      - V(auto) picks EAGLE-3, then a draft model, as described above.
      - V(eagle3) and V(draft_model) force the method (refused when no head or draft is known).
      - V(mtp) drafts with the target's own multi-token-prediction layers (vLLM 0.11+), or with Gemma 4's MTP
        assistant given as O(draft_model) (vLLM 0.21+).
      - V(dflash) drafts with a DFlash draft given as O(draft_model) (vLLM 0.20+); never chosen by V(auto).
      - V(ngram) (prompt lookup, no draft weights) takes C(prompt_lookup_min) / C(prompt_lookup_max) from
        O(extra_config); a missing bound takes the other's value, neither gives vLLM's default window of 5, written
        out in the config.
      - V(suffix) (suffix decoding, no draft weights, vLLM 0.12+) needs the C(arctic-inference) package in the vLLM
        environment; O(extra_config) may set C(suffix_decoding_max_tree_depth),
        C(suffix_decoding_max_cached_requests), C(suffix_decoding_max_spec_factor) and
        C(suffix_decoding_min_token_prob).
    type: str
    choices: [auto, eagle3, draft_model, mtp, ngram, suffix, dflash]
    default: auto
  eagle3_head:
    description:
      - An EAGLE-3 head for exactly this target (repo id or absolute path). Overrides the catalogue.
    type: str
  draft_model:
    description:
      - A small draft model of the same family, sharing the target's tokenizer and vocabulary size (repo id or
        absolute path). Overrides the catalogue.
    type: str
  num_speculative_tokens:
    description:
      - Override of the number of speculative tokens (default 5 on Thor, 3 on Orin), from 1 to 16.
      - "vLLM itself only checks that the value is above 0; the cap of 16 is this collection's: the expected
        accepted length is bounded by 1 / (1 - acceptance rate), so even at an acceptance of 0.9, 16 tokens already
        give 8.3 of the 10 possible tokens per step, while every drafted token costs KV cache and draft compute."
      - A value above the default needs O(measured_acceptance_rate) > O(min_acceptance_for_more_tokens).
    type: int
  measured_acceptance_rate:
    description:
      - A measured draft acceptance rate (0 to 1), for example C(deltas.acceptance_rate) from a previous
        M(jetson_llm.vllm.speculative_verdict).
    type: float
  strict:
    description:
      - Fail instead of clamping when O(num_speculative_tokens) is above the default without a high enough
        O(measured_acceptance_rate).
    type: bool
    default: false
  expected_concurrency:
    description:
      - How many requests the service usually handles at once (at least 1).
    type: int
    required: true
  baseline_gpu_memory_utilization:
    description:
      - The C(--gpu-memory-utilization) of the baseline (non-speculative) service, above 0 and at most 1.
    type: float
    required: true
  vllm_version:
    description:
      - The vLLM version of the baseline runtime as a string, for example C("0.20.1"), C("v0.20.1"),
        C("0.32.0+cpu") or C("0.15.0rc2") (pre-releases compare as their release, with a warning).
      - Omitted, empty, V(unknown) or not a version number means unknown, which gives a warning; version-gated
        SpeculativeConfig keys are then refused.
      - Quote it in YAML; an unquoted C(0.20) is the number 0.2 and is refused.
      - Anything after the version (spaces, C(;), line breaks) fails the task.
    type: raw
  runtime_image:
    description:
      - The container image of the baseline service, for the runtime checks. Omit for a native install.
      - NVIDIA-AI-IOT images are recognised by their repository (C(ghcr.io/nvidia-ai-iot/vllm), C(dustynv/vllm)),
        whatever the tag or digest. An upstream tag such as C(v0.10.0) must agree with O(vllm_version).
    type: str
  free_memory_mb:
    description:
      - Free memory in MB with the baseline service running. Defaults to C(jetson.memory.available_mb).
    type: int
  draft_size_mb:
    description:
      - Memory the EAGLE-3 head or draft model needs, in MB.
      - Without it, the catalogue's estimate is used, or the size of the weight files (C(*.safetensors), C(*.bin),
        C(*.pt), C(*.gguf)) when the draft is a local path on the target; else the headroom check is skipped with a
        warning (and refused near the ceiling). RV(draft_size_source) says which.
    type: int
  extra_config:
    description:
      - Further SpeculativeConfig keys, validated against what vLLM accepts for the chosen method and version.
      - "Allowed for V(eagle3) and V(draft_model): C(draft_tensor_parallel_size) (1 or O(tensor_parallel_size)),
        C(quantization), C(max_model_len), C(revision), C(code_revision); for V(mtp): C(quantization),
        C(max_model_len); for V(ngram): C(prompt_lookup_max), C(prompt_lookup_min) (at most C(prompt_lookup_max);
        a missing one takes the other's value, neither gives 5 and 5), C(max_model_len); for V(suffix), vLLM 0.12+:
        C(suffix_decoding_max_tree_depth) (1 to 4096), C(suffix_decoding_max_cached_requests) (0 to 10**8),
        C(suffix_decoding_max_spec_factor) (0 to 1000), C(suffix_decoding_min_token_prob) (0 to 1); for every
        method but V(suffix) and V(dflash) from vLLM 0.24: C(num_speculative_tokens_per_batch_size); for V(dflash):
        as for V(draft_model) (C(parallel_drafting) is refused: DFlash always drafts in parallel)."
      - "C(parallel_drafting) (boolean; P-EAGLE for an EAGLE-3 head, PARD for a draft model trained for it): for
        V(eagle3) and V(draft_model) from vLLM 0.16 to 0.33 only (0.34 refuses it for any method but dflash and
        dspark; an unknown version is refused too); a warning says it runs on the V1 runner only."
      - C(method), C(model) and C(num_speculative_tokens) come from the options above; C(tensor_parallel_size)
        is refused with vLLM's own hint (pass C(draft_tensor_parallel_size)); unknown keys are refused with the
        allowed list (vLLM 0.20+ rejects them at startup and older versions silently drop them).
    type: dict
    default: {}
  allow_small_devices:
    description:
      - Allow draft-model or MTP speculation on Orin NX and Orin Nano (EAGLE-3 stays refused there). V(ngram) and
        V(suffix) need no draft memory and are tried there without it when O(method) names them.
    type: bool
    default: false
  catalogue:
    description:
      - Extra or replacement catalogue entries, target repo id -> C({eagle3_head, draft_model, mtp}). An entry
        replaces the shipped one for that target; a null value means "none"; C(mtp) (boolean, default false) says
        the target checkpoint has its own MTP layers.
    type: dict
  tensor_parallel_size:
    description:
      - Tensor parallel size of the target; C(draft_tensor_parallel_size) may be 1 or this value.
    type: int
    default: 1
  max_good_concurrency:
    description: Concurrency up to this value is good for speculation.
    type: int
    default: 2
  refuse_concurrency:
    description: Concurrency from this value on is refused (continuous batching already wins).
    type: int
    default: 8
  gpu_memory_utilization_step:
    description: How much to lower C(gpu_memory_utilization) from the baseline to make room for the draft.
    type: float
    default: 0.05
  min_gpu_memory_utilization:
    description: Refuse when the lowered C(gpu_memory_utilization) would fall below this floor.
    type: float
    default: 0.5
  gpu_memory_utilization_ceiling:
    description:
      - The ceiling memory tuning pushes C(--gpu-memory-utilization) to (vLLM's own default is 0.9).
      - A baseline within one O(gpu_memory_utilization_step) of it, or above it, is near the ceiling; speculation is
        then enabled only when the measured free memory leaves O(min_free_memory_after_draft_mb) after the draft.
    type: float
    default: 0.9
  min_free_memory_after_draft_mb:
    description: Refuse when free memory minus the draft size would be below this many MB.
    type: int
    default: 2048
  min_acceptance_for_more_tokens:
    description: Acceptance rate that must be exceeded before O(num_speculative_tokens) may go above the default.
    type: float
    default: 0.6
  baseline_benchmark:
    description:
      - The baseline (non-speculative) M(jetson_llm.vllm.vllm_benchmark) result, registered as is or its
        C(benchmark) key. Its concurrency-1 run (C(ttft_ms_p50), C(e2e_latency_ms_p50)) tells whether TTFT
        dominates the latency.
      - Without it the TTFT check is skipped with a warning.
    type: dict
  max_ttft_share:
    description:
      - Refuse when the baseline's C(ttft_ms_p50) is more than this share of its C(e2e_latency_ms_p50) at
        concurrency 1 (above 0, at most 1).
      - "The default 0.5 reads 'TTFT dominates' literally: more than half of the latency is time to first token,
        which speculation does not shorten. With the benchmark's default workload (2048 tokens in, 128 out) TTFT is
        well under half on Thor and AGX Orin, so only prefill-bound workloads are refused."
    type: float
    default: 0.5
  smaller_draft_model:
    description:
      - A smaller same-family draft model to try after the start-up ran out of memory even one step lower
        (see O(previous_attempt)); used with method V(draft_model).
    type: str
  previous_attempt:
    description:
      - The previous start-up of the speculative service, when it failed; the plan then returns the next step.
      - Omit on the first attempt.
    type: dict
    suboptions:
      failure:
        description:
          - How it failed. V(oom) (out of memory at start-up), V(kv_cache) (too little memory left for the KV
            cache; the smaller draft next, never a lower utilisation), V(config_rejected) (vLLM rejected
            C(--speculative-config)), V(engine_init) (engine core initialisation failed), V(crash_loop),
            V(early_exit) (the process ended before serving, with no known error), V(timeout) (not ready in time);
            every failure M(jetson_llm.vllm.vllm_health) reports.
        type: str
        required: true
        choices: [config_rejected, kv_cache, oom, engine_init, crash_loop, early_exit, timeout]
      gpu_memory_utilization:
        description: The C(--gpu-memory-utilization) the failed attempt used. Required for V(oom).
        type: float
      model:
        description: The EAGLE-3 head or draft model the failed attempt used.
        type: str
seealso:
  - module: jetson_llm.vllm.jetson_facts
  - module: jetson_llm.vllm.speculative_verdict
  - module: jetson_llm.vllm.vllm_benchmark
notes:
  - Speculation helps decode-heavy, low-concurrency workloads; it does not reduce TTFT-dominated latency.
  - Acceptance rate and draft overhead are model specific; the benchmark decides (M(jetson_llm.vllm.speculative_verdict)).
'''

EXAMPLES = r'''
- name: Gather the Jetson facts
  jetson_llm.vllm.jetson_facts:

# Thor, Llama 3.1 8B: the catalogue has a published EAGLE-3 head -> EAGLE-3, 5 tokens, 0.75 -> 0.70
- name: Plan speculative decoding
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    runtime_image: vllm/vllm-openai:latest
    draft_size_mb: 1000
  register: spec_plan

- name: Show the flag to add to vllm serve
  ansible.builtin.debug:
    msg: "--speculative-config '{{ spec_plan.speculative_config_json }}' --gpu-memory-utilization {{ spec_plan.gpu_memory_utilization }}"
  when: spec_plan.enable

# AGX Orin on JetPack 6 (L4T r36), a model with no published head: small same-family draft, 3 tokens
- name: Plan with a draft model
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: Qwen/Qwen3-8B
    method: draft_model
    draft_model: Qwen/Qwen3-0.6B
    expected_concurrency: 2
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.15.1"
    runtime_image: ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin
    draft_size_mb: 1500

# High-concurrency server: refused (enable false), the fleet goes on
- name: Plan for a busy endpoint
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 16
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
  register: busy_plan

- name: Report why and what to try next
  ansible.builtin.debug:
    msg: "{{ busy_plan.reasons + [busy_plan.handoff.summary] }}"
  when: not busy_plan.enable

# Memory tuning pushed the baseline to 0.92 (near the 0.90 ceiling): enabled only when the measured free
# memory (here MemAvailable from the facts, taken while the baseline serves) leaves 2 GB after the draft;
# otherwise refused with "free at least 2048 MB first" and the hand-off to memory tuning
- name: Plan near the memory ceiling
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: Qwen/Qwen3-8B
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.92
    vllm_version: "0.20.1"

# Refuse TTFT-dominated workloads: pass the baseline benchmark (its concurrency-1 run is read)
- name: Benchmark the baseline
  jetson_llm.vllm.vllm_benchmark:
    model: meta-llama/Llama-3.1-8B-Instruct
  register: baseline

- name: Plan with the baseline benchmark
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    baseline_benchmark: "{{ baseline }}"
  register: spec_plan

# The speculative service ran out of memory at start-up with 0.70: the next step is 0.65 (next_step
# lower_gpu_memory_utilization); if that fails too, the smaller draft at 0.65 (smaller_draft); then none
- name: Plan the retry after an out-of-memory start-up
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: Qwen/Qwen3-8B
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    smaller_draft_model: Qwen/Qwen3-0.6B
    previous_attempt:
      failure: oom
      gpu_memory_utilization: "{{ spec_plan.gpu_memory_utilization }}"
      model: "{{ spec_plan.model }}"
  register: retry_plan

# More speculative tokens only after a measured acceptance rate > 0.6
- name: Raise num_speculative_tokens after a good verdict
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: meta-llama/Llama-3.1-8B-Instruct
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.75
    vllm_version: "0.20.1"
    num_speculative_tokens: 6
    measured_acceptance_rate: "{{ spec_verdict.deltas.acceptance_rate }}"
    strict: true

# n-gram prompt lookup (no draft weights), only when asked for explicitly
- name: Plan prompt-lookup speculation
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: /opt/models/my-finetune
    method: ngram
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.8
    vllm_version: "0.20.1"
    extra_config:
      prompt_lookup_max: 4
      prompt_lookup_min: 2

# A target with its own MTP layers (config.json: num_nextn_predict_layers or mtp_num_hidden_layers):
# method auto plans {"method": "mtp", "num_speculative_tokens": 4} on Thor
- name: Plan MTP speculation for a local Qwen3-Next checkpoint
  jetson_llm.vllm.speculative_plan:
    jetson: "{{ ansible_facts.jetson }}"
    target_model: /opt/models/Qwen3-Next-80B-A3B-Instruct-FP8
    expected_concurrency: 1
    baseline_gpu_memory_utilization: 0.8
    vllm_version: "0.32.0"
'''

RETURN = r'''
enable:
  description: Whether to add C(--speculative-config). False is a refusal, not a failure.
  returned: always
  type: bool
  sample: true
reasons:
  description: Plain sentences. When RV(enable) is true, why speculation fits; when false, every rule that refused.
  returned: always
  type: list
  elements: str
  sample: ["Jetson AGX Thor (thor-t5000) may speculate (Thor has memory for the target plus an EAGLE-3 head or a draft)."]
refused_by:
  description: Identifiers of the rules that refused (V(family), V(method), V(concurrency), V(runtime), V(memory)); empty when enabled.
  returned: always
  type: list
  elements: str
  sample: [concurrency]
decision_warnings:
  description:
    - Plain sentences worth an operator's attention that did not refuse (also emitted as Ansible warnings).
  returned: always
  type: list
  elements: str
  sample: ["Expected concurrency 4 is above 2: speculation usually loses as concurrency grows; the benchmark at concurrency 8 decides."]
method:
  description: The chosen method (V(eagle3), V(draft_model), V(mtp), V(ngram), V(suffix), V(dflash)), or null when
    none could be chosen.
  returned: always
  type: str
  sample: eagle3
model:
  description: The EAGLE-3 head, draft model, DFlash draft or MTP assistant (null for V(mtp) with the target's own
    layers, V(ngram), V(suffix) and when refused for lack of one).
  returned: always
  type: str
  sample: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
model_source:
  description: Where RV(model) came from, V(option) or V(catalogue) (null when there is none); for V(mtp) with the
    target's own layers, where they are known from, V(config.json) or V(catalogue) (null when not known); V(option)
    for a Gemma 4 assistant.
  returned: always
  type: str
  sample: catalogue
model_runner:
  description: The vLLM model runner that runs the method at O(vllm_version), VLLM_USE_V2_MODEL_RUNNER unset - V(v1),
    V(v2), V(depends) (vLLM 0.22 to 0.28 make Model Runner V2 the default for some models only) or V(unknown) (no
    version); null when RV(enable) is false.
  returned: always
  type: str
  sample: v2
speculative_config:
  description: The SpeculativeConfig as a dictionary; empty when RV(enable) is false.
  returned: always
  type: dict
  sample: {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}
speculative_config_json:
  description:
    - RV(speculative_config) as compact JSON with sorted keys, the value of C(--speculative-config); empty when
      RV(enable) is false.
    - It contains no whitespace, single quotes, C(%), C($) or backslashes, so it can go into a single-quoted
      systemd C(ExecStart) or a compose command list as is.
  returned: always
  type: str
  sample: '{"draft_tensor_parallel_size":1,"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":5}'
gpu_memory_utilization:
  description: The C(--gpu-memory-utilization) to use with speculation (the baseline when refused or for V(ngram)
    and V(suffix)).
  returned: always
  type: float
  sample: 0.7
baseline_gpu_memory_utilization:
  description: The baseline value the plan started from.
  returned: always
  type: float
  sample: 0.75
num_speculative_tokens:
  description: Speculative tokens per step (null when refused).
  returned: always
  type: int
  sample: 5
default_num_speculative_tokens:
  description: The family default (5 on Thor, 3 on Orin; null for other devices).
  returned: always
  type: int
  sample: 5
next_step:
  description:
    - V(first_attempt) (enabled, no O(previous_attempt)), V(lower_gpu_memory_utilization) (enabled one step lower
      after an out-of-memory), V(smaller_draft) (enabled with O(smaller_draft_model)) or V(none) (refused).
  returned: always
  type: str
  sample: lower_gpu_memory_utilization
draft_size_mb:
  description: The draft size the memory check used (null when unknown or for V(ngram) and V(suffix)).
  returned: always
  type: int
  sample: 1700
draft_size_source:
  description: Where RV(draft_size_mb) came from, V(option), V(catalogue) (an estimate) or V(weights) (measured).
  returned: always
  type: str
  sample: catalogue
ttft_share:
  description: TTFT / end-to-end latency of the baseline at concurrency 1 (null without O(baseline_benchmark)).
  returned: always
  type: float
  sample: 0.062
handoff:
  description: What to try next when refused; empty actions when enabled.
  returned: always
  type: dict
  contains:
    actions:
      description:
        - Ordered action ids from V(fix_facts), V(lower_concurrency), V(provide_draft_model), V(upgrade_vllm),
          V(change_runtime), V(free_memory), V(lower_gpu_memory_utilization), V(memory_tuning), V(smaller_draft),
          V(smaller_model), V(better_quantisation), V(no_speculation).
      type: list
      elements: str
      sample: [free_memory, memory_tuning, smaller_draft, no_speculation]
    summary:
      description: The same as one sentence for an operator (empty when enabled).
      type: str
      sample: >-
        Next: free at least 2048 MB first (stop other services, lower --max-model-len, or lower the baseline
        --gpu-memory-utilization); hand off to memory tuning (jetson-inference-mem-tune); use a smaller draft
        (smaller_draft_model); go back to the non-speculative command (the baseline service without
        --speculative-config).
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.draft_size import local_model_config, weights_size_mb
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.plan import (
    METHODS, PLAN_DEFAULTS, STARTUP_FAILURES, plan)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError


def main():
    argument_spec = dict(
        jetson=dict(type='dict', required=True),
        target_model=dict(type='str', required=True),
        method=dict(type='str', choices=list(METHODS), default='auto'),
        eagle3_head=dict(type='str'),
        draft_model=dict(type='str'),
        num_speculative_tokens=dict(type='int', no_log=False),
        measured_acceptance_rate=dict(type='float'),
        strict=dict(type='bool', default=False),
        expected_concurrency=dict(type='int', required=True),
        baseline_gpu_memory_utilization=dict(type='float', required=True),
        vllm_version=dict(type='raw'),
        runtime_image=dict(type='str'),
        free_memory_mb=dict(type='int'),
        draft_size_mb=dict(type='int'),
        extra_config=dict(type='dict', default={}),
        allow_small_devices=dict(type='bool', default=False),
        catalogue=dict(type='dict'),
        tensor_parallel_size=dict(type='int', default=1),
        max_good_concurrency=dict(type='int', default=PLAN_DEFAULTS['max_good_concurrency']),
        refuse_concurrency=dict(type='int', default=PLAN_DEFAULTS['refuse_concurrency']),
        gpu_memory_utilization_step=dict(type='float', default=PLAN_DEFAULTS['gpu_memory_utilization_step']),
        min_gpu_memory_utilization=dict(type='float', default=PLAN_DEFAULTS['min_gpu_memory_utilization']),
        gpu_memory_utilization_ceiling=dict(type='float', default=PLAN_DEFAULTS['gpu_memory_utilization_ceiling']),
        min_free_memory_after_draft_mb=dict(type='int', default=PLAN_DEFAULTS['min_free_memory_after_draft_mb']),
        min_acceptance_for_more_tokens=dict(type='float', default=PLAN_DEFAULTS['min_acceptance_for_more_tokens'], no_log=False),
        baseline_benchmark=dict(type='dict'),
        max_ttft_share=dict(type='float', default=PLAN_DEFAULTS['max_ttft_share']),
        smaller_draft_model=dict(type='str'),
        previous_attempt=dict(type='dict', options=dict(
            failure=dict(type='str', required=True, choices=list(STARTUP_FAILURES)),
            gpu_memory_utilization=dict(type='float'),
            model=dict(type='str'),
        ), required_if=[('failure', 'oom', ['gpu_memory_utilization'])]),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = plan(measure_path=weights_size_mb, read_model_config=local_model_config, **module.params)
    except SpeculativeInputError as exc:
        module.fail_json(msg=str(exc))
    warnings = result.pop('warnings')
    for text in warnings:
        module.warn(text)
    module.exit_json(changed=False, decision_warnings=warnings, **result)


if __name__ == '__main__':
    main()
