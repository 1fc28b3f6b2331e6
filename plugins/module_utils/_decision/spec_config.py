# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM ``--speculative-config`` keys and values (private to this collection).

Which SpeculativeConfig keys each method takes in each vLLM version (vllm-speculative-config
facts in docs/decision-rules.md), the validation of ``extra_config`` and the JSON written into
the unit file.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, dumps
from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import version_at_least

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as _devices
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import human_readable_int, last_option_value
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import (
    SpeculativeInputError, _at_least, _is_int, _vstr, check_float, check_int)

# vLLM version minimums (the runtime rule's table is _devices).
MIN_VLLM_SPECULATIVE_CONFIG = _devices.MIN_VLLM_SPECULATIVE_CONFIG
MIN_VLLM_DRAFT_MODEL = _devices.MIN_VLLM_DRAFT_MODEL

# SpeculativeConfig keys: valid in every version this collection supports, and the ones added
# later (key -> first vLLM version that accepts it).
CONFIG_KEYS_ALL_VERSIONS = ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size',
                            'quantization', 'max_model_len', 'revision', 'code_revision',
                            'prompt_lookup_min', 'prompt_lookup_max')
# num_speculative_tokens_per_batch_size: Dynamic SD (vllm PR #32374), first released in 0.24.0 (absent from the 0.23.0
# sdist's vllm/config/speculative.py; 0.24.0's vllm/v1/spec_decode/dynamic/utils.py validates it as 0.32 does).
CONFIG_KEYS_SINCE = {'num_speculative_tokens_per_batch_size': (0, 24)}
# Suffix decoding's keys: vllm/config/speculative.py of the 0.12.0 sdist adds them with method suffix (0.11.0 has
# neither the method nor the keys; 0.32.0 has both unchanged).
SUFFIX_KEYS = ('suffix_decoding_max_tree_depth', 'suffix_decoding_max_cached_requests',
               'suffix_decoding_max_spec_factor', 'suffix_decoding_min_token_prob')
CONFIG_KEYS_SINCE.update((key, (0, 12)) for key in SUFFIX_KEYS)
# ngram's prompt lookup window when neither bound is given: vLLM's own default (min = max = 5, the 0.10.2 and
# later vllm/config SpeculativeConfig.__post_init__), written out so every version runs the same window.
NGRAM_DEFAULT_LOOKUP = 5
# parallel_drafting (P-EAGLE for EAGLE-3 heads, PARD for draft models trained for it): a SpeculativeConfig field from
# 0.16.0 (absent from the 0.15.x wheels' vllm/config/speculative.py); 0.34.0 deprecates it and refuses it for any
# method but dflash and dspark ("parallel_drafting is only supported by the dflash and dspark methods").
CONFIG_KEYS_SINCE['parallel_drafting'] = (0, 16)
# key -> first vLLM version that refuses it (for the methods of CONFIG_KEYS_BY_METHOD that list it).
CONFIG_KEYS_UNTIL = {'parallel_drafting': (0, 34)}
# Keys per method; keys the plan sets itself from its options may not come through extra_config.
CONFIG_KEYS_BY_METHOD = {
    'eagle3': ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization',
               'max_model_len', 'revision', 'code_revision', 'num_speculative_tokens_per_batch_size',
               'parallel_drafting'),
    'draft_model': ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization',
                    'max_model_len', 'revision', 'code_revision', 'num_speculative_tokens_per_batch_size',
                    'parallel_drafting'),
    'ngram': ('method', 'num_speculative_tokens', 'prompt_lookup_min', 'prompt_lookup_max', 'max_model_len',
              'num_speculative_tokens_per_batch_size'),
    # The target's own MTP layers (no model key: vLLM drafts with the target checkpoint), or a separate MTP drafter
    # checkpoint (Gemma 4's assistant, from 0.21.0): its model key comes from the plan's draft_model option.
    'mtp': ('method', 'model', 'num_speculative_tokens', 'quantization', 'max_model_len',
            'num_speculative_tokens_per_batch_size'),
    # DFlash (block-diffusion drafts, 0.20.0+): a draft checkpoint of its own; it always drafts in parallel.
    'dflash': ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization',
               'max_model_len', 'revision', 'code_revision'),
    # Suffix decoding (Arctic Inference): num_speculative_tokens is its per-step maximum.
    'suffix': ('method', 'num_speculative_tokens') + SUFFIX_KEYS,
}
CONFIG_KEYS_FROM_OPTIONS = {
    'method': 'method',
    'model': 'eagle3_head or draft_model',
    'num_speculative_tokens': 'num_speculative_tokens',
}


# --------------------------------------------------------------------------------------------
# speculative_config
# --------------------------------------------------------------------------------------------

