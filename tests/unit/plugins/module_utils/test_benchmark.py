# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _benchmark: statistics, metric definitions, SSE, Prometheus, workload, validation."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import random

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import prompts as _prompts


# ----------------------------------------------------------------------------- statistics
# Expected values computed by hand with numpy's linear method: index = (n - 1) * q / 100.

@pytest.mark.parametrize('values, q, expected', [
    ([1, 2, 3, 4], 50, 2.5),                    # index 1.5
    ([1, 2, 3, 4], 99, 3.97),                   # index 2.97 -> 3 + 0.97
    ([1, 2, 3, 4], 25, 1.75),                   # index 0.75
    ([4, 1, 3, 2], 25, 1.75),                   # order does not matter
    ([10.0, 20.0, 40.0, 80.0, 160.0], 99, 156.8),  # index 3.96 -> 80 + 0.96 * 80
    ([10.0, 20.0, 40.0, 80.0, 160.0], 90, 128.0),  # index 3.6 -> 80 + 0.6 * 80
    ([10.0, 20.0, 40.0, 80.0, 160.0], 50, 40.0),
    ([0.1, 0.2, 0.3], 99, 0.298),               # index 1.98
    ([5.0], 99, 5.0),
    ([5.0], 0, 5.0),
    ([3, 9], 100, 9),
    ([3, 9], 0, 3),
])
def test_percentile_linear(values, q, expected):
    assert bm.percentile(values, q) == pytest.approx(expected, rel=1e-12)


def test_percentile_and_median_of_nothing_is_none_not_zero():
    assert bm.percentile([], 99) is None
    assert bm.median([]) is None
    assert bm.mean([]) is None


def test_median_even_and_odd():
    assert bm.median([3, 1, 2, 4]) == 2.5
    assert bm.median([7, 1, 3]) == 3
    assert bm.mean([1.0, 2.0, 6.0]) == 3.0


def test_percentile_endpoints_are_exact():
    xs = [0.1 * i for i in range(1, 12)]
    assert bm.percentile(xs, 100) == max(xs)
    assert bm.percentile(xs, 0) == min(xs)


# ----------------------------------------------------------------------------- records

def chunk(text='x'):
    return ('data: %s\n\n' % json.dumps({'choices': [{'index': 0, 'text': text}], 'usage': None})).encode()


def usage(completion, prompt=10):
    body = {'choices': [], 'usage': {'prompt_tokens': prompt, 'completion_tokens': completion, 'total_tokens': prompt + completion}}
    return ('data: %s\n\n' % json.dumps(body)).encode()


DONE = b'data: [DONE]\n\n'


def record(start, times, completion, prompt=10):
    """A successful record with token chunks received at ``times``."""
    rec = bm.RequestRecord(start)
    for t in times:
        rec.feed(chunk(), t)
    rec.feed(usage(completion, prompt) + DONE, times[-1] + 0.001)
    return rec.finish()


def test_record_follows_vllm_definitions():
    rec = record(10.0, [10.1, 10.12, 10.15], completion=5)
    assert rec.success and rec.error is None
    assert rec.ttft == pytest.approx(0.1)
    assert rec.itl == pytest.approx([0.02, 0.03])
    # latency = last token chunk - start (the usage chunk and [DONE] do not count)
    assert rec.latency == pytest.approx(0.15)
    assert rec.output_tokens == 5 and rec.prompt_tokens == 10
    assert rec.chunks == 3


def test_summarize_run_metrics():
    # two requests: TPOT = (latency - ttft) / (tokens - 1)
    a = record(0.0, [0.1, 0.12, 0.14], completion=5)      # ttft 100 ms, tpot 10 ms, e2el 140 ms
    b = record(0.0, [0.3, 0.34, 0.38, 0.42], completion=7)  # ttft 300 ms, tpot 20 ms, e2el 420 ms
    run = bm.summarize_run([a, b], 2.0, concurrency=2)
    assert run['completed'] == 2 and run['failed'] == 0 and run['errors'] == []
    assert run['total_output_tokens'] == 12 and run['total_input_tokens'] == 20
    assert run['throughput_tok_s'] == pytest.approx(6.0)       # 12 tokens / 2 s
    assert run['request_throughput'] == pytest.approx(1.0)
    assert run['ttft_ms_p50'] == pytest.approx(200.0)
    assert run['ttft_ms_p99'] == pytest.approx(100 + 0.99 * 200)
    assert run['tpot_ms_p50'] == pytest.approx(15.0)
    assert run['tpot_ms_mean'] == pytest.approx(15.0)
    assert run['tpot_ms_p99'] == pytest.approx(10 + 0.99 * 10)
    # ITL pools the chunk gaps of all requests: 20, 20, 40, 40, 40 ms
    assert run['itl_ms_p50'] == pytest.approx(40.0)
    assert run['itl_ms_mean'] == pytest.approx(32.0)
    assert run['e2e_latency_ms_p50'] == pytest.approx(280.0)
    assert run['duration_s'] == pytest.approx(2.0)


