#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: speculative_verdict
short_description: Decide from benchmarks whether to keep vLLM speculative decoding
version_added: 0.1.0
description:
  - Pure decision, runs anywhere and changes nothing. Compares a benchmark of the speculative service (O(candidate))
    with one of the baseline service (O(baseline)), both from M(jetson_llm.vllm.vllm_benchmark), and says whether
    to keep C(--speculative-config). The benchmark decides, never an assumption.
  - "At concurrency 1: throughput gain = candidate / baseline C(throughput_tok_s) - 1; TPOT reduction =
    1 - candidate / baseline C(tpot_ms_p50). At concurrency 8: throughput change = candidate / baseline
    C(throughput_tok_s) - 1."
  - "V(accept) (keep): gain >= O(min_throughput_gain) (30 %) AND TPOT reduction >= O(min_tpot_reduction) (20 %)
    AND no throughput regression at concurrency 8 beyond O(c8_tolerance) (2 %)."
  - "V(reject) (revert): gain < O(disable_below_gain) (10 %) OR a throughput regression at concurrency 8 beyond
    O(c8_tolerance). A bad draft path is worse than no speculation."
  - "V(marginal) otherwise: kept only when O(keep_marginal=true)."
  - "Boundaries: a value within 1e-9 of a threshold counts as reaching it, so 100 -> 130 tok/s is a gain of exactly
    30 % (accept) and exactly 10 % is not below 10 %. Reported deltas are rounded to 4 decimals."
  - Without runs at concurrency 8 the verdict is decided at concurrency 1 with a warning. A run at concurrency 1 is
    required.
  - "Noise: with the per-request samples M(jetson_llm.vllm.vllm_benchmark) records (C(runs[].samples)), each criterion
    gets a 95 % interval and is V(met), V(not_met) or V(undetermined) (RV(criteria)): V(met) when the whole interval
    reaches the threshold, V(not_met) when none of it does, V(undetermined) when the threshold lies inside it. The
    point estimates (RV(deltas)) stay the measured values; the intervals say how far the noise could move them."
  - "The criteria: C(throughput_gain_c1) (gain >= O(min_throughput_gain)), C(tpot_reduction_c1) (reduction >=
    O(min_tpot_reduction)), C(minimum_gain_c1) (gain >= O(disable_below_gain); V(not_met) rejects) and
    C(regression_c8) (a throughput loss at concurrency 8 beyond O(c8_tolerance); V(met) rejects). Accept needs the
    first two V(met); reject follows from C(minimum_gain_c1) V(not_met) or C(regression_c8) V(met); marginal
    otherwise."
  - "Regression at concurrency 8 (non-inferiority): a measured loss beyond O(c8_tolerance) rejects, and a change is
    kept only when the interval of the change rules out a loss larger than O(c8_margin). Both are at most 0.10, so no
    option combination keeps a concurrency-8 loss of 10 % or more beyond the interval's error."
  - "When an undetermined criterion leaves the verdict open (RV(determined=false), the criteria in RV(undetermined)),
    O(decide_undetermined=point_estimate) (default) decides on the point estimates and says so in the reasons;
    O(decide_undetermined=undetermined) returns V(undetermined) (RV(keep=false), recommendation V(measure_more)) for
    a caller that measures more and asks again."
  - "Without samples (a benchmark from before they were recorded, a stored baseline without them) or with fewer than 5
    requests in a phase, those criteria are decided on the point estimate alone (V(met) or V(not_met)), the reasons
    say C(point estimate only), and RV(decision_basis) is V(point_estimate)."
  - "The interval: a percentile bootstrap over requests. Each resample draws the baseline's and the candidate's
    requests with replacement, independently, and computes per phase TPOT p50 (the median of the per-request TPOTs)
    and output throughput = concurrency x sum(output tokens) / sum(latency) (Little's law at constant concurrency;
    sum(tokens) / sum(latency) at concurrency 1); the interval is the 2.5 % and 97.5 % quantiles of candidate /
    baseline over O(bootstrap_resamples) resamples, placed on the measured ratio (multiplied by measured ratio /
    whole-sample ratio, which at concurrency 8 removes the ramp-down at the end of a run that the measured duration
    includes). The random generator is seeded from the data, so the same benchmarks always give the same verdict."
  - "Above concurrency 1 the requests in flight together share the server's batches and are not independent, so the
    throughput interval resamples whole waves (blocks of concurrency consecutive requests, in the order they were sent)
    and is widened around the measured ratio by t(m_b + m_c - 2) / z x sqrt(m / (m - 1)) for its few blocks (m_b,
    m_c the blocks of the two runs, m the smaller). That needs at least 2 blocks per run (16 requests at
    concurrency 8); with fewer, that level is decided on the point estimate. Resampling the requests one by one
    made the intervals of two runs of the same server exclude no change about half the time in a simulation of
    waves varying by 10 %; by waves, at most 7 %."
  - "Why a bootstrap and not batch means: a verification run is short (50 requests per level by default), one
    criterion is a median, and request times are skewed. Batch means need long runs cut into many long,
    nearly independent batches and have no form for a median; the bootstrap assumes no distribution and works from a
    few dozen requests. It assumes the requests of a run are exchangeable (no drift during the run)."
  - "Explaining the speed-up (RV(explanation)): with the acceptance rate a and K draft tokens per step, a verification
    step yields E = (1 - a^(K+1)) / (1 - a) tokens on average (Leviathan et al., 2023; K + 1 when a = 1). vLLM's
    counters measure the mean directly (C(acceptance_length) = 1 + K x a, used when present: vLLM's acceptance rate
    is the mean over the K positions, so E computed from it is lower). With TPOT ratio r = candidate / baseline, a
    step costs r x tokens-per-step target steps; assuming the verification of K + 1 tokens costs about one target
    step (decode is memory-bound), each draft token costs (step cost - 1) / K of a target step. Speculation breaks
    even when that equals (tokens per step - 1) / K. The draft cost absorbs every other overhead of the speculative
    path; the model holds at concurrency 1, not under load."
  - "Errors, not verdicts (the task fails): workloads that differ (C(config) input_len, output_len, num_prompts,
    dataset, prompt_set_id, concurrency, ignore_eos, temperature), a run with failed requests, a missing or null
    metric the decision needs, an empty result; a concurrency list that is not integers >= 1; a NaN or infinite
    workload setting; a throughput or TPOT that is not a positive finite number (0, negative, subnormal such as
    1e-320); a change that is not a finite number."
  - The recommendation uses the candidate's concurrency-1 C(spec_decode.acceptance_rate) (null when unknown).
  - Every rule, with its default and its test, is listed in C(docs/decision-rules.md).
