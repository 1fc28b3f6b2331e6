# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-request speculative metrics (vllm#48915, vLLM 0.29+ with --per-request-spec-decode-metrics).

The usage chunk below has the shape vLLM 0.32's /v1/completions streams (CompletionStreamResponse with
``metrics=PerRequestMetrics(speculative_decoding=SpeculativeDecodingMetrics(...))``, dumped with
exclude_none; vllm/entrypoints/openai/completion/serving.py and generate/base/protocol.py of the test bed's
vLLM 0.32.0, the same fields in the 0.29.0 sdist).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm

DONE = b'data: [DONE]\n\n'


def spec_metrics(histogram, drafted=None, k=None):
    """The object vLLM's RequestSpecDecodeMetrics.to_dict() returns for ``histogram``."""
    k = len(histogram) - 1 if k is None else k
    steps = sum(histogram)
    accepted = sum(j * n for j, n in enumerate(histogram))
    drafted = steps * k if drafted is None else drafted
    return {'mean_acceptance_length': 1.0 + accepted / steps if steps else 1.0,
            'draft_acceptance_rate': accepted / drafted if drafted else 0.0,
            'acceptance_histogram': list(histogram), 'num_spec_steps': steps,
            'num_accepted_draft_tokens': accepted, 'num_draft_tokens': drafted, 'num_spec_tokens': k}


def final_chunk(completion, metrics, prompt=10):
    body = {'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'target-spec', 'choices': [],
            'usage': {'prompt_tokens': prompt, 'total_tokens': prompt + completion, 'completion_tokens': completion}}
    if metrics is not None:
        body['metrics'] = metrics
    return ('data: %s\n\n' % json.dumps(body)).encode()


def record(histogram=None, completion=8, start=0.0, metrics='auto'):
    rec = bm.RequestRecord(start)
    rec.feed(('data: %s\n\n' % json.dumps({'choices': [{'index': 0, 'text': 'ab'}]})).encode(), start + 0.1)
    rec.feed(('data: %s\n\n' % json.dumps({'choices': [{'index': 0, 'text': 'cd'}]})).encode(), start + 0.2)
    if metrics == 'auto':
        metrics = {'speculative_decoding': spec_metrics(histogram)} if histogram is not None else None
    rec.feed(final_chunk(completion, metrics) + DONE, start + 0.21)
    return rec.finish()


def test_a_request_s_own_counts_are_read_from_the_usage_chunk():
    rec = record([1, 0, 2, 1])  # K = 3: 4 verify steps accepting 0, 2, 2 and 3 draft tokens
    assert rec.success and rec.spec_problem is None
    assert rec.spec == {'steps': 4, 'accepted': 7, 'drafted': 12, 'k': 3, 'histogram': [1, 0, 2, 1]}


def test_no_metrics_object_leaves_the_request_without_counts():
    rec = record(None)
    assert rec.success and rec.spec is None and rec.spec_problem is None
    rec = record(metrics={'time_to_first_token_ms': 5.0})  # timing metrics only: the server does not speculate
    assert rec.success and rec.spec is None and rec.spec_problem is None


@pytest.mark.parametrize('bad, why', [
    ('nope', 'not an object'),
    (dict(spec_metrics([1, 1]), num_spec_steps=3), 'the histogram counts 2 verify steps, num_spec_steps says 3'),
    (dict(spec_metrics([1, 1]), num_accepted_draft_tokens=2), 'num_accepted_draft_tokens says 2'),
    (dict(spec_metrics([0, 2]), num_draft_tokens=1), '2 accepted of 1 drafted'),
    (dict(spec_metrics([1, 1]), num_draft_tokens=3), '1 accepted of 3 drafted tokens in 2 steps of at most 1'),
    (dict(spec_metrics([1, 1]), acceptance_histogram=[1, 1, 0]), 'not 2 counts'),
    (dict(spec_metrics([1, 1]), acceptance_histogram=[1, True]), 'not 2 counts'),
    (dict(spec_metrics([1, 1]), acceptance_histogram=[-1, 3]), 'not 2 counts'),
    (dict(spec_metrics([1, 1]), num_spec_steps=float('nan')), 'num_spec_steps is nan'),
    (dict(spec_metrics([1, 1]), num_draft_tokens=10 ** 12), 'num_draft_tokens is 1000000000000'),
    (dict(spec_metrics([1, 1]), num_spec_tokens=0), 'num_spec_tokens is 0'),
    (dict(spec_metrics([1, 1]), num_spec_tokens=None), 'num_spec_tokens is None'),
])
def test_a_lying_or_malformed_object_is_a_problem_not_a_failed_request(bad, why):
    rec = record(metrics={'speculative_decoding': bad})
    assert rec.success, rec.error  # the timings are still a measurement
    assert rec.spec is None and why in rec.spec_problem


def test_a_metrics_value_that_is_not_an_object_is_a_problem():
    rec = record(metrics=[1, 2])
    assert rec.success and rec.spec is None and '"metrics" is [1, 2], not an object' in rec.spec_problem


def test_the_run_s_statistics_come_from_its_own_requests():
    # K = 3. Request a: steps accepting 3, 3, 1, 0; request b: 2, 0.
    a, b = record([1, 1, 0, 2]), record([1, 0, 1, 0])
    spec, problem, reported = bm.request_spec_decode([a, b])
    assert problem is None and reported == 2
    assert spec['drafts'] == 6 and spec['draft_tokens'] == 18 and spec['accepted_tokens'] == 9
    assert spec['acceptance_rate'] == pytest.approx(9 / 18.0)
    assert spec['acceptance_length'] == pytest.approx(1 + 9 / 6.0)
    # per position i: the steps that accepted more than i tokens, over all steps (vLLM's per-position counter / drafts)
    assert spec['per_position_acceptance'] == pytest.approx([4 / 6.0, 3 / 6.0, 2 / 6.0], abs=1e-6)
    assert sum(spec['per_position_acceptance']) == pytest.approx(spec['accepted_tokens'] / float(spec['drafts']))
    # each request counts once: a's rate 7/12, b's 2/6
    assert spec['request_acceptance_rate_mean'] == pytest.approx((7 / 12.0 + 2 / 6.0) / 2, abs=1e-6)
    assert spec['source'] == 'requests' and spec['requests'] == 2


