# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Speculative-decoding decisions (private to this collection).

Two pure functions hold every rule of speculative-decoding-rules.md and every version fact of
vllm-speculative-config.md; the modules ``speculative_plan`` and ``speculative_verdict`` only
call them:

- ``plan(...)``: should this Jetson speculate, with which method, which
  ``--speculative-config`` and which ``--gpu-memory-utilization``? A refusal is a normal
  answer (``enable: false`` with reasons and a hand-off), not an error.
- ``verdict(baseline, candidate, ...)``: does the measured benchmark justify keeping it?

Invalid input (wrong types, out-of-range numbers, hostile model ids, mismatched benchmark
workloads, failed benchmark runs) raises ``SpeculativeInputError``; the modules turn it into
``fail_json``. Nothing here touches the system.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import math
import re
import sys

from ansible_collections.jetson_llm.vllm.plugins.module_utils._catalogue import (
    CATALOGUE_ENTRY_KEYS, builtin_catalogue)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import (
    compare_versions, parse_version, parse_version_strict)


class SpeculativeInputError(ValueError):
    """Invalid input: the caller must fix it (modules report it with fail_json)."""


# Floating-point comparisons at the documented boundaries (e.g. 100 -> 130 tok/s is exactly a
# 30 % gain, but 130 / 100 - 1 is 0.30000000000000004 and 26.5 -> 34.45 gives 0.2999999999999998)
# are made with this tolerance: a value within EPSILON of a threshold counts as reaching it.
EPSILON = 1e-9

METHODS = ('auto', 'eagle3', 'draft_model', 'ngram')

# Documented defaults (each is an option of speculative_plan / speculative_verdict).
PLAN_DEFAULTS = {
    'max_good_concurrency': 2,
    'refuse_concurrency': 8,
    'gpu_memory_utilization_step': 0.05,
    'min_gpu_memory_utilization': 0.50,
    'gpu_memory_utilization_ceiling': 0.90,
    'min_free_memory_after_draft_mb': 2048,
    'min_acceptance_for_more_tokens': 0.6,
}
VERDICT_DEFAULTS = {
    'min_throughput_gain': 0.30,
    'min_tpot_reduction': 0.20,
    'disable_below_gain': 0.10,
    'c8_tolerance': 0.0,
    'high_acceptance_rate': 0.6,
    'low_acceptance_rate': 0.4,
}
DEFAULT_NUM_SPECULATIVE_TOKENS = {'thor': 5, 'orin': 3}
# vLLM itself checks only num_speculative_tokens > 0, so there is no upstream maximum to copy. The cap is
# this collection's: each speculative step reserves K extra KV slots and K+1 query tokens per sequence
# (out of the same unified memory), while the expected accepted length is bounded by 1 / (1 - acceptance):
# even at acceptance 0.9, K = 16 already reaches 8.3 of the 10 possible tokens per step. A larger K is
# an input error (a typo such as 1000000000 must never reach a unit file).
MAX_NUM_SPECULATIVE_TOKENS = 16

# vLLM version facts (vllm-speculative-config.md, speculative-decoding-rules.md).
MIN_VLLM_SPECULATIVE_CONFIG = (0, 10)   # the JSON --speculative-config form and EAGLE-3
MIN_VLLM_DRAFT_MODEL = (0, 15)          # draft_model rejected at startup up to 0.14.x
MIN_VLLM_UPSTREAM_JETSON = (0, 20)      # Thor, and Orin on L4T r39+
ORIN_UPSTREAM_L4T_MAJOR = 39

UPSTREAM_IMAGE = 'vllm/vllm-openai:latest'
ORIN_IMAGE = 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin'

# SpeculativeConfig keys (vllm-speculative-config.md): valid in every version this collection
# supports, and the ones added later (key -> first vLLM version that accepts it).
CONFIG_KEYS_ALL_VERSIONS = ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size',
                            'quantization', 'max_model_len', 'revision', 'code_revision',
                            'prompt_lookup_min', 'prompt_lookup_max')
CONFIG_KEYS_SINCE = {'num_speculative_tokens_per_batch_size': (0, 30)}
# Keys per method; keys the plan sets itself from its options may not come through extra_config.
CONFIG_KEYS_BY_METHOD = {
    'eagle3': ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization',
               'max_model_len', 'revision', 'code_revision', 'num_speculative_tokens_per_batch_size'),
    'draft_model': ('method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization',
                    'max_model_len', 'revision', 'code_revision', 'num_speculative_tokens_per_batch_size'),
    'ngram': ('method', 'num_speculative_tokens', 'prompt_lookup_min', 'prompt_lookup_max', 'max_model_len',
              'num_speculative_tokens_per_batch_size'),
}
CONFIG_KEYS_FROM_OPTIONS = {
    'method': 'method',
    'model': 'eagle3_head or draft_model',
    'num_speculative_tokens': 'num_speculative_tokens',
}

FAMILY_LABELS = {
    'thor-agx': 'Jetson AGX Thor',
    'orin-agx': 'Jetson AGX Orin',
    'orin-nx': 'Jetson Orin NX',
    'orin-nano': 'Jetson Orin Nano',
}
SMALL_PRODUCT_LINES = ('orin-nx', 'orin-nano')

# Hand-off actions (what to try next), in the order they are suggested.
HANDOFF_ACTIONS = ('fix_facts', 'lower_concurrency', 'provide_draft_model', 'upgrade_vllm', 'change_runtime',
                   'free_memory', 'memory_tuning', 'smaller_draft', 'smaller_model', 'better_quantisation',
                   'no_speculation')


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------

SHOW_LIMIT = 80


def show(value, limit=SHOW_LIMIT):
    """``repr(value)`` cut to ``limit`` characters, for echoing an input in an error message."""
    text = repr(value)
    if len(text) > limit:
        text = text[:limit] + '... (%s characters)' % len(text)
    return text


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(name, value, minimum=None, maximum=None, optional=False):
    """Return ``value`` if it is an int within [minimum, maximum]; else raise."""
    if value is None and optional:
        return None
    if not _is_int(value):
        raise SpeculativeInputError('%s must be an integer, got %s (%s).' % (name, show(value), type(value).__name__))
    if minimum is not None and value < minimum:
        raise SpeculativeInputError('%s must be >= %s, got %s.' % (name, minimum, show(value)))
    if maximum is not None and value > maximum:
        raise SpeculativeInputError('%s must be <= %s, got %s.' % (name, maximum, show(value)))
    return value


def check_float(name, value, minimum=None, maximum=None, optional=False, min_exclusive=False):
    """Return ``value`` as a float if it is a finite number within the range; else raise."""
    if value is None and optional:
        return None
    if not _is_number(value):
        raise SpeculativeInputError('%s must be a number, got %s (%s).' % (name, show(value), type(value).__name__))
    try:
        value = float(value)
    except OverflowError:
        value = float('inf')
    if not math.isfinite(value):
        raise SpeculativeInputError('%s must be a finite number, got %s.' % (name, show(value)))
    if minimum is not None and (value <= minimum if min_exclusive else value < minimum):
        raise SpeculativeInputError('%s must be %s %s, got %s.' % (name, '>' if min_exclusive else '>=', minimum, value))
    if maximum is not None and value > maximum:
        raise SpeculativeInputError('%s must be <= %s, got %s.' % (name, maximum, value))
    return value


def check_bool(name, value):
    if not isinstance(value, bool):
        raise SpeculativeInputError('%s must be a boolean (true or false), got %r.' % (name, value))
    return value