author:
  - jetson_llm.vllm maintainers (@jetson-llm)
extends_documentation_fragment:
  - jetson_llm.vllm._attributes
  - jetson_llm.vllm._attributes.decision
options:
  baseline:
    description:
      - The benchmark of the service without speculation, as registered from M(jetson_llm.vllm.vllm_benchmark)
        (a dictionary with a C(benchmark) key) or the bare C(benchmark) dictionary.
    type: dict
    required: true
  candidate:
    description:
      - The benchmark of the same service with C(--speculative-config), with the same workload, in the same form.
    type: dict
    required: true
  min_throughput_gain:
    description: Minimum throughput gain at concurrency 1 to accept (0.30 = 30 %).
    type: float
    default: 0.3
  min_tpot_reduction:
    description: Minimum reduction of C(tpot_ms_p50) at concurrency 1 to accept (0.20 = 20 %).
    type: float
    default: 0.2
  disable_below_gain:
    description: Reject when the throughput gain at concurrency 1 is below this (0.10 = 10 %).
    type: float
    default: 0.1
  c8_tolerance:
    description:
      - Throughput loss at concurrency 8 that is still not a regression (0.02 tolerates 2 %; 0.0 = none allowed),
        0.0 to 0.10.
      - "The default was 0.0 in development versions: with it a measured dip of any size reverted, so a candidate whose
        concurrency-8 throughput did not change was reverted about half the time (on simulated request streams of
        a quiet host, 40 % of the candidates with +60 % at concurrency 1 were kept, 73 % with 0.02;
        C(docs/performance.md)). Non-inferiority (O(c8_margin)) still guards against larger losses."
    type: float
    default: 0.02
  keep_marginal:
    description: Keep speculation when the verdict is V(marginal).
    type: bool
    default: false
  high_acceptance_rate:
    description: With an V(accept) verdict, an acceptance rate above this recommends raising C(num_speculative_tokens).
    type: float
    default: 0.6
  low_acceptance_rate:
    description: An acceptance rate below this recommends fewer speculative tokens or a smaller draft.
    type: float
    default: 0.4
  bootstrap_resamples:
    description:
      - Bootstrap resamples per interval, an integer from 200 to 20000. More resamples make the interval bounds
        steadier, not narrower (only more requests do that).
      - About 40 ms for 2000 resamples of 50 + 50 requests on one core. When resamples x requests would exceed 20
        million draws (thousands of requests per level), fewer resamples are used, with a warning.
    type: int
    default: 2000
  c8_margin:
    description:
      - The non-inferiority margin, 0.0 to 0.10 - the largest loss at concurrency 8 the 95 % interval must rule out
        before a change is kept (never less than O(c8_tolerance)).
      - At concurrency 8 the burden of proof is on the change (non-inferiority, the one rule). A measured loss beyond
        O(c8_tolerance) reverts, and no regression is counted only when the 95 % interval of the change rules out a
        loss larger than this margin. An interval that does not is an open regression, never a pass -
        O(decide_undetermined=point_estimate) settles it as a regression (reject), V(undetermined) leaves the verdict
        undetermined - so widening the interval (noise, O(phase_shift)) can only make the verdict more careful.
        Without an interval (no samples, fewer than two waves at concurrency 8) the point estimate decides.
      - On a host with a large O(phase_shift) the interval cannot rule out a small loss; a larger margin then lets a
        change be kept, while a measured loss beyond O(c8_tolerance) still reverts. A loss of 10 % or more is never
        inside the margin.
    type: float
    default: 0.05
  max_ttft_increase:
    description:
      - The largest rise of the concurrency-1 TTFT p50 (C(ttft_ms_p50)) a change may cause, as a share
        (V(0.25) = 25 %), 0.0 to 10.0. A change whose TTFT rose more is V(reject), whatever its throughput and
        TPOT (a point-estimate rule applied after them; RV(ttft.verdict_without_it) says what they decided).
      - Unset (the default), TTFT is only reported (RV(deltas.ttft_change_c1), RV(deltas.ttft_change_c8),
        RV(reasons)), never credited to speculation, and a rise above 10 % is a warning.
      - Set, both benchmarks must have a usable C(ttft_ms_p50) at concurrency 1.
    type: float
  drafting_off_above:
    description:
      - "The candidate's batch-size schedule (C(num_speculative_tokens_per_batch_size)) sets K = 0 above this many
        requests at a time. The verdict then reads the candidate's own counters at every concurrency above it; when
        more than half of the output tokens there came out of drafting steps (drafts plus accepted tokens over output
        tokens), the server ignored K = 0 (Model Runner v2, vllm#51510), the concurrency-8 result is not credited to
        the schedule and the change is not kept (RV(drafting))."
      - Unset (the default), no schedule is checked.
    type: int
  decide_undetermined:
    description:
      - What to answer when the intervals leave the verdict open.
      - V(point_estimate) decides on the point estimates and says so in RV(reasons); RV(determined) is false.
      - V(undetermined) returns RV(verdict=undetermined) and RV(keep=false), for a caller that measures more and asks
        again.
    type: str
    choices: [point_estimate, undetermined]
    default: point_estimate
  phase_shift:
    description:
      - How much the whole host's speed shifts between two phases of the same service, beyond the request-to-request
        noise the bootstrap sees, as a relative standard deviation per concurrency level (C(c1) for throughput and
        TPOT at concurrency 1, C(c8) for throughput at concurrency 8); from 0 to 0.5 each.
      - Every interval is widened for it (on the log scale, in quadrature with the bootstrap's half-width), and a
        criterion whose threshold lies within 1.96 x the shift of the measured ratio is RV(criteria.shift_bound), as
        more requests of the same two phases cannot settle it.
      - Measure it with an A/A comparison (two phases of the same service judged by this module,
        C(tests/benchmarks/aa_probe.py) prints the value). On the CPU test bed's virtual machine it is about 0.08 at
        both levels; 0 (the default) trusts the bootstrap alone, as a quiet dedicated device may.
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
  num_speculative_tokens:
    description:
      - K, the draft tokens per step of the candidate, for RV(explanation); an integer from 1 to 16.
      - Default is what the candidate's speculative-decoding counters show (per-position counters, or draft tokens
        / drafts). When both are known and differ, this value is used, with a warning.
    type: int
seealso:
  - module: jetson_llm.vllm.vllm_benchmark
  - module: jetson_llm.vllm.speculative_plan
'''

EXAMPLES = r'''
- name: Benchmark the baseline service (concurrency 1 and 8)
  jetson_llm.vllm.vllm_benchmark:
    model: meta-llama/Llama-3.1-8B-Instruct
    concurrency: [1, 8]
  register: baseline_bench

# ... restart the service with --speculative-config, then:
- name: Benchmark the speculative service with the same workload
  jetson_llm.vllm.vllm_benchmark:
    model: meta-llama/Llama-3.1-8B-Instruct
    concurrency: [1, 8]
  register: candidate_bench

- name: Decide
  jetson_llm.vllm.speculative_verdict:
    baseline: "{{ baseline_bench }}"
    candidate: "{{ candidate_bench }}"
  register: spec_verdict

# e.g. Llama 3.1 8B on Thor: 44 -> 60 tok/s (+36 %), TPOT 22 -> 16 ms (-27 %), c=8 251 -> 255: accept
- name: Remove --speculative-config unless the verdict keeps it
  ansible.builtin.debug:
    msg: "{{ spec_verdict.verdict }}: {{ spec_verdict.reasons | join(' ') }}"
  when: not spec_verdict.keep

# A caller that can measure more: ask for "undetermined" instead of a decision on the point estimates
- name: Decide, or say that the noise does not allow a decision yet
  jetson_llm.vllm.speculative_verdict:
    baseline: "{{ baseline_bench }}"
    candidate: "{{ candidate_bench }}"
    decide_undetermined: undetermined
    num_speculative_tokens: 5
  register: spec_verdict

- name: Measure again with more requests when the intervals do not settle it
  ansible.builtin.debug:
    msg: "Undetermined on {{ spec_verdict.undetermined | join(', ') }}: {{ spec_verdict.reasons | join(' ') }}"
  when: spec_verdict.verdict == 'undetermined'

# Tolerate a 2 % loss at concurrency 8 and keep marginal gains (between 10 % and the 30 %/20 % bar)
- name: Decide with a looser policy
  jetson_llm.vllm.speculative_verdict:
    baseline: "{{ baseline_bench.benchmark }}"
    candidate: "{{ candidate_bench.benchmark }}"
    c8_tolerance: 0.02
    keep_marginal: true
'''

RETURN = r'''
verdict:
  description:
    - V(accept), V(marginal) or V(reject).
    - V(undetermined) with O(decide_undetermined=undetermined), when the intervals leave the verdict open, and when a
      keep was measured while other clients used the server (RV(live_traffic)); not kept either way.
  returned: always
  type: str
  sample: accept
keep:
  description:
    - Whether to keep C(--speculative-config) (accept, or marginal with O(keep_marginal=true)); false when the verdict
      is V(undetermined).
  returned: always
  type: bool
  sample: true
summary:
  description:
    - How sure the verdict is, in one line a person can read - the throughput change at concurrency 1 and 8 with its
      bootstrap interval and that interval's confidence (95 %, or a sequential candidate's last look's, RV(bootstrap.confidence);
      "no interval" when too few requests), then the verdict and whether it is kept.
  returned: always
  type: str
  sample: "c=1 +41 % (95 % CI +33 % to +49 %), c=8 -1 % (95 % CI -4 % to +2 %): accept, kept"
