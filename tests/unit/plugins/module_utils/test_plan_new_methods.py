# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan for vLLM's newer drafting methods: DFlash, Gemma 4's MTP assistant, parallel drafting (P-EAGLE), and
which model runner runs a method per vLLM version (docs/decision-rules.md's facts table names the sources)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import model_runner as MR
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError

from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils.test_speculative_plan import (
    config_reader, facts, refused, run)

QWEN3_8B = 'Qwen/Qwen3-8B'
DFLASH_DRAFT = 'z-lab/Qwen3-8B-DFlash-b16'
GEMMA4 = 'google/gemma-4-E4B-it'
ASSISTANT = 'google/gemma-4-E4B-it-assistant'


# --- DFlash ---------------------------------------------------------------------------------------

def test_dflash_asked_for_with_its_draft_is_planned_with_a_model_key_and_a_memory_step():
    result = run(target_model=QWEN3_8B, method='dflash', draft_model=DFLASH_DRAFT, vllm_version='0.32.0')
    assert result['enable'] is True, result['reasons']
    assert result['method'] == 'dflash' and result['model'] == DFLASH_DRAFT and result['model_source'] == 'option'
    assert result['speculative_config'] == {'method': 'dflash', 'model': DFLASH_DRAFT, 'num_speculative_tokens': 5,
                                            'draft_tensor_parallel_size': 1}
    assert result['gpu_memory_utilization'] == 0.70 and result['draft_size_mb'] == 1000
    assert result['model_runner'] == 'v2'
    assert any('DFlash on a Jetson is not verified' in w and 'FLASH_ATTN or FLEX_ATTENTION' in w
               for w in result['warnings']), result['warnings']


def test_dflash_without_a_draft_is_refused_naming_what_to_pass():
    result = run(target_model=QWEN3_8B, method='dflash', vllm_version='0.32.0')
    assert refused(result, 'method')
    assert 'no draft_model is given' in result['reasons'][0] and 'z-lab/Qwen3-8B-DFlash-b16' in result['reasons'][0]


@pytest.mark.parametrize('version, enable', [('0.19.1', False), ('0.20.0', True), ('0.34.0', True)])
def test_dflash_needs_vllm_0_20(version, enable):
    result = run(target_model=QWEN3_8B, method='dflash', draft_model=DFLASH_DRAFT, vllm_version=version)
    assert result['enable'] is enable, result['reasons']
    if not enable:
        assert refused(result, 'runtime') and 'does not know method dflash' in result['reasons'][-1]


@pytest.mark.parametrize('config, problem', [
    ({'architectures': ['DFlashDraftModel'], 'dflash_config': {'mask_token_id': 151669}}, None),
    ({'speculators_model_type': 'dflash', 'speculators_config': {}}, None),
    ({'architectures': ['LlamaForCausalLM']}, 'no dflash_config.mask_token_id'),
    ({'architectures': ['DFlashDraftModel'], 'dflash_config': {}}, 'no dflash_config.mask_token_id'),
    ({'speculators_model_type': 'eagle3', 'speculators_config': {}}, "speculators checkpoint of type 'eagle3'"),
])
def test_a_local_dflash_draft_is_checked_as_vllm_checks_it(config, problem):
    result = run(target_model=QWEN3_8B, method='dflash', draft_model='/srv/models/dflash', vllm_version='0.32.0',
                 read_model_config=config_reader({'/srv/models/dflash': config}))
    if problem is None:
        assert result['enable'] is True, result['reasons']
    else:
        assert refused(result, 'method') and problem in result['reasons'][0], result['reasons']


def test_auto_never_picks_dflash():
    result = run(target_model=QWEN3_8B, vllm_version='0.32.0')
    assert result['method'] == 'eagle3'


def test_dflash_on_an_orin_nano_needs_allow_small_devices_like_any_draft():
    result = run('orin-nano-8gb', target_model=QWEN3_8B, method='dflash', draft_model=DFLASH_DRAFT)
    assert refused(result, 'family')


def test_parallel_drafting_is_refused_for_dflash_which_always_drafts_in_parallel():
    with pytest.raises(SpeculativeInputError, match="'parallel_drafting' does not apply to dflash"):
        run(target_model=QWEN3_8B, method='dflash', draft_model=DFLASH_DRAFT, vllm_version='0.32.0',
            extra_config={'parallel_drafting': True})


# --- Gemma 4: method mtp with its assistant -------------------------------------------------------

def test_gemma4_assistant_given_as_draft_with_method_mtp_is_planned_as_mtp_with_a_model_key():
    result = run(target_model=GEMMA4, method='mtp', draft_model=ASSISTANT, vllm_version='0.32.0')
    assert result['enable'] is True, result['reasons']
    assert result['speculative_config'] == {'method': 'mtp', 'model': ASSISTANT, 'num_speculative_tokens': 4}
    assert result['model'] == ASSISTANT and result['draft_size_mb'] == 1000  # sized as a draft
    assert any('transformers (5.8+' in w for w in result['warnings']), result['warnings']


def test_auto_with_a_gemma4_assistant_as_draft_plans_mtp_not_a_generic_draft():
    result = run(target_model=GEMMA4, draft_model=ASSISTANT, vllm_version='0.32.0')
    assert result['method'] == 'mtp' and result['speculative_config']['model'] == ASSISTANT
    assert any('Gemma 4 assistant' in g for g in result['reasons'])


@pytest.mark.parametrize('model_type, version, enable', [
    ('gemma4_assistant', '0.20.2', False),          # 0.20.2 raises "Unsupported speculative method: 'mtp'"
    ('gemma4_assistant', '0.21.0', True),
    ('gemma4_unified_assistant', '0.22.1', False),  # the 12B's assistant: 0.23.0+
    ('gemma4_unified_assistant', '0.23.0', True),
])
def test_gemma4_assistants_need_the_vllm_release_that_reads_them(model_type, version, enable):
    reader = config_reader({'/srv/models/assistant': {'model_type': model_type}})
    result = run(target_model=GEMMA4, method='mtp', draft_model='/srv/models/assistant', vllm_version=version,
                 read_model_config=reader)
    assert result['enable'] is enable, result['reasons']
    if not enable:
        assert refused(result, 'runtime') and 'does not know method mtp for this model' in result['reasons'][-1]


@pytest.mark.parametrize('draft, configs', [
    ('/srv/models/draft', {'/srv/models/draft': {'model_type': 'llama'}}),   # a local generic draft
    ('Qwen/Qwen3-0.6B', {}),                                                  # a hub id that names no assistant
])
def test_method_mtp_with_a_draft_that_is_no_mtp_drafter_ignores_it_and_drafts_with_the_targets_layers(draft, configs):
    result = run(target_model='deepseek-ai/DeepSeek-V3', method='mtp', draft_model=draft, vllm_version='0.32.0',
                 read_model_config=config_reader(configs))
    assert result['enable'] is True, result['reasons']
    assert result['speculative_config'] == {'method': 'mtp', 'num_speculative_tokens': 4}
    assert result['model'] is None
    assert any('draft_model are ignored' in w for w in result['warnings']), result['warnings']


@pytest.mark.parametrize('target, configs', [
    (QWEN3_8B, {}),
    ('/srv/models/llama', {'/srv/models/llama': {'model_type': 'llama'}}),
])
def test_a_gemma4_assistant_for_a_target_that_is_not_gemma4_is_refused(target, configs):
    result = run(target_model=target, method='mtp', draft_model=ASSISTANT, vllm_version='0.32.0',
                 read_model_config=config_reader(configs))
    assert refused(result, 'method') and 'is not a Gemma 4 model' in result['reasons'][0], result['reasons']
    result = run(target_model=target, draft_model=ASSISTANT, vllm_version='0.32.0',
                 read_model_config=config_reader(configs))
    assert refused(result, 'method'), 'auto planned an assistant for another model'


def test_auto_with_a_head_and_an_assistant_uses_the_assistant_and_says_so():
    result = run(target_model=GEMMA4, eagle3_head='/srv/models/head', draft_model=ASSISTANT, vllm_version='0.32.0')
    assert result['method'] == 'mtp' and result['speculative_config']['model'] == ASSISTANT
    assert any('the assistant is used (method mtp)' in w for w in result['warnings']), result['warnings']


def test_auto_on_a_small_orin_never_plans_an_assistant_as_a_generic_draft():
    result = run('orin-nano-8gb', target_model=GEMMA4, draft_model=ASSISTANT, allow_small_devices=True,
                 vllm_version='0.32.0')
    assert result['method'] == 'mtp' and result['speculative_config']['method'] == 'mtp', result['reasons']


def test_an_assistant_drafts_its_own_k_not_rounded_to_the_targets_mtp_layers():
    reader = config_reader({'/srv/models/gemma4': {'model_type': 'gemma4', 'num_nextn_predict_layers': 3},
                            '/srv/models/assistant': {'model_type': 'gemma4_assistant'}})
    result = run(target_model='/srv/models/gemma4', method='mtp', draft_model='/srv/models/assistant',
                 vllm_version='0.32.0', read_model_config=reader)
    assert result['num_speculative_tokens'] == 4, result['reasons']


@pytest.mark.parametrize('method, draft, smaller, expected', [
    ('dflash', DFLASH_DRAFT, 'z-lab/Qwen3-4B-DFlash-b16', 'dflash'),
    ('mtp', ASSISTANT, 'google/gemma-4-E2B-it-assistant', 'mtp'),
    ('auto', ASSISTANT, 'google/gemma-4-E2B-it-assistant', 'mtp'),
    ('draft_model', '/srv/models/draft', '/srv/models/smaller', 'draft_model'),
])
def test_the_smaller_draft_after_an_out_of_memory_start_keeps_the_kind_of_draft(method, draft, smaller, expected):
    target = GEMMA4 if 'gemma' in draft else QWEN3_8B
    previous = {'failure': 'kv_cache', 'gpu_memory_utilization': 0.70, 'model': draft}
    result = run(target_model=target, method=method, draft_model=draft, smaller_draft_model=smaller,
                 vllm_version='0.32.0', previous_attempt=previous)
    assert result['next_step'] == 'smaller_draft', result['reasons']
    assert result['speculative_config']['method'] == expected and result['speculative_config']['model'] == smaller


def test_an_unknown_vllm_version_names_the_methods_own_minimum():
    result = run(target_model=QWEN3_8B, method='dflash', draft_model=DFLASH_DRAFT, vllm_version=None)
    assert any('0.20 for method dflash' in w for w in result['warnings']), result['warnings']
    result = run(target_model=GEMMA4, method='mtp', draft_model=ASSISTANT, vllm_version=None)
    assert any('0.21 for method mtp with this model' in w for w in result['warnings']), result['warnings']


# --- parallel drafting (P-EAGLE) --------------------------------------------------------------------

def test_parallel_drafting_for_an_eagle3_head_runs_on_v1_from_0_16_to_0_33_with_a_warning():
    result = run(vllm_version='0.32.0', extra_config={'parallel_drafting': True})
    assert result['enable'] is True
    assert result['speculative_config']['parallel_drafting'] is True
    assert result['model_runner'] == 'v1'
    assert any('P-EAGLE' in w for w in result['warnings'])
    assert any('falls back to the V1 runner' in w for w in result['warnings'])


@pytest.mark.parametrize('version, match', [
    ('0.34.0', 'refused by vLLM 0.34.0 for method eagle3'),
    ('0.15.1', 'needs vLLM >= 0.16'),
    (None, 'needs vLLM >= 0.16'),
])
def test_parallel_drafting_outside_the_releases_that_run_it_is_an_input_error(version, match):
    with pytest.raises(SpeculativeInputError, match=match):
        run(vllm_version=version, extra_config={'parallel_drafting': True})


def test_parallel_drafting_false_on_0_34_is_deprecated_not_refused_by_vllm_and_left_out():
    with pytest.raises(SpeculativeInputError, match=r'deprecated by vLLM 0\.34\.0 \("has no effect"'):
        run(vllm_version='0.34.0', extra_config={'parallel_drafting': False})


def test_parallel_drafting_must_be_a_boolean():
    with pytest.raises(SpeculativeInputError, match='must be true or false'):
        run(vllm_version='0.32.0', extra_config={'parallel_drafting': 'yes'})


# --- which model runner -----------------------------------------------------------------------------

@pytest.mark.parametrize('method, version, parallel, runner, fallback', [
    ('eagle3', (0, 20, 1), False, 'v1', False),       # V2 opt-in only (VLLM_USE_V2_MODEL_RUNNER=1)
    ('eagle3', (0, 25, 0), False, 'depends', False),  # V2 the default for some models
    ('draft_model', (0, 25, 0), False, 'v1', True),   # V2 does not run it: vLLM falls back
    ('eagle3', (0, 29, 0), False, 'v2', False),       # V2 the default for all
    ('draft_model', (0, 30, 0), False, 'v1', True),
    ('draft_model', (0, 31, 0), False, 'v2', False),
    ('ngram', (0, 31, 0), False, 'v1', True),
    ('ngram', (0, 32, 0), False, 'v2', False),
    ('suffix', (0, 33, 0), False, 'v1', True),
    ('suffix', (0, 34, 0), False, 'v2', False),       # V1 removed
    ('dflash', (0, 23, 0), False, 'v1', True),
    ('dflash', (0, 24, 0), False, 'depends', False),
    ('eagle3', (0, 32, 0), True, 'v1', True),         # parallel drafting: V1 only
    ('mtp', None, False, 'unknown', False),
])
def test_the_model_runner_of_a_method_per_vllm_version(method, version, parallel, runner, fallback):
    found = MR.runner(method, version, parallel)
    assert (found['runner'], found['fallback']) == (runner, fallback), found
    assert found['text'].endswith('.')


def test_the_plan_names_the_runner_and_warns_when_vllm_falls_back():
    result = run(method='draft_model', draft_model='/srv/models/draft', vllm_version='0.30.0')
    assert result['model_runner'] == 'v1'
    assert any('defaults to Model Runner V2, which does not run draft_model' in w for w in result['warnings'])
    result = run(vllm_version='0.32.0')
    assert result['model_runner'] == 'v2' and any('on Model Runner V2, its default from 0.29' in g
                                                  for g in result['reasons'])


def test_a_refused_plan_names_no_runner():
    result = run('xavier-agx', jetson=facts('xavier-agx'))
    assert result['enable'] is False and result['model_runner'] is None
