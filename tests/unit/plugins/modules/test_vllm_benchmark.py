# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the vllm_benchmark module's plumbing: options, check mode, output_file.

The measurement itself runs against real servers in tests/integration (a simulator with
known timings, and real vLLM); here run_benchmark is replaced to test what main() does
with its result.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.modules import vllm_benchmark
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import (
    ExitJson, FailJson, capture_module, run_main)


def canned_benchmark(p, identity, throughput=41.5):
    run = {'concurrency': 1, 'throughput_tok_s': throughput, 'tpot_ms_p50': 23.6, 'ttft_ms_p50': 310.2, 'itl_ms_p50': 23.6,
           'completed': 3, 'failed': 0, 'errors': [], 'spec_decode': None}
    return bm.assemble(p, identity, 'm', '0.32.0', 'id', [run], ['a warning'])


@pytest.fixture
def calls(monkeypatch):
    """Capture exit/fail/warn, replace the measurement and the device facts."""
    state = {'warnings': [], 'runs': [], 'throughput': 41.5, 'failure': None, 'raise': None,
             'facts': {'is_jetson': False}, 'samples': None}

    def run_benchmark(p, identity, file_prompts=None, log=None):
        state['runs'].append((p, identity, file_prompts))
        error = state['raise']
        if error is not None:
            raise error
        benchmark = canned_benchmark(p, identity, state['throughput'])
        if state['samples'] is not None:
            benchmark['runs'][0]['samples'] = state['samples']
        return benchmark, state['failure']

    capture_module(monkeypatch, state['warnings'])
    monkeypatch.setattr(vllm_benchmark, 'run_benchmark', run_benchmark)
    monkeypatch.setattr(vllm_benchmark, 'gather_facts', lambda **kw: state['facts'])
    return state


def run(args, check=False, diff=False):
    args = dict(args)
    if check:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    return run_main(vllm_benchmark.main, args)


@pytest.mark.parametrize('args, text', [
    ({'concurrency': [1, 0]}, 'concurrency must hold integers from 1 to 256 only; 0 is not allowed'),
    ({'endpoint': 'localhost:8000'}, "endpoint 'localhost:8000' must start with http:// or https://"),
    ({'endpoint': 'http://127.0.0.1:8000/v1'}, 'must be the server root without a path'),
    ({'num_prompts': 0}, 'num_prompts must be an integer from 1 to 10000; got 0'),
    ({'num_prompts': 1000000000000}, 'num_prompts must be an integer from 1 to 10000; got 1000000000000'),
    ({'max_failed_ratio': 2}, 'max_failed_ratio must be a finite number >= 0 and <= 1'),
    ({'temperature': 'inf'}, 'temperature must be a finite number >= 0 (0 = greedy) or unset for the server default; got inf'),
    ({'request_timeout': 'inf'}, 'request_timeout must be a finite number > 0 and <= 3600.0 (seconds); got inf'),
    ({'dataset': 'file'}, 'dataset is file but all of the following are missing: prompts_file'),
])
def test_bad_options_fail_before_any_request(calls, args, text):
    kind, result = run(args)
    assert kind is FailJson and text in result['msg']
    assert calls['runs'] == []


def test_unknown_dataset_is_refused_by_the_argument_spec(calls):
    kind, result = run({'dataset': 'sharegpt'})
    assert kind is FailJson and 'dataset' in result['msg'] and 'sharegpt' in result['msg']


def test_prompts_file_errors_name_the_line(calls, tmp_path):
    path = tmp_path / 'p.jsonl'
    path.write_text('{"prompt": "one"}\n{"prompt": 2}\n')
    kind, result = run({'dataset': 'file', 'prompts_file': str(path)})
    assert kind is FailJson and '%s line 2 has no non-empty string "prompt"' % path in result['msg']
    kind, result = run({'dataset': 'file', 'prompts_file': str(tmp_path / 'missing.jsonl')})
    assert kind is FailJson and 'Cannot read prompts_file' in result['msg'] and 'No such file' in result['msg']
    assert calls['runs'] == []


def test_prompts_file_is_passed_to_the_run(calls, tmp_path):
    path = tmp_path / 'p.jsonl'
    path.write_text('{"prompt": "one"}\n{"prompt": "two", "output_len": 4}\n')
    kind, _result = run({'dataset': 'file', 'prompts_file': str(path)})
    assert kind is ExitJson
    assert calls['runs'][0][2] == [('one', None), ('two', 4)]