reasons:
  description: Plain sentences with the measured changes and the rule that decided.
  returned: always
  type: list
  elements: str
  sample:
    - "At concurrency 1, throughput_tok_s changed +36.4 % (44.00 -> 60.00; 95 % interval +33.8 % to +39.0 %) and
      tpot_ms_p50 fell 27.3 % (22.00 -> 16.00 ms; 95 % interval 25.6 % to 28.9 %)."
    - "At concurrency 8, throughput_tok_s changed +1.6 % (95 % interval -1.0 % to +4.2 %; tolerance: -0.0 %)."
    - "Acceptance 0.72 with K=3 gives 3.16 tokens per verification step (measured); TPOT is 0.73 of the baseline, so a
      step costs 2.30 target steps and each draft token about 0.43 of one (break-even 0.72): the draft is expensive,
      it takes 60 % of what speculation could save."
    - "Accepted: >= 30.0 % more throughput and >= 20.0 % lower TPOT at concurrency 1, and no regression at concurrency 8
      (shown by the 95 % intervals)."
decision_warnings:
  description: Plain sentences worth an operator's attention (also emitted as Ansible warnings).
  returned: always
  type: list
  elements: str
  sample: ["No run at concurrency 8: decided on concurrency 1 only; a throughput regression under load was not checked (add 8 to the concurrency list)."]
