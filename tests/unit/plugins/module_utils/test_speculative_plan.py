# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the speculative_plan rules (plugins/module_utils/_decision/plan.py: plan).

One test (or one table) per rule of the speculative-decoding specification and per vLLM version fact;
docs/decision-rules.md points at these test names.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spec_checks as C
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import plan as P
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spec_config as SC
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import CATALOGUE
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FIXTURES = os.path.join(TOP, 'tests', 'fixtures', 'rootfs')

ORIN_IMAGE = 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin'
UPSTREAM_IMAGE = 'vllm/vllm-openai:latest'
LLAMA = 'meta-llama/Llama-3.1-8B-Instruct'
LLAMA_HEAD = 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B'
UNLISTED = 'acme/unlisted-7b'

# ansible_facts.jetson as jetson_facts reports it (schema: the RETURN doc of plugins/modules/jetson_facts.py), per device.
_BASE_FACTS = {
    'is_jetson': True, 'reason': None, 'soc': None, 'super_mode': False, 'model': None, 'compatible': [],
    'l4t': {'version': None, 'major': None, 'minor': None, 'patch': None, 'source': 'nv_tegra_release'},
    'jetpack': 'unknown', 'cuda': 'unknown',
    'memory': {'total_mb': 0, 'available_mb': 0, 'swap_total_mb': 0, 'swap_free_mb': 0},
    'power': {'mode_name': 'MAXN', 'mode_id': 0, 'source': 'nvpmodel', 'max_performance': True},
    'vllm_runtime': {'path': 'upstream', 'image': UPSTREAM_IMAGE, 'min_vllm_version': '0.20',
                     'forbidden_images': [], 'notes': []},
    'speculation': {'eagle3_supported': False, 'draft_model_supported': False,
                    'default_num_speculative_tokens': None, 'reasons': []},
    'warnings': [],
}
_DEVICES = {
    'thor-t5000': dict(generation='thor', product_line='thor-agx', variant='thor-t5000', l4t=38, total=125772,
                       available=117940, path='upstream', forbidden=[ORIN_IMAGE]),
    'thor-t4000': dict(generation='thor', product_line='thor-agx', variant='thor-t4000', l4t=38, total=62650,
                       available=58011, path='upstream', forbidden=[ORIN_IMAGE]),
    'orin-agx-64gb': dict(generation='orin', product_line='orin-agx', variant='orin-agx-64gb', l4t=36, total=62817,
                          available=58120, path='nvidia-ai-iot', forbidden=[]),
    'orin-agx-r39': dict(generation='orin', product_line='orin-agx', variant='orin-agx-64gb', l4t=39, total=62790,
                         available=59002, path='upstream', forbidden=[]),
    'orin-nx-16gb': dict(generation='orin', product_line='orin-nx', variant='orin-nx-16gb', l4t=36, total=15643,
                         available=12214, path='nvidia-ai-iot', forbidden=[]),
    'orin-nano-8gb': dict(generation='orin', product_line='orin-nano', variant='orin-nano-8gb', l4t=36, total=7620,
                          available=6000, path='nvidia-ai-iot', forbidden=[]),
    'xavier-agx': dict(generation='xavier', product_line='xavier-agx', variant='xavier-agx', l4t=35, total=31785,
                       available=29002, path='unsupported', forbidden=[]),
}


def facts(device='thor-t5000', **changes):
    """A realistic ansible_facts.jetson for ``device``; ``changes`` replace top-level keys."""
    spec = _DEVICES[device]
    out = copy.deepcopy(_BASE_FACTS)
    out.update(generation=spec['generation'], product_line=spec['product_line'], variant=spec['variant'])
    out['l4t'].update(version='%s.0.0' % spec['l4t'], major=spec['l4t'], minor=0, patch=0)
    out['memory'].update(total_mb=spec['total'], available_mb=spec['available'])
    out['vllm_runtime'].update(path=spec['path'], forbidden_images=list(spec['forbidden']),
                               min_vllm_version='0.20' if spec['path'] == 'upstream' else None,
                               image={'upstream': UPSTREAM_IMAGE, 'nvidia-ai-iot': ORIN_IMAGE}.get(spec['path']))
    out.update(changes)
    return out


def baseline_benchmark(ttft=180.0, e2e=2900.0, registered=False):
    """A vllm_benchmark result (the ``benchmark`` dict) with a concurrency-1 run: TTFT and e2e p50 in ms."""
    bench = {'config': {'input_len': 2048, 'output_len': 128, 'num_prompts': 50, 'concurrency': [1]},
             'runs': [{'concurrency': 1, 'failed': 0, 'errors': [], 'ttft_ms_p50': ttft, 'e2e_latency_ms_p50': e2e,
                       'tpot_ms_p50': 21.4, 'throughput_tok_s': 44.0}]}
    return {'changed': False, 'msg': 'c=1: 44.0 tok/s', 'benchmark': bench} if registered else bench


def run(device='thor-t5000', jetson=None, **kwargs):
    """plan() with the defaults of a healthy Thor request; keyword arguments override them."""
    args = dict(jetson=jetson if jetson is not None else facts(device), target_model=LLAMA, expected_concurrency=1,
                baseline_gpu_memory_utilization=0.75, vllm_version='0.20.1', draft_size_mb=1000,
                baseline_benchmark=baseline_benchmark())
    if device.startswith('orin') and 'runtime_image' not in kwargs and device != 'orin-agx-r39':
        args['runtime_image'] = ORIN_IMAGE
    args.update(kwargs)
    return P.plan(**args)


def refused(result, rule):
    return result['enable'] is False and rule in result['refused_by']


# --- sanity: the happy paths of the specification ------------------------------------------

def test_thor_llama_eagle3_from_catalogue():
    result = run()
    assert result['enable'] is True
    assert result['method'] == 'eagle3'
    assert result['model'] == LLAMA_HEAD and result['model_source'] == 'catalogue'
    assert result['speculative_config'] == {'method': 'eagle3', 'model': LLAMA_HEAD, 'num_speculative_tokens': 5,
                                            'draft_tensor_parallel_size': 1}
    assert result['num_speculative_tokens'] == 5
    assert result['gpu_memory_utilization'] == 0.70
    assert result['refused_by'] == [] and result['handoff'] == {'actions': [], 'summary': ''}
    # vLLM 0.20.1 predates the fix of vllm#48894 (0.27.0), and this head's rotary cache has 2048 positions
    assert len(result['warnings']) == 1 and result['warnings'][0].startswith('vLLM 0.20.1 predates the fix of vllm#48894')
    assert '(%s: 2048, published)' % LLAMA_HEAD in result['warnings'][0]
    assert run(vllm_version='0.27.0')['warnings'] == []


def test_agx_orin_r36_draft_model():
    result = run('orin-agx-64gb', target_model=UNLISTED, draft_model='acme/unlisted-0.5b', vllm_version='0.15.0')
    assert result['enable'] is True
    assert result['method'] == 'draft_model' and result['model'] == 'acme/unlisted-0.5b'
    assert result['num_speculative_tokens'] == 3
    assert json.loads(result['speculative_config_json']) == {
        'method': 'draft_model', 'model': 'acme/unlisted-0.5b', 'num_speculative_tokens': 3,
        'draft_tensor_parallel_size': 1}


def test_plan_is_deterministic_and_does_not_modify_inputs():
    jetson = facts()
    extra = {'max_model_len': 4096}
    before = (copy.deepcopy(jetson), copy.deepcopy(extra))
    first = run(jetson=jetson, extra_config=extra)
    second = run(jetson=jetson, extra_config=extra)
    assert first == second
    assert (jetson, extra) == before


def test_refusal_is_a_result_not_an_error():
    result = run(expected_concurrency=16)
    assert result['enable'] is False
    assert result['speculative_config'] == {} and result['speculative_config_json'] == ''
    assert result['num_speculative_tokens'] is None
    assert result['gpu_memory_utilization'] == 0.75  # the baseline stays
    assert result['handoff']['actions'][-1] == 'no_speculation'
    assert result['handoff']['summary'].startswith('Next: ')


def test_all_refusals_are_reported_together():
    result = run(expected_concurrency=8, baseline_gpu_memory_utilization=0.95, vllm_version='0.19.0',
                 free_memory_mb=2500)
    assert result['refused_by'] == ['concurrency', 'runtime', 'memory']
    assert len(result['reasons']) == 3


# --- family ------------------------------------------------------------------------------------

@pytest.mark.parametrize('device, enable, default_k', [
    ('thor-t5000', True, 5),
    ('thor-t4000', True, 5),
    ('orin-agx-64gb', True, 3),
    ('orin-agx-r39', True, 3),
    ('orin-nx-16gb', False, 3),
    ('orin-nano-8gb', False, 3),
    ('xavier-agx', False, None),
])
def test_family_rule(device, enable, default_k):
    result = run(device, draft_model='meta-llama/Llama-3.2-1B-Instruct')
    assert result['enable'] is enable
    assert result['default_num_speculative_tokens'] == default_k
    if not enable:
        assert result['refused_by'] == ['family'] or 'family' in result['refused_by']


@pytest.mark.parametrize('device', ['orin-nx-16gb', 'orin-nano-8gb'])
def test_family_small_orin_refused_says_why_and_what_instead(device):
    result = run(device, draft_model='meta-llama/Llama-3.2-1B-Instruct')
    assert result['refused_by'] == ['family']
    text = result['reasons'][0]
    assert 'memory' in text and 'smaller or better-quantised model' in text and 'tune memory' in text
    assert result['handoff']['actions'] == ['memory_tuning', 'smaller_model', 'better_quantisation', 'no_speculation']


@pytest.mark.parametrize('device', ['orin-nx-16gb', 'orin-nano-8gb'])
def test_family_small_orin_never_eagle3_even_when_allowed(device):
    result = run(device, method='eagle3', allow_small_devices=True)
    assert refused(result, 'method')
    assert 'Never EAGLE-3' in ' '.join(result['reasons'])