def test_summarize_run_keeps_per_request_samples():
    # request order, not finish order; failed requests are left out; times relative to the first request sent
    a = record(5.0, [5.1, 5.12, 5.14], completion=5)           # ttft 100 ms, tpot 10 ms, e2el 140 ms
    b = record(5.05, [5.35, 5.39, 5.43, 5.47], completion=7)   # ttft 300 ms, tpot 20 ms, e2el 420 ms
    failed = bm.RequestRecord(5.2).fail('HTTP 500')
    one = record(5.3, [5.3123456], completion=1)                # one token: TPOT undefined (null, as vLLM)
    run = bm.summarize_run([a, failed, b, one], 2.0, concurrency=2)
    samples = run['samples']
    assert sorted(samples) == sorted(bm.SAMPLE_KEYS)
    assert samples['ttft_ms'] == pytest.approx([100.0, 300.0, 12.346], abs=1e-9)
    assert samples['tpot_ms'][:2] == pytest.approx([10.0, 20.0]) and samples['tpot_ms'][2] is None
    assert samples['output_tokens'] == [5, 7, 1]
    assert samples['latency_ms'] == pytest.approx([140.0, 420.0, 12.346], abs=1e-9)
    assert samples['start_ms'] == pytest.approx([0.0, 50.0, 300.0], abs=1e-9)
    assert samples['finish_ms'] == pytest.approx([140.0, 470.0, 312.346], abs=1e-9)
    for values in samples.values():
        assert all(v is None or v == round(v, bm.SAMPLE_DECIMALS) for v in values)
    # the run's statistics are the statistics of its samples
    assert bm.median([t for t in samples['tpot_ms'] if t is not None]) == pytest.approx(run['tpot_ms_p50'], abs=1e-3)
    assert sum(samples['output_tokens']) == run['total_output_tokens'] == run['completed'] + 10


def test_samples_of_a_run_without_completed_requests_are_empty_lists():
    run = bm.summarize_run([bm.RequestRecord(0.0).fail('refused')], 0.5, concurrency=8)
    assert run['samples'] == dict((key, []) for key in bm.SAMPLE_KEYS)
    assert bm.summarize_run([], 0.5, concurrency=1)['samples']['ttft_ms'] == []


def test_samples_size_is_bounded_by_num_prompts():
    """Worst case of one level: num_prompts at its limit; about 60 bytes per request in compact JSON."""
    recs = [record(i * 1.5, [i * 1.5 + 0.3123, i * 1.5 + 1.2345678], completion=128) for i in range(bm.LIMITS['num_prompts'][1])]
    run = bm.summarize_run(recs, 20000.0, concurrency=1)
    size = len(json.dumps(run['samples'], separators=(',', ':')))
    assert len(run['samples']['ttft_ms']) == bm.LIMITS['num_prompts'][1]
    assert size < 80 * bm.LIMITS['num_prompts'][1]


def test_speculative_chunks_make_itl_and_tpot_diverge():
    # 1 token first, then 3 chunks of 3 tokens each, 30 ms apart: ITL 30 ms, TPOT 10 ms
    rec = record(0.0, [0.05, 0.08, 0.11, 0.14], completion=10)
    run = bm.summarize_run([rec], 1.0, concurrency=1)
    assert run['itl_ms_p50'] == pytest.approx(30.0)
    assert run['tpot_ms_p50'] == pytest.approx(10.0)


def test_single_token_requests_have_no_tpot():
    rec = record(0.0, [0.05], completion=1)
    run = bm.summarize_run([rec], 1.0, concurrency=1)
    assert run['tpot_ms_p50'] is None and run['tpot_ms_mean'] is None
    assert run['itl_ms_p50'] is None
    assert run['ttft_ms_p50'] == pytest.approx(50.0)
    assert run['throughput_tok_s'] == pytest.approx(1.0)


def test_failed_requests_are_counted_and_excluded():
    ok = record(0.0, [0.1, 0.2], completion=2)
    bad = [bm.RequestRecord(0.0).fail('HTTP 500 Internal Server Error from POST /v1/completions') for _i in range(3)]
    other = bm.RequestRecord(0.0).fail('timed out')
    run = bm.summarize_run([ok] + bad + [other], 1.0, concurrency=1)
    assert run['completed'] == 1 and run['failed'] == 4
    assert run['errors'] == ['HTTP 500 Internal Server Error from POST /v1/completions', 'timed out']
    assert run['ttft_ms_p50'] == pytest.approx(100.0)


def test_errors_are_limited():
    bad = [bm.RequestRecord(0.0).fail('error %d' % i) for i in range(20)]
    run = bm.summarize_run(bad, 1.0, concurrency=1)
    assert run['errors'] == ['error %d' % i for i in range(bm.MAX_ERRORS)]


def test_all_failed_reports_nulls_never_zeros():
    run = bm.summarize_run([bm.RequestRecord(0.0).fail('refused')], 0.5, concurrency=8)
    assert run['completed'] == 0 and run['failed'] == 1
    for key in ('ttft_ms_p50', 'ttft_ms_p99', 'itl_ms_p50', 'itl_ms_p99', 'tpot_ms_p50', 'tpot_ms_p99', 'tpot_ms_mean',
                'throughput_tok_s', 'request_throughput', 'e2e_latency_ms_p50', 'duration_s', 'total_output_tokens',
                'total_input_tokens'):
        assert run[key] is None, key