deltas:
  description: The relative changes the verdict is based on (fractions, rounded to 4 decimals).
  returned: always
  type: dict
  contains:
    throughput_gain_c1:
      description: Candidate / baseline C(throughput_tok_s) - 1 at concurrency 1.
      type: float
      sample: 0.3636
    tpot_reduction_c1:
      description: 1 - candidate / baseline C(tpot_ms_p50) at concurrency 1.
      type: float
      sample: 0.2727
    throughput_change_c8:
      description: Candidate / baseline C(throughput_tok_s) - 1 at concurrency 8; null without concurrency 8 runs.
      type: float
      sample: 0.0159
    acceptance_rate:
      description: The candidate's concurrency-1 draft acceptance rate; null when the benchmark could not read it.
      type: float
      sample: 0.72
    ttft_change_c1:
      description: Candidate / baseline C(ttft_ms_p50) - 1 at concurrency 1 (reported, not credited to speculation);
        null when a benchmark has no usable TTFT.
      type: float
      sample: 0.021
    ttft_change_c8:
      description: The same at concurrency 8; null without concurrency 8 runs or a usable TTFT there.
      type: float
      sample: 0.083
measurements:
  description:
    - The absolute values compared, per concurrency (C(c8) is null without concurrency 8 runs).
    - C(ttft_ms_p50) is present where both benchmarks have a usable one.
  returned: always
  type: dict
  sample: {"c1": {"baseline": {"throughput_tok_s": 44.0, "tpot_ms_p50": 22.0, "ttft_ms_p50": 180.0},
                  "candidate": {"throughput_tok_s": 60.0, "tpot_ms_p50": 16.0, "ttft_ms_p50": 183.8}},
           "c8": {"baseline": {"throughput_tok_s": 251.0}, "candidate": {"throughput_tok_s": 255.0}}}