@pytest.mark.parametrize('device', ['orin-nx-16gb', 'orin-nano-8gb'])
def test_family_small_orin_draft_model_with_allow_small_devices(device):
    # auto: the catalogue has an EAGLE-3 head for Llama 3.1 8B, but EAGLE-3 is never used here
    result = run(device, allow_small_devices=True, draft_model='meta-llama/Llama-3.2-1B-Instruct',
                 free_memory_mb=5000, draft_size_mb=2500)
    assert result['enable'] is True
    assert result['method'] == 'draft_model' and result['model'] == 'meta-llama/Llama-3.2-1B-Instruct'
    assert result['num_speculative_tokens'] == 3
    assert any('Never EAGLE-3' in w for w in result['warnings'])
    assert any('allow_small_devices' in w for w in result['warnings'])


def test_family_small_orin_allowed_but_no_draft_is_refused():
    result = run('orin-nano-8gb', target_model=UNLISTED, allow_small_devices=True)
    assert refused(result, 'method')


@pytest.mark.parametrize('jetson, words', [
    (facts('xavier-agx'), 'Xavier'),
    (dict(facts(), is_jetson=False, generation='unknown', product_line='unknown', reason='no /proc/device-tree'),
     'not a Jetson (no /proc/device-tree)'),
    (dict(facts(), generation='unknown', product_line='unknown', variant='unknown'), 'generation is unknown'),
    (dict(facts('orin-agx-64gb'), product_line='unknown'), 'Orin module type is unknown'),
    ({}, 'generation is unknown'),
    ({'generation': 42, 'l4t': 'garbage', 'memory': None, 'vllm_runtime': []}, 'generation is unknown'),
])
def test_family_unknown_or_unsupported_devices_refused(jetson, words):
    result = run(jetson=jetson)
    assert refused(result, 'family')
    assert words in ' '.join(result['reasons'])


@pytest.mark.parametrize('jetson', [None, 'thor', ['thor'], 42])
def test_family_jetson_must_be_a_dict(jetson):
    with pytest.raises(SpeculativeInputError, match='ansible_facts.jetson dictionary'):
        P.plan(jetson=jetson, target_model=LLAMA, expected_concurrency=1, baseline_gpu_memory_utilization=0.75)


