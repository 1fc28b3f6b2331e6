# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Published EAGLE-3 heads and same-family draft models (private to this collection).

Only pairs that are published and documented upstream are listed (see
docs/decision-rules.md). A target that is not listed gets no EAGLE-3 head: the rules say
"do not train one ad hoc"; pass ``eagle3_head`` or ``draft_model`` yourself, or extend the
catalogue with the ``catalogue`` option of ``jetson_llm.vllm.speculative_plan``.

Keys are Hugging Face repo ids of the TARGET model, lower-cased (matching is
case-insensitive). Values:

- ``eagle3_head``: an EAGLE-3 head trained for exactly that target (None when none is
  published).
- ``draft_model``: a small model of the same family that shares the target's tokenizer and
  vocabulary size (None when no pair is documented).
- ``alternatives``: other published heads for the same target (documentation only).

``DRAFT_SIZE_MB`` estimates the memory a draft's weights take (BF16, rounded up), used by
``speculative_plan`` when ``draft_size_mb`` is not given. Same-family draft models: the size of
their published weight files. EAGLE-3 heads: one decoder layer of the target's width, the
3-layer fusion and a 32k-token draft LM head, plus the embeddings where the head ships them,
at 2 bytes per parameter. They are estimates: pass ``draft_size_mb`` when you know better.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

_LLAMA_31_8B = {
    'eagle3_head': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B',
    'draft_model': 'meta-llama/Llama-3.2-1B-Instruct',
    'alternatives': ['RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3'],
}

CATALOGUE = {
    'meta-llama/llama-3.1-8b-instruct': _LLAMA_31_8B,
    # The same model under its original repo name.
    'meta-llama/meta-llama-3.1-8b-instruct': _LLAMA_31_8B,
    'meta-llama/llama-3.3-70b-instruct': {
        'eagle3_head': 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B',
        'draft_model': None,
        'alternatives': [],
    },
    'qwen/qwen3-1.7b': {
        'eagle3_head': 'AngelSlim/Qwen3-1.7B_eagle3',
        'draft_model': 'Qwen/Qwen3-0.6B',
        'alternatives': [],
    },
    'qwen/qwen3-4b': {
        'eagle3_head': 'AngelSlim/Qwen3-4B_eagle3',
        'draft_model': None,
        'alternatives': [],
    },
    'qwen/qwen3-8b': {
        'eagle3_head': 'AngelSlim/Qwen3-8B_eagle3',
        'draft_model': 'Qwen/Qwen3-0.6B',
        'alternatives': ['RedHatAI/Qwen3-8B-speculator.eagle3'],
    },
    'qwen/qwen3-14b': {
        'eagle3_head': 'AngelSlim/Qwen3-14B_eagle3',
        'draft_model': None,
        'alternatives': [],
    },
    'qwen/qwen3-32b': {
        'eagle3_head': 'AngelSlim/Qwen3-32B_eagle3',
        'draft_model': None,
        'alternatives': ['RedHatAI/Qwen3-32B-speculator.eagle3'],
    },
    'openai/gpt-oss-20b': {
        'eagle3_head': 'RedHatAI/gpt-oss-20b-speculator.eagle3',
        'draft_model': None,
        'alternatives': [],
    },
}

CATALOGUE_ENTRY_KEYS = ('eagle3_head', 'draft_model')

# Draft (or EAGLE-3 head) repo id, lower-cased -> estimated weight size in MB (see the docstring).
DRAFT_SIZE_MB = {
    'meta-llama/llama-3.2-1b-instruct': 2400,
    'qwen/qwen3-0.6b': 1500,
    'yuhuili/eagle3-llama3.1-instruct-8b': 1700,
    'redhatai/llama-3.1-8b-instruct-speculator.eagle3': 1700,
    'yuhuili/eagle3-llama3.3-instruct-70b': 3300,
    'angelslim/qwen3-1.7b_eagle3': 900,
    'angelslim/qwen3-4b_eagle3': 1400,
    'angelslim/qwen3-8b_eagle3': 2000,
    'redhatai/qwen3-8b-speculator.eagle3': 2000,
    'angelslim/qwen3-14b_eagle3': 2600,
    'angelslim/qwen3-32b_eagle3': 3600,
    'redhatai/qwen3-32b-speculator.eagle3': 3600,
    'redhatai/gpt-oss-20b-speculator.eagle3': 2000,
}


def builtin_catalogue():
    """A deep copy of the shipped catalogue (callers may modify it freely)."""
    return copy.deepcopy(CATALOGUE)


def draft_size_estimate(model):
    """Estimated MB of a catalogued draft's (or EAGLE-3 head's) weights; None when not listed or a path."""
    if model is None or model.startswith('/'):
        return None
    return DRAFT_SIZE_MB.get(model.lower())