def test_failed_requests_are_left_out_and_missing_or_bad_objects_make_the_source_unusable():
    a = record([1, 1])
    failed = bm.RequestRecord(0.0).fail('HTTP 500')
    spec, problem, reported = bm.request_spec_decode([a, failed])
    assert problem is None and reported == 1 and spec['drafts'] == 2
    spec, problem, reported = bm.request_spec_decode([a, record(None)])
    assert spec is None and reported == 1 and problem == '1 of 2 completed requests carried no metrics.speculative_decoding'
    bad = record(metrics={'speculative_decoding': dict(spec_metrics([1, 1]), num_spec_steps=5)})
    spec, problem, _reported = bm.request_spec_decode([a, bad])
    assert spec is None and 'num_spec_steps says 5' in problem


def test_requests_that_drafted_nothing_give_no_statistics_even_if_the_counters_moved():
    """A batch-size range with K = 0 honoured: the requests say they drafted nothing; other traffic's drafts in the
    server counters are not this run's (the verdict's drafting_off_above check reads no drafting)."""
    idle = [record([0, 0, 0]), record([0, 0, 0])]
    assert bm.request_spec_decode(idle) == (None, None, 2)
    counters = {'drafts': 40, 'draft_tokens': 80, 'accepted_tokens': 30, 'acceptance_rate': 0.375,
                'acceptance_length': 1.75, 'per_position_acceptance': [0.5, 0.25]}
    assert bm.choose_spec_decode(idle, counters) == (None, None)


def test_the_requests_win_over_the_counters_and_the_counters_ride_along():
    recs = [record([1, 1]), record([0, 3])]  # K = 1: 5 steps, 4 accepted
    counters = {'drafts': 9, 'draft_tokens': 9, 'accepted_tokens': 6, 'acceptance_rate': 0.666667,
                'acceptance_length': 1.666667, 'per_position_acceptance': [0.666667]}  # other traffic too
    spec, warning = bm.choose_spec_decode(recs, counters)
    assert warning is None and spec['source'] == 'requests'
    assert spec['acceptance_rate'] == pytest.approx(0.8) and spec['drafts'] == 5
    assert spec['server_counters'] == {'drafts': 9, 'draft_tokens': 9, 'accepted_tokens': 6}
    assert bm.polluted_what({'spec_decode': spec}).endswith("spec_decode comes from the run's own requests")


def test_without_per_request_metrics_the_counters_are_used_as_before():
    counters = {'drafts': 9, 'draft_tokens': 9, 'accepted_tokens': 6, 'acceptance_rate': 0.666667,
                'acceptance_length': 1.666667, 'per_position_acceptance': [0.666667]}
    spec, warning = bm.choose_spec_decode([record(None), record(None)], counters)
    assert warning is None and spec == dict(counters, source='server_counters')
    assert bm.choose_spec_decode([record(None)], None) == (None, None)
    assert bm.polluted_what({'spec_decode': spec}) == 'spec_decode and the pollution check come from /metrics'


def test_a_server_that_contradicts_itself_is_not_believed():
    recs = [record([0, 0, 4])]  # 4 steps, 8 accepted
    counters = {'drafts': 4, 'draft_tokens': 8, 'accepted_tokens': 2, 'acceptance_rate': 0.25,
                'acceptance_length': 1.5, 'per_position_acceptance': [0.5, 0.0]}
    spec, warning = bm.choose_spec_decode(recs, counters)
    assert spec['source'] == 'server_counters' and spec['accepted_tokens'] == 2
    assert 'contradicts itself' in warning and 'accepted_tokens 8 > 2' in warning
    bad = [record(metrics={'speculative_decoding': 'lies'})]
    spec, warning = bm.choose_spec_decode(bad, counters)
    assert spec['source'] == 'server_counters' and 'not usable' in warning and 'not an object' in warning


def test_a_sequential_level_sums_its_rounds_requests():
    """measurement: sequential adds rounds to a level; its spec_decode is the requests' of all rounds."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import sequential as S

    def snap(drafts, draft_tokens, accepted, gen):
        return {'drafts': drafts, 'draft_tokens': draft_tokens, 'accepted_tokens': accepted, 'per_pos': {0: accepted},
                'generation_tokens': gen, 'prompt_tokens': 0, 'request_success': 0, 'running': 0, 'waiting': 0}

    level = S._Level(1)  # pylint: disable=protected-access
    first, second = [record([1, 1], start=0.0)], [record([0, 2], start=1.0)]  # K = 1
    level.add(first, 0.3, snap(0, 0, 0, 0), snap(2, 2, 1, 8), 8, 10)
    level.add(second, 0.3, snap(2, 2, 1, 8), snap(5, 5, 4, 40), 8, 10)  # the counters saw one more step elsewhere
    run = level.run()
    assert run['spec_decode']['source'] == 'requests' and run['spec_decode']['requests'] == 2
    assert run['spec_decode']['drafts'] == 4 and run['spec_decode']['accepted_tokens'] == 3
    assert run['spec_decode']['server_counters'] == {'drafts': 5, 'draft_tokens': 5, 'accepted_tokens': 4}
    assert level.spec_warning is None