_CHAR_NAMES = {
    "'": 'a single quote', '"': 'a double quote', '`': 'a backtick', '$': 'a dollar sign',
    '%': "a percent sign (a systemd specifier)", '\\': 'a backslash', ';': 'a semicolon',
    '&': 'an ampersand', '|': 'a pipe', '<': "a '<'", '>': "a '>'", '*': 'a wildcard', '?': 'a wildcard',
    '(': 'a parenthesis', ')': 'a parenthesis', '{': 'a brace', '}': 'a brace', '[': 'a bracket',
    ']': 'a bracket', '!': "a '!'", '#': "a '#'", '~': "a '~'", '=': "an '='", ',': 'a comma',
    ':': 'a colon', '@': "an '@'",
}
_MODEL_ID_HELP = ("Use a Hugging Face repo id (owner/name made of letters, digits, '.', '_' and '-') or an absolute "
                  "path (letters, digits, '.', '_', '-', '+' and '/'); the value is written into a systemd unit file "
                  "and a compose file, so quotes, whitespace, '%', '$' and shell characters are refused.")
_PATH_CHARS = re.compile(r'^[A-Za-z0-9._+/-]+$')
_HF_PART = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$')


def _bad_char(value, allowed):
    """Describe the first character of ``value`` outside ``allowed`` (a regex char class body)."""
    for char in value:
        if not re.match('[%s]' % allowed, char):
            if char.isspace():
                return 'whitespace or a line break (%r)' % char
            if ord(char) < 32 or ord(char) == 127:
                return 'a control character (%r)' % char
            return _CHAR_NAMES.get(char, 'the character %r' % char)
    return None


def check_model_ref(name, value, optional=False):
    """A Hugging Face repo id (``owner/name`` or ``name``) or an absolute path; else raise.

    The value ends up in a systemd ExecStart line and a compose command list, so only a small
    character set is accepted.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise SpeculativeInputError('%s must be a string (a Hugging Face repo id or an absolute path), got %r.'
                                    % (name, value))
    if value == '':
        raise SpeculativeInputError('%s is empty. %s' % (name, _MODEL_ID_HELP))
    bad = _bad_char(value, 'A-Za-z0-9._+/-')
    if bad:
        raise SpeculativeInputError('%s %r contains %s. %s' % (name, value, bad, _MODEL_ID_HELP))
    if value.startswith('/'):
        parts = value.split('/')[1:]
        if value == '/' or any(p in ('', '.', '..') for p in parts[:-1]) or parts[-1] in ('.', '..'):
            raise SpeculativeInputError("%s %r is not a clean absolute path (no empty, '.' or '..' components). %s"
                                        % (name, value, _MODEL_ID_HELP))
        return value.rstrip('/') if len(value) > 1 else value
    if value.startswith('.') or value.startswith('~'):
        raise SpeculativeInputError('%s %r is a relative path; use an absolute path (the service does not run in '
                                    'your working directory). %s' % (name, value, _MODEL_ID_HELP))
    parts = value.split('/')
    valid = all(_HF_PART.match(p) and len(p) <= 96 and '--' not in p and '..' not in p for p in parts)
    if len(parts) > 2 or '+' in value or not valid:
        raise SpeculativeInputError("%s %r is not a Hugging Face repo id (owner/name, each part at most 96 "
                                    "characters, starting and ending with a letter or digit, no '--' or '..'). %s"
                                    % (name, value, _MODEL_ID_HELP))
    return value


def check_image_ref(name, value, optional=True):
    """A container image reference such as ``vllm/vllm-openai:v0.20.1``; else raise."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or value == '':
        raise SpeculativeInputError('%s must be a container image reference such as %s, got %r.'
                                    % (name, UPSTREAM_IMAGE, value))
    bad = _bad_char(value, 'A-Za-z0-9._/:@-')
    if bad or not re.match(r'^[A-Za-z0-9]', value):
        detail = '; it contains ' + bad if bad else ''
        raise SpeculativeInputError("%s %r is not a container image reference (letters, digits, '.', '_', '-', '/', "
                                    "':' and '@' only%s), e.g. %s." % (name, value, detail, UPSTREAM_IMAGE))
    return value


def check_vllm_version(value):
    """Return (version tuple or None, warnings). None/''/'unknown'/unparseable -> unknown + warning."""
    if value is None:
        return None, ['vLLM version unknown (vllm_version not given): the runtime minimums (0.20 on Thor and on Orin '
                      'r39+, 0.15 for draft_model) cannot be checked; read it from GET /version and plan again.']
    if not isinstance(value, str):
        raise SpeculativeInputError(
            "vllm_version must be a string such as '0.20.1' (quote it: YAML reads 0.20 as the number 0.2), got %r (%s)."
            % (value, type(value).__name__))
    text = value.strip()
    if text == '' or text.lower() == 'unknown':
        return None, ['vLLM version unknown (%r): the runtime minimums (0.20 on Thor and on Orin r39+, 0.15 for '
                      'draft_model) cannot be checked; read it from GET /version and plan again.' % value]
    if not re.match(r'^[vV]?\d+\.\d+', text):
        return None, ['vLLM version %s is not a version number such as 0.20.1: treated as unknown, so the runtime '
                      'minimums cannot be checked.' % show(value)]
    try:
        parsed = parse_version_strict(text)
    except ValueError:
        raise SpeculativeInputError(
            'vllm_version %s is not a version such as 0.20.1 (digits and dots, optionally a pre-release such as rc1 '
            'or dev12 and a local label such as +cpu); nothing may follow it. Pass the version GET /version reports.'
            % show(value))
    warnings = []
    if re.search(r'(a|b|rc|dev|alpha|beta)\d*', text.split('+')[0].lower()):
        warnings.append('vLLM %s is a pre-release or development build; it is compared as %s.'
                        % (value, '.'.join(str(p) for p in parsed)))
    return parsed, warnings


def _at_least(version, minimum):
    """True when the version tuple ``version`` is >= ``minimum`` (missing trailing parts count as 0)."""
    return compare_versions(tuple(version), tuple(minimum)) >= 0


def _vstr(version):
    return '.'.join(str(p) for p in version)


# --------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------

def _get(data, *path):
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _fact_str(data, *path):
    value = _get(data, *path)
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    return 'unknown'


def _fact_int(data, *path):
    value = _get(data, *path)
    if _is_int(value):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def read_facts(jetson):
    """The few Jetson facts the plan needs, tolerant of missing keys (missing -> unknown/None)."""
    if not isinstance(jetson, dict):
        raise SpeculativeInputError('jetson must be the ansible_facts.jetson dictionary from '
                                    'jetson_llm.vllm.jetson_facts, got %r (%s).' % (jetson, type(jetson).__name__))
    is_jetson = _get(jetson, 'is_jetson')
    runtime = _get(jetson, 'vllm_runtime')
    forbidden = _get(runtime, 'forbidden_images')
    return {
        'is_jetson': is_jetson if isinstance(is_jetson, bool) else None,
        'reason': _get(jetson, 'reason') if isinstance(_get(jetson, 'reason'), str) else None,
        'generation': _fact_str(jetson, 'generation'),
        'product_line': _fact_str(jetson, 'product_line'),
        'variant': _fact_str(jetson, 'variant'),
        'sku': _get(jetson, 'sku') if isinstance(_get(jetson, 'sku'), str) else None,
        'l4t_major': _fact_int(jetson, 'l4t', 'major'),
        'runtime_path': _fact_str(jetson, 'vllm_runtime', 'path'),
        'runtime_notes': [n for n in (_get(runtime, 'notes') or []) if isinstance(n, str)]
        if isinstance(_get(runtime, 'notes'), list) else [],
        'min_vllm_version': _get(runtime, 'min_vllm_version') if isinstance(_get(runtime, 'min_vllm_version'), str)
        else None,
        'forbidden_images': [f for f in forbidden if isinstance(f, str)] if isinstance(forbidden, list) else [],
        'eagle3_supported': _get(jetson, 'speculation', 'eagle3_supported'),
        'draft_model_supported': _get(jetson, 'speculation', 'draft_model_supported'),
        'available_mb': _fact_int(jetson, 'memory', 'available_mb'),
    }