def test_missing_prompt_tokens_gives_null_total_input():
    rec = bm.RequestRecord(0.0)
    rec.feed(chunk() + chunk(), 0.1)
    rec.feed(b'data: {"choices": [], "usage": {"completion_tokens": 2}}\n\n' + DONE, 0.2)
    rec.finish()
    assert rec.success
    run = bm.summarize_run([rec], 1.0, concurrency=1)
    assert run['total_input_tokens'] is None and run['total_output_tokens'] == 2


# ----------------------------------------------------------------------------- SSE

def test_sse_split_anywhere_gives_the_same_events():
    stream = b': ping\n\n' + chunk('a') + b'event: message\nid: 7\ndata: {"x":\ndata: 1}\n\n' + DONE
    whole = bm.SSEParser().feed(stream)
    assert whole == [json.dumps({'choices': [{'index': 0, 'text': 'a'}], 'usage': None}), '{"x":\n1}', '[DONE]']
    for cut in range(1, len(stream)):
        parser = bm.SSEParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == whole, cut
    parser = bm.SSEParser()
    assert [e for i in range(len(stream)) for e in parser.feed(stream[i:i + 1])] == whole


def test_sse_line_endings_crlf_and_cr():
    stream = b'data: one\r\n\r\ndata: two\r\rdata: three\n\n'
    assert bm.SSEParser().feed(stream) == ['one', 'two', 'three']
    parser = bm.SSEParser()
    out = []
    for i in range(len(stream)):
        out += parser.feed(stream[i:i + 1])
    assert out == ['one', 'two', 'three']


def test_sse_utf8_split_inside_a_character():
    data = 'data: {"choices": [{"text": "caf\u00e9 \u2713"}]}\n\n'.encode('utf-8')
    cut = data.index(b'\xc3') + 1
    parser = bm.SSEParser()
    assert parser.feed(data[:cut]) == []
    assert json.loads(parser.feed(data[cut:])[0])['choices'][0]['text'] == u'caf\u00e9 \u2713'


def test_sse_pending():
    parser = bm.SSEParser()
    parser.feed(b'data: {"a": 1}\n')
    assert parser.pending()
    parser.feed(b'\n')
    assert not parser.pending()


def test_record_timestamps_each_message_with_its_arrival_time():
    rec = bm.RequestRecord(1.0)
    first = chunk()
    rec.feed(first[:5], 1.2)         # incomplete: no timestamp yet
    rec.feed(first[5:], 1.3)
    rec.feed(chunk() + chunk(), 1.5)  # two chunks in one read share its time, as in vLLM
    rec.feed(usage(3) + DONE, 1.6)
    rec.finish()
    assert rec.ttft == pytest.approx(0.3)
    assert rec.itl == pytest.approx([0.2, 0.0])
    assert rec.latency == pytest.approx(0.5)


@pytest.mark.parametrize('stream, error', [
    (chunk() + usage(1), 'without "data: [DONE]"'),
    (chunk() + DONE, 'no usage chunk'),
    (usage(0) + DONE, 'without any token chunk'),
    (b'', 'without any token chunk'),
    (chunk() + usage(1) + DONE + b'data: {"choi', None),  # bytes after [DONE] are not an event yet: ignored
])
def test_record_incomplete_streams_fail(stream, error):
    rec = bm.RequestRecord(0.0)
    rec.feed(stream, 0.1)
    rec.finish()
    if error is None:
        assert not rec.success and 'unterminated' in rec.error
    else:
        assert not rec.success and error in rec.error


def test_record_ignores_messages_after_done():
    rec = bm.RequestRecord(0.0)
    rec.feed(chunk() + chunk() + usage(2) + DONE + chunk(), 0.1)
    rec.finish()
    assert rec.success and rec.chunks == 2


@pytest.mark.parametrize('payload, text', [
    (b'data: {"choices": [{"text": "a"\n\n', 'not JSON'),
    (b'data: [1, 2]\n\n', 'not a JSON object'),
    (b'data: {"error": {"message": "engine dead", "code": 500}}\n\n', 'engine dead'),
    (b'data: {"object": "error", "message": "too long", "code": 400}\n\n', 'too long'),
    (b'data: {"x": "\xff"}\n\n', 'invalid UTF-8'),
])
def test_record_malformed_and_error_events_raise(payload, text):
    rec = bm.RequestRecord(0.0)
    with pytest.raises(bm.StreamError, match=text):
        rec.feed(chunk() + payload, 0.1)


# ----------------------------------------------------------------------------- Prometheus

METRICS = '''# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 20.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 400.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 80.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 250.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 50.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 90.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 18.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 60.0
vllm:num_requests_running{engine="0",model_name="m"} 0.0
vllm:generation_tokens_total{engine="0",model_name="we \\"quote\\", comma"} 1234.0 1700000000000
vllm:kv_cache_usage_perc{engine="0",model_name="m"} NaN
garbage line without value
'''


def test_parse_prometheus_sums_label_sets_and_ignores_created():
    samples = bm.parse_prometheus(METRICS)
    assert bm.metric_sum(samples, bm.SPEC_DRAFTS) == 120.0
    assert bm.metric_sum(samples, bm.SPEC_DRAFT_TOKENS) == 480.0
    assert bm.metric_sum(samples, 'vllm:does_not_exist') is None
    labels, value = samples[bm.GEN_TOKENS][0]
    assert value == 1234.0 and labels['model_name'] == 'we "quote", comma'
    snap = bm.snapshot(samples)
    assert snap['per_pos'] == {0: 108.0, 1: 60.0}
    assert snap['running'] == 0.0 and snap['waiting'] is None
    assert snap['accepted_tokens'] == 300.0


