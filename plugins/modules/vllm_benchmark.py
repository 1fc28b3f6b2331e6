#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: vllm_benchmark
short_description: Benchmark a vLLM OpenAI-compatible server from the Jetson it runs on, with vLLM's own metric definitions
version_added: 0.1.0
description:
  - Sends streamed completions to a vLLM server at each O(concurrency) level and reports TTFT, ITL, TPOT, end-to-end latency and
    throughput exactly as C(vllm bench serve) defines them, plus speculative-decoding acceptance read from the server's C(/metrics).
  - Runs on the target with the Python standard library only (threads and C(http.client)); no container, no pip package.
  - "Per concurrency level: O(warmup_prompts) warm-up requests (discarded), a C(/metrics) scrape, O(num_prompts) measured requests
    with at most O(concurrency) in flight (like C(vllm bench serve --max-concurrency)), another C(/metrics) scrape."
  - "Definitions (vLLM v0.32 C(vllm/benchmarks/serve.py)): TTFT is the time from just before the request to the first SSE message
    carrying choices; ITL is the time between such messages (per chunk, not per token: with speculation one chunk can carry several
    tokens); E2EL is the time to the last such message; TPOT = (E2EL - TTFT) / (output tokens - 1) for requests with more than one
    output token; output tokens come from C(usage.completion_tokens); duration runs from just before the first measured request to the
    end of the last; throughput = output tokens / duration; percentiles use linear interpolation (numpy's default)."
  - Prompts are sized to O(input_len) tokens with the server's C(/tokenize) and C(/detokenize) endpoints (vLLM serves both). Without
    them (either one missing or failing) lengths are approximate and a warning says so. The real prompt token counts
    (C(usage.prompt_tokens)) are always recorded.
  - Never reports a number it did not measure. A metric without data is null, never 0.
  - Each level also keeps its per-request values in RV(benchmark.runs[].samples) (TTFT, TPOT, output tokens, latency, start
    and finish), which M(jetson_llm.vllm.speculative_verdict) needs to tell a real change from noise.
  - The result is the JSON contract of NVIDIA's Jetson benchmark wrapper for vLLM (C(runtime), C(model), C(sku)... C(runs), C(warnings)),
    extended with more statistics, request counts, errors, speculative-decoding stats, the vLLM version and the Jetson identity
    (from M(jetson_llm.vllm.jetson_facts) logic; null off-Jetson).
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm.endpoint
options:
  model:
    description:
      - The served model id to benchmark (C(--served-model-name)). It must be listed by C(GET /v1/models). At most 512 characters.
      - Default is the first model the server lists.
    type: str
  concurrency:
    description:
      - Concurrency levels to measure, in this order. Each level is measured separately.
      - 1 to 16 levels, each an integer from 1 to 256, each given once.
    type: list
    elements: int
    default: [1, 8]
  num_prompts:
    description:
      - Measured requests per concurrency level, an integer from 1 to 10000.
    type: int
    default: 50
  warmup_prompts:
    description:
      - Warm-up requests per concurrency level, sent at that concurrency just before the measured ones and discarded.
      - Warm-up prompts differ from the measured ones so the server's prefix cache cannot serve measured prompts.
      - An integer from 0 to 1000.
    type: int
    default: 10
  input_len:
    description:
      - Prompt length in tokens, as the server counts it (special tokens such as BOS included). Not used with O(dataset=file).
      - An integer from 1 to 131072 (and O(input_len) + O(output_len) must fit the model's C(max_model_len), as
        C(GET /v1/models) gives it; a numeric string is read as its number; a value that is not a count from 1 to
        10**9 is a warning, and the length is then not checked).
    type: int
    default: 2048
  output_len:
    description:
      - Tokens to generate per request (C(max_tokens)). With O(dataset=file) a line's C(output_len) overrides it.
      - TPOT needs at least 2. An integer from 1 to 131072.
      - A server whose C(usage.completion_tokens) exceeds the C(max_tokens) asked for (or is not a whole number of tokens) fails
        that request with a message saying so; its count is never used.
    type: int
    default: 128
  dataset:
    description:
      - Where the prompts come from.
      - C(builtin) is a realistic prompt set shipped in this collection (chat, code, summarisation, question answering); every prompt
        ends with one task and is filled up to O(input_len) tokens with other prompts of the set as context. Use it to judge
        speculative decoding, whose acceptance depends on natural text.
      - C(random) works like vLLM's random dataset (C(vllm bench serve --dataset-name random)), with runs of consecutive token ids
        from a random offset, decoded by the server's tokenizer. Draft models and EAGLE heads accept unrealistically few tokens on it.
      - C(file) reads O(prompts_file).
      - Prompts are seeded by O(seed), the dataset and the concurrency level, so a level gets the same prompts in every run.
    type: str
    choices: [builtin, random, file]
    default: builtin
  prompts_file:
    description:
      - JSONL file on the target for O(dataset=file), one object per line with a C(prompt) string and an optional C(output_len)
        integer. Blank lines are skipped.
      - Lines are used in order and repeated when O(num_prompts) is larger; warm-ups take the lines before them cyclically.
      - Required with O(dataset=file), not allowed otherwise.
      - A regular file of at most 64 MiB (a FIFO or a device is refused, never read).
    type: path
  temperature:
    description:
      - Sampling temperature sent with every request. C(0) is greedy decoding.
      - Unset means the server's default (from the model's generation config). A finite number >= 0.
    type: float
  ignore_eos:
    description:
      - Ask vLLM to ignore the end-of-sequence token so every request generates exactly the tokens asked for, as the Jetson
        benchmark wrapper does. Without it runs are not comparable token for token.
    type: bool
    default: true
  seed:
    description: Seed of the prompt generator (C(builtin) and C(random) datasets), an integer from 0 to 4294967295.
    type: int
    default: 0
  max_failed_ratio:
    description:
      - Largest fraction of failed measured requests per concurrency level that is tolerated, a finite number from C(0) to C(1).
      - When a level has more failures the module fails (the partial result is returned in RV(benchmark)) and no further level is run.
    type: float
    default: 0
  container:
    description:
      - A label recorded in the result as C(container), for example the vLLM image the server runs in. At most 512 characters.
    type: str
  output_file:
    description:
      - Also write the RV(benchmark) result as JSON (sorted keys, indented) to this file on the target, mode C(0644), atomically.
      - Missing parent directories are created (mode C(0755)). Before it starts measuring (and in check mode), the module checks
        that the file can be written by really creating and removing a temporary file in its directory (or the nearest existing
        parent), so read-only and pseudo filesystems such as C(/proc) fail at once, even as root. A directory, FIFO, device or
        socket at that path is refused. The module reports a change only when the file content changes.
      - The file is standard JSON (never C(NaN) or C(Infinity)).
    type: path
  sequential:
    description:
      - Measure a speculative candidate in rounds and stop as soon as the verdict of M(jetson_llm.vllm.speculative_verdict)
        is settled, instead of a fixed O(num_prompts) (which is then not used). Measured on a real vLLM in
        C(docs/performance.md).
      - "Measure the baseline first, with a fixed O(num_prompts), on the service without speculation (its samples are fixed
        once the service restarts with C(--speculative-config)); then run this on the speculative service with the same
        options and O(sequential.baseline). Each level gets O(warmup_prompts) warm-up requests once; then each round sends
        O(sequential.round_prompts) requests at every level still needed, and the verdict is computed with
        O(sequential.baseline) (bootstrap intervals, the same code as M(jetson_llm.vllm.speculative_verdict))."
      - "Each round is a look at the intervals: each level spends the fixed protocol's 5 % error over its planned looks
        (ceil(O(sequential.max_prompts) / round size); O'Brien-Fleming-type alpha spending, union bound), so look k is
        decided at a confidence above 95 % (defaults: 99.9998 % at the first look at concurrency 1, 98.2 % at the
        sixth) and the chance of a wrong decision over all the looks stays within 5 % per criterion. The result
        records the confidence of the last looks (C(config.sequential.confidence)), at which
        M(jetson_llm.vllm.speculative_verdict) judges it. See C(docs/decision-rules.md)."
      - "Measuring stops when no undetermined criterion can change the verdict (RV(benchmark.sequential.stopped=determined)),
        or when every level still needed has measured O(sequential.max_prompts) requests (V(budget): the verdict then rests
        on point estimates for the open criteria, and RV(benchmark.sequential.reason) and the verdict's reasons say so).
        Only the levels whose criteria are open measure again: concurrency 1 for the throughput and TPOT criteria,
        concurrency 8 for a regression; other levels are measured in the first round only."
      - "Stricter than the verdict: an undetermined throughput change at concurrency 8 keeps concurrency 8 measuring while
        a regression could still turn the verdict into a reject. A criterion without an interval (fewer than 5 requests)
        never stops it."
      - "The candidate's prompts continue the baseline's seeded sequence: at each level its first prompts are exactly the
        baseline's (checked; the module fails when they differ, e.g. another seed or dataset), later ones are new. The
        result's C(config.num_prompts) is the most requests measured at one level, C(config.sequential) names the baseline
        (M(jetson_llm.vllm.speculative_verdict) accepts the differing request counts only then), and
        RV(benchmark.sequential) reports the rounds, the requests per phase and level, and why it stopped."
      - "Bounded: at most ceil(O(sequential.max_prompts) / round size) rounds per level, every request within
        O(request_deadline)."
    type: dict
    suboptions:
      baseline:
        description:
          - The baseline benchmark, as registered from this module (or its O(output_file) JSON), run without speculation
            with the same O(concurrency), O(input_len), O(output_len), O(dataset), O(temperature), O(ignore_eos) and
            O(seed), with at least 5 samples per level. Not itself sequential.
        type: dict
        required: true
      round_prompts:
        description:
          - Measured requests per round, per concurrency level (a dictionary level -> requests), each a multiple of the
            level from 5 (above concurrency 1, 2 x the level, two whole waves, which a wave-resampled interval needs) to
            O(sequential.max_prompts), so that every round ends with full waves.
          - Levels not given take max(8, 2 x level) rounded up to a multiple of the level (V(1) -> 8, V(8) -> 16).
        type: dict
      max_prompts:
        description:
          - The budget, measured candidate requests per level at most, an integer from 5 to 10000.
        type: int
        default: 48
      min_throughput_gain:
        description: As in M(jetson_llm.vllm.speculative_verdict); use the same value there.
        type: float
        default: 0.3
      min_tpot_reduction:
        description: As in M(jetson_llm.vllm.speculative_verdict).
        type: float
        default: 0.2
      disable_below_gain:
        description: As in M(jetson_llm.vllm.speculative_verdict).
        type: float
        default: 0.1
      c8_tolerance:
        description: As in M(jetson_llm.vllm.speculative_verdict).
        type: float
        default: 0.02
      c8_margin:
        description: As in M(jetson_llm.vllm.speculative_verdict).
        type: float
        default: 0.05
      bootstrap_resamples:
        description: As in M(jetson_llm.vllm.speculative_verdict).
        type: int
        default: 2000
      keep_marginal:
        description:
          - As in M(jetson_llm.vllm.speculative_verdict). Measuring also stops when the open criteria can no longer change
            whether the change is kept, although they could still change the verdict's name; with the default V(false)
            a candidate that can only end V(marginal) or V(reject) is reverted either way.
        type: bool
        default: false
      phase_shift:
        description:
          - As in M(jetson_llm.vllm.speculative_verdict) (the host's shift between two phases, C(c1) and C(c8)).
          - Measuring also stops when every open criterion is shift-bound (its threshold within the shift of the measured
            value, where more requests of the same two phases cannot settle it), with
            RV(benchmark.sequential.stopped=shift).
        type: dict
        suboptions:
          c1:
            description: The shift at concurrency 1.
            type: float
            default: 0.0
          c8:
            description: The shift at concurrency 8.
            type: float
            default: 0.0
attributes:
  check_mode:
    support: full
    description:
      - In check mode the options, O(prompts_file) and O(output_file) are validated (a temporary file is created and removed next to
        O(output_file)), no request is sent and nothing is written.
  diff_mode:
    support: full
    description: Shows the change of O(output_file).
  idempotent:
    support: none
    description: Every run measures anew; O(output_file) is rewritten when the figures differ, which they almost always do.
notes:
  - A request whose tokens all arrive at once (TPOT under 0.01 ms, TTFT its whole latency) was not streamed to the client as
    it was generated; the client was starved of CPU, or the server does not stream. A few such requests give a warning; half
    or more of a level's requests fail the module (the partial result is returned), because its p50 figures would describe
    the starvation, not the server.
  - vLLM's C(/metrics) counters are global. When other clients use the server during a run, RV(benchmark.runs[].metrics_polluted)
    is true and a warning explains why; speculative-decoding stats of that run then include foreign requests.
  - HTTP errors, timeouts, malformed or truncated streams (no C(data [DONE]) or no usage chunk) make a request fail; failed requests
    are counted in RV(benchmark.runs[].failed) and excluded from every metric.
  - "The whole run is bounded: every HTTP exchange ends within O(request_deadline) seconds, and the module makes at most
    2 (C(/v1/models), C(/version)) + 60 (tokenizer probe) + 34 per prompt built (sizing with C(/tokenize) and C(/detokenize),
    O(dataset=builtin) or O(dataset=random)) + 52 per level (C(/metrics) scrapes) exchanges one after the other, plus
    ceil((O(warmup_prompts) + O(num_prompts)) / c) rounds of completions per level c. With the defaults against a healthy
    server this is a few minutes; the bound only matters against a server that stalls."
  - Every value echoed in a message is truncated to about 120 characters; the API key and any URL password are never shown.
  - Other tools name latencies differently. GuideLLM and NVIDIA AIPerf report an inter-token latency per token that matches vLLM's
    TPOT; their per-chunk figures match vLLM's ITL.
seealso:
  - module: jetson_llm.vllm.jetson_facts
  - name: vLLM benchmark CLI (vllm bench serve)
    description: The reference these metric definitions follow.
    link: https://docs.vllm.ai/en/latest/cli/bench/serve.html
'''

EXAMPLES = r'''
- name: Benchmark the local vLLM server with the defaults (concurrency 1 and 8, 2048 in / 128 out, builtin prompts)
  jetson_llm.vllm.vllm_benchmark:
  register: bench

- name: Show the summary
  ansible.builtin.debug:
    msg: "{{ bench.msg }}"

- name: Greedy decoding at concurrency 1, keep the JSON on the device
  jetson_llm.vllm.vllm_benchmark:
    endpoint: http://127.0.0.1:8000
    model: llama-3.2-3b
    api_key: "{{ vllm_api_key }}"
    concurrency: [1]
    temperature: 0
    container: dustynv/vllm:0.20-r36.4
    output_file: /var/lib/jetson_llm/bench-baseline.json

- name: Baseline on the service without speculation (fixed size, kept for the sequential candidate)
  jetson_llm.vllm.vllm_benchmark:
    concurrency: [1, 8]
    num_prompts: 24
    warmup_prompts: 2
    temperature: 0
  register: baseline_bench

# ... restart the service with --speculative-config, then measure until the verdict is settled:
- name: Candidate, measured in rounds
  jetson_llm.vllm.vllm_benchmark:
    concurrency: [1, 8]
    warmup_prompts: 2
    temperature: 0
    sequential:
      baseline: "{{ baseline_bench }}"
      round_prompts: {1: 8, 8: 16}
      max_prompts: 48
  register: candidate_bench

- name: Decide (the same thresholds as the sequential stop)
  jetson_llm.vllm.speculative_verdict:
    baseline: "{{ baseline_bench }}"
    candidate: "{{ candidate_bench }}"

- name: Your own prompts
  jetson_llm.vllm.vllm_benchmark:
    dataset: file
    prompts_file: /opt/prompts/support-chats.jsonl
    num_prompts: 100
    concurrency: [1, 4]
'''

RETURN = r'''
msg:
  description: One summary per concurrency level (or what check mode did).
  returned: always
  type: str
  sample: "c=1: 41.3 tok/s, TPOT p50 23.61 ms, TTFT p50 310.2 ms, ITL p50 23.60 ms, 50/50 ok"
benchmark:
  description:
    - The result, in the Jetson benchmark JSON contract extended with more fields. Unmeasured values are null.
    - Also returned when the module fails because too many requests failed (the levels measured so far).
  returned: success, and failure after the benchmark started
  type: dict
  contains:
    skill:
      description: Always C(jetson_llm.vllm.vllm_benchmark).
      type: str
      returned: always
    runtime:
      description: Always C(vllm).
      type: str
      returned: always
    model:
      description: The served model id benchmarked.
      type: str
      returned: always
      sample: llama-3.2-3b
    endpoint:
      description: The server root URL.
      type: str
      returned: always
      sample: http://127.0.0.1:8000
    sku:
      description:
        - The benchmark contract's bucket, C(thor), C(orin-agx), C(orin-nx), C(orin-nano) or C(unknown) (Xavier,
          unidentified and non-Jetson hosts), as NVIDIA's detect_jetson.sh reports it; jetson-inference-mem-tune's
          recommend.py reads it. The module label (for example C(Jetson AGX Orin 64GB)) is
          C(ansible_facts.jetson.sku) of M(jetson_llm.vllm.jetson_facts).
      type: str
      returned: always
      sample: orin-agx
    sku_label:
      description: The module's label, for example C(Jetson AGX Orin 64GB); null off-Jetson.
      type: str
      returned: always
      sample: Jetson AGX Orin 64GB
    generation:
      description: Jetson generation (C(thor), C(orin), C(xavier)); null off-Jetson.
      type: str
      returned: always
    product_line:
      description: Jetson product line, for example C(orin-agx); null off-Jetson.
      type: str
      returned: always
    variant:
      description: Jetson module variant, for example C(orin-agx-64gb); null off-Jetson.
      type: str
      returned: always
    l4t:
      description: L4T release, for example C(36.4.4); null when unknown or off-Jetson.
      type: str
      returned: always
    jetpack:
      description: JetPack release; null off-Jetson.
      type: str
      returned: always
    power_mode:
      description: nvpmodel power mode name; null when unknown or off-Jetson.
      type: str
      returned: always
    container:
      description: The O(container) label.
      type: str
      returned: always
    vllm_version:
      description: The server's version from C(GET /version); null when it does not answer.
      type: str
      returned: always
      sample: 0.32.0
    config:
      description: The workload.
      type: dict
      returned: always
      contains:
        input_len:
          description: O(input_len).
          type: int
          returned: always
        output_len:
          description: O(output_len).
          type: int
          returned: always
        num_prompts:
          description: O(num_prompts).
          type: int
          returned: always
        warmup_prompts:
          description: O(warmup_prompts).
          type: int
          returned: always
        dataset:
          description: O(dataset).
          type: str
          returned: always
        prompt_set_id:
          description:
            - sha256 of the JSON array of all measured prompt texts (every level, in order). Equal ids mean identical workloads.
          type: str
          returned: always
        concurrency:
          description: O(concurrency).
          type: list
          elements: int
          returned: always
        sequential:
          description:
            - With O(sequential) only. C(baseline_prompt_set_id) (the baseline's C(config.prompt_set_id)), C(max_prompts)
              and C(round_prompts). C(num_prompts) is then the most requests measured at one level.
            - "C(looks) (planned looks per level), C(looks_made) (rounds measured per level), C(confidence) (C(c1), C(c8)
              - the two-sided confidence of the last looks' intervals, which M(jetson_llm.vllm.speculative_verdict) uses)
              and C(spending) (the design, in words)."
          type: dict
          returned: with O(sequential)
        temperature:
          description: O(temperature); null for the server default.
          type: float
          returned: always
        ignore_eos:
          description: O(ignore_eos).
          type: bool
          returned: always
        seed:
          description: O(seed).
          type: int
          returned: always
    runs:
      description: One entry per concurrency level measured. Times in milliseconds, throughputs per second.
      type: list
      elements: dict
      returned: always
      contains:
        concurrency:
          description: Requests in flight at most.
          type: int
          returned: always
        ttft_ms_p50:
          description: Median time to first token.
          type: float
          returned: always
        ttft_ms_p99:
          description: 99th percentile of the time to first token.
          type: float
          returned: always
        ttft_ms_mean:
          description: Mean time to first token.
          type: float
          returned: always
        itl_ms_p50:
          description: Median inter-token latency (per streamed chunk).
          type: float
          returned: always
        itl_ms_p99:
          description: 99th percentile of the inter-token latency.
          type: float
          returned: always
        itl_ms_mean:
          description: Mean inter-token latency.
          type: float
          returned: always
        tpot_ms_p50:
          description: Median time per output token after the first.
          type: float
          returned: always
        tpot_ms_p99:
          description: 99th percentile of the time per output token.
          type: float
          returned: always
        tpot_ms_mean:
          description: Mean time per output token.
          type: float
          returned: always
        e2e_latency_ms_p50:
          description: Median end-to-end request latency.
          type: float
          returned: always
        e2e_latency_ms_p99:
          description: 99th percentile of the end-to-end latency.
          type: float
          returned: always
        e2e_latency_ms_mean:
          description: Mean end-to-end latency.
          type: float
          returned: always
        throughput_tok_s:
          description: Output tokens per second over the run's duration.
          type: float
          returned: always
        request_throughput:
          description: Completed requests per second.
          type: float
          returned: always
        completed:
          description: Measured requests that succeeded.
          type: int
          returned: always
        failed:
          description: Measured requests that failed (excluded from every metric).
          type: int
          returned: always
        errors:
          description: The first few distinct error messages.
          type: list
          elements: str
          returned: always
        duration_s:
          description: Seconds from just before the first measured request to the end of the last.
          type: float
          returned: always
        total_input_tokens:
          description: Sum of C(usage.prompt_tokens) of the completed requests.
          type: int
          returned: always
        total_output_tokens:
          description: Sum of C(usage.completion_tokens) of the completed requests.
          type: int
          returned: always
        spec_decode:
          description:
            - Speculative decoding during the run. When the server reports each request's own speculative metrics
              (vLLM 0.29+ started with C(--per-request-spec-decode-metrics summary) or C(detailed), vllm#48915) for every
              completed request, the figures are those requests' sums (C(source) V(requests)), which other traffic on the
              server cannot move. Otherwise they come from the server's C(vllm:spec_decode_*) counters, summed over engines,
              between the run's two C(/metrics) scrapes (C(source) V(server_counters)).
            - A per-request object that breaks its own identities (histogram, steps, accepted and drafted tokens), or a
              run where only some requests carry one, is not used; the counters are, and a warning says why. So are the
              counters when the requests report more than the server counted.
            - Null when the server does not speculate, its C(/metrics) cannot be read, or no token was drafted (when the
              requests report metrics and none of them drafted, null whatever the counters say).
          type: dict
          returned: always
          contains:
            acceptance_rate:
              description: Accepted draft tokens / draft tokens, a fraction from 0 to 1 (vLLM prints it as a percentage).
              type: float
            acceptance_length:
              description: Mean tokens produced per target forward pass, 1 + accepted tokens / drafts.
              type: float
            draft_tokens:
              description: Draft tokens proposed.
              type: int
            accepted_tokens:
              description: Draft tokens accepted.
              type: int
            drafts:
              description: Drafts (speculation steps).
              type: int
            per_position_acceptance:
              description:
                - For each draft position, the fraction of drafts whose token at that position was accepted (from the
                  requests' histograms, the share of verify steps that accepted more draft tokens than the position).
              type: list
              elements: float
            source:
              description: Where the figures come from, C(requests) (the run's own requests) or C(server_counters).
              type: str
              choices: [requests, server_counters]
            requests:
              description: With C(source) V(requests), the completed requests whose metrics were summed.
              type: int
              returned: when source is requests
            request_acceptance_rate_mean:
              description:
                - With C(source) V(requests), the mean of the requests' own acceptance rates (each request counts once,
                  however many tokens it drafted); null when none drafted.
              type: float
              returned: when source is requests
            server_counters:
              description:
                - With C(source) V(requests) and readable C(/metrics), the counters' C(drafts), C(draft_tokens) and
                  C(accepted_tokens) over the same run, for comparison (more than the requests' own when other traffic ran).
              type: dict
              returned: when source is requests and /metrics was read
        metrics_polluted:
          description:
            - True when other traffic may have moved the server's counters during the run (requests already in flight, or more
              tokens or requests counted than this run accounts for); null when C(/metrics) could not be read.
          type: bool
          returned: always
        prompt_set_id:
          description: sha256 of this level's measured prompt texts.
          type: str
          returned: always
        samples:
          description:
            - Per-request values of the completed measured requests (warm-ups and failed requests excluded), as parallel
              lists in request order, so that M(jetson_llm.vllm.speculative_verdict) can compute confidence intervals.
              Times in milliseconds rounded to 3 decimals (1 microsecond).
            - An extension of the benchmark contract, like the other extra keys; it is written to O(output_file) too, so a
              stored baseline keeps it.
            - Size about 60 bytes of JSON per request in the module result and about 100 in the indented O(output_file)
              (6 to 10 kB with the defaults), bounded by O(num_prompts) (at most 10000 requests per level).
          type: dict
          returned: always
          contains:
            ttft_ms:
              description: Time to first token of each request.
              type: list
              elements: float
            tpot_ms:
              description: (E2EL - TTFT) / (output tokens - 1) of each request; null for a request with one output token.
              type: list
              elements: float
            output_tokens:
              description: C(usage.completion_tokens) of each request.
              type: list
              elements: int
            latency_ms:
              description: End-to-end latency (E2EL) of each request.
              type: list
              elements: float
            start_ms:
              description: When each request was sent, from the start of the first measured request.
              type: list
              elements: float
            finish_ms:
              description: When each request's last token chunk arrived, from the start of the first measured request.
              type: list
              elements: float
          sample: {"ttft_ms": [310.2, 305.87], "tpot_ms": [23.612, 23.598], "output_tokens": [128, 128],
                   "latency_ms": [3308.924, 3302.85], "start_ms": [0.0, 3309.4], "finish_ms": [3308.924, 6612.25]}
    sequential:
      description:
        - With O(sequential) only. How the candidate was measured and why it stopped.
      type: dict
      returned: with O(sequential)
      contains:
        rounds:
          description: Rounds measured.
          type: int
        stopped:
          description:
            - V(determined) (the intervals settle the verdict, or at least whether it keeps the change), V(budget)
              (O(sequential.max_prompts) spent), V(shift) (every open criterion is within O(sequential.phase_shift) of
              its threshold) or V(failed).
          type: str
        reason:
          description: Why it stopped, as a sentence with the request counts.
          type: str
        requests:
          description:
            - Requests sent, per phase (C(baseline), C(candidate)) and level (C(warmup), C(measured)); C(total),
              C(baseline_total), C(candidate_total) add the warm-ups and the measured requests of both phases.
          type: dict
        looks:
          description: The planned looks (rounds) per level (keys are the levels as strings).
          type: dict
        confidence:
          description: The two-sided confidence (C(c1), C(c8)) of the last looks' intervals (alpha spending).
          type: dict
        history:
          description:
            - Per round, the requests measured per level, the confidence of its intervals (C(c1), C(c8)), the interim
              verdict, the settled verdict (or null), the open criteria,
              the settled decision (C(keep), C(revert) or null), the verdicts still possible and the open criteria that
              are shift-bound (C(shift_bound)).
          type: list
          elements: dict
        verdict:
          description:
            - The verdict on what was measured (decided on point estimates for the open criteria when the budget or the
              phase shift stopped it);
              null when it failed. M(jetson_llm.vllm.speculative_verdict) on the same benchmarks gives the same.
          type: str
        keep:
          description: Whether that verdict keeps speculation.
          type: bool
        determined:
          description: True when the intervals settled the verdict, or whether it keeps the change.
          type: bool
        undetermined:
          description: The criteria still open when it stopped (empty when determined).
          type: list
          elements: str
        name_undetermined:
          description:
            - The criteria still open when the decision was settled but the verdict's name was not (for example
              C(regression_c8) between V(marginal) and V(reject)); empty otherwise.
          type: list
          elements: str
        decision_basis:
          description: V(interval) or V(point_estimate), as in M(jetson_llm.vllm.speculative_verdict).
          type: str
        reasons:
          description: The verdict's reasons.
          type: list
          elements: str
        max_prompts:
          description: O(sequential.max_prompts).
          type: int
        round_prompts:
          description: Requests per round per level (keys are the levels as strings).
          type: dict
      sample: {"rounds": 1, "stopped": "determined", "verdict": "accept", "determined": true,
               "requests": {"total": 80, "baseline_total": 52, "candidate_total": 28}}
    warnings:
      description: Remarks about the measurement (also emitted as Ansible warnings).
      type: list
      elements: str
      returned: always
diff:
  description: Before and after content of O(output_file) in diff mode.
  returned: when O(output_file) changed in diff mode
  type: dict
'''

import os
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.benchmark import (
    DATASETS, BenchmarkError, check_options, parse_prompts_jsonl, render)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.runner import run_benchmark, run_sequential, summary_line
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import cut, endpoint_argument_spec, url_password
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import write_atomic
from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.facts import benchmark_identity, gather_facts
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.sequential import DEFAULTS as SEQUENTIAL_DEFAULTS
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.sequential import check_sequential

#: Largest prompts_file read.
PROMPTS_FILE_MAX_BYTES = 64 * 1024 * 1024


def _file_kind(mode):
    for test, name in ((stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a FIFO (named pipe)'),
                       (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device'),
                       (stat.S_ISSOCK, 'a socket')):
        if test(mode):
            return name
    return 'not a regular file'


def _read_prompts(module, path):
    """The prompts of a regular, UTF-8, bounded prompts_file (never blocks on a FIFO or a device)."""
    shown = cut(path, 200)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            module.fail_json(msg='prompts_file %s is %s; give a regular JSONL file' % (shown, _file_kind(info.st_mode)))
        if info.st_size > PROMPTS_FILE_MAX_BYTES:
            module.fail_json(msg='prompts_file %s is %d bytes; at most %d bytes are read' % (
                shown, info.st_size, PROMPTS_FILE_MAX_BYTES))
        with open(path, 'rb') as handle:
            data = handle.read(PROMPTS_FILE_MAX_BYTES + 1)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot read prompts_file %s: %s' % (shown, to_native(exc.strerror or exc)))
    if len(data) > PROMPTS_FILE_MAX_BYTES:
        module.fail_json(msg='prompts_file %s is larger than %d bytes' % (shown, PROMPTS_FILE_MAX_BYTES))
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        module.fail_json(msg='prompts_file %s is not UTF-8 text (%s)' % (shown, to_native(exc)))
    try:
        return parse_prompts_jsonl(text, shown)
    except BenchmarkError as exc:
        module.fail_json(msg=to_native(exc))


def _check_output_file(module, path):
    """Fail early (before minutes of measuring, and in check mode) when output_file cannot be written.

    os.access() is not enough (as root it says yes on /proc and /sys): a temporary file is really
    created, then removed, in the directory that will hold the file (or the nearest existing parent
    that will hold the missing directories).
    """
    shown = cut(path, 200)
    if os.path.lexists(path):
        info = os.stat(path) if os.path.exists(path) else None
        if info is None:
            module.fail_json(msg='output_file %s is a dangling symbolic link; remove it or give another path' % (shown,))
        if stat.S_ISDIR(info.st_mode):
            module.fail_json(msg='output_file %s is a directory; give a file path such as %s/benchmark.json'
                                 % (shown, shown.rstrip('/')))
        if not stat.S_ISREG(info.st_mode):
            module.fail_json(msg='output_file %s is %s, not a regular file; give a file path' % (shown, _file_kind(info.st_mode)))
    parent = os.path.dirname(os.path.abspath(path)) or '/'
    existing = parent
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        module.fail_json(msg='output_file %s cannot be created: %s is not a directory' % (shown, existing))
    try:
        fd, probe = tempfile.mkstemp(prefix='.vllm_benchmark.probe.', dir=existing)
    except (IOError, OSError) as exc:
        module.fail_json(msg='output_file %s cannot be written: creating a file in %s failed (%s); give a path on a '
                             'writable filesystem' % (shown, existing, to_native(exc.strerror or exc)))
    try:
        os.write(fd, b'{}\n')
    except (IOError, OSError) as exc:
        module.fail_json(msg='output_file %s cannot be written: writing a file in %s failed (%s)'
                             % (shown, existing, to_native(exc.strerror or exc)))
    finally:
        os.close(fd)
        os.unlink(probe)


def _write_output(module, path, content):
    """Write ``content`` atomically with mode 0644 (creating missing directories, 0755); return (changed, diff)."""
    before = None
    if os.path.exists(path):
        with open(path, 'rb') as handle:
            before = handle.read().decode('utf-8', 'replace')
    if before == content:
        return False, None
    write_atomic(module, path, content, 0o644)
    diff = {'before': before or '', 'after': content, 'before_header': path, 'after_header': path}
    return True, diff


def argument_spec():
    """The module's options: the shared endpoint options and the benchmark's own."""
    spec = endpoint_argument_spec()
    spec.update(
        model=dict(type='str'),
        concurrency=dict(type='list', elements='int', default=[1, 8]),
        num_prompts=dict(type='int', default=50),
        warmup_prompts=dict(type='int', default=10),
        input_len=dict(type='int', default=2048),
        output_len=dict(type='int', default=128),
        dataset=dict(type='str', default='builtin', choices=list(DATASETS)),
        prompts_file=dict(type='path'),
        temperature=dict(type='float'),
        ignore_eos=dict(type='bool', default=True),
        seed=dict(type='int', default=0),
        max_failed_ratio=dict(type='float', default=0.0),
        container=dict(type='str'),
        output_file=dict(type='path'),
        sequential=dict(type='dict', options=dict(
            baseline=dict(type='dict', required=True),
            round_prompts=dict(type='dict'),
            max_prompts=dict(type='int', default=SEQUENTIAL_DEFAULTS['max_prompts']),
            min_throughput_gain=dict(type='float', default=SEQUENTIAL_DEFAULTS['min_throughput_gain']),
            min_tpot_reduction=dict(type='float', default=SEQUENTIAL_DEFAULTS['min_tpot_reduction']),
            disable_below_gain=dict(type='float', default=SEQUENTIAL_DEFAULTS['disable_below_gain']),
            c8_tolerance=dict(type='float', default=SEQUENTIAL_DEFAULTS['c8_tolerance']),
            c8_margin=dict(type='float', default=SEQUENTIAL_DEFAULTS['c8_margin']),
            keep_marginal=dict(type='bool', default=False),
            bootstrap_resamples=dict(type='int', default=SEQUENTIAL_DEFAULTS['bootstrap_resamples']),
            phase_shift=dict(type='dict', options=dict(c1=dict(type='float', default=0.0),
                                                       c8=dict(type='float', default=0.0))),
        )),
    )
    return spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[('dataset', 'file', ('prompts_file',))],
        supports_check_mode=True,
    )
    password = url_password(module.params.get('endpoint'))
    if password:
        module.no_log_values.add(password)  # masked everywhere in the result, the echoed arguments included
    try:
        params = check_options(module.params)
        sequential = check_sequential(params['sequential'], params) if params.get('sequential') is not None else None
    except BenchmarkError as exc:
        module.fail_json(msg=to_native(exc))
    file_prompts = _read_prompts(module, params['prompts_file']) if params['dataset'] == 'file' else None
    if params.get('output_file'):
        _check_output_file(module, params['output_file'])

    if module.check_mode:
        module.exit_json(changed=False, msg='check mode: options checked; no request was sent to %s and nothing was written '
                                            '(the benchmark only runs without --check)' % params['endpoint'])

    def run_command(argv):
        return module.run_command(argv, check_rc=False)

    identity = benchmark_identity(gather_facts(run_command=run_command, which=module.get_bin_path))
    try:
        if sequential is not None:
            benchmark, failure = run_sequential(params, identity, sequential, file_prompts)
        else:
            benchmark, failure = run_benchmark(params, identity, file_prompts)
    except BenchmarkError as exc:
        module.fail_json(msg=to_native(exc), endpoint=params['endpoint'])

    for warning in benchmark['warnings']:
        module.warn(warning)
    msg = '; '.join(summary_line(run) for run in benchmark['runs'])
    if benchmark.get('sequential'):
        msg += '. ' + benchmark['sequential']['reason']
    if failure:
        module.fail_json(msg=failure, benchmark=benchmark, summary=msg)

    result = dict(changed=False, msg=msg, benchmark=benchmark)
    if params.get('output_file'):
        try:
            changed, diff = _write_output(module, params['output_file'], render(benchmark))
        except (IOError, OSError, ValueError) as exc:
            module.fail_json(msg='Cannot write output_file %s: %s' % (cut(params['output_file'], 200), to_native(exc)),
                             benchmark=benchmark)
        result['changed'] = changed
        if diff and module._diff:
            result['diff'] = diff
    module.exit_json(**result)


if __name__ == '__main__':
    main()