def test_check_mode_sends_nothing_and_writes_nothing(calls, tmp_path):
    out = tmp_path / 'bench.json'
    kind, result = run({'output_file': str(out)}, check=True)
    assert kind is ExitJson and result['changed'] is False
    assert 'check mode' in result['msg'] and 'no request was sent to http://127.0.0.1:8000' in result['msg']
    assert calls['runs'] == [] and not out.exists()
    assert 'benchmark' not in result


def test_check_mode_still_validates(calls):
    kind, result = run({'concurrency': [3, 3]}, check=True)
    assert kind is FailJson and 'lists 3 twice' in result['msg']


def test_result_without_output_file_is_not_a_change(calls):
    kind, result = run({})
    assert kind is ExitJson and result['changed'] is False
    assert result['benchmark']['runs'][0]['throughput_tok_s'] == 41.5
    assert result['msg'].startswith('c=1: 41.5 tok/s, TPOT p50 23.60 ms')
    assert calls['warnings'] == ['a warning']
    p, identity, _files = calls['runs'][0]
    assert p['endpoint'] == 'http://127.0.0.1:8000' and p['concurrency'] == [1, 8] and p['dataset'] == 'builtin'
    assert identity['sku'] == 'unknown' and identity['sku_label'] is None  # not a Jetson (the contract's bucket)


def test_identity_comes_from_the_jetson_facts(calls):
    calls['facts'] = {'is_jetson': True, 'sku': 'Jetson Orin Nano 8GB', 'generation': 'orin', 'product_line': 'orin-nano',
                      'variant': 'orin-nano-8gb', 'l4t': {'version': '36.4.4'}, 'jetpack': '6.2.1',
                      'power': {'mode_name': '15W', 'max_performance': False}}
    kind, result = run({})
    assert kind is ExitJson
    bench = result['benchmark']
    assert (bench['sku'], bench['variant'], bench['l4t'], bench['power_mode']) == ('orin-nano', 'orin-nano-8gb',
                                                                                   '36.4.4', '15W')


def test_output_file_written_with_mode_0644_and_diff(calls, tmp_path):
    out = tmp_path / 'bench.json'
    old_umask = os.umask(0o077)
    try:
        kind, result = run({'output_file': str(out)}, diff=True)
    finally:
        os.umask(old_umask)
    assert kind is ExitJson and result['changed'] is True
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o644
    content = out.read_text()
    assert json.loads(content) == result['benchmark']
    assert content == bm.render(result['benchmark'])
    assert result['diff']['before'] == '' and result['diff']['after'] == content
    assert result['diff']['after_header'] == str(out)
    # the same figures again: nothing to change
    kind, result = run({'output_file': str(out)}, diff=True)
    assert kind is ExitJson and result['changed'] is False and 'diff' not in result
    # new figures: a change, with the old content as "before"
    calls['throughput'] = 40.0
    kind, result = run({'output_file': str(out)}, diff=True)
    assert result['changed'] is True and result['diff']['before'] == content
    assert json.loads(out.read_text())['runs'][0]['throughput_tok_s'] == 40.0
    assert [p.name for p in tmp_path.iterdir()] == ['bench.json']  # no temporary file left


def test_output_file_keeps_the_per_request_samples(calls, tmp_path):
    """runs[].samples is an extension key written with the rest (a stored baseline needs it for intervals)."""
    samples = {'ttft_ms': [310.2], 'tpot_ms': [23.612], 'output_tokens': [128], 'latency_ms': [3308.924],
               'start_ms': [0.0], 'finish_ms': [3308.924]}
    calls['samples'] = samples
    out = tmp_path / 'bench.json'
    kind, result = run({'output_file': str(out)})
    assert kind is ExitJson
    assert json.loads(out.read_text())['runs'][0]['samples'] == samples == result['benchmark']['runs'][0]['samples']


def test_output_file_missing_directories_are_created(calls, tmp_path):
    out = tmp_path / 'a' / 'b' / 'bench.json'
    kind, result = run({'output_file': str(out)})
    assert kind is ExitJson and result['changed'] is True
    assert json.loads(out.read_text()) == result['benchmark']
    assert stat.S_IMODE(os.stat(str(tmp_path / 'a')).st_mode) == 0o755