@pytest.mark.parametrize('fixture, enable, method, k', [
    ('thor-t5000', True, 'eagle3', 5),
    ('thor-t4000', True, 'eagle3', 5),
    ('orin-agx-64gb', True, 'eagle3', 3),
    ('orin-agx-r39', True, 'eagle3', 3),
    ('orin-nx-16gb', False, 'eagle3', None),
    ('orin-nano-4gb', False, 'eagle3', None),
    ('xavier-agx', False, 'eagle3', None),
    ('non-jetson-x86', False, 'eagle3', None),
])
def test_family_from_real_fixture_facts(fixture, enable, method, k):
    """The facts jetson_facts gathers from the device fixtures (real files) feed the plan as is."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as _jetson

    jetson = _jetson.gather_facts(root=os.path.join(FIXTURES, fixture), run_nvpmodel=False)
    image = ORIN_IMAGE if jetson['vllm_runtime']['path'] == 'nvidia-ai-iot' else UPSTREAM_IMAGE
    result = P.plan(jetson=jetson, target_model=LLAMA, expected_concurrency=1, baseline_gpu_memory_utilization=0.75,
                    vllm_version='0.20.1', runtime_image=image, draft_size_mb=1000)
    assert result['enable'] is enable, result['reasons']
    assert result['num_speculative_tokens'] == k
    if enable:
        assert result['method'] == method


# --- concurrency -------------------------------------------------------------------------------

@pytest.mark.parametrize('concurrency, enable, warned', [
    (1, True, False),
    (2, True, False),
    (3, True, True),
    (7, True, True),
    (8, False, False),
    (64, False, False),
])
def test_concurrency_rule(concurrency, enable, warned):
    result = run(expected_concurrency=concurrency)
    assert result['enable'] is enable
    assert any('Expected concurrency' in w for w in result['warnings']) is warned
    if not enable:
        assert result['refused_by'] == ['concurrency']
        assert 'continuous batching' in result['reasons'][0]


def test_concurrency_thresholds_are_options():
    assert run(expected_concurrency=8, refuse_concurrency=16)['enable'] is True
    assert run(expected_concurrency=4, max_good_concurrency=4, vllm_version='0.32.0')['warnings'] == []
    assert refused(run(expected_concurrency=4, refuse_concurrency=4, max_good_concurrency=1), 'concurrency')


@pytest.mark.parametrize('value', [0, -1, True, '1', 1.0, None])
def test_concurrency_invalid(value):
    with pytest.raises(SpeculativeInputError, match='expected_concurrency'):
        run(expected_concurrency=value)


def test_concurrency_threshold_options_validated():
    with pytest.raises(SpeculativeInputError, match='refuse_concurrency'):
        run(max_good_concurrency=8, refuse_concurrency=8)


# --- method ------------------------------------------------------------------------------------

def test_method_auto_prefers_given_head():
    result = run(target_model=UNLISTED, eagle3_head='acme/unlisted-7b-eagle3')
    assert result['method'] == 'eagle3' and result['model'] == 'acme/unlisted-7b-eagle3'
    assert result['model_source'] == 'option'


def test_method_auto_prefers_eagle3_over_given_draft_with_warning():
    result = run(draft_model='meta-llama/Llama-3.2-1B-Instruct')
    assert result['method'] == 'eagle3' and result['model'] == LLAMA_HEAD
    assert any('EAGLE-3 is preferred' in w for w in result['warnings'])


def test_method_auto_falls_back_to_given_draft():
    result = run(target_model=UNLISTED, draft_model='acme/unlisted-0.5b')
    assert result['method'] == 'draft_model' and result['model_source'] == 'option'


def test_method_auto_no_head_no_draft_refused_do_not_train():
    result = run(target_model=UNLISTED)
    assert refused(result, 'method')
    assert result['method'] is None
    assert 'do not train one ad hoc' in result['reasons'][0]
    assert 'provide_draft_model' in result['handoff']['actions']


def test_method_auto_never_picks_ngram():
    result = run(target_model=UNLISTED)
    assert result['method'] != 'ngram'


def test_method_ngram_only_when_asked_needs_no_draft_memory():
    result = run(target_model=UNLISTED, method='ngram', extra_config={'prompt_lookup_max': 4, 'prompt_lookup_min': 2},
                 baseline_gpu_memory_utilization=0.95, draft_size_mb=None, free_memory_mb=100)
    assert result['enable'] is True
    assert result['speculative_config'] == {'method': 'ngram', 'num_speculative_tokens': 5, 'prompt_lookup_max': 4,
                                            'prompt_lookup_min': 2}
    assert 'model' not in result['speculative_config']
    assert result['gpu_memory_utilization'] == 0.95  # no draft weights: nothing to make room for


@pytest.mark.parametrize('extra, window', [
    ({}, (5, 5)),                         # vLLM's default, written out
    ({'prompt_lookup_max': 4}, (4, 4)),   # a missing bound takes the other's value, as vLLM does
    ({'prompt_lookup_min': 7}, (7, 7)),
    ({'prompt_lookup_min': 2, 'prompt_lookup_max': 6}, (2, 6)),
])
def test_method_ngram_lookup_window_defaults_like_vllm(extra, window):
    result = run(method='ngram', extra_config=extra)
    config = result['speculative_config']
    assert (config['prompt_lookup_min'], config['prompt_lookup_max']) == window
    assert config['method'] == 'ngram' and 'model' not in config


# --- methods of today's vLLM: mtp, suffix; memory-free methods on small devices ------------------

MTP_CONFIG = {'model_type': 'qwen3_next', 'num_nextn_predict_layers': 1}


def config_reader(configs):
    """A read_model_config stand-in: path -> parsed config.json (None: no readable config)."""
    return configs.get


@pytest.mark.parametrize('config, layers', [
    ({'num_nextn_predict_layers': 1}, 1),
    ({'mtp_num_hidden_layers': 2}, 2),
    ({'text_config': {'mtp_num_hidden_layers': 1}}, 1),      # multimodal checkpoints (Qwen3.5 / 3.6)
    ({'num_nextn_predict_layers': 0}, 0),
    ({'num_hidden_layers': 36}, None),
    ({'num_nextn_predict_layers': '1'}, None),               # not an integer: does not say
    ({'num_nextn_predict_layers': True}, None),
    ({'num_nextn_predict_layers': -1}, None),
    (None, None),
    ([1, 2], None),
])
def test_mtp_layers_read_like_vllm(config, layers):
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import mtp_layers
    assert mtp_layers(config) == layers


@pytest.mark.parametrize('device, k', [('thor-t5000', 4), ('orin-agx-r39', 2)])
def test_method_auto_plans_mtp_for_a_local_target_with_mtp_layers(device, k):
    result = run(device, target_model='/srv/models/qwen3-next', vllm_version='0.32.0',
                 read_model_config=config_reader({'/srv/models/qwen3-next': MTP_CONFIG}))
    assert result['enable'] is True, result['reasons']
    assert result['method'] == 'mtp' and result['model'] is None and result['model_source'] == 'config.json'
    assert result['speculative_config'] == {'method': 'mtp', 'num_speculative_tokens': k}
    assert result['num_speculative_tokens'] == k == result['default_num_speculative_tokens']
    assert result['gpu_memory_utilization'] == 0.70  # the MTP drafter and its KV cache still need room
    assert any('1 MTP layer(s) in its config.json' in g for g in result['reasons'])


def test_method_auto_plans_mtp_from_the_catalogue():
    result = run(target_model='Qwen/Qwen3-Next-80B-A3B-Instruct', vllm_version='0.32.0')
    assert result['method'] == 'mtp' and result['model_source'] == 'catalogue'
    assert result['speculative_config'] == {'method': 'mtp', 'num_speculative_tokens': 4}


def test_method_auto_prefers_what_the_operator_gave_over_mtp():
    reader = config_reader({'/srv/models/qwen3-next': MTP_CONFIG})
    result = run(target_model='/srv/models/qwen3-next', vllm_version='0.32.0', read_model_config=reader,
                 draft_model='/srv/models/tiny-draft')
    assert result['method'] == 'draft_model'


def test_method_auto_skips_mtp_on_a_vllm_without_it():
    result = run(target_model='Qwen/Qwen3-Next-80B-A3B-Instruct', vllm_version='0.10.2',
                 jetson=facts('orin-agx-64gb'), runtime_image=ORIN_IMAGE)
    assert result['method'] != 'mtp'
    assert any('predates method mtp (0.11+)' in w for w in result['warnings'])


def test_method_auto_without_mtp_layers_keeps_the_catalogue_head():
    reader = config_reader({'/srv/models/llama': {'num_hidden_layers': 32}})
    result = run(target_model='/srv/models/llama', read_model_config=reader, eagle3_head='/srv/models/head')
    assert result['method'] == 'eagle3'


def test_method_mtp_refused_when_config_declares_no_mtp_layers():
    reader = config_reader({'/srv/models/llama': {'num_nextn_predict_layers': 0}})
    result = run(target_model='/srv/models/llama', method='mtp', vllm_version='0.32.0', read_model_config=reader)
    assert refused(result, 'method') and 'declares no MTP layers' in result['reasons'][0]


def test_method_mtp_asked_for_an_unknown_target_warns_and_lets_vllm_decide():
    result = run(target_model=UNLISTED, method='mtp', vllm_version='0.32.0')
    assert result['enable'] is True and result['method'] == 'mtp'
    assert any('refuses to start if it has none' in w for w in result['warnings'])


@pytest.mark.parametrize('version, method, enable', [
    ('0.10.2', 'mtp', False), ('0.11.0', 'mtp', True),
    ('0.11.0', 'suffix', False), ('0.12.0', 'suffix', True),
])
def test_method_version_gates_read_from_the_sdists(version, method, enable):
    result = run('orin-agx-64gb', target_model=UNLISTED, method=method, vllm_version=version)
    assert result['enable'] is enable, result['reasons']
    if not enable:
        assert refused(result, 'runtime') and 'does not know method %s' % method in ' '.join(result['reasons'])


@pytest.mark.parametrize('layers, default_k, k', [(1, 4, 4), (2, 4, 4), (3, 4, 3), (5, 4, 4)])
def test_mtp_default_k_fits_the_mtp_layers(layers, default_k, k):
    reader = config_reader({'/m': {'num_nextn_predict_layers': layers}})
    result = run(target_model='/m', vllm_version='0.32.0', read_model_config=reader)
    assert result['default_num_speculative_tokens'] == default_k
    assert result['num_speculative_tokens'] == k
    assert result['speculative_config']['num_speculative_tokens'] == k


def test_mtp_given_k_that_vllm_refuses_is_an_input_error():
    reader = config_reader({'/m': {'num_nextn_predict_layers': 3}})
    with pytest.raises(SpeculativeInputError, match='must be divisible by n_predict'):
        run(target_model='/m', vllm_version='0.32.0', read_model_config=reader, num_speculative_tokens=4)


def test_method_suffix_needs_no_draft_and_validates_its_keys():
    result = run(target_model=UNLISTED, method='suffix', vllm_version='0.32.0', baseline_gpu_memory_utilization=0.95,
                 extra_config={'suffix_decoding_max_tree_depth': 16, 'suffix_decoding_min_token_prob': 0.2})
    assert result['enable'] is True
    assert result['speculative_config'] == {'method': 'suffix', 'num_speculative_tokens': 5,
                                            'suffix_decoding_max_tree_depth': 16,
                                            'suffix_decoding_min_token_prob': 0.2}
    assert result['gpu_memory_utilization'] == 0.95
    assert any('arctic-inference' in w for w in result['warnings'])


@pytest.mark.parametrize('extra, words', [
    ({'suffix_decoding_max_tree_depth': 0}, 'suffix_decoding_max_tree_depth must be >= 1'),
    ({'suffix_decoding_max_tree_depth': 10 ** 30}, 'suffix_decoding_max_tree_depth must be <= 4096'),
    ({'suffix_decoding_max_cached_requests': -1}, 'must be >= 0'),
    ({'suffix_decoding_max_spec_factor': float('nan')}, 'must be a finite number'),
    ({'suffix_decoding_min_token_prob': 1.5}, 'must be <= 1.0'),
    ({'suffix_decoding_min_token_prob': '0.2'}, 'must be a number'),
    ({'prompt_lookup_max': 4}, 'does not apply to method suffix'),
    ({'num_speculative_tokens_per_batch_size': [[1, 4, 3]]}, 'does not apply to method suffix'),
])
def test_method_suffix_bad_keys_are_errors(extra, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(target_model=UNLISTED, method='suffix', vllm_version='0.32.0', extra_config=extra)


def test_suffix_keys_need_vllm_0_12():
    with pytest.raises(SpeculativeInputError, match='needs vLLM >= 0.12'):
        run('orin-agx-64gb', target_model=UNLISTED, method='suffix', vllm_version='0.11.0',
            extra_config={'suffix_decoding_max_tree_depth': 16})


@pytest.mark.parametrize('device', ['orin-nx-16gb', 'orin-nano-8gb'])
@pytest.mark.parametrize('method', ['ngram', 'suffix'])
def test_small_devices_try_memory_free_methods_when_asked_by_name(device, method):
    result = run(device, target_model=UNLISTED, method=method, vllm_version='0.32.0')
    assert result['enable'] is True, result['reasons']
    assert result['method'] == method
    assert result['gpu_memory_utilization'] == 0.75
    assert any('asked for by name' in w for w in result['warnings'])


@pytest.mark.parametrize('device', ['orin-nx-16gb', 'orin-nano-8gb'])
@pytest.mark.parametrize('method', ['auto', 'eagle3', 'draft_model', 'mtp'])
def test_small_devices_stay_refused_for_methods_with_draft_memory(device, method):
    result = run(device, method=method, draft_model='meta-llama/Llama-3.2-1B-Instruct', vllm_version='0.32.0')
    assert refused(result, 'family'), result


def test_catalogue_override_mtp_flag():
    result = run(target_model='acme/mtp-model', vllm_version='0.32.0', catalogue={'acme/mtp-model': {'mtp': True}})
    assert result['method'] == 'mtp'
    with pytest.raises(SpeculativeInputError, match=r'catalogue\[acme/mtp-model\].mtp must be a boolean'):
        run(catalogue={'acme/mtp-model': {'mtp': 'yes'}})


def test_method_eagle3_forced_without_head_refused():
    result = run(target_model=UNLISTED, method='eagle3')
    assert refused(result, 'method') and 'do not train one ad hoc' in result['reasons'][0]


def test_method_draft_model_forced_uses_catalogue_pair():
    result = run(target_model='Qwen/Qwen3-8B', method='draft_model')
    assert result['method'] == 'draft_model' and result['model'] == 'Qwen/Qwen3-0.6B'
    assert result['model_source'] == 'catalogue'
    assert any('vocabulary' in w for w in result['warnings'])


def test_method_draft_model_forced_without_draft_refused():
    assert refused(run(target_model=UNLISTED, method='draft_model'), 'method')


def test_method_invalid_choice():
    with pytest.raises(SpeculativeInputError, match='method must be one of auto, eagle3, draft_model, mtp, ngram, suffix'):
        run(method='medusa')


def test_method_draft_equal_to_target_warns():
    result = run(target_model='/srv/models/tiny', method='draft_model', draft_model='/srv/models/tiny')
    assert result['enable'] is True
    assert any('target model itself' in w for w in result['warnings'])


# --- catalogue ---------------------------------------------------------------------------------

def test_catalogue_lists_the_published_heads_and_pairs():
    heads = set(entry['eagle3_head'] for entry in CATALOGUE.values())
    assert {'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B',
            'AngelSlim/Qwen3-1.7B_eagle3', 'AngelSlim/Qwen3-4B_eagle3', 'AngelSlim/Qwen3-8B_eagle3',
            'AngelSlim/Qwen3-14B_eagle3', 'AngelSlim/Qwen3-32B_eagle3',
            'RedHatAI/gpt-oss-20b-speculator.eagle3'} <= heads
    assert CATALOGUE['qwen/qwen3-8b']['draft_model'] == 'Qwen/Qwen3-0.6B'
    assert CATALOGUE['qwen/qwen3-1.7b']['draft_model'] == 'Qwen/Qwen3-0.6B'
    assert CATALOGUE['meta-llama/llama-3.1-8b-instruct']['draft_model'] == 'meta-llama/Llama-3.2-1B-Instruct'
    for key, entry in CATALOGUE.items():  # every shipped id passes the model-id check
        assert key == key.lower()
        for value in [key, entry['eagle3_head'], entry['draft_model']] + entry['alternatives']:
            if value:
                assert C.check_model_ref('catalogue', value) == value


@pytest.mark.parametrize('target', ['meta-llama/Llama-3.1-8B-Instruct', 'META-LLAMA/LLAMA-3.1-8B-INSTRUCT',
                                    'meta-llama/llama-3.1-8b-instruct'])
def test_catalogue_match_is_case_insensitive(target):
    assert run(target_model=target)['model'] == LLAMA_HEAD


def test_catalogue_never_matches_a_path():
    assert refused(run(target_model='/models/meta-llama/Llama-3.1-8B-Instruct'), 'method')


def test_catalogue_override_adds_and_replaces_entries():
    added = run(target_model=UNLISTED, catalogue={UNLISTED: {'eagle3_head': 'acme/head'}})
    assert added['method'] == 'eagle3' and added['model'] == 'acme/head' and added['model_source'] == 'catalogue'
    removed = run(catalogue={LLAMA: {'eagle3_head': None, 'draft_model': 'acme/tiny-llama'}})
    assert removed['method'] == 'draft_model' and removed['model'] == 'acme/tiny-llama'


def test_catalogue_shipped_copy_is_not_modified_by_override():
    run(catalogue={LLAMA: {'eagle3_head': None}})
    assert CATALOGUE['meta-llama/llama-3.1-8b-instruct']['eagle3_head'] == LLAMA_HEAD


@pytest.mark.parametrize('catalogue, words', [
    ('nope', 'catalogue must be a dictionary'),
    ({LLAMA: 'acme/head'}, 'must be a dictionary'),
    ({LLAMA: {'head': 'acme/head'}}, 'unknown keys head'),
    ({LLAMA: {'eagle3_head': 'acme/head; rm -rf /'}}, 'contains'),
    ({'bad id': {'eagle3_head': 'acme/head'}}, 'catalogue key'),
])
def test_catalogue_override_validated(catalogue, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(catalogue=catalogue)


# --- num_speculative_tokens --------------------------------------------------------------------

@pytest.mark.parametrize('device, override, rate, strict, expected, warned', [
    ('thor-t5000', None, None, False, 5, False),
    ('orin-agx-64gb', None, None, False, 3, False),
    ('thor-t5000', 1, None, False, 1, False),
    ('thor-t5000', 5, None, False, 5, False),
    ('orin-agx-64gb', 2, None, False, 2, False),
    ('thor-t5000', 6, None, False, 5, True),
    ('thor-t5000', 6, 0.6, False, 5, True),      # exactly 0.6 is not > 0.6
    ('thor-t5000', 6, 0.61, False, 6, False),
    ('orin-agx-64gb', 4, 0.5, False, 3, True),
    ('orin-agx-64gb', 4, 0.9, True, 4, False),
])
def test_num_speculative_tokens_rule(device, override, rate, strict, expected, warned):
    result = run(device, num_speculative_tokens=override, measured_acceptance_rate=rate, strict=strict)
    assert result['enable'] is True
    assert result['num_speculative_tokens'] == expected
    assert result['speculative_config']['num_speculative_tokens'] == expected
    assert any('clamped' in w for w in result['warnings']) is warned


@pytest.mark.parametrize('rate', [None, 0.6, 0.3])
def test_num_speculative_tokens_strict_fails(rate):
    with pytest.raises(SpeculativeInputError, match='strict'):
        run(num_speculative_tokens=8, measured_acceptance_rate=rate, strict=True)


def test_num_speculative_tokens_threshold_is_an_option():
    assert run(num_speculative_tokens=6, measured_acceptance_rate=0.55,
               min_acceptance_for_more_tokens=0.5)['num_speculative_tokens'] == 6


@pytest.mark.parametrize('kwargs, words', [
    (dict(num_speculative_tokens=0), 'num_speculative_tokens must be >= 1'),
    (dict(num_speculative_tokens=-3), 'num_speculative_tokens must be >= 1'),
    (dict(num_speculative_tokens='5'), 'num_speculative_tokens must be an integer'),
    (dict(measured_acceptance_rate=1.2), 'measured_acceptance_rate must be <= 1.0'),
    (dict(measured_acceptance_rate=-0.1), 'measured_acceptance_rate must be >= 0.0'),
    (dict(measured_acceptance_rate=float('nan')), 'measured_acceptance_rate must be a finite number'),
    (dict(strict='yes'), 'strict must be a boolean'),
])
def test_num_speculative_tokens_invalid(kwargs, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(**kwargs)


# --- runtime -----------------------------------------------------------------------------------

@pytest.mark.parametrize('device, version, method, enable', [
    # Thor: upstream or native vLLM 0.20+
    ('thor-t5000', '0.19.0', 'auto', False),
    ('thor-t5000', '0.19.9', 'auto', False),
    ('thor-t5000', '0.20', 'auto', True),
    ('thor-t5000', '0.20.0', 'auto', True),
    ('thor-t4000', '0.19.1', 'auto', False),
    ('thor-t4000', '0.20.1', 'auto', True),
    # Orin on L4T r39+: upstream 0.20+
    ('orin-agx-r39', '0.19.0', 'auto', False),
    ('orin-agx-r39', '0.20.0', 'auto', True),
    # Orin before r39: the NVIDIA-AI-IOT image; EAGLE-3 from 0.10, draft_model from 0.15
    ('orin-agx-64gb', '0.9.2', 'auto', False),
    ('orin-agx-64gb', '0.10.0', 'auto', True),
    ('orin-agx-64gb', '0.14.1', 'auto', True),
    ('orin-agx-64gb', '0.14.1', 'draft_model', False),
    ('orin-agx-64gb', '0.15.0', 'draft_model', True),
    ('orin-agx-64gb', '0.19.0', 'draft_model', True),
    ('orin-agx-64gb', '0.19.0', 'auto', True),
])
def test_runtime_version_rule(device, version, method, enable):
    result = run(device, vllm_version=version, method=method)
    assert result['enable'] is enable, result['reasons']
    if not enable:
        assert result['refused_by'] == ['runtime']
        assert 'upgrade_vllm' in result['handoff']['actions']


def test_runtime_draft_model_needs_0_15_message():
    result = run('orin-agx-64gb', vllm_version='0.14.1', method='draft_model')
    assert 'not supported yet' in result['reasons'][0] and '0.15' in result['reasons'][0]


@pytest.mark.parametrize('device, image, enable', [
    ('thor-t5000', ORIN_IMAGE, False),                        # never the Orin image on Thor
    ('thor-t5000', 'ghcr.io/nvidia-ai-iot/vllm:r36.4-orin', False),
    ('thor-t5000', UPSTREAM_IMAGE, True),
    ('thor-t5000', 'docker.io/vllm/vllm-openai:v0.20.1', True),
    ('thor-t5000', None, True),                               # native install
    ('orin-agx-r39', ORIN_IMAGE, False),                      # r39+ runs upstream
    ('orin-agx-r39', UPSTREAM_IMAGE, True),
    ('orin-agx-64gb', UPSTREAM_IMAGE, False),                 # r36 uses the NVIDIA-AI-IOT image
    ('orin-agx-64gb', ORIN_IMAGE, True),
])
def test_runtime_image_rule(device, image, enable):
    result = run(device, runtime_image=image)
    assert result['enable'] is enable, result['reasons']
    if not enable:
        assert result['refused_by'] == ['runtime']
        assert 'change_runtime' in result['handoff']['actions']


def test_runtime_orin_image_on_thor_names_the_rule_once():
    result = run('thor-t5000', runtime_image=ORIN_IMAGE)  # the facts also list it in forbidden_images
    assert result['reasons'] == [
        "Never use the NVIDIA-AI-IOT Orin image on Thor (runtime_image %s, built for Orin by its tag): Thor runs "
        "NVIDIA's Thor image (ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor), upstream vLLM 0.20+ (%s) or a validated "
        "native vLLM 0.20+." % (ORIN_IMAGE, UPSTREAM_IMAGE)]


@pytest.mark.parametrize('image, outcome', [
    ('ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor', 'enabled'),      # NVIDIA's Thor recipe
    ('dustynv/vllm:r38.2-cu130', 'enabled'),                           # L4T r38: JetPack 7.0/7.1, Thor only
    ('docker.io/dustynv/vllm:0.20.1-r38', 'enabled'),
    ('ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra', 'refused'),             # JetPack 6: Orin
    ('ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin@sha256:' + 'b' * 64, 'refused'),
    ('GHCR.IO/NVIDIA-AI-IOT/VLLM:latest', 'warned'),                   # the tag does not say
    ('ghcr.io/nvidia-ai-iot/vllm@sha256:' + 'a' * 64, 'warned'),       # a digest only
    ('vllm/vllm-openai:v0.20.1-cu129', 'refused'),                     # CUDA 12.9: no sm_110 kernels
    ('vllm/vllm-openai:latest-cu129', 'refused'),
    ('vllm/vllm-openai:v0.20.1', 'enabled'),                           # plain tags are CUDA 13 builds
])
def test_runtime_thor_images_by_tag(image, outcome):
    result = run(runtime_image=image, vllm_version='0.20.1' if 'v0.20' in image else None)
    if outcome == 'refused':
        assert refused(result, 'runtime'), result
        assert 'change_runtime' in result['handoff']['actions']
    else:
        assert result['enable'] is True, result['reasons']
        warned = any(image in w and 'does not say which Jetson' in w for w in result['warnings'])
        assert warned is (outcome == 'warned'), result['warnings']


def test_runtime_forbidden_images_from_facts_refused():
    jetson = facts('thor-t5000')
    jetson['vllm_runtime']['forbidden_images'] = ['acme/vllm']
    result = run(jetson=jetson, runtime_image='acme/vllm:1.0')
    assert refused(result, 'runtime') and 'forbidden' in result['reasons'][0]


def test_runtime_unknown_image_warns():
    thor = run(runtime_image='acme/vllm:custom')
    orin = run('orin-agx-64gb', runtime_image='acme/vllm:r36.4.0')
    orin39 = run('orin-agx-r39', runtime_image='acme/vllm:custom')
    assert thor['enable'] is True and any('acme/vllm:custom' in w for w in thor['warnings'])
    assert orin['enable'] is True and any('acme/vllm:r36.4.0' in w for w in orin['warnings'])
    # Orin r39+ gets the same warning as Thor.
    assert orin39['enable'] is True
    assert [w.replace('Orin on L4T r39', 'Thor') for w in orin39['warnings'] if 'acme' in w] == \
        [w for w in thor['warnings'] if 'acme' in w]
    assert any('runtime_image not given' in w for w in run('orin-agx-64gb', runtime_image=None)['warnings'])


@pytest.mark.parametrize('major, enable', [(36, True), (38, True), (39, False), (40, False)])
def test_runtime_orin_l4t_36_vs_39(major, enable):
    """Same Orin, same NVIDIA-AI-IOT image and vLLM 0.19: fine before r39, refused from r39."""
    jetson = facts('orin-agx-64gb')
    jetson['l4t']['major'] = major
    result = run(jetson=jetson, runtime_image=ORIN_IMAGE, vllm_version='0.19.0')
    assert result['enable'] is enable
    if not enable:
        assert result['refused_by'] == ['runtime']


def test_runtime_orin_unknown_l4t_assumes_what_facts_assume():
    """Unknown L4T on Orin: planner and jetson_facts both assume the pre-r39 NVIDIA-AI-IOT path, with one warning."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as J
    jetson = facts('orin-agx-64gb')
    jetson['l4t'] = {'version': None, 'major': None}
    facts_runtime = J.runtime_requirements('orin', None)
    result = run(jetson=jetson)
    assert result['enable'] is True and facts_runtime['path'] == 'nvidia-ai-iot'
    assert facts_runtime['warning'] + '.' in result['warnings']
    # the upstream image is then only a warning (it may be an r39 Orin), not a refusal
    upstream = run(jetson=jetson, runtime_image=UPSTREAM_IMAGE)
    assert upstream['enable'] is True and any('check the L4T release' in w for w in upstream['warnings'])


