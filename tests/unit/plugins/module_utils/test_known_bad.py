# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The known-bad vLLM version table (_decision/known_bad.py), the plan's warnings from it, and its docs table."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import known_bad as KB
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import plan as P
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.draft_size import local_model_config

from ansible_collections.jetson_llm.vllm.tests.unit.plugins.module_utils.test_speculative_plan import LLAMA_HEAD, run

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
HEADER = '| Entry | Methods | Affected | Fixed in | vLLM issue / fix | Checked in |'


def docs_rows():
    with open(os.path.join(TOP, 'docs', 'decision-rules.md')) as handle:
        text = handle.read()
    assert HEADER in text
    rows = []
    for line in text[text.index(HEADER):].splitlines()[2:]:
        if not line.startswith('|'):
            break
        rows.append([c.strip() for c in line.strip().strip('|').split('|')])
    return rows


def test_the_docs_table_is_the_known_bad_table():
    expected = [[e['id'], ', '.join(e['methods']),
                 'every release before %s that has the method' % '.'.join(map(str, e['fixed_in'])),
                 '.'.join(map(str, e['fixed_in'])), '%s / %s' % (e['issue'], e['fix']), e['checked']]
                for e in KB.KNOWN_BAD]
    assert docs_rows() == expected


@pytest.mark.parametrize('version, warned', [
    ('0.20.1', True), ('0.24.0', True), ('0.26.0', True), ('0.26.9', True),
    ('0.27.0rc1', False),  # a pre-release compares as its release (_version.parse_version), as the runtime rule does
    ('0.27.0', False), ('0.32.0', False),
])
def test_eagle3_before_0_27_is_warned_with_the_head_s_positions(version, warned):
    result = run(vllm_version=version)
    assert result['enable'] is True and result['method'] == 'eagle3'
    texts = [w for w in result['warnings'] if 'vllm#48894' in w]
    assert bool(texts) is warned, result['warnings']
    if warned:
        assert texts[0].startswith('vLLM %s predates the fix of vllm#48894 (vllm#49343, in 0.27.0)' % version.split('rc')[0])
        assert '(%s: 2048, published)' % LLAMA_HEAD in texts[0] and '2176' in texts[0]


def test_an_unknown_version_may_be_affected():
    result = run(vllm_version=None)
    assert any(w.startswith('The vLLM version is unknown, so it may predate the fix of vllm#48894')
               for w in result['warnings']), result['warnings']


def test_other_methods_are_not_concerned():
    for method, extra in (('draft_model', {}), ('ngram', {}), ('mtp', {'target_model': 'Qwen/Qwen3-Next-80B-A3B-Instruct'})):
        result = run('orin-agx-r39', method=method, vllm_version='0.24.0', **extra)
        assert result['method'] == method, result
        assert not [w for w in result['warnings'] if 'vllm#48894' in w], (method, result['warnings'])


def test_a_local_head_s_config_json_gives_its_positions(tmp_path):
    head = tmp_path / 'head'
    head.mkdir()
    (head / 'config.json').write_text(json.dumps({'architectures': ['LlamaForCausalLMEagle3'],
                                                  'max_position_embeddings': 4096}))
    result = run(eagle3_head=str(head), vllm_version='0.26.0', read_model_config=local_model_config)
    texts = [w for w in result['warnings'] if 'vllm#48894' in w]
    assert len(texts) == 1 and '(%s: 4096, config.json)' % head in texts[0]
    # without a readable config.json (a FIFO is not read) the warning stands, without a number
    fifo = tmp_path / 'fifo-head'
    fifo.mkdir()
    os.mkfifo(str(fifo / 'config.json'))
    result = run(eagle3_head=str(fifo), vllm_version='0.26.0', read_model_config=local_model_config)
    texts = [w for w in result['warnings'] if 'vllm#48894' in w]
    assert len(texts) == 1 and 'max_position_embeddings, so positions' in texts[0]


@pytest.mark.parametrize('config, expected', [
    ({'max_position_embeddings': 2048}, (2048, 'config.json')),
    ({'max_position_embeddings': True}, (None, None)),
    ({'max_position_embeddings': -1}, (None, None)),
    ({'max_position_embeddings': '2048'}, (None, None)),
    ('not a dict', (None, None)),
])
def test_draft_positions_from_a_config_are_checked(config, expected):
    assert KB.draft_max_positions('/models/head', config) == expected


def test_published_positions_are_looked_up_case_insensitively():
    assert KB.draft_max_positions('YuHuiLi/EAGLE3-LLaMA3.1-Instruct-8B') == (2048, 'published')
    assert KB.draft_max_positions('acme/unknown-head') == (None, None)
    assert KB.draft_max_positions(None) == (None, None)


def test_every_entry_is_well_formed():
    for entry in KB.KNOWN_BAD:
        assert set(entry) == {'id', 'methods', 'fixed_in', 'issue', 'fix', 'checked', 'text'}
        assert set(entry['methods']) <= set(P.METHODS) | {'eagle'}
        assert entry['text'] % {'lead': 'x', 'detail': ''}
