# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why speculation paid or did not: tokens per step against the draft's cost (private).

The model (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative
Decoding", ICML 2023): with K draft tokens per step and a per-token acceptance probability a,
independent from token to token, one verification step yields on average

    E = 1 + a + a^2 + ... + a^K = (1 - a^(K+1)) / (1 - a)   (K + 1 when a = 1)

tokens. vLLM's counters measure the mean directly: acceptance_length = 1 + accepted / drafts,
which is 1 + K x acceptance_rate because every draft proposes K tokens. The two agree at a = 0
and a = 1; in between E is lower, because vLLM's acceptance_rate (accepted / drafted tokens) is
the mean over the K positions, not the per-token probability (a rejected token also discards
the tokens after it). The cost below uses the measured length when the counters give it.

Cost, in units of one target decode step at concurrency 1: if TPOT_spec / TPOT_base = r and a
step yields T tokens, one speculative step costs c_step = r x T target steps. Assuming that
verifying K + 1 tokens costs about one target step (decode is memory-bound: the weights are read
once whatever the number of tokens), the rest is the draft: (c_step - 1) / K per draft token.
Speculation breaks even when that equals (T - 1) / K, the tokens saved per draft token.
Limits: the draft cost absorbs everything else the speculative path adds (rejection sampling,
scheduling, the larger KV reads, a smaller KV cache); at higher concurrency decode stops being
memory-bound and verification is no longer free; TPOT is a median and acceptance a mean over
the run, so the figures are rough (a negative draft cost means the model does not fit the data).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

#: The share of the saving (T - 1 target steps per verification step) the draft may take before it is called
#: expensive; at 1 it takes all of it and speculation breaks even.
TOO_EXPENSIVE_SHARE = 0.5


def expected_tokens_per_step(acceptance, k):
    """E = (1 - a^(K+1)) / (1 - a): tokens per verification step (K + 1 at a = 1, 1 at a = 0).

    Computed as the sum 1 + a + ... + a^K, exact at a = 1 and without cancellation near it.
    """
    total = 0.0
    term = 1.0
    for _i in range(k + 1):
        total += term
        term *= acceptance
    return total


def draft_tokens_per_step(spec_decode):
    """K read from a run's speculative-decoding counters (draft tokens / drafts), or None."""
    if not isinstance(spec_decode, dict):
        return None
    per_position = spec_decode.get('per_position_acceptance')
    if isinstance(per_position, list) and per_position:
        return len(per_position)  # one counter per draft position, labelled 0 .. K-1
    drafts, draft_tokens = spec_decode.get('drafts'), spec_decode.get('draft_tokens')
    if _count(drafts) and _count(draft_tokens):
        ratio = draft_tokens / drafts
        if abs(ratio - round(ratio)) <= 0.05:  # a draft cut short near max_tokens proposes fewer tokens
            return int(round(ratio))
    return None


def measured_tokens_per_step(spec_decode):
    """acceptance_length (1 + accepted / drafts) of a run's counters when it is a finite number >= 1, else None."""
    if not isinstance(spec_decode, dict):
        return None
    value = spec_decode.get('acceptance_length')
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
        return None
    return float(value)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def explain(acceptance, k, tpot_ratio, measured_length=None):
    """The explanation dictionary (see the speculative_verdict RETURN documentation)."""
    result = {
        'acceptance_rate': acceptance,
        'k': k,
        'expected_tokens_per_step': None,
        'measured_tokens_per_step': measured_length,
        'tokens_per_step': None,
        'tpot_ratio': round(tpot_ratio, 4),
        'step_cost': None,
        'draft_cost_per_token': None,
        'break_even_draft_cost': None,
        'text': None,
    }
    if acceptance is None:
        result['text'] = ('The speed-up cannot be explained: the candidate has no speculative-decoding counters '
                          '(acceptance rate unknown).')
        return result
    if k is None:
        result['text'] = ('The speed-up cannot be explained: the number of draft tokens per step is unknown (pass '
                          'num_speculative_tokens).')
        return result
    expected = expected_tokens_per_step(acceptance, k)
    tokens = measured_length if measured_length is not None else expected
    step_cost = tpot_ratio * tokens
    draft_cost = (step_cost - 1.0) / k
    break_even = (tokens - 1.0) / k
    result.update(expected_tokens_per_step=round(expected, 4), tokens_per_step=round(tokens, 4),
                  step_cost=round(step_cost, 4), draft_cost_per_token=round(draft_cost, 4),
                  break_even_draft_cost=round(break_even, 4))
    head = ('Acceptance %.2f with K=%d gives %.2f tokens per verification step (%s); TPOT is %.2f of the baseline, '
            'so a step costs %.2f target steps' % (acceptance, k, tokens, 'measured' if measured_length is not None
                                                   else 'expected', tpot_ratio, step_cost))
    if tokens - 1.0 < 1e-9:
        result['text'] = head + (': no draft token is accepted, so the draft can only cost time; use a better '
                                 'matched draft or do not speculate.')
    elif draft_cost < 0:
        result['text'] = head + (', less than the verification alone: the model does not fit these figures '
                                 '(noise, or a baseline slowed by something else); measure again.')
    else:
        share = draft_cost / break_even
        if share >= 1.0:
            judgement = 'the draft costs more than the tokens it saves: too expensive'
        elif share >= TOO_EXPENSIVE_SHARE:
            judgement = 'the draft is expensive, it takes %.0f %% of what speculation could save' % (share * 100.0)
        else:
            judgement = 'the draft is cheap enough, it takes %.0f %% of what speculation could save' % (share * 100.0)
        result['text'] = head + ' and each draft token about %.2f of one (break-even %.2f): %s.' % (
            draft_cost, break_even, judgement)
    return result