@pytest.mark.parametrize('image', ['ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra', 'GHCR.IO/NVIDIA-AI-IOT/VLLM:r36.4-orin',
                                   'docker.io/dustynv/vllm:0.20.1-r36.4',
                                   'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin@sha256:' + 'b' * 64])
def test_runtime_nvidia_ai_iot_image_recognised_by_repository(image):
    thor = run(runtime_image=image)
    assert refused(thor, 'runtime') and 'Never use the NVIDIA-AI-IOT Orin image on Thor' in thor['reasons'][0]
    orin = run('orin-agx-64gb', runtime_image=image)
    assert orin['enable'] is True and not any('NVIDIA-AI-IOT' in w for w in orin['warnings'])


@pytest.mark.parametrize('image, version', [('vllm/vllm-openai:v0.10.0', '0.20.1'),
                                            ('vllm/vllm-openai:v0.20.0', '0.20.1'),
                                            ('docker.io/vllm/vllm-openai:0.19', '0.20.1')])
def test_runtime_image_tag_contradicting_vllm_version_is_an_error(image, version):
    with pytest.raises(SpeculativeInputError) as err:
        run(runtime_image=image, vllm_version=version)
    assert image in str(err.value) and 'vllm_version says' in str(err.value)


@pytest.mark.parametrize('image', ['vllm/vllm-openai:v0.20.1', 'vllm/vllm-openai:v0.20', 'vllm/vllm-openai:latest',
                                   'vllm/vllm-openai@sha256:' + 'c' * 64])