def snap(drafts, draft_tokens, accepted, per_pos=None, gen=0, prompt=0, success=0, running=0):
    return {'drafts': drafts, 'draft_tokens': draft_tokens, 'accepted_tokens': accepted, 'per_pos': per_pos,
            'generation_tokens': gen, 'prompt_tokens': prompt, 'request_success': success, 'running': running, 'waiting': 0}


def test_spec_decode_delta_definitions():
    before = snap(100, 400, 300, {0: 90, 1: 70, 2: 60, 3: 40})
    after = snap(150, 600, 400, {0: 130, 1: 100, 2: 80, 3: 50})
    spec = bm.spec_decode_delta(before, after)
    assert spec == {
        'acceptance_rate': 0.5,             # 100 accepted / 200 draft tokens
        'acceptance_length': 3.0,           # 1 + 100 / 50 drafts
        'draft_tokens': 200, 'accepted_tokens': 100, 'drafts': 50,
        'per_position_acceptance': [0.8, 0.6, 0.4, 0.2],
    }


def test_spec_decode_null_without_counters_or_drafts():
    plain = snap(None, None, None)
    assert bm.spec_decode_delta(plain, plain) is None
    same = snap(10, 40, 20)
    assert bm.spec_decode_delta(same, same) is None
    assert bm.spec_decode_delta(None, same) is None


def test_spec_decode_positions_appearing_later():
    spec = bm.spec_decode_delta(snap(0, 0, 0, {}), snap(10, 30, 15, {0: 8, 1: 5, 2: 2}))
    assert spec['per_position_acceptance'] == [0.8, 0.5, 0.2]


def test_pollution():
    run = {'total_output_tokens': 100, 'total_input_tokens': 500, 'completed': 5, 'failed': 0}
    clean_after = snap(0, 0, 0, gen=1100, prompt=1500, success=15)
    before = snap(0, 0, 0, gen=1000, prompt=1000, success=10)
    assert bm.pollution(before, clean_after, run, 128, 2048) == (False, [])
    polluted, reasons = bm.pollution(before, snap(0, 0, 0, gen=1300, prompt=1500, success=15), run, 128, 2048)
    assert polluted and '300 generated tokens' in reasons[0] and 'accounts for 100' in reasons[0]
    polluted, reasons = bm.pollution(snap(0, 0, 0, gen=1000, prompt=1000, success=10, running=2), clean_after, run, 128, 2048)
    assert polluted and '2 request(s) were already running' in reasons[0]
    assert bm.pollution(None, clean_after, run, 128, 2048) == (None, [])
    # failed requests may have generated tokens: up to max_tokens each is tolerated
    failed_run = dict(run, failed=1)
    assert bm.pollution(before, snap(0, 0, 0, gen=1200, prompt=1500, success=15), failed_run, 128, 2048)[0] is False


def test_counters_settled():
    run = {'total_output_tokens': 100}
    assert not bm.counters_settled(snap(0, 0, 0, gen=10), snap(0, 0, 0, gen=100), run)
    assert bm.counters_settled(snap(0, 0, 0, gen=10), snap(0, 0, 0, gen=110), run)
    assert bm.counters_settled(None, snap(0, 0, 0, gen=0), run)


# ----------------------------------------------------------------------------- options

def params(**kw):
    base = dict(endpoint='http://127.0.0.1:8000', api_key=None, request_timeout=300.0, request_deadline=1800.0, model=None, concurrency=[1, 8],
                num_prompts=50, warmup_prompts=10, input_len=2048, output_len=128, dataset='builtin', prompts_file=None,
                temperature=None, ignore_eos=True, seed=0, max_failed_ratio=0.0, container=None, output_file=None)
    base.update(kw)
    return base