def _device_label(facts):
    label = FAMILY_LABELS.get(facts['product_line'])
    if label is None:
        label = 'Jetson Thor' if facts['generation'] == 'thor' else 'this device'
    if facts['variant'] != 'unknown':
        label += ' (%s)' % facts['variant']
    return label


# --------------------------------------------------------------------------------------------
# Catalogue
# --------------------------------------------------------------------------------------------

def merge_catalogue(override):
    """The shipped catalogue with ``override`` (target -> {eagle3_head, draft_model}) applied.

    An entry replaces the shipped one for that target; a null or empty value means "none".
    """
    merged = builtin_catalogue()
    if override is None:
        return merged
    if not isinstance(override, dict):
        raise SpeculativeInputError('catalogue must be a dictionary of target model -> {eagle3_head, draft_model}, '
                                    'got %r.' % (override,))
    for target, entry in override.items():
        check_model_ref('catalogue key', target)
        if not isinstance(entry, dict):
            raise SpeculativeInputError('catalogue entry for %s must be a dictionary with eagle3_head and/or '
                                        'draft_model, got %r.' % (target, entry))
        unknown = sorted(set(entry) - set(CATALOGUE_ENTRY_KEYS))
        if unknown:
            raise SpeculativeInputError('catalogue entry for %s has unknown keys %s; allowed: %s.'
                                        % (target, ', '.join(unknown), ', '.join(CATALOGUE_ENTRY_KEYS)))
        clean = {}
        for key in CATALOGUE_ENTRY_KEYS:
            value = entry.get(key)
            clean[key] = check_model_ref('catalogue[%s].%s' % (target, key), value) if value else None
        clean['alternatives'] = []
        merged[target.lower()] = clean
    return merged


def lookup_catalogue(catalogue, target_model):
    """The catalogue entry for a Hugging Face target id (case-insensitive); paths never match."""
    if target_model.startswith('/'):
        return {}
    return catalogue.get(target_model.lower()) or {}


# --------------------------------------------------------------------------------------------
# speculative_config
# --------------------------------------------------------------------------------------------

_QUANTIZATION = re.compile(r'^[a-z0-9][a-z0-9_-]*$')
_REVISION = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/-]*$')
# Everything the final JSON may contain: nothing that a single-quoted systemd ExecStart, a shell
# or a compose command list would interpret (no quotes but JSON's ", no %, $, \ or whitespace).
_JSON_SAFE = re.compile(r'^[A-Za-z0-9{}\[\]":,._/+-]*$')


def allowed_config_keys(method, version):
    """SpeculativeConfig keys vLLM accepts for ``method`` at ``version`` (None = unknown version).

    With an unknown version only the keys valid in every version are allowed.
    """
    keys = []
    for key in CONFIG_KEYS_BY_METHOD.get(method, CONFIG_KEYS_ALL_VERSIONS):
        since = CONFIG_KEYS_SINCE.get(key)
        if since is None or (version is not None and _at_least(version, since)):
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
    if method == 'ngram' and 'prompt_lookup_max' not in clean:
        raise SpeculativeInputError('method ngram (prompt lookup) needs extra_config.prompt_lookup_max (an integer '
                                    '>= 1, e.g. 4; prompt_lookup_min is optional).')
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
    return clean


def config_json(config):
    """Compact JSON with a stable key order, safe inside a single-quoted ExecStart and a compose list."""
    text = json.dumps(config, separators=(',', ':'), sort_keys=True)
    if not _JSON_SAFE.match(text):
        raise SpeculativeInputError('internal check failed: the speculative config %s contains characters that '
                                    'would need escaping in a unit file.' % text)
    return text


# --------------------------------------------------------------------------------------------
# plan
# --------------------------------------------------------------------------------------------

class _Decision(object):
    """Collects grounds (why yes), refusals (why not, with rule ids and hand-off actions), warnings."""

    def __init__(self):
        self.grounds = []
        self.refusals = []
        self.refused_by = []
        self.actions = []
        self.warnings = []

    def ground(self, text):
        self.grounds.append(text)

    def warn(self, text):
        if text not in self.warnings:
            self.warnings.append(text)

    def refuse(self, rule, text, actions):
        self.refusals.append(text)
        if rule not in self.refused_by:
            self.refused_by.append(rule)
        for action in actions:
            if action not in self.actions:
                self.actions.append(action)


def _check_plan_options(opts):
    check_int('max_good_concurrency', opts['max_good_concurrency'], minimum=1)
    check_int('refuse_concurrency', opts['refuse_concurrency'], minimum=2)
    if opts['refuse_concurrency'] <= opts['max_good_concurrency']:
        raise SpeculativeInputError('refuse_concurrency (%s) must be greater than max_good_concurrency (%s).'
                                    % (opts['refuse_concurrency'], opts['max_good_concurrency']))
    opts['gpu_memory_utilization_step'] = check_float('gpu_memory_utilization_step',
                                                      opts['gpu_memory_utilization_step'], minimum=0.0, maximum=0.5)
    opts['min_gpu_memory_utilization'] = check_float('min_gpu_memory_utilization', opts['min_gpu_memory_utilization'],
                                                     minimum=0.0, maximum=1.0, min_exclusive=True)
    opts['gpu_memory_utilization_ceiling'] = check_float('gpu_memory_utilization_ceiling',
                                                         opts['gpu_memory_utilization_ceiling'], minimum=0.0,
                                                         maximum=1.0, min_exclusive=True)
    check_int('min_free_memory_after_draft_mb', opts['min_free_memory_after_draft_mb'], minimum=0)
    opts['min_acceptance_for_more_tokens'] = check_float('min_acceptance_for_more_tokens',
                                                         opts['min_acceptance_for_more_tokens'], minimum=0.0,
                                                         maximum=1.0)
    return opts