def test_runtime_image_tag_agreeing_with_vllm_version(image):
    assert run(runtime_image=image, vllm_version='0.20.1')['enable'] is True


def test_runtime_facts_unsupported_path_refused():
    jetson = facts('thor-t5000')
    jetson['vllm_runtime'] = {'path': 'unsupported', 'notes': ['L4T too old']}
    result = run(jetson=jetson)
    assert refused(result, 'runtime') and 'L4T too old' in result['reasons'][0]


def test_runtime_facts_minimum_is_respected():
    jetson = facts('orin-agx-64gb')
    jetson['vllm_runtime']['min_vllm_version'] = '0.18'
    result = run(jetson=jetson, vllm_version='0.17.0')
    assert refused(result, 'runtime') and 'as jetson_facts requires' in result['reasons'][0]


@pytest.mark.parametrize('version, parsed_ok, warn_words', [
    ('0.32.0', True, None),
    ('0.32.0+cpu', True, None),
    ('v0.20.1', True, None),
    ('0.15.0rc2', True, 'pre-release'),
    ('0.20.1.dev12+g1234abc', True, 'pre-release'),
    ('unknown', False, 'vLLM version unknown'),
    ('', False, 'vLLM version unknown'),
    (None, False, 'vLLM version unknown'),
    ('latest', False, 'not a version number'),
])
def test_runtime_version_strings(version, parsed_ok, warn_words):
    result = run('orin-agx-64gb', vllm_version=version)
    assert result['enable'] is True  # an unknown version warns, it does not refuse
    assert any('meets the minimum' in r for r in result['reasons']) is parsed_ok
    others = [w for w in result['warnings'] if 'vllm#48894' not in w]  # the known-bad table's (test_known_bad.py)
    if warn_words:
        assert any(warn_words in w for w in others)
    else:
        assert others == []


def test_runtime_prerelease_compares_as_its_release():
    assert run('orin-agx-64gb', vllm_version='0.15.0rc2', method='draft_model')['enable'] is True
    assert run('orin-agx-64gb', vllm_version='0.14.99rc1', method='draft_model')['enable'] is False


@pytest.mark.parametrize('version', [0.2, 0.20, 1, ['0.20']])
def test_runtime_version_must_be_a_string(version):
    with pytest.raises(SpeculativeInputError, match='vllm_version must be a string'):
        run(vllm_version=version)


@pytest.mark.parametrize('image', ['vllm/vllm-openai:latest; rm -rf /', 'img with space', "it's", ':tag', 'a$b'])
def test_runtime_image_invalid(image):
    with pytest.raises(SpeculativeInputError, match='runtime_image'):
        run(runtime_image=image)


# --- memory ------------------------------------------------------------------------------------

@pytest.mark.parametrize('baseline, enable, expected', [
    (0.75, True, 0.70),
    (0.80, True, 0.75),
    (0.89, True, 0.84),     # near the ceiling, and Thor's measured free memory has room
    (0.90, True, 0.85),     # vLLM's own default (flag omitted): allowed when free memory is confirmed
    (0.95, True, 0.90),
    (1.0, True, 0.95),
    (0.55, True, 0.50),     # exactly the floor
    (0.54, False, 0.54),    # 0.49 < floor
])
def test_memory_gpu_memory_utilization_rule(baseline, enable, expected):
    result = run(baseline_gpu_memory_utilization=baseline)
    assert result['enable'] is enable
    assert result['gpu_memory_utilization'] == expected
    assert result['baseline_gpu_memory_utilization'] == baseline
    if not enable:
        assert result['refused_by'] == ['memory']
        assert 'memory_tuning' in result['handoff']['actions']


@pytest.mark.parametrize('baseline, near', [(0.8499, False), (0.85, True), (0.90, True), (0.97, True)])
def test_memory_near_ceiling_needs_measured_free_memory(baseline, near):
    """Within one step of the ceiling: enabled only when measured free memory leaves 2 GB after the draft."""
    jetson = facts('thor-t5000')
    jetson['memory']['available_mb'] = None  # nothing measured
    unknown = run(jetson=jetson, baseline_gpu_memory_utilization=baseline)
    assert unknown['enable'] is (not near)
    tight = run(jetson=jetson, baseline_gpu_memory_utilization=baseline, free_memory_mb=3000, draft_size_mb=1000)
    assert tight['enable'] is False and tight['refused_by'] == ['memory']
    roomy = run(jetson=jetson, baseline_gpu_memory_utilization=baseline, free_memory_mb=3048, draft_size_mb=1000)
    assert roomy['enable'] is True
    if near:
        assert 'Near the ceiling' in unknown['reasons'][0] and 'free memory is unknown' in unknown['reasons'][0]
        assert unknown['handoff']['actions'][:2] == ['free_memory', 'memory_tuning']
        assert any('Near the ceiling' in r and 'enabled because the measured free memory leaves 2048 MB' in r
                   for r in roomy['reasons'])
    else:
        assert not any('Near the ceiling' in r for r in roomy['reasons'])


def test_memory_ceiling_says_free_2gb_first():
    result = run(baseline_gpu_memory_utilization=0.92, free_memory_mb=2500)
    assert 'free at least 2048 MB first' in result['reasons'][0]
    assert result['handoff']['actions'][:2] == ['free_memory', 'memory_tuning']
    assert 'free at least 2048 MB first (stop other services, lower --max-model-len, or lower the baseline ' \
        '--gpu-memory-utilization)' in result['handoff']['summary']


@pytest.mark.parametrize('free, draft, enable', [
    (3048, 1000, True),     # exactly 2048 MB left
    (3047, 1000, False),    # 2047 MB left
    (117940, 1000, True),
    (1000, 0, False),
])
def test_memory_headroom_rule(free, draft, enable):
    result = run(free_memory_mb=free, draft_size_mb=draft)
    assert result['enable'] is enable
    if not enable:
        assert result['refused_by'] == ['memory']
        assert 'free at least 2048 MB first' in result['reasons'][0]
        assert 'smaller_draft' in result['handoff']['actions']


@pytest.mark.parametrize('device, enable', [('thor-t5000', True), ('thor-t4000', False)])
def test_memory_t4000_vs_t5000(device, enable):
    """Same 56 GB draft on both Thor modules: the T5000 has room, the 64 GB T4000 does not (available_mb)."""
    result = run(device, draft_size_mb=56000)
    assert result['enable'] is enable
    assert result['default_num_speculative_tokens'] == 5


def test_memory_free_defaults_to_facts_available_mb():
    jetson = facts('thor-t5000')
    jetson['memory']['available_mb'] = 2500
    assert refused(run(jetson=jetson, draft_size_mb=1000), 'memory')
    assert run(jetson=jetson, draft_size_mb=1000, free_memory_mb=9000)['enable'] is True


def test_memory_unknown_sizes_warn():
    result = run(draft_size_mb=None, eagle3_head='acme/unlisted-head')
    assert result['enable'] is True
    assert any('draft size unknown' in w for w in result['warnings'])
    jetson = facts()
    del jetson['memory']
    result = run(jetson=jetson)
    assert any('free memory unknown' in w for w in result['warnings'])


def test_memory_thresholds_are_options():
    assert run(baseline_gpu_memory_utilization=0.92, gpu_memory_utilization_ceiling=0.95)['gpu_memory_utilization'] \
        == 0.87
    assert run(baseline_gpu_memory_utilization=0.75, gpu_memory_utilization_step=0.1)['gpu_memory_utilization'] == 0.65
    assert refused(run(baseline_gpu_memory_utilization=0.75, min_gpu_memory_utilization=0.72), 'memory')
    assert refused(run(free_memory_mb=5000, draft_size_mb=1000, min_free_memory_after_draft_mb=4096), 'memory')