@pytest.mark.parametrize('override, text', [
    (dict(concurrency=[]), 'concurrency must be a list of 1 to 16 positive integers'),
    (dict(concurrency=list(range(1, 18))), 'concurrency must be a list of 1 to 16 positive integers'),
    (dict(concurrency=[1, 0]), 'from 1 to 256 only; 0 is not allowed'),
    (dict(concurrency=[1, 100000]), 'from 1 to 256 only; 100000 is not allowed'),
    (dict(concurrency=[2, 2]), 'lists 2 twice'),
    (dict(num_prompts=0), 'num_prompts must be an integer from 1 to 10000; got 0'),
    (dict(num_prompts=10 ** 12), 'num_prompts must be an integer from 1 to 10000; got 1000000000000'),
    (dict(warmup_prompts=10 ** 9), 'warmup_prompts must be an integer from 0 to 1000; got 1000000000'),
    (dict(input_len=0), 'input_len must be an integer from 1 to 131072; got 0'),
    (dict(input_len=10 ** 9), 'input_len must be an integer from 1 to 131072; got 1000000000'),
    (dict(output_len=0), 'output_len must be an integer from 1 to 131072; got 0'),
    (dict(warmup_prompts=-1), 'warmup_prompts must be an integer from 0 to 1000; got -1'),
    (dict(seed=-1), 'seed must be an integer from 0 to 4294967295; got -1'),
    (dict(temperature=-0.5), 'temperature must be a finite number >= 0 (0 = greedy) or unset'),
    (dict(temperature=float('inf')), 'temperature must be a finite number >= 0 (0 = greedy) or unset for the server default; got inf'),
    (dict(temperature=float('nan')), 'temperature must be a finite number >= 0 (0 = greedy) or unset for the server default; got nan'),
    (dict(request_timeout=0.0), 'request_timeout must be a finite number > 0 and <= 3600.0 (seconds); got 0.0'),
    (dict(request_timeout=float('inf')), 'request_timeout must be a finite number > 0 and <= 3600.0 (seconds); got inf'),
    (dict(request_timeout=1e10), 'request_timeout must be a finite number > 0 and <= 3600.0 (seconds); got 10000000000.0'),
    (dict(request_deadline=float('nan')), 'request_deadline must be a finite number > 0 and <= 86400.0 (seconds); got nan'),
    (dict(request_deadline=0), 'request_deadline must be a finite number > 0 and <= 86400.0 (seconds); got 0'),
    (dict(max_failed_ratio=1.5), 'max_failed_ratio must be a finite number >= 0 and <= 1'),
    (dict(max_failed_ratio=float('nan')), 'max_failed_ratio must be a finite number >= 0 and <= 1'),
    (dict(api_key='sk-abc\n'), 'api_key contains a line feed at character 7 of 7'),
    (dict(model='m' * 10000), 'model must be a served model id'),
    (dict(container='c' * 600), 'container must be a label'),
    (dict(dataset='file'), 'dataset=file needs prompts_file'),
    (dict(prompts_file='/tmp/p.jsonl'), "prompts_file is only used with dataset=file"),
    (dict(dataset='sharegpt'), 'dataset must be one of builtin, random, file'),
    (dict(model='  '), 'model must be a served model id'),
    (dict(endpoint='http://u:hunter22@host'), "endpoint 'http://u:********@host' must not carry credentials"),
])
def test_options_rejected(override, text):
    with pytest.raises(bm.BenchmarkError) as exc:
        bm.check_options(params(**override))
    assert text in str(exc.value)
    assert 'sk-abc' not in str(exc.value) and 'hunter22' not in str(exc.value)
    assert len(str(exc.value)) < 400  # long values are echoed truncated


def test_options_accepted_and_normalised():
    p = bm.check_options(params(endpoint='http://jetson:8000/', concurrency=[8, 1], warmup_prompts=0, max_failed_ratio=1.0))
    assert p['endpoint'] == 'http://jetson:8000'
    assert p['concurrency'] == [8, 1]  # order kept


def test_option_warnings():
    assert bm.option_warnings(params()) == []
    warnings = bm.option_warnings(params(output_len=1, ignore_eos=False))
    assert any('TPOT and ITL' in w for w in warnings) and any('ignore_eos is false' in w for w in warnings)


# ----------------------------------------------------------------------------- workload

class ToyTokenizer:
    """Words are tokens; ids 0-2 are special (decode to nothing); vocab 500; BOS optional."""

    def __init__(self, vocab=500):
        self.vocab = vocab
        self.calls = 0

    def tokenize(self, text, add_special_tokens=False):
        self.calls += 1
        ids = [0] if add_special_tokens else []
        for word in text.split():
            if word.startswith('t') and word[1:].isdigit() and 3 <= int(word[1:]) < self.vocab:
                ids.append(int(word[1:]))
            else:
                ids.append(3 + sum(word.encode()) % (self.vocab - 3))
        return ids

    def detokenize(self, ids):
        self.calls += 1
        return ' '.join('t%d' % i for i in ids if 3 <= i < self.vocab)


def test_random_prompt_like_vllm_consecutive_ids():
    tok = ToyTokenizer()
    rng = random.Random(1)
    offset = random.Random(1).randrange(500)
    text, count = bm.random_prompt(rng, 2, 40, tok, 500)
    assert count == 40 and len(tok.tokenize(text)) == 40
    # vLLM: (offset + index + arange(n)) % vocab, special ids dropped on decode and refilled
    first = [int(w[1:]) for w in text.split()[:3]]
    expected = [(offset + 2 + j) % 500 for j in range(6) if (offset + 2 + j) % 500 >= 3][:3]
    assert first == expected


def test_random_prompt_is_seeded():
    tok = ToyTokenizer()
    a = bm.random_prompt(random.Random('0:random:1:measured'), 0, 64, tok, 500)
    b = bm.random_prompt(random.Random('0:random:1:measured'), 0, 64, tok, 500)
    c = bm.random_prompt(random.Random('0:random:8:measured'), 0, 64, tok, 500)
    assert a == b and a != c


def test_random_prompt_without_tokenizer_is_approximate_words():
    text, count = bm.random_prompt(random.Random(0), 0, 130, words=['alpha', 'beta'])
    assert count is None and len(text.split()) == 100  # 130 / 1.3


def test_fit_token_ids_pads_and_truncates():
    tok = ToyTokenizer()
    # ids 0-2 vanish on decode: the prompt is refilled with random ids to 10 tokens
    text, count = bm.fit_token_ids(tok, [0, 1, 2, 5, 6], 10, random.Random(3), 500)
    assert count == 10 and len(tok.tokenize(text)) == 10
    text, count = bm.fit_token_ids(tok, list(range(3, 30)), 10, random.Random(3), 500)
    assert count == 10 and text.split()[:2] == ['t3', 't4']