def test_output_file_that_cannot_be_written_fails_before_running(calls, tmp_path):
    kind, result = run({'output_file': str(tmp_path)})
    assert kind is FailJson and 'is a directory' in result['msg']
    blocker = tmp_path / 'plain-file'
    blocker.write_text('x')
    kind, result = run({'output_file': str(blocker / 'bench.json')})
    assert kind is FailJson and '%s is not a directory' % blocker in result['msg']
    assert calls['runs'] == []


def test_too_many_failures_fail_with_the_partial_benchmark(calls, tmp_path):
    calls['failure'] = '5 of 5 requests to the vLLM endpoint http://127.0.0.1:8000 failed at concurrency 1'
    out = tmp_path / 'bench.json'
    kind, result = run({'output_file': str(out)})
    assert kind is FailJson and result['msg'] == calls['failure']
    assert result['benchmark']['runs'][0]['completed'] == 3
    assert not out.exists()


def test_preflight_errors_fail_naming_the_endpoint(calls):
    calls['raise'] = bm.BenchmarkError('Cannot reach the vLLM endpoint http://10.0.0.9:8000: connection refused.')
    kind, result = run({'endpoint': 'http://10.0.0.9:8000'})
    assert kind is FailJson and result['msg'].startswith('Cannot reach the vLLM endpoint http://10.0.0.9:8000')
    assert result['endpoint'] == 'http://10.0.0.9:8000'


@pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='needs /proc')
def test_output_file_on_a_pseudo_filesystem_fails_before_running_even_in_check_mode(calls):
    for check in (False, True):
        kind, result = run({'output_file': '/proc/self/vllm-benchmark.json'}, check=check)
        assert kind is FailJson, result
        assert 'output_file /proc/self/vllm-benchmark.json cannot be written' in result['msg']
        assert 'creating a file in /proc/self failed' in result['msg']
    assert calls['runs'] == []


def test_output_file_that_is_a_fifo_or_a_device_is_refused(calls, tmp_path):
    fifo = tmp_path / 'pipe'
    os.mkfifo(str(fifo))
    kind, result = run({'output_file': str(fifo)})
    assert kind is FailJson and 'is a FIFO (named pipe), not a regular file' in result['msg']
    kind, result = run({'output_file': '/dev/null'})
    assert kind is FailJson and 'output_file /dev/null is a character device, not a regular file' in result['msg']
    assert calls['runs'] == []


def test_output_file_pre_check_leaves_no_file_behind(calls, tmp_path):
    kind, _result = run({'output_file': str(tmp_path / 'sub' / 'bench.json')}, check=True)
    assert kind is ExitJson
    assert list(tmp_path.iterdir()) == []


def test_prompts_file_that_is_a_fifo_or_a_device_is_refused_without_blocking(calls, tmp_path):
    fifo = tmp_path / 'pipe'
    os.mkfifo(str(fifo))
    kind, result = run({'dataset': 'file', 'prompts_file': str(fifo)})
    assert kind is FailJson and 'is a FIFO (named pipe); give a regular JSONL file' in result['msg']
    kind, result = run({'dataset': 'file', 'prompts_file': '/dev/zero'})
    assert kind is FailJson and 'prompts_file /dev/zero is a character device' in result['msg']
    assert calls['runs'] == []


def test_an_api_key_with_a_newline_is_refused_without_echoing_it(calls):
    kind, result = run({'api_key': 'sk-very-secret\n'})
    assert kind is FailJson and 'api_key contains a line feed' in result['msg']
    assert 'sk-very-secret' not in json.dumps(result, default=str).replace('VALUE_SPECIFIED_IN_NO_LOG_PARAMETER', '')
    assert calls['runs'] == []


def test_a_write_that_fails_on_non_finite_numbers_says_so(calls, tmp_path):
    calls['throughput'] = float('inf')
    kind, result = run({'output_file': str(tmp_path / 'bench.json')})
    assert kind is FailJson and 'Cannot write output_file' in result['msg']
    assert not (tmp_path / 'bench.json').exists()