def plan(jetson, target_model, expected_concurrency, baseline_gpu_memory_utilization, method='auto',
         eagle3_head=None, draft_model=None, num_speculative_tokens=None, measured_acceptance_rate=None,
         strict=False, vllm_version=None, runtime_image=None, free_memory_mb=None, draft_size_mb=None,
         extra_config=None, allow_small_devices=False, catalogue=None, tensor_parallel_size=1,
         max_good_concurrency=PLAN_DEFAULTS['max_good_concurrency'],
         refuse_concurrency=PLAN_DEFAULTS['refuse_concurrency'],
         gpu_memory_utilization_step=PLAN_DEFAULTS['gpu_memory_utilization_step'],
         min_gpu_memory_utilization=PLAN_DEFAULTS['min_gpu_memory_utilization'],
         gpu_memory_utilization_ceiling=PLAN_DEFAULTS['gpu_memory_utilization_ceiling'],
         min_free_memory_after_draft_mb=PLAN_DEFAULTS['min_free_memory_after_draft_mb'],
         min_acceptance_for_more_tokens=PLAN_DEFAULTS['min_acceptance_for_more_tokens']):
    """Decide whether and how this Jetson should speculate. See the module documentation.

    Returns a dict: enable, reasons, refused_by, warnings, method, speculative_config,
    speculative_config_json, gpu_memory_utilization, baseline_gpu_memory_utilization,
    num_speculative_tokens, default_num_speculative_tokens, model, model_source, handoff.
    Raises SpeculativeInputError on invalid input.
    """
    # ---- input validation (errors, not refusals) ------------------------------------------
    facts = read_facts(jetson)
    target_model = check_model_ref('target_model', target_model)
    eagle3_head = check_model_ref('eagle3_head', eagle3_head or None, optional=True)
    draft_model = check_model_ref('draft_model', draft_model or None, optional=True)
    if method not in METHODS:
        raise SpeculativeInputError('method must be one of %s, got %r.' % (', '.join(METHODS), method))
    check_int('num_speculative_tokens', num_speculative_tokens, minimum=1, maximum=MAX_NUM_SPECULATIVE_TOKENS,
              optional=True)
    measured_acceptance_rate = check_float('measured_acceptance_rate', measured_acceptance_rate, minimum=0.0,
                                           maximum=1.0, optional=True)
    check_bool('strict', strict)
    check_int('expected_concurrency', expected_concurrency, minimum=1)
    baseline = check_float('baseline_gpu_memory_utilization', baseline_gpu_memory_utilization, minimum=0.0,
                           maximum=1.0, min_exclusive=True)
    version, version_warnings = check_vllm_version(vllm_version)
    runtime_image = check_image_ref('runtime_image', runtime_image or None)
    check_int('free_memory_mb', free_memory_mb, minimum=0, optional=True)
    check_int('draft_size_mb', draft_size_mb, minimum=0, optional=True)
    check_bool('allow_small_devices', allow_small_devices)
    check_int('tensor_parallel_size', tensor_parallel_size, minimum=1)
    opts = _check_plan_options({
        'max_good_concurrency': max_good_concurrency, 'refuse_concurrency': refuse_concurrency,
        'gpu_memory_utilization_step': gpu_memory_utilization_step,
        'min_gpu_memory_utilization': min_gpu_memory_utilization,
        'gpu_memory_utilization_ceiling': gpu_memory_utilization_ceiling,
        'min_free_memory_after_draft_mb': min_free_memory_after_draft_mb,
        'min_acceptance_for_more_tokens': min_acceptance_for_more_tokens,
    })
    merged_catalogue = merge_catalogue(catalogue)

    d = _Decision()
    for text in version_warnings:
        d.warn(text)

    # ---- family ---------------------------------------------------------------------------
    small = _family_rule(d, facts, allow_small_devices)
    default_k = DEFAULT_NUM_SPECULATIVE_TOKENS.get(facts['generation'])

    # ---- method ---------------------------------------------------------------------------
    chosen, model, model_source = _method_rule(d, facts, method, target_model, eagle3_head, draft_model,
                                               merged_catalogue, small)

    # ---- concurrency ----------------------------------------------------------------------
    _concurrency_rule(d, expected_concurrency, opts)

    # ---- runtime --------------------------------------------------------------------------
    _runtime_rule(d, facts, version, runtime_image, chosen)

    # ---- num_speculative_tokens -----------------------------------------------------------
    k = _tokens_rule(d, facts, default_k, num_speculative_tokens, measured_acceptance_rate, strict, opts)

    # ---- memory ---------------------------------------------------------------------------
    new_gmu = _memory_rule(d, chosen, baseline, free_memory_mb, draft_size_mb, facts, opts)

    # ---- speculative_config (validated even when refused: bad input is an error) ----------
    extra = validate_extra_config(extra_config, chosen or method, version, k, tensor_parallel_size)
    config = {}
    if chosen is not None and k is not None:
        config = {'method': chosen, 'num_speculative_tokens': k}
        if chosen in ('eagle3', 'draft_model'):
            config['model'] = model
            config['draft_tensor_parallel_size'] = 1
        config.update(extra)
        if model is not None and model == target_model:
            d.warn('The draft is the target model itself (%s): every token is accepted but nothing is saved; '
                   'this is only useful in tests.' % model)

    enable = not d.refusals
    if enable:
        d.actions = []
    elif 'no_speculation' not in d.actions:
        d.actions.append('no_speculation')
    return {
        'enable': enable,
        'reasons': list(d.grounds if enable else d.refusals),
        'refused_by': list(d.refused_by),
        'warnings': list(d.warnings),
        'method': chosen,
        'model': model if chosen in ('eagle3', 'draft_model') else None,
        'model_source': model_source,
        'speculative_config': config if enable else {},
        'speculative_config_json': config_json(config) if enable else '',
        'gpu_memory_utilization': new_gmu if enable else baseline,
        'baseline_gpu_memory_utilization': baseline,
        'num_speculative_tokens': k if enable else None,
        'default_num_speculative_tokens': default_k,
        'handoff': _handoff(enable, d.actions),
    }


_ACTION_TEXT = {
    'fix_facts': 'fix the Jetson facts (run jetson_llm.vllm.jetson_facts on the device)',
    'lower_concurrency': 'serve this workload without speculation or move it to a low-concurrency endpoint',
    'provide_draft_model': 'pass a small same-family draft_model that shares the target\'s tokenizer',
    'upgrade_vllm': 'upgrade vLLM to the version the runtime rule asks for',
    'change_runtime': 'switch the baseline to the runtime image the device needs',
    'free_memory': 'free at least 2 GB (stop other services, lower --max-model-len)',
    'memory_tuning': 'hand off to memory tuning',
    'smaller_draft': 'use a smaller draft',
    'smaller_model': 'serve a smaller model',
    'better_quantisation': 'serve a better-quantised model (e.g. FP8/INT4)',
    'no_speculation': 'keep serving without speculation',
}


def _handoff(enable, actions):
    if enable:
        return {'actions': [], 'summary': ''}
    ordered = [a for a in HANDOFF_ACTIONS if a in actions]
    text = '; '.join(_ACTION_TEXT[a] for a in ordered)
    return {'actions': ordered, 'summary': 'Next: %s.' % text}


def _family_rule(d, facts, allow_small_devices):
    """Return True for a small device (Orin NX / Nano) that is allowed to go on."""
    label = _device_label(facts)
    if facts['is_jetson'] is False:
        d.refuse('family', 'This host is not a Jetson%s: speculative decoding is planned only for Jetson Thor and '
                 'AGX Orin.' % (' (%s)' % facts['reason'] if facts['reason'] else ''), ['no_speculation'])
        return False
    generation = facts['generation']
    line = facts['product_line']
    if generation == 'thor':
        d.ground('%s may speculate (Thor has memory for the target plus an EAGLE-3 head or a draft).' % label)
        return False
    if generation == 'orin' and line == 'orin-agx':
        d.ground('%s may speculate (AGX Orin has memory for the target plus an EAGLE-3 head or a draft).' % label)
        return False
    if generation == 'orin' and line in SMALL_PRODUCT_LINES:
        if not allow_small_devices:
            d.refuse('family', '%s is not planned for speculation: its shared CPU+GPU memory rarely holds the target '
                     'plus a draft and the server runs out of memory at startup (EAGLE-3 never; draft_model only '
                     'with allow_small_devices). Serve a smaller or better-quantised model, or tune memory, instead.'
                     % label, ['smaller_model', 'better_quantisation', 'memory_tuning', 'no_speculation'])
            return False
        d.warn('%s: speculation allowed by allow_small_devices; expect out-of-memory at startup unless the target is '
               'small. EAGLE-3 stays refused on this device.' % label)
        d.ground('%s may try draft-model or ngram speculation because allow_small_devices is true.' % label)
        return True
    if generation == 'orin':
        d.refuse('family', 'The Orin module type is unknown (product_line %r): AGX Orin cannot be told from Orin NX/'
                 'Nano, so speculation is not planned.' % facts['product_line'], ['fix_facts', 'no_speculation'])
        return False
    if generation == 'xavier':
        d.refuse('family', 'Jetson Xavier has no supported vLLM runtime path: speculation is planned only for Thor '
                 'and AGX Orin.', ['no_speculation'])
        return False
    d.refuse('family', 'The Jetson generation is unknown (generation %r%s): speculation is planned only for Thor and '
             'AGX Orin.' % (facts['generation'], '; %s' % facts['reason'] if facts['reason'] else ''),
             ['fix_facts', 'no_speculation'])
    return False