def test_builtin_prompt_sizes_and_keeps_the_task_at_the_end():
    tok = ToyTokenizer()
    entries = _prompts.texts()
    task = entries[5]
    text, count = bm.builtin_prompt(random.Random(0), task, entries[:5] + entries[6:], 700, tok)
    assert count == 700 and len(tok.tokenize(text)) == 700
    # the toy tokenizer keeps unknown words as hashed ids, so compare token ids of the tail
    assert tok.tokenize(text)[-len(tok.tokenize(task)):] == tok.tokenize(task)


def test_builtin_prompt_shorter_than_task_is_cut_from_the_front():
    tok = ToyTokenizer()
    task = _prompts.texts()[0]
    text, count = bm.builtin_prompt(random.Random(0), task, [], 10, tok)
    assert count == 10
    assert tok.tokenize(text) == tok.tokenize(task)[-10:]


def test_builtin_prompt_without_tokenizer_counts_words():
    entries = _prompts.texts()
    text, count = bm.builtin_prompt(random.Random(0), entries[0], entries[1:], 1300, None)
    assert count is None and len(text.split()) == 1000
    assert text.endswith('Assistant:')


def test_probe_vocab_size():
    assert bm.probe_vocab_size(lambda i: 0 <= i < 1000, 37) == 1000
    assert bm.probe_vocab_size(lambda i: 0 <= i < 151643, 9000) == 151643
    assert bm.probe_vocab_size(lambda i: 0 <= i < 2, 0) == 2
    calls = []

    def is_token(i):
        calls.append(i)
        return i < 128000
    assert bm.probe_vocab_size(is_token, 500) == 128000
    assert len(calls) < 40


def test_prompt_set_id():
    expected = hashlib.sha256(json.dumps(['a', u'\u00e9'], ensure_ascii=False, separators=(',', ':')).encode('utf-8')).hexdigest()
    assert bm.prompt_set_id(['a', u'\u00e9']) == expected
    assert bm.prompt_set_id(['a', 'b']) != bm.prompt_set_id(['b', 'a'])
    assert bm.prompt_set_id(x for x in ['a', 'b']) == bm.prompt_set_id(['a', 'b'])


def test_parse_prompts_jsonl():
    text = '{"prompt": "Hello"}\n\n{"prompt": "Hi there", "output_len": 32}\n'
    assert bm.parse_prompts_jsonl(text, 'p.jsonl') == [('Hello', None), ('Hi there', 32)]


@pytest.mark.parametrize('text, message', [
    ('{"prompt": "ok"}\n{"prompt": "broken"\n', 'p.jsonl line 2 is not valid JSON'),
    ('["a"]\n', 'p.jsonl line 1 is a JSON list'),
    ('{"prompt": ""}\n', 'line 1 has no non-empty string "prompt"'),
    ('{"text": "x"}\n', 'line 1 has no non-empty string "prompt"'),
    ('{"prompt": "x", "output_len": 0}\n', 'line 1: output_len must be an integer >= 1; got 0'),
    ('{"prompt": "x", "output_len": true}\n', 'output_len must be an integer >= 1; got True'),
    ('{"prompt": "x", "max_tokens": 3}\n', 'line 1 has unknown keys max_tokens'),
    ('\n\n', 'holds no prompts'),
])
def test_parse_prompts_jsonl_errors(text, message):
    with pytest.raises(bm.BenchmarkError) as exc:
        bm.parse_prompts_jsonl(text, 'p.jsonl')
    assert message in str(exc.value)


def test_builtin_prompt_set():
    prompts = _prompts.PROMPTS
    assert len(prompts) >= 40
    assert set(c for c, _t in prompts) == {'chat', 'code', 'summarisation', 'qa'}
    assert len(set(t for _c, t in prompts)) == len(prompts)
    assert len(_prompts.words()) > 500


# ----------------------------------------------------------------------------- result

def test_assemble_and_identity():
    p = bm.check_options(params(container='img:1'))
    identity = {'sku': 'Jetson AGX Orin 64GB', 'generation': 'orin', 'product_line': 'orin-agx', 'variant': 'orin-agx-64gb',
                'l4t': '36.4.4', 'jetpack': '6.2.1', 'power_mode': 'MAXN', 'max_performance': True}
    result = bm.assemble(p, identity, 'm', '0.32.0', 'abc', [], ['w'])
    assert result['skill'] == 'jetson_llm.vllm.vllm_benchmark' and result['runtime'] == 'vllm'
    assert result['sku'] == 'Jetson AGX Orin 64GB' and result['l4t'] == '36.4.4' and result['power_mode'] == 'MAXN'
    assert result['container'] == 'img:1' and result['vllm_version'] == '0.32.0'
    assert result['config'] == {'input_len': 2048, 'output_len': 128, 'num_prompts': 50, 'warmup_prompts': 10,
                                'dataset': 'builtin', 'prompt_set_id': 'abc', 'concurrency': [1, 8], 'temperature': None,
                                'ignore_eos': True, 'seed': 0}
    off = bm.assemble(p, None, 'm', None, 'abc', [], [])
    assert all(off[k] is None for k in bm.IDENTITY_KEYS)