_QUANTIZATION = re.compile(r'^[a-z0-9][a-z0-9_-]*\Z')
_REVISION = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/-]*\Z')
# Everything the final JSON may contain: nothing that a single-quoted systemd ExecStart, a shell
# or a compose command list would interpret (no quotes but JSON's ", no %, $, \ or whitespace).
_JSON_SAFE = re.compile(r'^[A-Za-z0-9{}\[\]":,._/+-]*\Z')


def allowed_config_keys(method, version):
    """SpeculativeConfig keys vLLM accepts for ``method`` at ``version`` (None = unknown version).

    With an unknown version only the keys valid in every version are allowed.
    """
    keys = []
    for key in CONFIG_KEYS_BY_METHOD.get(method, CONFIG_KEYS_ALL_VERSIONS):
        since, until = CONFIG_KEYS_SINCE.get(key), CONFIG_KEYS_UNTIL.get(key)
        if since is None or (version is not None and _at_least(version, since)
                             and (until is None or not _at_least(version, until))):
            keys.append(key)
    return keys


def _all_known_keys():
    return set(CONFIG_KEYS_ALL_VERSIONS) | set(CONFIG_KEYS_SINCE)


def validate_extra_config(extra, method, version, num_speculative_tokens, tensor_parallel_size):
    """Check ``extra`` (further SpeculativeConfig keys) for ``method``; return a clean copy or raise."""
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise SpeculativeInputError('extra_config must be a dictionary of SpeculativeConfig keys, got %r.' % (extra,))
    allowed = allowed_config_keys(method, version)
    settable = [k for k in allowed if k not in CONFIG_KEYS_FROM_OPTIONS]
    clean = {}
    for key in sorted(extra, key=str):
        value = extra[key]
        if not isinstance(key, str):
            raise SpeculativeInputError('extra_config keys must be strings, got %r.' % (key,))
        if key == 'tensor_parallel_size':
            raise SpeculativeInputError("extra_config: 'tensor_parallel_size' is not a valid argument in the "
                                        "speculative_config. Please pass 'draft_tensor_parallel_size' instead.")
        if key in CONFIG_KEYS_FROM_OPTIONS:
            raise SpeculativeInputError('extra_config: %r is set by the plan from the %s option; do not pass it in '
                                        'extra_config.' % (key, CONFIG_KEYS_FROM_OPTIONS[key]))
        if key == 'parallel_drafting' and method == 'dflash':
            raise SpeculativeInputError(
                "extra_config: 'parallel_drafting' does not apply to dflash: DFlash always drafts in parallel (vLLM "
                "0.20 to 0.33 sets it itself, 0.34 deprecates the key: \"has no effect\"). Leave it out.")
        if key == 'parallel_drafting' and key in CONFIG_KEYS_BY_METHOD.get(method, ()) and version is not None \
                and _at_least(version, CONFIG_KEYS_UNTIL[key]):
            if value is True:
                raise SpeculativeInputError(
                    'extra_config: %r is refused by vLLM %s for method %s ("parallel_drafting is only supported by '
                    'the dflash and dspark methods", from %s; it ran on the V1 runner from %s to the release before): '
                    'use method dflash with a DFlash draft, or leave it out. Allowed here: %s.'
                    % (key, _vstr(version), method, _vstr(CONFIG_KEYS_UNTIL[key]), _vstr(CONFIG_KEYS_SINCE[key]),
                       ', '.join(settable)))
            raise SpeculativeInputError(
                'extra_config: %r is deprecated by vLLM %s ("has no effect"; from %s): leave it out. Allowed here: %s.'
                % (key, _vstr(version), _vstr(CONFIG_KEYS_UNTIL[key]), ', '.join(settable)))
        if key in CONFIG_KEYS_SINCE and key in CONFIG_KEYS_BY_METHOD.get(method, ()) and key not in allowed:
            raise SpeculativeInputError(
                'extra_config: %r needs vLLM >= %s, and vllm_version is %s; older vLLM silently drops it and newer '
                'rejects what it does not know, so it is refused. Allowed here: %s.'
                % (key, _vstr(CONFIG_KEYS_SINCE[key]), _vstr(version) if version else 'unknown', ', '.join(settable)))
        if key in _all_known_keys() and key not in allowed:
            raise SpeculativeInputError('extra_config: %r does not apply to method %s. Allowed for %s: %s.'
                                        % (key, method, method, ', '.join(settable)))
        if key not in allowed:
            raise SpeculativeInputError('extra_config: unknown SpeculativeConfig key %r (vLLM 0.20+ rejects unknown '
                                        'keys, older versions silently drop them). Allowed for %s: %s.'
                                        % (key, method, ', '.join(settable)))
        clean[key] = _check_config_value(key, value, num_speculative_tokens, tensor_parallel_size)
    if 'prompt_lookup_min' in clean and 'prompt_lookup_max' in clean \
            and clean['prompt_lookup_min'] > clean['prompt_lookup_max']:
        raise SpeculativeInputError('extra_config: prompt_lookup_min=%s must be <= prompt_lookup_max=%s.'
                                    % (clean['prompt_lookup_min'], clean['prompt_lookup_max']))
    if method == 'ngram':
        # As vLLM does: a missing bound takes the other's value, and neither means min = max = 5.
        given = clean.get('prompt_lookup_max', clean.get('prompt_lookup_min', NGRAM_DEFAULT_LOOKUP))
        clean.setdefault('prompt_lookup_min', given)
        clean.setdefault('prompt_lookup_max', given)
    return clean