def _method_rule(d, facts, method, target_model, eagle3_head, draft_model, catalogue, small):
    """Return (method, model, draft_source) or (None/method, None, None) with a refusal."""
    entry = lookup_catalogue(catalogue, target_model)
    head, head_source = (eagle3_head, 'option') if eagle3_head else (entry.get('eagle3_head'), 'catalogue')
    draft, draft_source = (draft_model, 'option') if draft_model else (entry.get('draft_model'), 'catalogue')
    if not head:
        head_source = None
    if not draft:
        draft_source = None
    no_head = ('No published EAGLE-3 head is known for %s and no draft_model was given: do not train one ad hoc; pass '
               'a small same-family draft_model (same tokenizer and vocabulary) or do not speculate.' % target_model)
    eagle3_blocked = small or (facts['generation'] == 'orin' and facts['product_line'] in SMALL_PRODUCT_LINES)
    never_eagle3 = ('Never EAGLE-3 on %s: there is rarely room for the target plus the head and the server runs out '
                    'of memory at startup.' % _device_label(facts))

    if method == 'ngram':
        if eagle3_head or draft_model:
            d.warn('method ngram (prompt lookup) uses no draft weights: eagle3_head/draft_model are ignored.')
        d.ground('Method ngram (prompt lookup) was asked for explicitly; it needs no draft weights.')
        return 'ngram', None, None
    if method == 'eagle3':
        if eagle3_blocked:
            d.refuse('method', never_eagle3, ['provide_draft_model', 'smaller_model', 'no_speculation'])
            return 'eagle3', None, None
        if not head:
            d.refuse('method', 'method eagle3 was asked for, but no EAGLE-3 head is given or published for %s: do not '
                     'train one ad hoc; use method draft_model with a small same-family draft, or do not speculate.'
                     % target_model, ['provide_draft_model', 'no_speculation'])
            return 'eagle3', None, None
        d.ground('EAGLE-3 head %s (%s) for %s.' % (head, _source_text(head_source), target_model))
        return 'eagle3', head, head_source
    if method == 'draft_model':
        if not draft:
            d.refuse('method', 'method draft_model was asked for, but no draft_model is given or catalogued for %s.'
                     % target_model, ['provide_draft_model', 'no_speculation'])
            return 'draft_model', None, None
        _draft_ground(d, draft, draft_source, target_model)
        return 'draft_model', draft, draft_source
    # auto
    if head and not eagle3_blocked:
        if draft_model:
            d.warn('Both an EAGLE-3 head (%s) and draft_model %s are available: EAGLE-3 is preferred; set method: '
                   'draft_model to use the draft.' % (head, draft_model))
        d.ground('Method auto chose EAGLE-3: head %s (%s) for %s.' % (head, _source_text(head_source), target_model))
        return 'eagle3', head, head_source
    if draft:
        if head and eagle3_blocked:
            d.warn(never_eagle3 + ' Using the draft model instead.')
        _draft_ground(d, draft, draft_source, target_model, auto=True)
        return 'draft_model', draft, draft_source
    d.refuse('method', never_eagle3 + ' ' + no_head if head and eagle3_blocked else no_head,
             ['provide_draft_model', 'no_speculation'])
    return None, None, None


def _source_text(source):
    return 'given' if source == 'option' else 'published, from the catalogue'


def _draft_ground(d, draft, source, target_model, auto=False):
    prefix = 'Method auto chose draft_model: ' if auto else 'Draft-model method: '
    origin = 'given' if source == 'option' else 'same-family pair from the catalogue'
    d.ground('%sdraft model %s (%s) for %s.' % (prefix, draft, origin, target_model))
    if source == 'catalogue':
        d.warn('Draft %s comes from the catalogue: it must share the target\'s vocabulary size, or vLLM refuses to '
               'start ("Target and draft model should have the same vocabulary size").' % draft)


def _concurrency_rule(d, concurrency, opts):
    good, refuse_at = opts['max_good_concurrency'], opts['refuse_concurrency']
    if concurrency >= refuse_at:
        d.refuse('concurrency', 'Expected concurrency %s is >= %s: continuous batching already wins at high '
                 'concurrency and the draft only steals memory.' % (concurrency, refuse_at),
                 ['lower_concurrency', 'no_speculation'])
    elif concurrency > good:
        d.warn('Expected concurrency %s is above %s: speculation usually loses as concurrency grows; the benchmark '
               'at concurrency 8 decides.' % (concurrency, good))
        d.ground('Expected concurrency %s is below %s (allowed, with a warning).' % (concurrency, refuse_at))
    else:
        d.ground('Expected concurrency %s is <= %s, where speculation pays.' % (concurrency, good))


def _image_kind(image):
    """('upstream' | 'nvidia-ai-iot' | 'other', is_orin_image) for an image reference."""
    ref = image.lower()
    name = ref.split('@', 1)[0]
    tag = ''
    if ':' in name.rsplit('/', 1)[-1]:
        name, tag = name.rsplit(':', 1)
    for prefix in ('docker.io/', 'index.docker.io/', 'registry-1.docker.io/'):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.startswith('library/'):
        name = name[len('library/'):]
    if 'nvidia-ai-iot/' in name:
        return 'nvidia-ai-iot', 'orin' in tag or 'orin' in name
    if name == 'vllm/vllm-openai':
        return 'upstream', False
    return 'other', 'orin' in tag


def _image_forbidden(image, forbidden):
    ref = image.lower()
    for item in forbidden:
        item = item.lower()
        if ref == item or (':' not in item.rsplit('/', 1)[-1] and ref.split('@')[0].rsplit(':', 1)[0] == item):
            return item
    return None