def test_identity_warnings():
    assert bm.identity_warnings({'power_mode': 'MAXN', 'max_performance': True}) == []
    assert bm.identity_warnings({'power_mode': 'MAXN_SUPER', 'max_performance': None}) == []
    assert bm.identity_warnings({'power_mode': None}) == []
    assert bm.identity_warnings(None) == []
    warning = bm.identity_warnings({'power_mode': '15W', 'max_performance': False})
    assert len(warning) == 1 and '15W, not MAXN' in warning[0]
    assert bm.identity_warnings({'power_mode': '30W', 'max_performance': None})


def test_run_warnings():
    run = {'concurrency': 1, 'completed': 2, 'failed': 1, 'errors': ['boom'], 'total_input_tokens': 2 * 1500,
           'total_output_tokens': 2 * 100}
    warnings = bm.run_warnings(run, 2048, 128, True, True)
    assert any('1500.0 prompt tokens' in w for w in warnings)
    assert any('100.0 tokens on average, not output_len 128' in w for w in warnings)
    assert any('1 of 3 requests failed; first error: boom' in w for w in warnings)
    exact = dict(run, failed=0, errors=[], total_input_tokens=2 * 2048, total_output_tokens=2 * 128)
    assert bm.run_warnings(exact, 2048, 128, True, True) == []


def test_render_is_stable():
    text = bm.render({'b': 1, 'a': [1, 2]})
    assert text == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


# ----------------------------------------------------------------------------- hostile servers

def _stream(usage, max_tokens=4):
    rec = bm.RequestRecord(0.0, max_tokens)
    chunk = b'data: {"choices": [{"text": " a"}]}\n\n'
    rec.feed(chunk * 2, 0.1)
    rec.feed(b'data: ' + json.dumps({'choices': [], 'usage': usage}).encode() + b'\n\ndata: [DONE]\n\n', 0.2)
    return rec.finish()


@pytest.mark.parametrize('usage, text', [
    ({'completion_tokens': 400, 'prompt_tokens': 3}, 'usage.completion_tokens is 400, more than the max_tokens 4'),
    ({'completion_tokens': '4', 'prompt_tokens': 3}, "usage.completion_tokens is '4' (a JSON string), not a whole number"),
    ({'completion_tokens': 2.5, 'prompt_tokens': 3}, 'usage.completion_tokens is 2.5 (a JSON number with a fraction)'),
    ({'completion_tokens': -2, 'prompt_tokens': 3}, 'usage.completion_tokens is -2; it must be at least 1'),
    ({'completion_tokens': True, 'prompt_tokens': 3}, 'usage.completion_tokens is True'),
    ({'completion_tokens': None, 'prompt_tokens': 3}, 'usage.completion_tokens is None (a JSON null)'),
    ({'prompt_tokens': 3}, 'usage.completion_tokens is None (a JSON null)'),
    ({'completion_tokens': 2, 'prompt_tokens': -1}, 'usage.prompt_tokens is -1'),
    ({'completion_tokens': 2, 'prompt_tokens': 'x'}, "usage.prompt_tokens is 'x' (a JSON string)"),
])
def test_record_refuses_invalid_usage_and_says_what_is_wrong(usage, text):
    rec = _stream(usage)
    assert rec.success is False
    assert text in rec.error and 'no usage chunk' not in rec.error


def test_record_accepts_valid_usage_up_to_max_tokens():
    rec = _stream({'completion_tokens': 4, 'prompt_tokens': 3})
    assert rec.success and rec.output_tokens == 4 and rec.prompt_tokens == 3
    assert _stream({'completion_tokens': 2}).success  # prompt_tokens is optional


def test_record_usage_that_is_not_an_object_is_malformed():
    rec = bm.RequestRecord(0.0, 4)
    with pytest.raises(bm.StreamError, match='"usage" is 5, not an object'):
        rec.feed(b'data: {"choices": [], "usage": 5}\n\n', 0.1)


def test_record_progress_counts_what_arrived():
    rec = bm.RequestRecord(0.0, 16)
    chunk = b'data: {"choices": [{"text": " a"}]}\n\n'
    for i in range(4):
        rec.feed(chunk, 0.1 * (i + 1))
    assert rec.progress() == '4 token chunk(s), %d byte(s) of the stream had arrived' % (4 * len(chunk))
    rec.finish()
    assert 'ended without "data: [DONE]" (4 token chunk(s)' in rec.error


def test_record_error_event_text_is_truncated():
    rec = bm.RequestRecord(0.0, 4)
    with pytest.raises(bm.StreamError) as exc:
        rec.feed(b'data: ' + json.dumps({'error': {'message': 'x' * 5000}}).encode() + b'\n\n', 0.1)
    assert len(str(exc.value)) < 400


def test_render_never_writes_non_standard_json():
    with pytest.raises(ValueError):
        bm.render({'x': float('inf')})
    with pytest.raises(ValueError):
        bm.render({'x': float('nan')})


def test_parse_prometheus_skips_non_finite_values():
    samples = bm.parse_prometheus('vllm:generation_tokens_total{engine="0"} NaN\n'
                                  'vllm:generation_tokens_total{engine="1"} 5.0\n'
                                  'vllm:spec_decode_num_drafts_total +Inf\n')
    assert samples == {'vllm:generation_tokens_total': [({'engine': '1'}, 5.0)]}