@pytest.mark.parametrize('kwargs, words', [
    (dict(baseline_gpu_memory_utilization=0), 'baseline_gpu_memory_utilization must be > 0.0'),
    (dict(baseline_gpu_memory_utilization=1.01), 'baseline_gpu_memory_utilization must be <= 1.0'),
    (dict(baseline_gpu_memory_utilization=-0.5), 'baseline_gpu_memory_utilization must be > 0.0'),
    (dict(baseline_gpu_memory_utilization=float('nan')), 'must be a finite number'),
    (dict(baseline_gpu_memory_utilization=float('inf')), 'must be a finite number'),
    (dict(baseline_gpu_memory_utilization='0.75'), 'baseline_gpu_memory_utilization must be a number'),
    (dict(baseline_gpu_memory_utilization=None), 'baseline_gpu_memory_utilization must be a number'),
    (dict(free_memory_mb=-1), 'free_memory_mb must be >= 0'),
    (dict(draft_size_mb=-1), 'draft_size_mb must be >= 0'),
    (dict(draft_size_mb=1.5), 'draft_size_mb must be an integer'),
    (dict(gpu_memory_utilization_step=0.6), 'gpu_memory_utilization_step must be <= 0.5'),
    (dict(min_gpu_memory_utilization=0), 'min_gpu_memory_utilization must be > 0.0'),
    (dict(min_free_memory_after_draft_mb=-5), 'min_free_memory_after_draft_mb must be >= 0'),
    (dict(allow_small_devices='no'), 'allow_small_devices must be a boolean'),
    (dict(tensor_parallel_size=0), 'tensor_parallel_size must be >= 1'),
])
def test_memory_and_other_numbers_invalid(kwargs, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(**kwargs)


# --- speculative_config keys -------------------------------------------------------------------

def test_config_extra_keys_for_eagle3():
    extra = {'max_model_len': 4096, 'revision': 'main', 'code_revision': 'v1.0', 'quantization': 'fp8',
             'draft_tensor_parallel_size': 1}
    result = run(extra_config=extra)
    config = result['speculative_config']
    for key, value in extra.items():
        assert config[key] == value
    assert json.loads(result['speculative_config_json']) == config


@pytest.mark.parametrize('extra, words', [
    ({'tensor_parallel_size': 2}, "Please pass 'draft_tensor_parallel_size' instead"),
    ({'num_speculative_tokenz': 5}, 'unknown SpeculativeConfig key'),
    ({'speculative_model': 'a/b'}, 'Allowed for eagle3: draft_tensor_parallel_size, quantization, max_model_len, '
                                   'revision, code_revision.'),
    ({'method': 'eagle3'}, 'set by the plan from the method option'),
    ({'model': 'a/b'}, 'eagle3_head or draft_model option'),
    ({'num_speculative_tokens': 9}, 'num_speculative_tokens option'),
    ({'prompt_lookup_max': 4}, 'does not apply to method eagle3'),
    ({'num_speculative_tokens_per_batch_size': [[1, 4, 5]]}, r'needs vLLM >= 0\.24, and vllm_version is 0\.20\.1'),
    ({'draft_tensor_parallel_size': 2}, "must be 1 or the target's tensor_parallel_size"),
    ({'draft_tensor_parallel_size': True}, 'must be an integer'),
    ({'max_model_len': 0}, 'max_model_len must be >= 1'),
    ({'quantization': 'FP8 --x'}, 'quantization name'),
    ({'revision': '../main'}, 'git revision'),
    ({'revision': "main'"}, 'git revision'),
])
def test_config_extra_keys_rejected(extra, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(extra_config=extra)


def test_config_version_gated_key_refused_when_version_unknown():
    with pytest.raises(SpeculativeInputError, match='vllm_version is unknown'):
        run(vllm_version=None, extra_config={'num_speculative_tokens_per_batch_size': [[1, 2, 5]]})


@pytest.mark.parametrize('version', ['0.24.0', '0.30.0', '0.32.0+cpu'])
def test_config_version_gated_key_allowed_from_0_24(version):
    value = [[1, 2, 5], [3, 8, 2], [9, 64, 0]]
    result = run(vllm_version=version, extra_config={'num_speculative_tokens_per_batch_size': value})
    assert result['speculative_config']['num_speculative_tokens_per_batch_size'] == value


@pytest.mark.parametrize('value, words', [
    ([], 'non-empty list'),
    ([[1, 2]], 'three integers'),
    ([[0, 2, 1]], '1 <= start_bs <= end_bs'),
    ([[4, 2, 1]], '1 <= start_bs <= end_bs'),
    ([[1, 4, 1], [4, 8, 0]], 'must not overlap'),
    ([[1, 4, 6]], r'between 0 \(no drafting\) and num_speculative_tokens \(5\)'),
    ([[1, 4, -1]], 'between 0'),
    # The issue's example: batch size 1 left undefined (vLLM 0.32 refuses it at start-up).
    ([[2, 4, 5], [5, 65536, 0]], 'first range must start at batch size 1'),
])
def test_config_per_batch_size_validated(value, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(vllm_version='0.32.0', extra_config={'num_speculative_tokens_per_batch_size': value})


def test_config_draft_tensor_parallel_may_match_target_tp():
    result = run(tensor_parallel_size=2, extra_config={'draft_tensor_parallel_size': 2})
    assert result['speculative_config']['draft_tensor_parallel_size'] == 2


@pytest.mark.parametrize('extra, words', [
    ({'prompt_lookup_max': 2, 'prompt_lookup_min': 3}, 'prompt_lookup_min=3 must be <= prompt_lookup_max=2'),
    ({'prompt_lookup_max': 0}, 'prompt_lookup_max must be >= 1'),
    ({'prompt_lookup_max': 4, 'quantization': 'fp8'}, 'does not apply to method ngram'),
    ({'prompt_lookup_max': 4, 'draft_tensor_parallel_size': 1}, 'does not apply to method ngram'),
])
def test_config_ngram_keys_validated(extra, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(method='ngram', extra_config=extra)


def test_config_keys_validated_even_when_refused():
    with pytest.raises(SpeculativeInputError, match='unknown SpeculativeConfig key'):
        run(expected_concurrency=32, extra_config={'bogus': 1})


def test_config_extra_must_be_a_dict():
    with pytest.raises(SpeculativeInputError, match='extra_config must be a dictionary'):
        run(extra_config=['max_model_len'])


def test_config_allowed_keys_by_version():
    assert 'num_speculative_tokens_per_batch_size' not in SC.allowed_config_keys('eagle3', None)
    assert 'num_speculative_tokens_per_batch_size' not in SC.allowed_config_keys('eagle3', (0, 23, 9))
    assert 'num_speculative_tokens_per_batch_size' in SC.allowed_config_keys('eagle3', (0, 24))
    assert set(SC.allowed_config_keys('ngram', (0, 20))) == {'method', 'num_speculative_tokens', 'prompt_lookup_min',
                                                             'prompt_lookup_max', 'max_model_len'}


def test_config_json_is_compact_sorted_and_unit_file_safe():
    result = run(extra_config={'max_model_len': 4096, 'revision': 'refs/pr/1'})
    text = result['speculative_config_json']
    assert text == json.dumps(result['speculative_config'], separators=(',', ':'), sort_keys=True)
    assert list(json.loads(text)) == sorted(result['speculative_config'])
    for char in " \t\n'\\%$`":
        assert char not in text


def test_config_json_guard_rejects_unsafe_text():
    with pytest.raises(SpeculativeInputError, match='need escaping'):
        SC.config_json({'model': "a'b"})


# --- model ids and paths -----------------------------------------------------------------------

@pytest.mark.parametrize('value', [
    'Qwen/Qwen3-8B', 'gpt2', 'RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3', 'AngelSlim/Qwen3-1.7B_eagle3',
    '/opt/models/llama-3.1+fp8', '/models/x_y.z', '/srv/models/tiny',
])
def test_model_ref_accepted(value):
    assert C.check_model_ref('target_model', value) == value
    assert run(target_model=value, draft_model='acme/draft-0.5b')['enable'] is True


@pytest.mark.parametrize('value, words', [
    ('Qwen/Qwen3 8B', 'whitespace'),
    ('Qwen/Qwen3-8B\n', 'line break'),
    ('Qwen/Qwen3-8B\nExecStartPre=/bin/sh', 'line break'),
    ('Qwen/\tQwen3', 'whitespace'),
    ("Qwen/Qwen3-8B'", 'single quote'),
    ('Qwen/"Qwen3"', 'double quote'),
    ('Qwen/Qwen3-8B%h', 'percent sign'),
    ('$HOME/models/x', 'dollar sign'),
    ('/models/${X}', 'dollar sign'),
    ('Qwen/Qwen3-8B;reboot', 'semicolon'),
    ('a|b', 'pipe'),
    ('a&b', 'ampersand'),
    ('`id`', 'backtick'),
    ('/models/x\\y', 'backslash'),
    ('/models/*', 'wildcard'),
    ('a>b', "'>'"),
    ('Qwen/Qwen3-8B\x00', 'control character'),
    ('Qwen/Qwen3-8B\x1b[31m', 'control character'),
    ('Qwen/Qwen3-8B@main', "an '@'"),
    (u'Qwen/Qwen3\u20138B', 'character'),
    ('../models/x', 'relative path'),
    ('./models/x', 'relative path'),
    ('/models/../etc/shadow', 'not a clean absolute path'),
    ('/models//x', 'not a clean absolute path'),
    ('/', 'not a clean absolute path'),
    ('a/b/c', 'not a Hugging Face repo id'),
    ('-a/b', 'not a Hugging Face repo id'),
    ('a--b/c', 'not a Hugging Face repo id'),
    ('a/b.', 'not a Hugging Face repo id'),
    ('a/' + 'x' * 97, 'not a Hugging Face repo id'),
    ('owner/name+fp8', 'not a Hugging Face repo id'),
])
def test_model_ref_hostile_or_malformed_rejected(value, words):
    for option in ('target_model', 'eagle3_head', 'draft_model'):
        kwargs = {option: value}
        with pytest.raises(SpeculativeInputError, match=option) as info:
            run(**kwargs)
        assert words in str(info.value)
        assert 'systemd unit file' in str(info.value)


@pytest.mark.parametrize('value', [None, 42, ['a/b'], {'id': 'a/b'}])
def test_model_ref_wrong_type(value):
    with pytest.raises(SpeculativeInputError, match='target_model must be a string'):
        run(target_model=value)


def test_model_ref_empty_target_rejected_empty_optional_ids_mean_not_given():
    with pytest.raises(SpeculativeInputError, match='target_model is empty'):
        run(target_model='')
    # roles template optional ids as '' when unset: that means "not given", not an error
    result = run(eagle3_head='', draft_model='')
    assert result['model'] == LLAMA_HEAD and result['model_source'] == 'catalogue'


# --- hostile inputs (issue 9) ------------------------------------------------------------------

@pytest.mark.parametrize('version', ['0.20.1; rm -rf /', '0.20.1 && reboot', '0.20.1\nExecStartPre=/bin/sh',
                                     '0.20.1garbage', '0.20.1-%n', '0.20.1' + 'x' * 5000])
def test_runtime_version_trailing_garbage_is_an_error(version):
    with pytest.raises(SpeculativeInputError) as err:
        run(vllm_version=version)
    text = str(err.value)
    assert 'vllm_version' in text and 'such as' in text and len(text) < 600


def test_runtime_version_helpers_come_from_version_module():
    from ansible_collections.jetson_llm.vllm.plugins.module_utils import _version
    assert C._at_least((0, 20), (0, 20, 0)) is True
    assert C._at_least((0, 19, 9), (0, 20)) is False
    assert _version.parse_version_strict('v0.20.1rc1+cpu') == (0, 20, 1)
    with pytest.raises(ValueError):
        _version.parse_version_strict('0.20.1; rm -rf /')


def test_num_speculative_tokens_is_capped_at_the_documented_maximum():
    cap = P.MAX_NUM_SPECULATIVE_TOKENS
    assert run(num_speculative_tokens=cap, measured_acceptance_rate=0.9)['num_speculative_tokens'] == cap
    for value in (cap + 1, 1000000000):
        with pytest.raises(SpeculativeInputError) as err:
            run(num_speculative_tokens=value, measured_acceptance_rate=0.9)
        assert 'num_speculative_tokens must be <= %s' % cap in str(err.value)


# --- TPOT must be the bottleneck (baseline_benchmark) ------------------------------------------

@pytest.mark.parametrize('ttft, e2e, enable', [
    (180.0, 2900.0, True),      # Thor, Llama 3.1 8B, 2048 in / 128 out: decode-bound
    (1450.0, 2900.0, True),     # exactly half: not dominated
    (1451.0, 2900.0, False),    # TTFT dominates
    (2800.0, 2900.0, False),
])
def test_ttft_dominated_workload_refused(ttft, e2e, enable):
    result = run(baseline_benchmark=baseline_benchmark(ttft, e2e))
    assert result['enable'] is enable
    assert result['ttft_share'] == round(ttft / e2e, 4)
    if not enable:
        assert result['refused_by'] == ['workload']
        assert 'TTFT dominates' in result['reasons'][0] and 'does not reduce TTFT-dominated latency' in \
            result['reasons'][0]


def test_ttft_threshold_is_an_option_and_registered_results_are_accepted():
    bench = baseline_benchmark(2000.0, 2900.0, registered=True)
    assert run(baseline_benchmark=bench)['enable'] is False
    assert run(baseline_benchmark=bench, max_ttft_share=0.8)['enable'] is True
    assert P.PLAN_DEFAULTS['max_ttft_share'] == 0.5


def test_ttft_without_baseline_benchmark_warns():
    result = run(baseline_benchmark=None)
    assert result['enable'] is True and result['ttft_share'] is None
    assert any('No baseline_benchmark given' in w for w in result['warnings'])


@pytest.mark.parametrize('bench, words', [
    ('fast', 'baseline_benchmark must be a vllm_benchmark result'),
    ({'config': {}, 'runs': []}, 'no runs'),
    (dict(baseline_benchmark(), runs=[{'concurrency': 8, 'failed': 0, 'ttft_ms_p50': 1.0,
                                       'e2e_latency_ms_p50': 2.0}], config={'concurrency': [8]}), 'concurrency 1'),
    (baseline_benchmark(ttft=float('nan')), 'ttft_ms_p50'),
    (baseline_benchmark(e2e=0), 'e2e_latency_ms_p50'),
    (baseline_benchmark(ttft=3000.0, e2e=2900.0), 'not a consistent result'),
])
def test_ttft_baseline_benchmark_validated(bench, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(baseline_benchmark=bench)


@pytest.mark.parametrize('value', [0, 1.5, float('inf'), 'half'])
def test_ttft_share_option_validated(value):
    with pytest.raises(SpeculativeInputError, match='max_ttft_share'):
        run(max_ttft_share=value)


# --- start-up failures: the next step ----------------------------------------------------------

def oom(gmu, model=LLAMA_HEAD):
    return {'failure': 'oom', 'gpu_memory_utilization': gmu, 'model': model}


def test_startup_kv_cache_shortage_goes_to_the_smaller_draft_never_to_a_lower_utilisation():
    result = run(previous_attempt={'failure': 'kv_cache', 'gpu_memory_utilization': 0.70, 'model': LLAMA_HEAD},
                 smaller_draft_model='/models/small-draft')
    assert result['next_step'] == 'smaller_draft' and result['gpu_memory_utilization'] == 0.70
    assert any('would leave even less' in r for r in result['reasons']), result['reasons']


def test_startup_kv_cache_shortage_without_a_smaller_draft_refuses_naming_max_model_len():
    result = run(previous_attempt={'failure': 'kv_cache', 'gpu_memory_utilization': 0.70, 'model': LLAMA_HEAD})
    assert result['enable'] is False and result['next_step'] == 'none' and result['refused_by'] == ['startup']
    assert any('--max-model-len' in r for r in result['reasons']), result['reasons']
    assert 'smaller_draft' in result['handoff']['actions'] and 'lower_gpu_memory_utilization' not in result['handoff']['actions']
    # The smaller draft failed the same way: refused, not retried.
    again = run(previous_attempt={'failure': 'kv_cache', 'gpu_memory_utilization': 0.70, 'model': '/models/small-draft'},
                smaller_draft_model='/models/small-draft')
    assert again['enable'] is False and again['next_step'] == 'none'


def test_startup_first_attempt():
    result = run()
    assert result['next_step'] == 'first_attempt' and result['gpu_memory_utilization'] == 0.70


def test_startup_oom_once_lowers_one_more_step():
    result = run(previous_attempt=oom(0.70), smaller_draft_model='acme/tiny-draft')
    assert result['enable'] is True and result['next_step'] == 'lower_gpu_memory_utilization'
    assert result['gpu_memory_utilization'] == 0.65
    assert result['method'] == 'eagle3' and result['model'] == LLAMA_HEAD


def test_startup_oom_twice_uses_the_smaller_draft_at_the_lowered_value():
    result = run(previous_attempt=oom(0.65), smaller_draft_model='Qwen/Qwen3-0.6B', target_model='Qwen/Qwen3-8B')
    assert result['enable'] is True and result['next_step'] == 'smaller_draft'
    assert result['gpu_memory_utilization'] == 0.65
    assert result['method'] == 'draft_model' and result['model'] == 'Qwen/Qwen3-0.6B'
    assert result['speculative_config']['model'] == 'Qwen/Qwen3-0.6B'


def test_startup_oom_with_the_smaller_draft_refuses_with_memory_tuning():
    result = run(previous_attempt=oom(0.65, 'Qwen/Qwen3-0.6B'), smaller_draft_model='Qwen/Qwen3-0.6B',
                 target_model='Qwen/Qwen3-8B')
    assert result['enable'] is False and result['next_step'] == 'none'
    assert result['refused_by'] == ['startup']
    assert result['handoff']['actions'] == ['memory_tuning', 'no_speculation']


def test_startup_oom_without_smaller_draft_refuses_after_the_lower_step():
    result = run(previous_attempt=oom(0.65))
    assert result['enable'] is False and result['next_step'] == 'none'
    assert result['handoff']['actions'] == ['memory_tuning', 'smaller_draft', 'no_speculation']


def test_startup_oom_lower_step_skipped_below_the_floor():
    result = run(baseline_gpu_memory_utilization=0.55, previous_attempt=oom(0.50), smaller_draft_model='acme/tiny')
    assert result['next_step'] == 'smaller_draft' and result['gpu_memory_utilization'] == 0.50
    assert 'below the floor' in ' '.join(result['reasons'])


def test_startup_config_rejected_rechecks_the_runtime_rule():
    clean = run(previous_attempt={'failure': 'config_rejected'})
    assert clean['enable'] is False and clean['refused_by'] == ['startup'] and clean['next_step'] == 'none'
    assert 'runtime rule finds nothing wrong' in clean['reasons'][0]
    assert 'non-speculative command' in clean['handoff']['summary']
    old = run(previous_attempt={'failure': 'config_rejected'}, vllm_version='0.14.1')
    assert old['refused_by'] == ['runtime', 'startup'] and 'upgrade_vllm' in old['handoff']['actions']


@pytest.mark.parametrize('failure', ['engine_init', 'crash_loop', 'early_exit', 'timeout'])
def test_startup_other_failures_refuse_with_a_handoff(failure):
    result = run(previous_attempt={'failure': failure, 'gpu_memory_utilization': 0.7})
    assert result['enable'] is False and result['refused_by'] == ['startup'] and result['next_step'] == 'none'
    assert result['handoff']['actions'][-1] == 'no_speculation'
    assert result['reasons'], 'a refusal says why'


def test_every_failure_vllm_health_reports_is_a_valid_previous_attempt():
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.startup_failures import FAILURE_KINDS
    for failure in FAILURE_KINDS:
        result = run(previous_attempt={'failure': failure, 'gpu_memory_utilization': 0.7})
        assert result['next_step'] in ('lower_gpu_memory_utilization', 'smaller_draft', 'none'), failure


@pytest.mark.parametrize('attempt, words', [
    ('oom', 'previous_attempt must be a dictionary'),
    ({'failure': 'OOM'}, 'previous_attempt.failure must be one of config_rejected, kv_cache, oom'),
    ({'failure': 'oom'}, 'previous_attempt.gpu_memory_utilization must be a number'),
    ({'failure': 'oom', 'gpu_memory_utilization': float('nan')}, 'must be a finite number'),
    ({'failure': 'oom', 'gpu_memory_utilization': 0.7, 'model': 'a b'}, 'previous_attempt.model'),
    ({'failure': 'oom', 'gpu_memory_utilization': 0.7, 'retries': 2}, 'unknown keys'),
    ({'failure': 'oom', 'gpu_memory_utilization': 0.9}, 'is above the baseline 0.75'),
])
def test_startup_previous_attempt_validated(attempt, words):
    with pytest.raises(SpeculativeInputError, match=words):
        run(previous_attempt=attempt)


def test_startup_lower_gpu_memory_utilization_is_a_handoff_action():
    assert 'lower_gpu_memory_utilization' in P.HANDOFF_ACTIONS


# --- draft size estimate -----------------------------------------------------------------------

def test_draft_size_estimated_from_the_catalogue():
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import DRAFT_SIZE_MB
    result = run(draft_size_mb=None)
    assert result['draft_size_mb'] == DRAFT_SIZE_MB[LLAMA_HEAD.lower()]
    assert result['draft_size_source'] == 'catalogue'
    assert not any('cannot be checked' in w for w in result['warnings'])
    assert run(draft_size_mb=1234)['draft_size_source'] == 'option'


def test_draft_size_measured_for_a_local_path(tmp_path):
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.draft_size import weights_size_mb
    (tmp_path / 'model.safetensors').write_bytes(b'\0' * (3 * 1024 * 1024 + 1))
    (tmp_path / 'README.md').write_bytes(b'\0' * (50 * 1024 * 1024))  # not weights
    assert weights_size_mb(str(tmp_path)) == 4
    result = run(draft_size_mb=None, method='draft_model', draft_model=str(tmp_path), measure_path=weights_size_mb)
    assert result['draft_size_mb'] == 4 and result['draft_size_source'] == 'weights'
    assert weights_size_mb(str(tmp_path / 'missing')) is None


@pytest.mark.parametrize('kwargs', [dict(target_model='acme/' + 'x' * 10000), dict(runtime_image='img:' + 'y' * 10000),
                                    dict(jetson=list(range(5000))), dict(extra_config={'k' * 10000: 1})])
def test_long_values_are_never_echoed_whole(kwargs):
    with pytest.raises(SpeculativeInputError) as err:
        run(**kwargs)
    text = str(err.value)
    assert len(text) <= C.SpeculativeInputError.__init__.__globals__['MAX_MESSAGE_CHARS'] + 20
    assert 'x' * 200 not in text and 'y' * 200 not in text and 'k' * 200 not in text


def test_startup_step_reasons_name_only_the_value_used():
    result = run(previous_attempt=oom(0.70))
    assert not any(r.startswith('gpu_memory_utilization lowered from 0.75 to 0.70') for r in result['reasons'])
    assert any('next, one step lower, 0.65' in r for r in result['reasons'])


@pytest.mark.parametrize('extra', [{'quantization': 'fp8\n'}, {'revision': 'main\n'}, {'code_revision': 'v1\n'}])
def test_config_values_with_a_trailing_newline_rejected(extra):
    """Python's ``$`` matches before a final newline; the checks anchor with ``\\Z``."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import validate_extra_config
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError
    with pytest.raises(SpeculativeInputError):
        validate_extra_config(extra, 'draft_model', (0, 32, 0), 4, 1)


def test_local_model_config_is_read_safely(tmp_path):
    """The module's read_model_config: a config.json that is a regular JSON object, else None (never blocks)."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import draft_size as DS
    good = tmp_path / 'good'
    good.mkdir()
    (good / 'config.json').write_text(json.dumps(MTP_CONFIG))
    assert DS.local_model_config(str(good)) == MTP_CONFIG
    cases = {'missing': None, 'list': '[1, 2]', 'bad-json': '{"num_nextn', 'binary': b'\xff\xfe{}'}
    for name, content in cases.items():
        path = tmp_path / name
        path.mkdir()
        if isinstance(content, bytes):
            (path / 'config.json').write_bytes(content)
        elif content is not None:
            (path / 'config.json').write_text(content)
        assert DS.local_model_config(str(path)) is None, name
    fifo = tmp_path / 'fifo'
    fifo.mkdir()
    os.mkfifo(str(fifo / 'config.json'))   # opened non-blocking and refused: no writer, no hang
    assert DS.local_model_config(str(fifo)) is None
    big = tmp_path / 'big'
    big.mkdir()
    with open(str(big / 'config.json'), 'wb') as handle:
        handle.truncate(DS.MAX_CONFIG_BYTES + 1)
    assert DS.local_model_config(str(big)) is None
    directory = tmp_path / 'dir'
    (directory / 'config.json').mkdir(parents=True)
    assert DS.local_model_config(str(directory)) is None
    # Through the plan: the module's reader plans mtp from the real file
    result = run(target_model=str(good), vllm_version='0.32.0', read_model_config=DS.local_model_config)
    assert result['method'] == 'mtp' and result['model_source'] == 'config.json'


# --- docs/decision-rules.md's method x family x vLLM version table is what plan() answers -----------------------

TABLE_VERSIONS = ('0.10.2', '0.11.0', '0.12.0', '0.15.0', '0.20.1')
TABLE_FAMILIES = (('Thor', 'thor-t5000'), ('AGX Orin (L4T r36, NVIDIA-AI-IOT image)', 'orin-agx-64gb'),
                  ('AGX Orin (L4T r39+, upstream vLLM)', 'orin-agx-r39'), ('Orin NX / Nano', 'orin-nano-8gb'),
                  ('Xavier', 'xavier-agx'))
TABLE_METHODS = ('eagle3', 'draft_model', 'mtp', 'ngram', 'suffix', 'dflash')
TABLE_HEADER = '| Family | Method | ' + ' | '.join('vLLM %s' % v for v in TABLE_VERSIONS) + ' |'


def method_table_cell(device, method, version):
    kwargs = {'eagle3_head': '/srv/models/head', 'draft_model': '/srv/models/draft', 'target_model': UNLISTED}
    if method == 'mtp':
        kwargs = {'target_model': 'Qwen/Qwen3-Next-80B-A3B-Instruct'}
    if device == 'orin-agx-r39':
        kwargs['runtime_image'] = UPSTREAM_IMAGE
    result = run(device, method=method, vllm_version=version, **kwargs)
    return 'plans' if result['enable'] else 'refused (%s)' % ', '.join(result['refused_by'])


def method_table_markdown():
    lines = [TABLE_HEADER, '|' + '---|' * (2 + len(TABLE_VERSIONS))]
    for label, device in TABLE_FAMILIES:
        for method in TABLE_METHODS:
            cells = [method_table_cell(device, method, v) for v in TABLE_VERSIONS]
            lines.append('| %s | `%s` | %s |' % (label, method, ' | '.join(cells)))
    return '\n'.join(lines)


def test_the_docs_method_table_is_what_the_plan_answers():
    with open(os.path.join(TOP, 'docs', 'decision-rules.md')) as handle:
        text = handle.read()
    assert TABLE_HEADER in text, 'docs/decision-rules.md lacks the method table; print method_table_markdown()'
    start = text.index(TABLE_HEADER)
    documented = text[start:text.index('\n\n', start)]
    assert documented == method_table_markdown(), 'the method table in docs/decision-rules.md is stale'


# --- Qwen3.5 / Qwen3.6 by hub id: MTP from their family (catalogue.MTP_FAMILIES, checked in vLLM's sdists) -------
@pytest.mark.parametrize('target, version, orin', [
    ('Qwen/Qwen3.6-27B', '0.32.0', False),    # Jetson AI Lab's Thor recipe: {"method":"mtp","num_speculative_tokens":4}
    ('Qwen/Qwen3.6-35B-A3B', '0.21.0', False),
    ('Qwen/Qwen3.5-4B', '0.17.0', True),      # Thor needs 0.20+; an Orin on its NVIDIA-AI-IOT image runs 0.17
    ('qwen/qwen3.5-27b-fp8', '0.32.0', False),
])
def test_qwen3_5_and_3_6_hub_ids_are_planned_as_mtp(target, version, orin):
    device = dict(jetson=facts('orin-agx-64gb'), runtime_image=ORIN_IMAGE) if orin else {}
    result = run(target_model=target, vllm_version=version, **device)
    assert result['method'] == 'mtp' and result['model_source'] == 'catalogue', result['reasons']
    assert result['speculative_config']['method'] == 'mtp'
    assert not any('No published EAGLE-3 head' in reason for reason in result['reasons'])


@pytest.mark.parametrize('target, version, minimum', [
    ('Qwen/Qwen3.5-4B', '0.16.0', '0.17.0'),     # 0.16.0 has no qwen3_5 code at all
    ('Qwen/Qwen3.6-27B', '0.20.0', '0.21.0'),    # vLLM names Qwen3.6 from 0.21.0
])
def test_qwen3_5_and_3_6_on_a_vllm_before_their_mtp_are_not_planned_as_mtp(target, version, minimum):
    auto = run(target_model=target, vllm_version=version, jetson=facts('orin-agx-64gb'), runtime_image=ORIN_IMAGE)
    assert auto['method'] != 'mtp'
    assert any('predates method mtp for its family (%s+)' % minimum in w for w in auto['warnings']), auto['warnings']
    asked = run(target_model=target, method='mtp', vllm_version=version, jetson=facts('orin-agx-64gb'),
                runtime_image=ORIN_IMAGE)
    assert refused(asked, 'runtime')
    assert any('does not know method mtp for this model (it first ships in %s)' % minimum in r
               for r in asked['reasons']), asked['reasons']


def test_an_exact_catalogue_entry_wins_over_the_family_and_other_qwen3_ids_are_not_a_family():
    catalogue = {'Qwen/Qwen3.5-4B': {'eagle3_head': 'acme/qwen3.5-4b-eagle3', 'mtp': False}}
    result = run(target_model='Qwen/Qwen3.5-4B', vllm_version='0.32.0', catalogue=catalogue)
    assert result['method'] == 'eagle3' and result['model'] == 'acme/qwen3.5-4b-eagle3'
    assert run(target_model='Qwen/Qwen3-8B', vllm_version='0.32.0')['method'] == 'eagle3'