def _runtime_rule(d, facts, version, image, method):
    generation, l4t = facts['generation'], facts['l4t_major']
    if generation not in ('thor', 'orin'):
        return  # the family rule already refused
    minimum = MIN_VLLM_SPECULATIVE_CONFIG
    where = 'any speculation (the JSON --speculative-config form and EAGLE-3)'
    kind, orin_image = _image_kind(image) if image else (None, False)
    refusals_before = len(d.refusals)
    if generation == 'thor':
        minimum, where = MIN_VLLM_UPSTREAM_JETSON, 'Thor (upstream vllm/vllm-openai or a validated native install)'
        if kind == 'nvidia-ai-iot' and orin_image:
            d.refuse('runtime', 'Never use the NVIDIA-AI-IOT Orin image on Thor (runtime_image %s): Thor needs '
                     'upstream vLLM 0.20+ (%s) or a validated native vLLM 0.20+.' % (image, UPSTREAM_IMAGE),
                     ['change_runtime', 'no_speculation'])
        elif kind in ('nvidia-ai-iot', 'other'):
            d.warn('runtime_image %s is neither %s nor a native install: make sure it is the validated baseline '
                   'runtime for Thor.' % (image, UPSTREAM_IMAGE))
    elif l4t is None:
        d.refuse('runtime', 'The L4T release of this Orin is unknown: upstream vLLM 0.20+ (L4T r39+) cannot be told '
                 'from the NVIDIA-AI-IOT image path (older L4T), so speculation is not planned.',
                 ['fix_facts', 'no_speculation'])
        return
    elif l4t >= ORIN_UPSTREAM_L4T_MAJOR:
        minimum, where = MIN_VLLM_UPSTREAM_JETSON, 'Orin on L4T r%s (JetPack 7.2+, upstream vLLM)' % l4t
        if kind == 'nvidia-ai-iot':
            d.refuse('runtime', 'Orin on L4T r%s runs upstream vLLM 0.20+ (%s); the NVIDIA-AI-IOT image %s targets '
                     'JetPack 6 and does not match this release.' % (l4t, UPSTREAM_IMAGE, image),
                     ['change_runtime', 'no_speculation'])
    else:
        if kind == 'upstream':
            d.refuse('runtime', 'Orin on L4T r%s (before r39) uses the NVIDIA-AI-IOT vLLM image matching its JetPack '
                     '(%s), not the upstream image %s.' % (l4t, ORIN_IMAGE, image),
                     ['change_runtime', 'no_speculation'])
        elif image is None:
            d.warn('runtime_image not given: on Orin L4T r%s the baseline recipe uses %s; make sure the baseline '
                   'matches it.' % (l4t, ORIN_IMAGE))
        elif kind == 'other':
            d.warn('runtime_image %s is not the NVIDIA-AI-IOT image (%s) that Orin L4T r%s uses: make sure it matches '
                   'your JetPack.' % (image, ORIN_IMAGE, l4t))
        if l4t < 36:
            d.warn('NVIDIA-AI-IOT vLLM images target JetPack 6 (L4T r36); on L4T r%s check that your image matches '
                   'the JetPack release.' % l4t)
        where = 'Orin on L4T r%s (NVIDIA-AI-IOT image)' % l4t
    forbidden = _image_forbidden(image, facts['forbidden_images']) if image else None
    if forbidden and len(d.refusals) == refusals_before:  # not already refused by the rules above
        d.refuse('runtime', 'runtime_image %s is forbidden on this device by jetson_facts (%s).' % (image, forbidden),
                 ['change_runtime', 'no_speculation'])
    facts_min = parse_version(facts['min_vllm_version']) if facts['min_vllm_version'] else None
    if facts_min and not _at_least(minimum, facts_min):
        minimum, where = facts_min, where + ', as jetson_facts requires'
    if facts['runtime_path'] == 'unsupported':
        d.refuse('runtime', 'jetson_facts reports no supported vLLM runtime path for this device%s.'
                 % (' (%s)' % '; '.join(facts['runtime_notes']) if facts['runtime_notes'] else ''),
                 ['fix_facts', 'no_speculation'])
    if version is None:
        d.warn('vLLM version unknown: cannot check that it meets %s for %s%s.'
               % (_vstr(minimum), where, ' and %s for draft_model' % _vstr(MIN_VLLM_DRAFT_MODEL)
                  if method == 'draft_model' else ''))
        return
    if not _at_least(version, minimum):
        d.refuse('runtime', 'vLLM %s is older than %s, the minimum for %s: vLLM may reject --speculative-config or '
                 'lack the method.' % (_vstr(version), _vstr(minimum), where), ['upgrade_vllm', 'no_speculation'])
    else:
        d.ground('vLLM %s meets the minimum %s for %s.' % (_vstr(version), _vstr(minimum), where))
    if method == 'draft_model':
        if not _at_least(version, MIN_VLLM_DRAFT_MODEL):
            d.refuse('runtime', 'vLLM %s rejects draft-model speculation at startup ("not supported yet"); it works '
                     'from %s.' % (_vstr(version), _vstr(MIN_VLLM_DRAFT_MODEL)), ['upgrade_vllm', 'no_speculation'])
        else:
            d.ground('vLLM %s supports draft-model speculation (>= %s).' % (_vstr(version), _vstr(MIN_VLLM_DRAFT_MODEL)))


def _tokens_rule(d, facts, default_k, override, acceptance, strict, opts):
    if default_k is None:
        return override  # no family default: the family rule refused
    family = 'Thor' if facts['generation'] == 'thor' else 'Orin'
    if override is None:
        d.ground('num_speculative_tokens %s (the default on %s).' % (default_k, family))
        return default_k
    if override <= default_k:
        d.ground('num_speculative_tokens %s (override; default on %s is %s).' % (override, family, default_k))
        return override
    threshold = opts['min_acceptance_for_more_tokens']
    if acceptance is not None and acceptance > threshold:
        d.ground('num_speculative_tokens %s is above the %s default of %s, allowed because the measured acceptance '
                 'rate %s is > %s.' % (override, family, default_k, acceptance, threshold))
        return override
    measured = 'not given' if acceptance is None else acceptance
    why = ('num_speculative_tokens %s is above the %s default of %s, which only pays when the measured acceptance '
           'rate is > %s (measured_acceptance_rate: %s)' % (override, family, default_k, threshold, measured))
    if strict:
        raise SpeculativeInputError(why + '. Pass a measured acceptance rate or a value <= %s (strict mode).'
                                    % default_k)
    d.warn(why + '; clamped to %s.' % default_k)
    d.ground('num_speculative_tokens %s (clamped from %s).' % (default_k, override))
    return default_k


def _memory_rule(d, method, baseline, free_mb, draft_mb, facts, opts):
    """Return the new gpu_memory_utilization (the baseline for ngram / refusals)."""
    if method == 'ngram':
        d.ground('ngram needs no draft weights: gpu_memory_utilization stays at %.2f and the draft headroom check '
                 'does not apply.' % baseline)
        return round(baseline, 2)
    ceiling, floor = opts['gpu_memory_utilization_ceiling'], opts['min_gpu_memory_utilization']
    need = opts['min_free_memory_after_draft_mb']
    new = round(baseline - opts['gpu_memory_utilization_step'], 2)
    memory_actions = ['free_memory', 'memory_tuning', 'smaller_draft', 'no_speculation']
    if baseline >= ceiling - EPSILON:
        d.refuse('memory', 'The baseline gpu_memory_utilization %.2f is at or above %.2f: memory tuning already pushed '
                 'it near the ceiling. Free at least 2 GB (%s MB) first, then plan again.' % (baseline, ceiling, need),
                 memory_actions)
    elif new < floor - EPSILON:
        d.refuse('memory', 'Lowering gpu_memory_utilization from %.2f by %.2f gives %.2f, below the floor of %.2f: the '
                 'target would keep too little KV cache. Tune memory first.'
                 % (baseline, opts['gpu_memory_utilization_step'], new, floor), ['memory_tuning', 'no_speculation'])
    else:
        d.ground('gpu_memory_utilization lowered from %.2f to %.2f to leave room for the draft.' % (baseline, new))
    if free_mb is None:
        free_mb = facts['available_mb']
    if free_mb is None or draft_mb is None:
        d.warn('Free memory after the draft cannot be checked (%s unknown): pass free_memory_mb and draft_size_mb; '
               'an out-of-memory at startup means lowering gpu_memory_utilization, a smaller draft or no speculation.'
               % ' and '.join(n for n, v in (('free memory', free_mb), ('draft size', draft_mb)) if v is None))
    elif free_mb - draft_mb < need:
        d.refuse('memory', 'Free memory after the draft would be %s MB (%s MB free - %s MB draft), below %s MB: free '
                 'at least 2 GB first.' % (free_mb - draft_mb, free_mb, draft_mb, need), memory_actions)
    else:
        d.ground('Free memory after the draft: %s MB (>= %s MB).' % (free_mb - draft_mb, need))
    return new


# --------------------------------------------------------------------------------------------
# verdict
# --------------------------------------------------------------------------------------------

WORKLOAD_FIELDS = ('input_len', 'output_len', 'num_prompts', 'dataset', 'prompt_set_id', 'concurrency',
                   'ignore_eos', 'temperature')
LOW_CONCURRENCY = 1
HIGH_CONCURRENCY = 8
_MISSING = object()