def _check_config_value(key, value, num_speculative_tokens, tensor_parallel_size):
    name = 'extra_config.%s' % key
    if key == 'draft_tensor_parallel_size':
        check_int(name, value, minimum=1)
        if value not in (1, tensor_parallel_size):
            raise SpeculativeInputError('%s must be 1 or the target\'s tensor_parallel_size (%s), got %s.'
                                        % (name, tensor_parallel_size, value))
        return value
    if key in ('max_model_len', 'prompt_lookup_min', 'prompt_lookup_max'):
        return check_int(name, value, minimum=1)
    # Suffix decoding: vLLM's own lower bounds (_validate_suffix_decoding); the upper bounds are this
    # collection's (vLLM defaults: depth 24, 10000 cached requests, factor 1.0).
    if key == 'suffix_decoding_max_tree_depth':
        return check_int(name, value, minimum=1, maximum=4096)
    if key == 'suffix_decoding_max_cached_requests':
        return check_int(name, value, minimum=0, maximum=10 ** 8)
    if key == 'suffix_decoding_max_spec_factor':
        return check_float(name, value, minimum=0.0, maximum=1000.0)
    if key == 'suffix_decoding_min_token_prob':
        return check_float(name, value, minimum=0.0, maximum=1.0)
    if key == 'quantization':
        if not isinstance(value, str) or not _QUANTIZATION.match(value):
            raise SpeculativeInputError("%s must be a vLLM quantization name such as fp8 or awq_marlin (lower-case "
                                        "letters, digits, '_' and '-'), got %r." % (name, value))
        return value
    if key in ('revision', 'code_revision'):
        if not isinstance(value, str) or not _REVISION.match(value) or '..' in value:
            raise SpeculativeInputError("%s must be a git revision (branch, tag or commit: letters, digits, '.', "
                                        "'_', '-' and '/'), got %r." % (name, value))
        return value
    if key == 'num_speculative_tokens_per_batch_size':
        return _check_per_batch_size(name, value, num_speculative_tokens)
    if key == 'parallel_drafting':
        if not isinstance(value, bool):
            raise SpeculativeInputError('%s must be true or false, got %r.' % (name, value))
        return value
    raise SpeculativeInputError('%s: no validation rule for this key.' % name)  # pragma: no cover


def _check_per_batch_size(name, value, num_speculative_tokens):
    if not isinstance(value, list) or not value:
        raise SpeculativeInputError('%s must be a non-empty list of [start_bs, end_bs, K] triples, got %r.'
                                    % (name, value))
    clean = []
    previous_end = 0
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 3 or not all(_is_int(x) for x in item):
            raise SpeculativeInputError('%s: each entry must be [start_bs, end_bs, K] (three integers), got %r.'
                                        % (name, item))
        start, end, k = item
        if start < 1 or end < start:
            raise SpeculativeInputError('%s: %r must have 1 <= start_bs <= end_bs.' % (name, list(item)))
        if start <= previous_end:
            raise SpeculativeInputError('%s: ranges must be ascending and must not overlap (%r starts at or before '
                                        'the end of the previous range, %s).' % (name, list(item), previous_end))
        if k < 0 or (num_speculative_tokens is not None and k > num_speculative_tokens):
            raise SpeculativeInputError('%s: K in %r must be between 0 (no drafting) and num_speculative_tokens (%s).'
                                        % (name, list(item), num_speculative_tokens))
        previous_end = end
        clean.append([start, end, k])
    # vLLM (0.32, v1/spec_decode/dynamic/utils.py) refuses a schedule whose first range does not start at 1
    # ("so every runtime batch size has a defined schedule"); gaps between ranges inherit the previous K.
    if clean[0][0] != 1:
        raise SpeculativeInputError('%s: the first range must start at batch size 1 (vLLM refuses a schedule that '
                                    'leaves batch size 1 undefined), got %r.' % (name, clean[0]))
    return clean


def config_json(config):
    """Compact JSON with a stable key order, safe inside a single-quoted ExecStart and a compose list."""
    try:
        text = dumps(config, 'speculative_config', separators=(',', ':'), sort_keys=True)
    except InputError as exc:
        raise SpeculativeInputError('%s.' % exc)
    if not _JSON_SAFE.match(text):
        raise SpeculativeInputError('internal check failed: the speculative config %s contains characters that '
                                    'would need escaping in a unit file.' % text)
    return text