# --- a starved client (all tokens in one read) -----------------------------------------------------

def _starved_run(tpots, concurrency=1):
    return {'concurrency': concurrency, 'samples': {'tpot_ms': tpots}}


def test_a_run_streamed_normally_is_not_starved():
    assert bm.starved_requests(_starved_run([3.2, 2.9, 0.4, None])) == (0, 3)
    assert bm.starvation_problem(_starved_run([3.2, 2.9, 0.4, None]), 'http://127.0.0.1:8000') == (None, None)


def test_a_few_starved_requests_warn():
    warning, failure = bm.starvation_problem(_starved_run([3.2, 0.008, 2.9, 3.1]), 'http://127.0.0.1:8000')
    assert failure is None
    assert '1 of 4 requests at concurrency 1 received all their tokens at once' in warning
    assert "their TPOT and TTFT are not the server's" in warning


def test_half_or_more_starved_fails_the_run_with_why():
    # The CI run under load average 17 measured ttft_ms_p50 349.9 of e2e_latency_ms_p50 350.9 ms, tpot_ms_p50 0.0078:
    # a plan must not read that as a TTFT-dominated workload.
    warning, failure = bm.starvation_problem(_starved_run([0.0078, 0.008, 2.9, 0.007], 8), 'http://127.0.0.1:8000')
    assert warning is None
    assert '3 of 4 requests at concurrency 8 received all their tokens at once' in failure
    assert 'starved of CPU' in failure and 'http://127.0.0.1:8000 does not stream' in failure
    assert 'measure again' in failure


def test_run_warnings_name_a_few_starved_requests_given_the_endpoint():
    run = {'concurrency': 1, 'completed': 4, 'failed': 0, 'errors': [], 'total_input_tokens': None,
           'total_output_tokens': None, 'samples': {'tpot_ms': [3.2, 0.008, 2.9, 3.1]}}
    assert bm.run_warnings(run, 32, 128, True, True) == []
    warnings = bm.run_warnings(run, 32, 128, True, True, 'http://127.0.0.1:8000')
    assert len(warnings) == 1 and '1 of 4 requests at concurrency 1 received all their tokens at once' in warnings[0]
    # Half or more is a failure (failed_too_much), not a warning.
    starved = dict(run, samples={'tpot_ms': [0.007, 0.008, 2.9, 3.1]})
    assert bm.run_warnings(starved, 32, 128, True, True, 'http://127.0.0.1:8000') == []


def test_runs_without_samples_are_not_judged():
    assert bm.starved_requests({'concurrency': 1}) == (0, 0)
    assert bm.starvation_problem({'concurrency': 1, 'samples': None}, 'x') == (None, None)


def test_an_unset_request_deadline_is_derived_from_the_workload():
    # 120 s + 1 s per output token + 0.02 s per input token: 289 s for the specification's 2048 in / 128 out
    assert bm.check_options(params(request_deadline=None))['request_deadline'] == pytest.approx(120 + 128 + 40.96)
    assert bm.check_options(params(request_deadline=None, input_len=32, output_len=32))['request_deadline'] == \
        pytest.approx(120 + 32 + 0.64)
    # bounded: never above the option's maximum, whatever the lengths
    assert bm.check_options(params(request_deadline=None, input_len=131072, output_len=131072))['request_deadline'] \
        == 86400
    # a given deadline is kept as given
    assert bm.check_options(params(request_deadline=30.0))['request_deadline'] == 30.0


# --- the server's max_model_len (GET /v1/models) ----------------------------------------------------------------

@pytest.mark.parametrize('value, length, why', [
    (4096, 4096, None),
    ('4096', 4096, None),              # a numeric string is that number
    (' 8192 ', 8192, None),
    (None, None, None),                # not given: nothing to say
    ('4096.0', None, 'not an integer'),
    ('\u00b2', None, 'not an integer'),  # a unicode digit is not a decimal number
    ('12345678901', None, 'not an integer'),
    (4096.0, None, 'not an integer'),
    (True, None, 'not an integer'),
    ('auto', None, 'not an integer'),
    (0, None, 'not between 1 and'),
    (-1, None, 'not between 1 and'),
    (10 ** 30, None, 'not between 1 and'),
])
def test_server_max_model_len_is_read_or_said_to_be_unusable(value, length, why):
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.runner import model_len
    got, note = model_len(value)
    assert got == length
    assert (note is None) if why is None else (why in note)


class _CardEndpoint(object):
    base_url = 'http://127.0.0.1:9'
    api_key = None

    def __init__(self, card):
        self.card = card

    def get_json(self, path):
        return {'object': 'list', 'data': [self.card]} if path == '/v1/models' else {'version': '0.32.0'}


def test_preflight_coerces_a_string_max_model_len_and_warns_about_a_bad_one():
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.runner import preflight
    info = preflight(_CardEndpoint({'id': 'm', 'max_model_len': '4096'}), None)
    assert info['max_model_len'] == 4096 and info['max_model_len_warning'] is None
    info = preflight(_CardEndpoint({'id': 'm', 'max_model_len': 'lots'}), None)
    assert info['max_model_len'] is None
    assert "max_model_len of 'lots', not an integer" in info['max_model_len_warning']