ttft:
  description: The O(max_ttft_increase) rule.
  returned: always
  type: dict
  contains:
    max_increase:
      description: O(max_ttft_increase), null when unset.
      type: float
    status:
      description: V(met) (the rise is within it), V(not_met) (the verdict is V(reject)), null when unset.
      type: str
    verdict_without_it:
      description: What throughput and TPOT alone decided, when the rule is V(not_met); else null.
      type: str
  sample: {"max_increase": 0.25, "status": "not_met", "verdict_without_it": "accept"}
live_traffic:
  description:
    - Runs during which other clients used the server (C(metrics_polluted) in the benchmark results) - C(runs), a list
      such as C(candidate at concurrency 8) - and, when that held a keep back, C(verdict_without_it) (the verdict on
      the measurement alone); the verdict is then V(undetermined) and the change is not kept. A revert stands.
  returned: always
  type: dict
  sample: {"runs": ["candidate at concurrency 8"], "verdict_without_it": "accept"}
drafting:
  description: The O(drafting_off_above) check; null when it is unset.
  returned: always
  type: dict
  contains:
    off_above:
      description: O(drafting_off_above).
      type: int
    ignored:
      description: True when the candidate drafted for more than half of its tokens at a concurrency above it.
      type: bool
    levels:
      description: Per concurrency above it, C(drafts) (counted), C(share) (of the output tokens from drafting steps,
        null when the run has no token count) and C(ignored).
      type: dict
  sample: {"off_above": 4, "ignored": true, "levels": {"8": {"drafts": 1650, "share": 0.97, "ignored": true}}}