def unwrap_benchmark(name, value):
    """Accept a registered vllm_benchmark result (with a ``benchmark`` key) or the bare benchmark dict."""
    if not isinstance(value, dict):
        raise SpeculativeInputError('%s must be a vllm_benchmark result (a dictionary), got %r.' % (name, value))
    if value.get('failed') is True:
        raise SpeculativeInputError('%s is a failed vllm_benchmark task (%s): fix the benchmark first; a failed run '
                                    'is an error, not a verdict.' % (name, value.get('msg', 'no message')))
    if 'benchmark' in value:
        value = value['benchmark']
        if not isinstance(value, dict):
            raise SpeculativeInputError('%s.benchmark must be a dictionary, got %r.' % (name, value))
    if not isinstance(value.get('config'), dict):
        raise SpeculativeInputError('%s has no config dictionary: pass the result of jetson_llm.vllm.vllm_benchmark.'
                                    % name)
    runs = value.get('runs')
    if not isinstance(runs, list) or not runs:
        raise SpeculativeInputError('%s has no runs (empty benchmark result): nothing to compare.' % name)
    return value


def _runs_by_concurrency(name, bench):
    runs = {}
    for index, run in enumerate(bench['runs']):
        if not isinstance(run, dict):
            raise SpeculativeInputError('%s.runs[%s] must be a dictionary, got %r.' % (name, index, run))
        conc = run.get('concurrency')
        if not _is_int(conc) or conc < 1:
            raise SpeculativeInputError('%s.runs[%s].concurrency must be an integer >= 1, got %r.' % (name, index, conc))
        if conc in runs:
            raise SpeculativeInputError('%s has two runs at concurrency %s.' % (name, conc))
        failed = run.get('failed')
        if not _is_int(failed) or failed < 0:
            raise SpeculativeInputError('%s run at concurrency %s has no valid failed count (%r).' % (name, conc, failed))
        if failed > 0:
            first = _first_error(run.get('errors'))
            raise SpeculativeInputError('%s run at concurrency %s had %s failed request(s)%s: a failed run is an error, '
                                        'not a verdict; fix the server or benchmark and measure again.'
                                        % (name, conc, failed, ' (first error: %s)' % first if first else ''))
        runs[conc] = run
    listed = bench['config'].get('concurrency')
    if listed is not None:
        _check_concurrency_list(name, listed)
    if isinstance(listed, list) and sorted(listed) != sorted(runs):
        raise SpeculativeInputError('%s lists concurrency %s in its config but has runs at %s: incomplete result.'
                                    % (name, listed, sorted(runs)))
    return runs


def _first_error(errors):
    """The first error of a run's ``errors`` (a list of sentences per the contract; any shape tolerated)."""
    if isinstance(errors, (list, tuple)):
        errors = errors[0] if errors else None
    elif isinstance(errors, dict):
        errors = next(iter(errors.items()), None)
    if errors is None or errors == '':
        return None
    text = errors if isinstance(errors, str) else repr(errors)
    return text if len(text) <= SHOW_LIMIT else text[:SHOW_LIMIT] + '...'


def _check_concurrency_list(name, listed):
    if not isinstance(listed, list) or not listed or not all(_is_int(c) and c >= 1 for c in listed):
        raise SpeculativeInputError('%s config.concurrency must be a non-empty list of integers >= 1, got %s.'
                                    % (name, show(listed)))


def _metric(name, run, key, conc):
    value = run.get(key)
    # Subnormal numbers (below sys.float_info.min) are not measurements: a ratio against them overflows.
    if not _is_number(value) or not math.isfinite(value) or value < sys.float_info.min:
        raise SpeculativeInputError('%s run at concurrency %s has no usable %s (%s; a positive finite number is '
                                    'needed): the decision needs it; measure again.' % (name, conc, key, show(value)))
    return float(value)


def _ratio_change(name, new, old):
    """new / old - 1, refused when it is not a finite number (absurd measurements)."""
    try:
        change = new / old - 1.0
    except (OverflowError, ZeroDivisionError):
        change = float('inf')
    if not math.isfinite(change):
        raise SpeculativeInputError('The %s change from %s to %s is not a finite number: these measurements are '
                                    'not plausible; measure again.' % (name, show(old), show(new)))
    return change


def check_workloads_match(baseline, candidate):
    for label, bench in (('baseline', baseline), ('candidate', candidate)):
        listed = bench['config'].get('concurrency')
        if listed is not None:
            _check_concurrency_list(label, listed)
        for field in WORKLOAD_FIELDS:
            value = bench['config'].get(field)
            if isinstance(value, float) and not math.isfinite(value):
                raise SpeculativeInputError('%s config.%s is %s: workload settings must be finite numbers; measure '
                                            'again with a valid setting.' % (label, field, show(value)))
    for field in WORKLOAD_FIELDS:
        left = baseline['config'].get(field, _MISSING)
        right = candidate['config'].get(field, _MISSING)
        if field == 'concurrency' and isinstance(left, list) and isinstance(right, list):
            left, right = sorted(left), sorted(right)
        if left != right or isinstance(left, bool) != isinstance(right, bool):
            shown = [('missing' if v is _MISSING else show(v)) for v in (left, right)]
            raise SpeculativeInputError('The benchmarks ran different workloads: config.%s is %s in the baseline and %s '
                                        'in the candidate. Run both with the same settings.' % (field, shown[0], shown[1]))


def _check_verdict_options(opts):
    for key in ('min_throughput_gain', 'min_tpot_reduction', 'disable_below_gain'):
        opts[key] = check_float(key, opts[key], minimum=0.0, maximum=10.0 if key != 'min_tpot_reduction' else 1.0)
    opts['c8_tolerance'] = check_float('c8_tolerance', opts['c8_tolerance'], minimum=0.0, maximum=1.0)
    for key in ('high_acceptance_rate', 'low_acceptance_rate'):
        opts[key] = check_float(key, opts[key], minimum=0.0, maximum=1.0)
    if opts['disable_below_gain'] > opts['min_throughput_gain']:
        raise SpeculativeInputError('disable_below_gain (%s) must not exceed min_throughput_gain (%s).'
                                    % (opts['disable_below_gain'], opts['min_throughput_gain']))
    if opts['low_acceptance_rate'] > opts['high_acceptance_rate']:
        raise SpeculativeInputError('low_acceptance_rate (%s) must not exceed high_acceptance_rate (%s).'
                                    % (opts['low_acceptance_rate'], opts['high_acceptance_rate']))
    return opts


def _pct(value):
    return '%.1f %%' % (value * 100.0)


