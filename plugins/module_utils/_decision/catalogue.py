# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Published EAGLE-3 heads, same-family draft models and targets with MTP layers (private to this collection).

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
- ``mtp``: True when the target checkpoint carries its own multi-token-prediction layers, which vLLM
  0.11+ drafts with as ``{"method": "mtp"}`` (no head or draft to download). For a local target the
  plan reads this from its ``config.json`` instead (``mtp_layers``).
- ``alternatives``: other published heads for the same target (documentation only).

docs/decision-rules.md's catalogue table is tested against this dictionary
(tests/unit/plugins/module_utils/test_catalogue_docs.py): change both together.

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
    'mtp': False,
}

CATALOGUE = {
    'meta-llama/llama-3.1-8b-instruct': _LLAMA_31_8B,
    # The same model under its original repo name.
    'meta-llama/meta-llama-3.1-8b-instruct': _LLAMA_31_8B,
    'meta-llama/llama-3.3-70b-instruct': {
        'eagle3_head': 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B',
        'draft_model': None,
        'alternatives': [],
        'mtp': False,
    },
    'qwen/qwen3-1.7b': {
        'eagle3_head': 'AngelSlim/Qwen3-1.7B_eagle3',
        'draft_model': 'Qwen/Qwen3-0.6B',
        'alternatives': [],
        'mtp': False,
    },
    'qwen/qwen3-4b': {
        'eagle3_head': 'AngelSlim/Qwen3-4B_eagle3',
        'draft_model': None,
        'alternatives': [],
        'mtp': False,
    },
    'qwen/qwen3-8b': {
        'eagle3_head': 'AngelSlim/Qwen3-8B_eagle3',
        'draft_model': 'Qwen/Qwen3-0.6B',
        'alternatives': ['RedHatAI/Qwen3-8B-speculator.eagle3'],
        'mtp': False,
    },
    'qwen/qwen3-14b': {
        'eagle3_head': 'AngelSlim/Qwen3-14B_eagle3',
        'draft_model': None,
        'alternatives': [],
        'mtp': False,
    },
    'qwen/qwen3-32b': {
        'eagle3_head': 'AngelSlim/Qwen3-32B_eagle3',
        'draft_model': None,
        'alternatives': ['RedHatAI/Qwen3-32B-speculator.eagle3'],
        'mtp': False,
    },
    'openai/gpt-oss-20b': {
        'eagle3_head': 'RedHatAI/gpt-oss-20b-speculator.eagle3',
        'draft_model': None,
        'alternatives': [],
        'mtp': False,
    },
}

# Targets whose checkpoints carry MTP layers (their config.json has num_nextn_predict_layers or
# mtp_num_hidden_layers > 0; vLLM's vllm/config/speculative.py maps their model types to its MTP drafters).
_MTP = {'eagle3_head': None, 'draft_model': None, 'alternatives': [], 'mtp': True}
for _target in ('qwen/qwen3-next-80b-a3b-instruct', 'qwen/qwen3-next-80b-a3b-thinking', 'deepseek-ai/deepseek-v3',
                'zai-org/glm-4.5-air', 'xiaomimimo/mimo-7b-rl'):
    CATALOGUE[_target] = dict(_MTP, alternatives=[])

# Families whose every published checkpoint carries MTP layers, matched by the target repo id's prefix (lower-cased),
# with the first vLLM release that drafts with them (``mtp_min_vllm``), checked in vLLM's sdists
# (vllm/config/speculative.py, SpeculativeConfig.hf_config_override):
#   - Qwen3.5: model_type qwen3_5 / qwen3_5_moe -> Qwen3_5MTP / Qwen3_5MoeMTP from 0.17.0 (0.16.0 has no qwen3_5 code);
#     one MTP layer (mtp_num_hidden_layers), so any num_speculative_tokens is accepted.
#   - Qwen3.6: no model type of its own, its checkpoints are qwen3_5 / qwen3_5_moe (vLLM 0.30.0's
#     tests/models/test_qwen3_5_mtp_config.py maps Qwen/Qwen3.6-35B-A3B to Qwen3_5MoeMTP); vLLM's source names it
#     from 0.21.0 on, so 0.21.0 is the minimum here (0.17 to 0.20 were not verified with it).
# An exact CATALOGUE entry wins over a family.
MTP_FAMILIES = (
    ('qwen/qwen3.5-', (0, 17, 0)),
    ('qwen/qwen3.6-', (0, 21, 0)),
)

CATALOGUE_ENTRY_KEYS = ('eagle3_head', 'draft_model', 'mtp')
# The config.json keys that count a checkpoint's MTP layers (top level or under text_config, as in vLLM).
MTP_CONFIG_KEYS = ('num_nextn_predict_layers', 'mtp_num_hidden_layers')

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


def family_entry(target_model):
    """The catalogue entry of a target whose family carries MTP layers (MTP_FAMILIES), with its ``mtp_min_vllm``;
    None for any other target or a path."""
    if not isinstance(target_model, str) or target_model.startswith('/'):
        return None
    lowered = target_model.lower()
    for prefix, minimum in MTP_FAMILIES:
        if lowered.startswith(prefix):
            return dict(_MTP, alternatives=[], mtp_min_vllm=minimum)
    return None


def builtin_catalogue():
    """A deep copy of the shipped catalogue (callers may modify it freely)."""
    return copy.deepcopy(CATALOGUE)


def draft_size_estimate(model):
    """Estimated MB of a catalogued draft's (or EAGLE-3 head's) weights; None when not listed or a path."""
    if model is None or model.startswith('/'):
        return None
    return DRAFT_SIZE_MB.get(model.lower())


def mtp_layers(config):
    """How many MTP layers a model's parsed config.json declares: an int >= 0, or None when it does not say.

    vLLM reads ``num_nextn_predict_layers`` (DeepSeek-V3, GLM-4.5, MiMo, Qwen3-Next, ...) or
    ``mtp_num_hidden_layers`` (Qwen3.5 and later), at the top level or in ``text_config`` (multimodal
    checkpoints). A value that is not a non-negative integer counts as not saying.
    """
    if not isinstance(config, dict):
        return None
    found = None
    for scope in (config, config.get('text_config')):
        if not isinstance(scope, dict):
            continue
        for key in MTP_CONFIG_KEYS:
            value = scope.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                continue
            found = max(found or 0, value)
    return found