power:
  description:
    - What this measurement could have shown, approximately, from its own intervals (the standard error of each
      ratio's log read from the interval's lower side) under the verdict's rules. A reverted verdict says it in its
      RV(reasons), with what to change when concurrency 8 passes less than half the time.
    - Optimistic on a host whose phase shift is not declared (O(phase_shift)), which no interval sees.
  returned: always
  type: dict
  contains:
    c1_gain_kept_80:
      description: The true throughput gain at concurrency 1 a candidate needs to be kept 4 times in 5 against
        O(min_throughput_gain) (on the point estimate, or on the interval with O(decide_undetermined=undetermined));
        null without an interval at concurrency 1.
      type: float
    c8_unchanged_kept:
      description: The probability that a candidate leaving concurrency-8 throughput unchanged passes there (its
        interval rules out a loss beyond O(c8_margin), its point estimate none beyond O(c8_tolerance)); null without an
        interval at concurrency 8.
      type: float
  sample: {"c1_gain_kept_80": 0.41, "c8_unchanged_kept": 0.09}
c8_regression_only:
  description:
    - True when concurrency 8 regressed (C(regression_c8) V(met)) while concurrency 1 passes - both concurrency-1 bars
      V(met), or V(undetermined) with their point estimates V(met) (a sequential benchmark stops once the regression
      settles the reject, often before its first-look intervals at concurrency 1 can show a bar).
    - An open C(regression_c8) that O(decide_undetermined=point_estimate) settled as a regression counts as V(met) here
      (the change was reverted only because concurrency 8 was not shown to be no regression).
    - False when the concurrency-1 TTFT rose beyond O(max_ttft_increase) (C(ttft.status) V(not_met)) - speculating at
      small batch sizes keeps concurrency 1 as it is.
    - The speculative_decoding role then tries speculation at small batch sizes only, verified on its own.
  returned: always
  type: bool
  sample: true
recommendation:
  description: Advice for the next step; RV(keep) alone decides whether to revert.
  returned: always
  type: dict
  contains:
    action:
      description: >-
        V(raise_num_speculative_tokens) (accept and acceptance rate > O(high_acceptance_rate)), V(keep),
        V(lower_num_speculative_tokens_or_smaller_draft) (not accepted and acceptance rate < O(low_acceptance_rate)),
        V(remove_speculative_config), V(measure_more) (verdict V(undetermined)).
      type: str
      sample: raise_num_speculative_tokens
    message:
      description: The same as a sentence, naming the acceptance rate (or saying it is unknown).
      type: str
      sample: >-
        Keep speculation; the acceptance rate 0.72 is > 0.6, so try num_speculative_tokens + 1
        (pass measured_acceptance_rate to speculative_plan) and benchmark again.