def batch_aware_trigger(verdict, max_batch, concurrency, vllm_version, speculative_config):
    """Whether the role tries batch-size-aware speculation after this ``verdict``: (try it, why not or None).

    Tried when the planned configuration was not kept only because it regressed at the highest concurrency (the
    verdict's ``c8_regression_only``: concurrency 1 passed), the role's N (``max_batch``, jetson_spec_batch_aware_max_batch)
    is on and below the workload's highest level (``concurrency``), the server's vLLM is known to have
    ``num_speculative_tokens_per_batch_size`` (CONFIG_KEYS_SINCE), and the configuration drafts K > 0 tokens and is
    not batch-size-aware already.
    """
    config = speculative_config if isinstance(speculative_config, dict) else {}
    n = int(max_batch)
    levels = [int(level) for level in concurrency or []]
    since = '.'.join('%d' % part for part in CONFIG_KEYS_SINCE['num_speculative_tokens_per_batch_size'])
    if verdict.get('keep'):
        return False, 'the planned configuration was kept'
    if not verdict.get('c8_regression_only'):
        return False, 'the planned configuration did not pass at concurrency 1 and regress only at the highest level'
    if n <= 0:
        return False, 'jetson_spec_batch_aware_max_batch is 0 (off)'
    if not levels or n >= max(levels):
        return False, ('jetson_spec_batch_aware_max_batch %d is not below the workload\'s highest concurrency %s'
                       % (n, max(levels) if levels else 'none'))
    if not version_at_least(vllm_version or None, since):
        return False, ('the server\'s vLLM %s is not known to have num_speculative_tokens_per_batch_size (%s or later)'
                       % (vllm_version or 'version (unknown)', since))
    if int(config.get('num_speculative_tokens') or 0) <= 0:
        return False, 'the configuration drafts no tokens (num_speculative_tokens 0)'
    if config.get('method') in CONFIG_KEYS_BY_METHOD \
            and 'num_speculative_tokens_per_batch_size' not in CONFIG_KEYS_BY_METHOD[config['method']]:
        return False, 'method %s takes no num_speculative_tokens_per_batch_size' % config['method']
    if 'num_speculative_tokens_per_batch_size' in config:
        return False, 'the configuration is batch-size-aware already'
    return True, None


def batch_aware_limit(max_batch, num_speculative_tokens, serve_args):
    """The N of a batch-size-aware config ``[[1, N, K], [N + 1, 65536, 0]]`` that can really turn speculation off.

    vLLM's scheduler picks the next step's K from the number of requests it scheduled in this step
    (vllm/v1/core/sched/scheduler.py, dynamic_sd_lookup). With a token budget per step
    (``--max-num-batched-tokens B`` in ``serve_args``) at most B // (K + 1) decoding requests with K draft
    tokens each fit in a step. When that is N or fewer, the scheduled batch never grows above N while
    speculating, so K never drops to 0 however many requests wait: measured on the test bed with B = 16,
    K = 4, N = 4 (c=8: -13.7 % with, -13.1 % without the per-batch-size setting). N is then lowered to
    B // (K + 1) - 1.

    Returns a dict: ``max_batch`` (the N to use; 0 when no N can work), ``requested`` (``max_batch`` as
    given), ``token_budget`` (B or None) and ``reason`` (None when N is ``max_batch``, else why).
    """
    requested = int(max_batch)
    k = int(num_speculative_tokens)
    result = {'max_batch': requested, 'requested': requested, 'token_budget': None, 'reason': None}
    raw = last_option_value(serve_args, '--max-num-batched-tokens')
    if raw is None or k < 1 or requested < 1:
        return result
    try:
        budget = human_readable_int(raw)
    except ValueError:
        return result
    if budget < 1:
        return result
    result['token_budget'] = budget
    fit = budget // (k + 1)
    if requested < fit:
        return result
    result['max_batch'] = max(fit - 1, 0)
    if result['max_batch'] < 1:
        result['reason'] = ('--max-num-batched-tokens %d fits %d request(s) with %d draft tokens each in a step, and vLLM '
                            'picks the next step\'s number of draft tokens from the requests it scheduled: no batch size '
                            'can turn speculation off, so batch-size-aware speculation cannot help here.'
                            % (budget, fit, k))
    else:
        result['reason'] = ('--max-num-batched-tokens %d fits only %d request(s) with %d draft tokens each in a step, and '
                            'vLLM picks the next step\'s number of draft tokens from the requests it scheduled: '
                            'speculating up to %d requests (jetson_spec_batch_aware_max_batch %d) would never turn off, '
                            'so up to %d.' % (budget, fit, k, requested, requested, result['max_batch']))
    return result
