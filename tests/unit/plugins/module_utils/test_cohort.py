# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cohorts (module_utils/_decision/cohort.py): hosts whose verification would measure the same thing, as a table."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import cohort as C
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command


def serve(*extra, port='8000', host='0.0.0.0', key='sk-one', name='qwen3-8b'):
    argv = ['vllm', 'serve', 'Qwen/Qwen3-8B', '--port', port, '--host', host, '--api-key', key,
            '--served-model-name', name, '--max-model-len', '4096', '--gpu-memory-utilization', '0.8'] + list(extra)
    return analyse_command(argv)[0]['serve']


JETSON = {'variant': 'orin-agx-64gb', 'memory': {'total_mb': 62841}, 'power': {'mode_name': 'MAXN'},
          'clocks': {'locked': True}}


def host(**changes):
    parts = {
        'device': C.device_part(JETSON),
        'software': {'l4t': '36.4.3', 'jetpack': '6.2', 'vllm_version': '0.32.0', 'runtime': 'container',
                     'image': 'ghcr.io/nvidia-ai-iot/vllm@sha256:' + 'a' * 64},
        'service': C.service_part(serve()),
        'planned': {'method': 'eagle3', 'model': 'RedHatAI/Qwen3-8B-speculator.eagle3', 'num_speculative_tokens': 3},
        'verdict': {'min_throughput_gain': 0.3, 'c8_margin': 0.05, 'c8_tolerance': 0.02, 'expected_concurrency': 1,
                    'measurement': 'fixed', 'keep_marginal': False, 'decide_undetermined': 'revert'},
        'workload': {'concurrency': [1, 8], 'num_prompts': 50, 'warmup_prompts': 10, 'input_len': 2048,
                     'output_len': 128, 'dataset': 'builtin', 'temperature': 0.0},
    }
    for path, value in changes.items():
        part, key = path.split('__')
        parts[part][key] = value
    return parts


BASE = C.cohort(host())


@pytest.mark.parametrize('what, parts', [
    ('another port', dict(host(), service=C.service_part(serve(port='8123')))),
    ('another bind address', dict(host(), service=C.service_part(serve(host='10.0.0.5')))),
    ('another API key', dict(host(), service=C.service_part(serve(key='sk-two')))),
    ('another served name', dict(host(), service=C.service_part(serve(name='store-17')))),
    ('host-specific flags in the =form', dict(host(), service=C.service_part(serve('--ssl-keyfile=/etc/k.pem',
                                                                                   '--uds=/run/v.sock')))),
    ('a Unix socket and TLS files',
     dict(host(), service=C.service_part(serve('--uds', '/run/v.sock', '--ssl-certfile', '/etc/c.pem')))),
    ('memory a few MB apart (kernel reservations)', dict(host(), device=C.device_part(
        dict(JETSON, memory={'total_mb': 62700})))),
    ('float noise', host(verdict__min_throughput_gain=0.1 + 0.2, workload__temperature=0)),
])
def test_hosts_that_measure_the_same_thing_share_a_cohort(what, parts):
    assert C.cohort(parts)['key'] == BASE['key'], what


@pytest.mark.parametrize('what, parts', [
    ('another module', host(device__variant='orin-nx-16gb')),
    ('another memory size', dict(host(), device=C.device_part(dict(JETSON, memory={'total_mb': 31000})))),
    ('another power mode', host(device__power_mode='30W')),
    ('clocks not locked', host(device__clocks_locked=False)),
    ('another L4T', host(software__l4t='36.4.4')),
    ('another JetPack', host(software__jetpack='6.1')),
    ('another vLLM', host(software__vllm_version='0.31.0')),
    ('another image digest', host(software__image='ghcr.io/nvidia-ai-iot/vllm@sha256:' + 'b' * 64)),
    ('native instead of a container', host(software__runtime='native')),
    ('another model', dict(host(), service=C.service_part(dict(serve(), model='Qwen/Qwen3-4B')))),
    ('another model revision', dict(host(), service=C.service_part(serve(), model_revision='abc123'))),
    ('another local config digest', dict(host(), service=C.service_part(serve(), model_config_sha256='f' * 64))),
    ('another max-model-len', dict(host(), service=C.service_part(serve('--max-model-len', '8192')))),
    ('another utilisation', dict(host(), service=C.service_part(serve('--gpu-memory-utilization', '0.7')))),
    ('an extra flag', dict(host(), service=C.service_part(serve('--enforce-eager')))),
    ('another planned K', host(planned__num_speculative_tokens=4)),
    ('another method', host(planned__method='draft_model')),
    ('another head', host(planned__model='yuhuili/EAGLE3-Qwen3-8B')),
    ('another margin', host(verdict__c8_margin=0.1)),
    ('another expected concurrency', host(verdict__expected_concurrency=8)),
    ('sequential measurement', host(verdict__measurement='sequential')),
    ('a declared phase shift', host(verdict__phase_shift={'c1': 0.08, 'c8': 0.08})),
    ('keep_marginal', host(verdict__keep_marginal=True)),
    ('another workload', host(workload__num_prompts=100)),
    ('other levels', host(workload__concurrency=[1, 4])),
])
def test_hosts_that_measure_something_else_are_another_cohort(what, parts):
    assert C.cohort(parts)['key'] != BASE['key'], what


def test_a_null_value_is_the_same_as_an_absent_one():
    unread = host(device__clocks_locked=None)
    absent = host()
    del absent['device']['clocks_locked']
    assert C.cohort(unread)['key'] == C.cohort(absent)['key'] != BASE['key']


def test_the_key_is_stable_and_a_group_name():
    assert C.cohort(copy.deepcopy(host())) == BASE
    assert len(BASE['key']) == C.KEY_LENGTH and all(char in '0123456789abcdef' for char in BASE['key'])
    assert BASE['group'] == 'cohort_' + BASE['key']
    # Computed from the same inputs on another controller run, in another order: the same key.
    reordered = dict(reversed(list(host().items())))
    assert C.cohort(reordered)['key'] == BASE['key']


def test_host_specific_arguments_never_reach_the_parts():
    text = repr(BASE['parts'])
    for word in ('sk-one', '8000', '0.0.0.0', 'qwen3-8b', '********', '--api-key'):
        assert word not in text, word


def test_shared_arguments_keep_the_rest_in_order():
    assert C.shared_arguments(['--dtype', 'float16', '--port', '8000', '--enforce-eager', '--host=::', '--uds',
                               '--max_num_seqs', '4', '--served_model_name', 'x']) == \
        ['--dtype', 'float16', '--enforce-eager', '--max_num_seqs', '4']


@pytest.mark.parametrize('parts, words', [
    ({'device': {}, 'colour': {}}, 'unknown cohort part(s) colour'),
    ({'device': ['orin']}, 'the cohort part device must be a dictionary'),
    ({'verdict': {'c8_margin': float('nan')}}, 'verdict.c8_margin is nan'),
    ([], 'must be a dictionary'),
])
def test_bad_parts_are_refused_with_the_reason(parts, words):
    with pytest.raises(C.CohortError) as err:
        C.cohort(parts)
    assert words in str(err.value)


def test_label_names_what_an_operator_recognises():
    assert C.label(BASE['parts']) == 'orin-agx-64gb MAXN L4T 36.4.3 vLLM 0.32.0 Qwen3-8B eagle3 K=3'
    assert C.label({}) == '?'