criteria:
  description:
    - Each criterion with its point estimate, its 95 % interval and its status. Fractions rounded to 4 decimals.
    - C(throughput_gain_c1), C(tpot_reduction_c1), C(minimum_gain_c1) always; C(regression_c8) with runs at
      concurrency 8.
  returned: always
  type: dict
  contains:
    status:
      description:
        - V(met), V(not_met) or V(undetermined) (the threshold lies inside the interval); what decided.
        - For C(regression_c8), V(met) means a regression; an V(undetermined) one is open (the interval does not rule
          out a loss larger than O(c8_margin)) and is never a pass.
      type: str
    point_status:
      description: V(met) or V(not_met) on the point estimate alone.
      type: str
    basis:
      description: V(interval), or V(point_estimate) (no samples, too few requests).
      type: str
    point:
      description: The measured value (the gain, reduction or change as in RV(deltas)).
      type: float
    interval:
      description: The 95 % interval [low, high] of the same quantity; null without samples.
      type: list
      elements: float
    threshold:
      description: The threshold the criterion compares with (C(regression_c8) compares with -O(c8_tolerance)).
      type: float
    shift_bound:
      description:
        - True when the criterion is V(undetermined) and O(phase_shift) alone covers its threshold, so that more
          requests of the same two phases would not settle it; false otherwise (always false without O(phase_shift)).
      type: bool
  sample: {"throughput_gain_c1": {"status": "met", "point_status": "met", "basis": "interval", "point": 0.3636,
                                  "interval": [0.3381, 0.3896], "threshold": 0.3, "shift_bound": false}}
determined:
  description:
    - False when undetermined criteria leave the verdict open (see RV(undetermined)).
    - True when the intervals settle it, and when the point estimates decide for want of samples (see RV(decision_basis)).
  returned: always
  type: bool
  sample: true
undetermined:
  description: The undetermined criteria the verdict depends on (empty when RV(determined) is true).
  returned: always
  type: list
  elements: str
  sample: ["throughput_gain_c1"]
decision_basis:
  description:
    - V(interval) when every criterion was classified on its 95 % interval and the intervals decided (or, with
      O(decide_undetermined=undetermined), left the verdict open).
    - V(point_estimate) when a point estimate decided something (no samples, too few requests,
      or an undetermined verdict decided on the point estimates).
  returned: always
  type: str
  sample: interval
point_estimate_verdict:
  description: The verdict on the point estimates alone (the rule without intervals), for comparison.
  returned: always
  type: str
  sample: accept