def verdict(baseline, candidate, min_throughput_gain=VERDICT_DEFAULTS['min_throughput_gain'],
            min_tpot_reduction=VERDICT_DEFAULTS['min_tpot_reduction'],
            disable_below_gain=VERDICT_DEFAULTS['disable_below_gain'],
            c8_tolerance=VERDICT_DEFAULTS['c8_tolerance'], keep_marginal=False,
            high_acceptance_rate=VERDICT_DEFAULTS['high_acceptance_rate'],
            low_acceptance_rate=VERDICT_DEFAULTS['low_acceptance_rate']):
    """Compare a speculative candidate benchmark with its baseline. See the module documentation.

    Returns a dict: verdict, keep, reasons, warnings, deltas, measurements, recommendation.
    Raises SpeculativeInputError on invalid input (mismatched workloads, failed runs...).
    """
    opts = _check_verdict_options({
        'min_throughput_gain': min_throughput_gain, 'min_tpot_reduction': min_tpot_reduction,
        'disable_below_gain': disable_below_gain, 'c8_tolerance': c8_tolerance,
        'high_acceptance_rate': high_acceptance_rate, 'low_acceptance_rate': low_acceptance_rate,
    })
    check_bool('keep_marginal', keep_marginal)
    base = unwrap_benchmark('baseline', baseline)
    cand = unwrap_benchmark('candidate', candidate)
    check_workloads_match(base, cand)
    base_runs = _runs_by_concurrency('baseline', base)
    cand_runs = _runs_by_concurrency('candidate', cand)
    if sorted(base_runs) != sorted(cand_runs):
        raise SpeculativeInputError('The benchmarks ran different concurrency lists: baseline %s, candidate %s.'
                                    % (sorted(base_runs), sorted(cand_runs)))
    if LOW_CONCURRENCY not in base_runs:
        raise SpeculativeInputError('Neither benchmark has a run at concurrency 1 (runs at %s): the verdict is decided '
                                    'at concurrency 1; add 1 to the concurrency list.' % sorted(base_runs))

    warnings = []
    for label, runs in (('baseline', base_runs), ('candidate', cand_runs)):
        for conc, run in sorted(runs.items()):
            if run.get('metrics_polluted') is True:
                warnings.append('The %s run at concurrency %s has polluted metrics (other traffic on the server): '
                                'treat the numbers with care.' % (label, conc))
    for key in ('model', 'variant', 'l4t', 'power_mode'):
        if base.get(key) != cand.get(key):
            warnings.append('The baseline and candidate differ in %s (%r vs %r): make sure they measure the same '
                            'service on the same device.' % (key, base.get(key), cand.get(key)))

    b1, c1 = base_runs[LOW_CONCURRENCY], cand_runs[LOW_CONCURRENCY]
    b_tput = _metric('baseline', b1, 'throughput_tok_s', 1)
    c_tput = _metric('candidate', c1, 'throughput_tok_s', 1)
    b_tpot = _metric('baseline', b1, 'tpot_ms_p50', 1)
    c_tpot = _metric('candidate', c1, 'tpot_ms_p50', 1)
    gain = _ratio_change('throughput_tok_s', c_tput, b_tput)
    reduction = -_ratio_change('tpot_ms_p50', c_tpot, b_tpot)
    measurements = {'c1': {'baseline': {'throughput_tok_s': b_tput, 'tpot_ms_p50': b_tpot},
                           'candidate': {'throughput_tok_s': c_tput, 'tpot_ms_p50': c_tpot}}, 'c8': None}

    change8 = None
    if HIGH_CONCURRENCY in base_runs:
        b8 = _metric('baseline', base_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        c8 = _metric('candidate', cand_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        change8 = _ratio_change('concurrency-8 throughput_tok_s', c8, b8)
        measurements['c8'] = {'baseline': {'throughput_tok_s': b8}, 'candidate': {'throughput_tok_s': c8}}
    else:
        warnings.append('No run at concurrency 8: decided on concurrency 1 only; a throughput regression under load '
                        'was not checked (add 8 to the concurrency list).')

    acceptance = _acceptance(c1)
    if acceptance is None:
        warnings.append('The candidate\'s concurrency-1 run has no speculative-decoding counters (acceptance rate '
                        'unknown): check that --speculative-config is really active.')
    if isinstance(b1.get('spec_decode'), dict):
        warnings.append('The baseline run shows speculative-decoding counters: the baseline should be measured without '
                        '--speculative-config.')

    reasons = []
    regress8 = change8 is not None and change8 < -opts['c8_tolerance'] - EPSILON
    meets_gain = gain >= opts['min_throughput_gain'] - EPSILON
    meets_tpot = reduction >= opts['min_tpot_reduction'] - EPSILON
    too_small = gain < opts['disable_below_gain'] - EPSILON
    c1_text = ('At concurrency 1, throughput_tok_s changed %+.1f %% (%.2f -> %.2f) and tpot_ms_p50 fell %s (%.2f -> '
               '%.2f ms).' % (gain * 100, b_tput, c_tput, _pct(reduction), b_tpot, c_tpot))
    reasons.append(c1_text)
    if change8 is not None:
        reasons.append('At concurrency 8, throughput_tok_s changed %+.1f %% (tolerance: -%s).'
                       % (change8 * 100, _pct(opts['c8_tolerance'])))
    if regress8:
        result = 'reject'
        reasons.append('Throughput regresses at concurrency 8 beyond the tolerance: remove --speculative-config.')
    if too_small:
        result = 'reject'
        reasons.append('The throughput gain at concurrency 1 is below %s: a bad draft path is worse than no '
                       'speculation; remove --speculative-config.' % _pct(opts['disable_below_gain']))
    if not regress8 and not too_small:
        if meets_gain and meets_tpot:
            result = 'accept'
            reasons.append('Accepted: >= %s more throughput and >= %s lower TPOT at concurrency 1%s.'
                           % (_pct(opts['min_throughput_gain']), _pct(opts['min_tpot_reduction']),
                              ', and no regression at concurrency 8' if change8 is not None else ''))
        else:
            result = 'marginal'
            missing = []
            if not meets_gain:
                missing.append('throughput gain below %s' % _pct(opts['min_throughput_gain']))
            if not meets_tpot:
                missing.append('TPOT reduction below %s' % _pct(opts['min_tpot_reduction']))
            reasons.append('Marginal (%s, but at least %s gain): %s.'
                           % (' and '.join(missing), _pct(opts['disable_below_gain']),
                              'kept because keep_marginal is true' if keep_marginal else
                              'reverted because keep_marginal is false'))
    keep = result == 'accept' or (result == 'marginal' and keep_marginal)
    deltas = {
        'throughput_gain_c1': round(gain, 4),
        'tpot_reduction_c1': round(reduction, 4),
        'throughput_change_c8': round(change8, 4) if change8 is not None else None,
        'acceptance_rate': acceptance,
    }
    return {
        'verdict': result,
        'keep': keep,
        'reasons': reasons,
        'warnings': warnings,
        'deltas': deltas,
        'measurements': measurements,
        'recommendation': _recommend(result, keep, acceptance, opts),
    }


def _acceptance(run):
    spec = run.get('spec_decode')
    if not isinstance(spec, dict):
        return None
    value = spec.get('acceptance_rate')
    if value is None:
        return None
    if not _is_number(value) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise SpeculativeInputError('candidate spec_decode.acceptance_rate at concurrency 1 must be between 0 and 1 or '
                                    'null, got %r.' % (value,))
    return float(value)


def _recommend(result, keep, acceptance, opts):
    high, low = opts['high_acceptance_rate'], opts['low_acceptance_rate']
    acc_text = 'acceptance rate unknown' if acceptance is None else 'acceptance rate %.2f' % acceptance
    if result == 'accept':
        if acceptance is not None and acceptance > high:
            return {'action': 'raise_num_speculative_tokens',
                    'message': 'Keep speculation; the %s is > %s, so try num_speculative_tokens + 1 (pass '
                               'measured_acceptance_rate to speculative_plan) and benchmark again.' % (acc_text, high)}
        return {'action': 'keep', 'message': 'Keep speculation (%s).' % acc_text}
    if acceptance is not None and acceptance < low:
        return {'action': 'lower_num_speculative_tokens_or_smaller_draft',
                'message': '%s speculation: the %s is < %s; lower num_speculative_tokens or use a smaller (or better '
                           'matched) draft before trying again.' % ('Keep' if keep else 'Remove', acc_text, low)}
    if keep:
        return {'action': 'keep', 'message': 'Keep speculation (marginal gain, keep_marginal is true; %s).' % acc_text}
    return {'action': 'remove_speculative_config',
            'message': 'Remove --speculative-config and keep the baseline (%s).' % acc_text}
