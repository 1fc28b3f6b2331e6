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
    AND no throughput regression at concurrency 8 beyond O(c8_tolerance) (0 %)."
  - "V(reject) (revert): gain < O(disable_below_gain) (10 %) OR a throughput regression at concurrency 8 beyond
    O(c8_tolerance). A bad draft path is worse than no speculation."
  - "V(marginal) otherwise: kept only when O(keep_marginal=true)."
  - "Boundaries: a value within 1e-9 of a threshold counts as reaching it, so 100 -> 130 tok/s is a gain of exactly
    30 % (accept) and exactly 10 % is not below 10 %. Reported deltas are rounded to 4 decimals."
  - Without runs at concurrency 8 the verdict is decided at concurrency 1 with a warning. A run at concurrency 1 is
    required.
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
      - Throughput loss at concurrency 8 that is still not a regression (0.0 = none allowed; 0.02 tolerates 2 %).
    type: float
    default: 0.0
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
  description: V(accept), V(marginal) or V(reject).
  returned: always
  type: str
  sample: accept
keep:
  description: Whether to keep C(--speculative-config) (accept, or marginal with O(keep_marginal=true)).
  returned: always
  type: bool
  sample: true
reasons:
  description: Plain sentences with the measured changes and the rule that decided.
  returned: always
  type: list
  elements: str
  sample:
    - "At concurrency 1, throughput_tok_s changed +36.4 % (44.00 -> 60.00) and tpot_ms_p50 fell 27.3 % (22.00 -> 16.00 ms)."
    - "At concurrency 8, throughput_tok_s changed +1.6 % (tolerance: -0.0 %)."
    - "Accepted: >= 30.0 % more throughput and >= 20.0 % lower TPOT at concurrency 1, and no regression at concurrency 8."
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
measurements:
  description: The absolute values compared, per concurrency (C(c8) is null without concurrency 8 runs).
  returned: always
  type: dict
  sample: {"c1": {"baseline": {"throughput_tok_s": 44.0, "tpot_ms_p50": 22.0}, "candidate": {"throughput_tok_s": 60.0, "tpot_ms_p50": 16.0}},
           "c8": {"baseline": {"throughput_tok_s": 251.0}, "candidate": {"throughput_tok_s": 255.0}}}
recommendation:
  description: Advice for the next step; RV(keep) alone decides whether to revert.
  returned: always
  type: dict
  contains:
    action:
      description: >-
        V(raise_num_speculative_tokens) (accept and acceptance rate > O(high_acceptance_rate)), V(keep),
        V(lower_num_speculative_tokens_or_smaller_draft) (not accepted and acceptance rate < O(low_acceptance_rate)),
        V(remove_speculative_config).
      type: str
      sample: raise_num_speculative_tokens
    message:
      description: The same as a sentence, naming the acceptance rate (or saying it is unknown).
      type: str
      sample: >-
        Keep speculation; the acceptance rate 0.72 is > 0.6, so try num_speculative_tokens + 1
        (pass measured_acceptance_rate to speculative_plan) and benchmark again.
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._spec_checks import SpeculativeInputError
from ansible_collections.jetson_llm.vllm.plugins.module_utils._verdict import VERDICT_DEFAULTS, verdict


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