def test_options_and_the_argument_spec_agree_with_the_documentation():
    import yaml
    from ansible_collections.jetson_llm.vllm.plugins.doc_fragments.endpoint import ModuleDocFragment
    options = dict(yaml.safe_load(vllm_benchmark.DOCUMENTATION)['options'])
    options.update(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options'])
    spec = vllm_benchmark.argument_spec()
    assert sorted(options) == sorted(spec)
    for name, entry in spec.items():
        assert options[name]['type'] == entry['type'], name
        assert options[name].get('default') == entry.get('default'), name
        assert options[name].get('choices') == entry.get('choices'), name
    for name, (low, high) in bm.LIMITS.items():
        if name in options:
            text = options[name]['description']
            assert '%d to %d' % (low, high) in (text if isinstance(text, str) else ' '.join(text)), name


# --- sequential (issue 10): validation and plumbing; the rounds are tested in module_utils/test_sequential.py ---

def sequential_baseline():
    run = {'concurrency': 1, 'throughput_tok_s': 36.0, 'tpot_ms_p50': 27.0, 'completed': 5, 'failed': 0, 'errors': [],
           'prompt_set_id': 'p1', 'samples': {'output_tokens': [128] * 5, 'latency_ms': [3500.0] * 5,
                                              'tpot_ms': [27.0] * 5, 'ttft_ms': [70.0] * 5}}
    p = {'endpoint': 'http://127.0.0.1:8000', 'input_len': 2048, 'output_len': 128, 'num_prompts': 5,
         'warmup_prompts': 2, 'dataset': 'builtin', 'concurrency': [1], 'temperature': None, 'ignore_eos': True,
         'seed': 0}
    return {'changed': False, 'benchmark': bm.assemble(p, {}, 'm', '0.32.0', 'set', [run], [])}


@pytest.fixture
def sequential_calls(calls, monkeypatch):
    def run_sequential(p, identity, seq, file_prompts=None, log=None):
        calls['runs'].append((p, identity, seq))
        benchmark = canned_benchmark(p, identity)
        benchmark['sequential'] = {'reason': 'Stopped after round 1: the 95 % intervals settle the verdict (accept).'}
        return benchmark, None
    monkeypatch.setattr(vllm_benchmark, 'run_sequential', run_sequential)
    return calls


def test_sequential_runs_the_rounds_with_the_checked_options(sequential_calls):
    kind, result = run({'concurrency': [1], 'sequential': {'baseline': sequential_baseline(), 'round_prompts': {'1': 5},
                                                           'max_prompts': 20}})
    assert kind is ExitJson, result
    _p, _identity, seq = sequential_calls['runs'][0]
    assert seq['round_prompts'] == {1: 5} and seq['max_prompts'] == 20 and seq['min_throughput_gain'] == 0.3
    assert seq['baseline']['config']['prompt_set_id'] == 'set'
    assert result['msg'].endswith('. Stopped after round 1: the 95 % intervals settle the verdict (accept).')


@pytest.mark.parametrize('change, text', [
    ({'max_prompts': 0}, 'sequential.max_prompts must be an integer from 5 to 10000'),
    ({'min_tpot_reduction': 'nan'}, 'sequential.min_tpot_reduction must be a finite number, got nan.'),
    ({'c8_tolerance': 'inf'}, 'sequential.c8_tolerance must be a finite number, got inf.'),
    ({'round_prompts': {'1': -3}}, 'sequential.round_prompts at concurrency 1 must be a multiple of 1 from 5'),
    ({'bootstrap_resamples': 10 ** 9}, 'sequential.bootstrap_resamples must be an integer from 200 to 20000'),
    ({'regression_rule': 'non_inferiority'}, 'regression_rule'),
    ({'rounds': 2}, 'rounds'),
    ({'baseline': {'benchmark': {'config': {}, 'runs': []}}}, 'sequential.baseline has no runs'),
])
def test_bad_sequential_options_fail_before_any_request(sequential_calls, change, text):
    value = {'baseline': sequential_baseline()}
    value.update(change)
    kind, result = run({'concurrency': [1], 'sequential': value})
    assert kind is FailJson and text in result['msg'], result['msg']
    kind, result = run({'concurrency': [1], 'sequential': value}, check=True)
    assert kind is FailJson and text in result['msg'], result['msg']
    assert sequential_calls['runs'] == []


def test_sequential_baseline_with_another_workload_fails_before_any_request(sequential_calls):
    kind, result = run({'concurrency': [1], 'output_len': 64, 'sequential': {'baseline': sequential_baseline()}})
    assert kind is FailJson
    assert 'sequential.baseline was measured with output_len = 128, this benchmark uses 64' in result['msg']
    assert sequential_calls['runs'] == []