bootstrap:
  description: How the intervals were computed.
  returned: always
  type: dict
  contains:
    method:
      description: Always C(percentile bootstrap over requests; whole waves above concurrency 1).
      type: str
    confidence:
      description:
        - "The two-sided confidence of the intervals at each level (C(c1), C(c8)): 0.95, or for a candidate measured
          sequentially (M(jetson_llm.vllm.vllm_benchmark) O(jetson_llm.vllm.vllm_benchmark#module:sequential)) the confidence its last looks used
          (C(config.sequential.confidence): the 5 % error spent over the looks, see C(docs/decision-rules.md))."
        - A C(config.sequential.confidence) outside 0.95 to 1 fails the task naming it.
      type: dict
    resamples:
      description: Resamples used (O(bootstrap_resamples), lower for very large samples); null when no interval was computed.
      type: int
    seed:
      description: The start of the seed derived from the data (the same data give the same seed); null without intervals.
      type: str
    phase_shift:
      description: The O(phase_shift) the intervals include, C(c1) and C(c8) (0 for none).
      type: dict
  sample: {"method": "percentile bootstrap over requests; whole waves above concurrency 1", "confidence": {"c1": 0.95, "c8": 0.95},
           "resamples": 2000,
           "seed": "30dc202a5248c623", "phase_shift": {"c1": 0.0, "c8": 0.0}}
explanation:
  description:
    - Why the speed-up is what it is, from the candidate's concurrency-1 acceptance rate, K and the TPOT ratio (see the
      description for the model and its limits). Numbers are null when the acceptance rate or K is unknown.
  returned: always
  type: dict
  contains:
    acceptance_rate:
      description: The candidate's concurrency-1 acceptance rate (accepted / drafted tokens); null when unknown.
      type: float
    k:
      description: Draft tokens per step (O(num_speculative_tokens), else read from the counters); null when unknown.
      type: int
    expected_tokens_per_step:
      description: E = (1 - a^(K+1)) / (1 - a), K + 1 when a = 1.
      type: float
    measured_tokens_per_step:
      description: The counters' C(acceptance_length) (1 + accepted / drafts); null when absent.
      type: float
    tokens_per_step:
      description: What the cost uses, the measured value when present, else E.
      type: float
    tpot_ratio:
      description: Candidate / baseline C(tpot_ms_p50) at concurrency 1.
      type: float
    step_cost:
      description: One speculative step in target decode steps, C(tpot_ratio) x C(tokens_per_step).
      type: float
    draft_cost_per_token:
      description: (C(step_cost) - 1) / K, one draft token in target decode steps.
      type: float
    break_even_draft_cost:
      description: (C(tokens_per_step) - 1) / K, the draft cost per token at which speculation neither gains nor loses.
      type: float
    text:
      description: The same in a sentence (also in RV(reasons) when the acceptance rate is known).
      type: str
  sample: {"acceptance_rate": 0.72, "k": 3, "expected_tokens_per_step": 2.6116, "measured_tokens_per_step": 3.16,
           "tokens_per_step": 3.16, "tpot_ratio": 0.7273, "step_cost": 2.2982, "draft_cost_per_token": 0.4327,
           "break_even_draft_cost": 0.72, "text": "Acceptance 0.72 with K=3 gives 3.16 tokens per verification step ..."}
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.verdict import (
    DECIDE_UNDETERMINED, VERDICT_DEFAULTS, verdict)


def main():
    argument_spec = dict(
        baseline=dict(type='dict', required=True),
        candidate=dict(type='dict', required=True),
        min_throughput_gain=dict(type='float', default=VERDICT_DEFAULTS['min_throughput_gain']),
        min_tpot_reduction=dict(type='float', default=VERDICT_DEFAULTS['min_tpot_reduction']),
        disable_below_gain=dict(type='float', default=VERDICT_DEFAULTS['disable_below_gain']),
        c8_tolerance=dict(type='float', default=VERDICT_DEFAULTS['c8_tolerance']),
        keep_marginal=dict(type='bool', default=False),
        high_acceptance_rate=dict(type='float', default=VERDICT_DEFAULTS['high_acceptance_rate']),
        low_acceptance_rate=dict(type='float', default=VERDICT_DEFAULTS['low_acceptance_rate']),
        bootstrap_resamples=dict(type='int', default=VERDICT_DEFAULTS['bootstrap_resamples']),
        c8_margin=dict(type='float', default=VERDICT_DEFAULTS['c8_margin']),
        max_ttft_increase=dict(type='float'),
        drafting_off_above=dict(type='int'),
        decide_undetermined=dict(type='str', default='point_estimate', choices=list(DECIDE_UNDETERMINED)),
        num_speculative_tokens=dict(type='int', no_log=False),
        phase_shift=dict(type='dict', options=dict(c1=dict(type='float', default=0.0),
                                                   c8=dict(type='float', default=0.0))),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = verdict(**module.params)
    except SpeculativeInputError as exc:
        module.fail_json(msg=str(exc))
    warnings = result.pop('warnings')
    for text in warnings:
        module.warn(text)
    module.exit_json(changed=False, decision_warnings=warnings, **result)


if __name__ == '__main__':
    main()
