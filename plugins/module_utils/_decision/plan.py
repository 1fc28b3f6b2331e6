# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative_plan decision (private to this collection).

``plan(...)``: should this Jetson speculate, with which method, which ``--speculative-config``
and which ``--gpu-memory-utilization``? A refusal is a normal answer (``enable: false`` with
reasons and a hand-off), not an error. Invalid input raises ``SpeculativeInputError``. The
device rules come from ``_devices`` (the same tables jetson_facts reads).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as _devices
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import (
    CATALOGUE_ENTRY_KEYS, builtin_catalogue, draft_size_estimate, family_entry, mtp_layers)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import known_bad as _known_bad
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import (
    EPSILON, MAX_NUM_SPECULATIVE_TOKENS, SpeculativeInputError, _at_least, _is_int, _vstr, check_bool, check_float,
    check_image_ref, check_int, check_model_ref, check_vllm_version, show)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import (
    MIN_VLLM_DRAFT_MODEL, MIN_VLLM_SPECULATIVE_CONFIG, config_json, validate_extra_config)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.startup_failures import FAILURE_KINDS
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import model_runner as _model_runner
from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import parse_version
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.verdict import metric, runs_by_concurrency, unwrap_benchmark

METHODS = ('auto', 'eagle3', 'draft_model', 'mtp', 'ngram', 'suffix', 'dflash')
# Methods that load no draft weights (prompt lookup, suffix trees): no utilisation step, no headroom check, and the
# only ones an Orin NX / Nano may try without allow_small_devices (when asked for by name; auto never picks them).
MEMORY_FREE_METHODS = ('ngram', 'suffix')
# Methods whose config names no model (vLLM sets it: the target itself for mtp, the method's name otherwise).
MODEL_FREE_METHODS = ('mtp',) + MEMORY_FREE_METHODS

# Documented defaults (each is an option of speculative_plan).
PLAN_DEFAULTS = {
    'max_good_concurrency': 2,
    'refuse_concurrency': 8,
    'gpu_memory_utilization_step': 0.05,
    'min_gpu_memory_utilization': 0.50,
    'gpu_memory_utilization_ceiling': 0.90,
    'min_free_memory_after_draft_mb': 2048,
    'min_acceptance_for_more_tokens': 0.6,
    # TTFT "dominates" end-to-end latency when it is more than half of it (speculation shortens only
    # the decode part). With the benchmark's default workload (2048 tokens in, 128 out) TTFT is well under
    # half of e2e latency on Thor and AGX Orin, so the default refuses only prefill-bound workloads.
    'max_ttft_share': 0.5,
}
# Every way a start-up fails, as vllm_health classifies it: each is a valid previous_attempt.failure.
STARTUP_FAILURES = FAILURE_KINDS
DEFAULT_NUM_SPECULATIVE_TOKENS = _devices.DEFAULT_NUM_SPECULATIVE_TOKENS
DEFAULT_MTP_NUM_SPECULATIVE_TOKENS = _devices.DEFAULT_MTP_NUM_SPECULATIVE_TOKENS
# The first vLLM release that runs each method (the JSON form itself: MIN_VLLM_SPECULATIVE_CONFIG).
MIN_VLLM_BY_METHOD = {'draft_model': MIN_VLLM_DRAFT_MODEL, 'mtp': _devices.MIN_VLLM_MTP,
                      'suffix': _devices.MIN_VLLM_SUFFIX, 'dflash': (0, 20)}
# method mtp with a separate MTP drafter checkpoint (model key): Gemma 4's assistants, model_type gemma4_assistant from
# 0.21.0 and gemma4_unified_assistant (the 12B) from 0.23.0, rewritten by vLLM to gemma4_mtp (SpeculativeConfig.
# hf_config_override). 0.20.2 and older raise "Unsupported speculative method: 'mtp'" for it.
MTP_ASSISTANT_TYPES = {'gemma4_assistant': (0, 21), 'gemma4_unified_assistant': (0, 23)}
MIN_VLLM_MTP_ASSISTANT = (0, 21)
# What a DFlash draft's config.json must carry for vLLM's parallel drafting (llm_base_proposer.py,
# _init_parallel_drafting_params): "the draft model config must have `pard_token`, `ptd_token_id`, or
# `dflash_config.mask_token_id` specified in its config.json"; a speculators checkpoint says dflash in its own config.
DFLASH_SPECULATORS_TYPES = ('dflash', 'dflash2')

MIN_VLLM_UPSTREAM_JETSON = _devices.UPSTREAM_MIN_VLLM
UPSTREAM_IMAGE = _devices.UPSTREAM_IMAGE
ORIN_IMAGE = _devices.ORIN_IMAGE
THOR_IMAGE = _devices.THOR_IMAGE

# Hand-off actions (what to try next), in the order they are suggested.
HANDOFF_ACTIONS = ('fix_facts', 'lower_concurrency', 'provide_draft_model', 'upgrade_vllm', 'change_runtime',
                   'free_memory', 'lower_gpu_memory_utilization', 'memory_tuning', 'smaller_draft', 'smaller_model',
                   'better_quantisation', 'no_speculation')


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
    label = _devices.family_label(facts['product_line'], facts['generation'])
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
        raise SpeculativeInputError('catalogue must be a dictionary of target model -> {eagle3_head, draft_model, '
                                    'mtp}, got %r.' % (override,))
    for target, entry in override.items():
        check_model_ref('catalogue key', target)
        if not isinstance(entry, dict):
            raise SpeculativeInputError('catalogue entry for %s must be a dictionary with eagle3_head, draft_model '
                                        'and/or mtp, got %r.' % (target, entry))
        unknown = sorted(set(entry) - set(CATALOGUE_ENTRY_KEYS))
        if unknown:
            raise SpeculativeInputError('catalogue entry for %s has unknown keys %s; allowed: %s.'
                                        % (target, ', '.join(unknown), ', '.join(CATALOGUE_ENTRY_KEYS)))
        clean = {}
        for key in ('eagle3_head', 'draft_model'):
            value = entry.get(key)
            clean[key] = check_model_ref('catalogue[%s].%s' % (target, key), value) if value else None
        clean['mtp'] = check_bool('catalogue[%s].mtp' % target, entry.get('mtp', False))
        clean['alternatives'] = []
        merged[target.lower()] = clean
    return merged


def lookup_catalogue(catalogue, target_model):
    """The catalogue entry for a Hugging Face target id (case-insensitive), else its MTP family's (Qwen3.5, Qwen3.6:
    catalogue.MTP_FAMILIES); paths never match."""
    if target_model.startswith('/'):
        return {}
    return catalogue.get(target_model.lower()) or family_entry(target_model) or {}


def mtp_minimum(catalogue, target_model):
    """The first vLLM release that drafts with ``target_model``'s MTP layers: method mtp's, or its family's."""
    return max(MIN_VLLM_BY_METHOD['mtp'], tuple(lookup_catalogue(catalogue, target_model).get('mtp_min_vllm') or ()))


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
    opts['max_ttft_share'] = check_float('max_ttft_share', opts['max_ttft_share'], minimum=0.0, maximum=1.0,
                                         min_exclusive=True)
    return opts


def check_previous_attempt(value):
    """previous_attempt: {failure, gpu_memory_utilization, model}; return a clean copy or raise."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpeculativeInputError('previous_attempt must be a dictionary with failure (%s), gpu_memory_utilization '
                                    'and model, got %s.' % (', '.join(STARTUP_FAILURES), show(value)))
    unknown = sorted(str(k) for k in value if k not in ('failure', 'gpu_memory_utilization', 'model'))
    if unknown:
        raise SpeculativeInputError('previous_attempt has unknown keys %s; allowed: failure, gpu_memory_utilization, '
                                    'model.' % show(unknown))
    failure = value.get('failure')
    if failure not in STARTUP_FAILURES:
        raise SpeculativeInputError('previous_attempt.failure must be one of %s, got %s.'
                                    % (', '.join(STARTUP_FAILURES), show(failure)))
    gmu = check_float('previous_attempt.gpu_memory_utilization', value.get('gpu_memory_utilization'), minimum=0.0,
                      maximum=1.0, min_exclusive=True, optional=failure != 'oom')
    model = check_model_ref('previous_attempt.model', value.get('model') or None, optional=True)
    return {'failure': failure, 'gpu_memory_utilization': gmu, 'model': model}


def ttft_share(baseline_benchmark):
    """TTFT / end-to-end latency (p50) of the baseline's concurrency-1 run, validated; raise when unusable."""
    bench = unwrap_benchmark('baseline_benchmark', baseline_benchmark)
    runs = runs_by_concurrency('baseline_benchmark', bench)
    if 1 not in runs:
        raise SpeculativeInputError('baseline_benchmark has no run at concurrency 1 (runs at %s): the TTFT check reads '
                                    'the concurrency-1 run; benchmark with 1 in the concurrency list.'
                                    % sorted(runs))
    ttft = metric('baseline_benchmark', runs[1], 'ttft_ms_p50', 1)
    e2e = metric('baseline_benchmark', runs[1], 'e2e_latency_ms_p50', 1)
    if ttft > e2e:
        raise SpeculativeInputError('baseline_benchmark at concurrency 1 has ttft_ms_p50 %s above e2e_latency_ms_p50 %s: '
                                    'not a consistent result; measure again.' % (show(ttft), show(e2e)))
    return ttft, e2e, ttft / e2e


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
         min_acceptance_for_more_tokens=PLAN_DEFAULTS['min_acceptance_for_more_tokens'],
         baseline_benchmark=None, max_ttft_share=PLAN_DEFAULTS['max_ttft_share'], smaller_draft_model=None,
         previous_attempt=None, measure_path=None, read_model_config=None):
    """Decide whether and how this Jetson should speculate. See the module documentation.

    ``measure_path(path) -> MB or None`` sizes a local draft's weights (the module passes
    ``_draft_size.weights_size_mb``); without it a local path is not measured. ``read_model_config(path) -> dict or
    None`` reads a local target's config.json (the module passes ``_draft_size.local_model_config``), which tells
    whether the target has MTP layers; without it only the catalogue tells.

    Returns a dict: enable, reasons, refused_by, warnings, method, speculative_config,
    speculative_config_json, gpu_memory_utilization, baseline_gpu_memory_utilization,
    num_speculative_tokens, default_num_speculative_tokens, model, model_source, handoff,
    next_step, draft_size_mb, draft_size_source, ttft_share.
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
    check_image_matches_version(runtime_image, version)
    check_int('free_memory_mb', free_memory_mb, minimum=0, optional=True)
    check_int('draft_size_mb', draft_size_mb, minimum=0, optional=True)
    check_bool('allow_small_devices', allow_small_devices)
    check_int('tensor_parallel_size', tensor_parallel_size, minimum=1)
    smaller_draft_model = check_model_ref('smaller_draft_model', smaller_draft_model or None, optional=True)
    previous = check_previous_attempt(previous_attempt)
    opts = _check_plan_options({
        'max_ttft_share': max_ttft_share,
        'max_good_concurrency': max_good_concurrency, 'refuse_concurrency': refuse_concurrency,
        'gpu_memory_utilization_step': gpu_memory_utilization_step,
        'min_gpu_memory_utilization': min_gpu_memory_utilization,
        'gpu_memory_utilization_ceiling': gpu_memory_utilization_ceiling,
        'min_free_memory_after_draft_mb': min_free_memory_after_draft_mb,
        'min_acceptance_for_more_tokens': min_acceptance_for_more_tokens,
    })
    merged_catalogue = merge_catalogue(catalogue)
    share = ttft_share(baseline_benchmark) if baseline_benchmark is not None else None

    d = _Decision()
    for text in version_warnings:
        d.warn(text)

    # ---- start-up failure of the previous attempt: which step comes next ------------------
    step = _next_step(d, previous, baseline, smaller_draft_model, opts) if previous else None
    if step and step['next_step'] == 'smaller_draft':
        # The smaller draft of the same kind: a DFlash draft stays dflash, a Gemma 4 assistant stays mtp (method auto
        # tells an assistant by itself); any other draft is a draft model.
        assistant = _is_mtp_assistant(smaller_draft_model, read_model_config)
        keep = method == 'dflash' or (method in ('mtp', 'auto') and assistant)
        method, draft_model = (method if keep else 'draft_model'), smaller_draft_model

    # ---- family ---------------------------------------------------------------------------
    small = _family_rule(d, facts, allow_small_devices, method)

    # ---- method ---------------------------------------------------------------------------
    layers = _target_mtp_layers(target_model, read_model_config)
    chosen, model, model_source = _method_rule(d, facts, method, target_model, eagle3_head, draft_model,
                                               merged_catalogue, small, layers, version, read_model_config)
    defaults = DEFAULT_MTP_NUM_SPECULATIVE_TOKENS if chosen == 'mtp' else DEFAULT_NUM_SPECULATIVE_TOKENS
    default_k = defaults.get(facts['generation'])

    # ---- workload: concurrency and TPOT-bound ---------------------------------------------
    _concurrency_rule(d, expected_concurrency, opts)
    _ttft_rule(d, share, opts)

    # ---- runtime --------------------------------------------------------------------------
    _runtime_rule(d, facts, version, runtime_image, chosen,
                  _method_minimum(chosen, model, merged_catalogue, target_model, read_model_config))
    _known_bad_rule(d, chosen, version, model, read_model_config)
    if previous and previous['failure'] == 'config_rejected':
        _config_rejected(d)

    # ---- num_speculative_tokens -----------------------------------------------------------
    k = _tokens_rule(d, facts, default_k, num_speculative_tokens, measured_acceptance_rate, strict, opts)
    if chosen == 'mtp' and model is None:  # the target's own layers (an assistant drafts K tokens on its own)
        k = _mtp_tokens_rule(d, k, layers, num_speculative_tokens)

    # ---- memory ---------------------------------------------------------------------------
    draft_mb, draft_source = _draft_size(d, chosen, model, draft_size_mb, measure_path)
    new_gmu = _memory_rule(d, chosen, baseline, free_memory_mb, draft_mb, facts, opts)
    if step and step['gpu_memory_utilization'] is not None:
        new_gmu = step['gpu_memory_utilization']  # the start-up step's value replaces the first attempt's
        d.grounds = [g for g in d.grounds if not g.startswith('gpu_memory_utilization lowered from')]

    # ---- speculative_config (validated even when refused: bad input is an error) ----------
    extra = validate_extra_config(extra_config, chosen or method, version, k, tensor_parallel_size)
    config = {}
    if chosen is not None and k is not None:
        config = {'method': chosen, 'num_speculative_tokens': k}
        if chosen not in MODEL_FREE_METHODS:
            config['model'] = model
            config['draft_tensor_parallel_size'] = 1
        elif chosen == 'mtp' and model is not None:
            config['model'] = model  # an MTP drafter checkpoint of its own (Gemma 4's assistant)
        config.update(extra)
        if chosen == 'ngram' and 'prompt_lookup_min' not in (extra_config or {}) \
                and 'prompt_lookup_max' not in (extra_config or {}):
            d.ground('ngram looks up %s-token windows of the prompt (vLLM\'s default prompt_lookup_min = '
                     'prompt_lookup_max = %s, written out).' % (config['prompt_lookup_max'], config['prompt_lookup_max']))
        if model is not None and model == target_model:
            d.warn('The draft is the target model itself (%s): every token is accepted but nothing is saved; '
                   'this is only useful in tests.' % model)
    runner = _runner_rule(d, chosen, version, bool(extra.get('parallel_drafting'))) if chosen and not d.refusals \
        else None

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
        'model': model if chosen in ('eagle3', 'draft_model', 'dflash', 'mtp') else None,
        'model_runner': runner if enable else None,
        'model_source': model_source,
        'speculative_config': config if enable else {},
        'speculative_config_json': config_json(config) if enable else '',
        'gpu_memory_utilization': new_gmu if enable else baseline,
        'baseline_gpu_memory_utilization': baseline,
        'num_speculative_tokens': k if enable else None,
        'default_num_speculative_tokens': default_k,
        'handoff': _handoff(enable, d.actions, opts),
        'next_step': (step['next_step'] if step else 'first_attempt') if enable else 'none',
        'draft_size_mb': draft_mb,
        'draft_size_source': draft_source,
        'ttft_share': round(share[2], 4) if share else None,
    }


_ACTION_TEXT = {
    'fix_facts': 'fix the Jetson facts (run jetson_llm.vllm.jetson_facts on the device)',
    'lower_concurrency': 'serve this workload without speculation or move it to a low-concurrency endpoint',
    'provide_draft_model': 'pass a small same-family draft_model that shares the target\'s tokenizer',
    'upgrade_vllm': 'upgrade vLLM to the version the runtime rule asks for',
    'change_runtime': 'switch the baseline to the runtime image the device needs',
    'free_memory': 'free at least %(need)s MB first (stop other services, lower --max-model-len, or lower the '
                   'baseline --gpu-memory-utilization)',
    'lower_gpu_memory_utilization': 'try again one gpu_memory_utilization_step (%(step)s) lower',
    'memory_tuning': 'hand off to memory tuning (jetson-inference-mem-tune)',
    'smaller_draft': 'use a smaller draft (smaller_draft_model)',
    'smaller_model': 'serve a smaller model',
    'better_quantisation': 'serve a better-quantised model (e.g. FP8/INT4)',
    'no_speculation': 'go back to the non-speculative command (the baseline service without --speculative-config)',
}


def _handoff(enable, actions, opts):
    if enable:
        return {'actions': [], 'summary': ''}
    ordered = [a for a in HANDOFF_ACTIONS if a in actions]
    values = {'need': opts['min_free_memory_after_draft_mb'], 'step': '%.2f' % opts['gpu_memory_utilization_step']}
    text = '; '.join(_ACTION_TEXT[a] % values for a in ordered)
    return {'actions': ordered, 'summary': 'Next: %s.' % text}


def _next_step(d, previous, baseline, smaller_draft_model, opts):
    """The step after a failed start-up, in the specification's order; refuses when none is left.

    Returns {next_step, gpu_memory_utilization (None: plan as usual)}.
    """
    failure = previous['failure']
    step, floor = opts['gpu_memory_utilization_step'], opts['min_gpu_memory_utilization']
    if failure == 'oom':
        failed_gmu, failed_model = previous['gpu_memory_utilization'], previous['model']
        if failed_gmu > baseline + EPSILON:
            raise SpeculativeInputError('previous_attempt.gpu_memory_utilization %s is above the baseline %s: a '
                                        'speculative attempt always runs below the baseline; pass the value the '
                                        'failed attempt used (the gpu_memory_utilization this module returned).'
                                        % (show(failed_gmu), show(baseline)))
        first = round(baseline - step, 2)
        lowered = round(failed_gmu - step, 2)
        if failed_gmu >= first - EPSILON and lowered >= floor - EPSILON:
            d.ground('The previous start-up ran out of memory at gpu_memory_utilization %.2f: next, one step lower, '
                     '%.2f (the floor is %.2f).' % (failed_gmu, lowered, floor))
            return {'next_step': 'lower_gpu_memory_utilization', 'gpu_memory_utilization': lowered}
        if smaller_draft_model and failed_model != smaller_draft_model:
            d.ground('The previous start-up ran out of memory at gpu_memory_utilization %.2f%s: next, the smaller '
                     'draft %s at %.2f.' % (failed_gmu, ' (already lowered)' if failed_gmu < first - EPSILON else
                                            ' (one step lower would be %.2f, below the floor %.2f)' % (lowered, floor),
                                            smaller_draft_model, failed_gmu))
            return {'next_step': 'smaller_draft', 'gpu_memory_utilization': round(failed_gmu, 2)}
        tried = ('the smaller draft %s also ran out of memory' % smaller_draft_model if smaller_draft_model
                 else 'no smaller_draft_model was given')
        d.refuse('startup', 'The previous start-up ran out of memory at gpu_memory_utilization %.2f after the lower '
                 'setting was tried (or would fall below the floor %.2f), and %s: disable speculation and hand off to '
                 'memory tuning.' % (failed_gmu, floor, tried),
                 ['memory_tuning', 'no_speculation'] + ([] if smaller_draft_model else ['smaller_draft']))
        return {'next_step': 'none', 'gpu_memory_utilization': None}
    if failure == 'kv_cache':
        failed_gmu, failed_model = previous.get('gpu_memory_utilization'), previous.get('model')
        if smaller_draft_model and failed_model != smaller_draft_model:
            d.ground('The previous start-up left too little memory for the KV cache (vLLM: no cache blocks, or less '
                     'KV cache than one request of --max-model-len needs). A lower gpu_memory_utilization would leave '
                     'even less: next, the smaller draft %s at the same setting%s.'
                     % (smaller_draft_model, ' %.2f' % failed_gmu if failed_gmu is not None else ''))
            return {'next_step': 'smaller_draft',
                    'gpu_memory_utilization': round(failed_gmu, 2) if failed_gmu is not None else None}
        d.refuse('startup', 'The previous start-up left too little memory for the KV cache (vLLM: no cache blocks, or '
                 'less KV cache than one request of --max-model-len needs). Lowering gpu_memory_utilization would '
                 'leave even less, so it is not tried: serve a shorter --max-model-len (vllm_max_model_len) or give a '
                 'smaller draft (jetson_spec_smaller_draft_model)%s, then try again.'
                 % ('; the smaller draft %s failed the same way' % smaller_draft_model if smaller_draft_model else ''),
                 ['memory_tuning', 'no_speculation'] + ([] if smaller_draft_model else ['smaller_draft']))
        return {'next_step': 'none', 'gpu_memory_utilization': None}
    texts = {
        'engine_init': ('The previous start-up failed in engine initialisation ("Engine core initialization failed"): '
                        'read the root cause in the service log; speculation is disabled until it is fixed.',
                        ['memory_tuning', 'no_speculation']),
        'crash_loop': ('The previous start-up crashed repeatedly: go back to the non-speculative command and read the '
                       'service log before trying speculation again.', ['no_speculation']),
        'early_exit': ('The previous start-up ended (the process exited) before it served, with no error vLLM is known '
                       'to print: go back to the non-speculative command and read the service log before trying '
                       'speculation again.', ['no_speculation']),
        'timeout': ('The previous start-up did not become ready in time (the draft download or its warm-up may be '
                    'too slow): go back to the non-speculative command; try again with the draft already in the '
                    'cache.', ['no_speculation']),
    }
    if failure in texts:
        text, actions = texts[failure]
        d.refuse('startup', text, actions)
    return {'next_step': 'none', 'gpu_memory_utilization': None}


def _config_rejected(d):
    """vLLM rejected --speculative-config: the runtime rule was re-checked; refuse either way."""
    runtime_refused = 'runtime' in d.refused_by
    d.refuse('startup', 'vLLM rejected --speculative-config at the previous start-up%s: go back to the '
             'non-speculative command.' % (' and the runtime rule explains why (see the other reasons)'
                                           if runtime_refused else '; the runtime rule finds nothing wrong, so check '
                                           'the service log for the exact error'), ['no_speculation'])


def _ttft_rule(d, share, opts):
    limit = opts['max_ttft_share']
    if share is None:
        d.warn('No baseline_benchmark given: cannot check that TPOT, not TTFT, is the bottleneck (speculation does '
               'not reduce TTFT-dominated latency); pass the baseline vllm_benchmark result.')
        return
    ttft, e2e, ratio = share
    if ratio > limit + EPSILON:
        d.refuse('workload', 'TTFT dominates the baseline latency at concurrency 1 (ttft_ms_p50 %.1f of '
                 'e2e_latency_ms_p50 %.1f ms, %.0f %% > %.0f %%): speculation does not reduce TTFT-dominated latency.'
                 % (ttft, e2e, ratio * 100, limit * 100), ['no_speculation'])
    else:
        d.ground('TPOT is the bottleneck: TTFT is %.0f %% of the baseline latency at concurrency 1 (<= %.0f %%).'
                 % (ratio * 100, limit * 100))


def _draft_size(d, method, model, given, measure_path):
    """(draft size in MB or None, source): given, catalogue estimate, or measured local weights."""
    if method == 'mtp' and model is None:  # the target's own MTP layers: only the operator knows their size
        return (given, 'option') if given is not None else (None, None)
    if method not in ('eagle3', 'draft_model', 'dflash', 'mtp') or model is None:
        return None, None
    if given is not None:
        return given, 'option'
    estimate = draft_size_estimate(model)
    if estimate is not None:
        d.ground('Draft size %s MB estimated from the catalogue (%s); pass draft_size_mb to override.'
                 % (estimate, model))
        return estimate, 'catalogue'
    if model.startswith('/') and measure_path is not None:
        measured = measure_path(model)
        if measured is not None:
            d.ground('Draft size %s MB measured from the weight files under %s.' % (measured, model))
            return measured, 'weights'
    return None, None


def _family_rule(d, facts, allow_small_devices, method):
    """Return True for a small device (Orin NX / Nano) that is allowed to go on.

    A small device goes on with allow_small_devices (a draft model, ngram or suffix; never EAGLE-3), or without
    it when the operator asked for a memory-free method by name (ngram, suffix: no draft weights to fit).
    """
    label = _device_label(facts)
    if facts['is_jetson'] is False:
        d.refuse('family', 'This host is not a Jetson%s: speculative decoding is planned only for Jetson Thor and '
                 'AGX Orin.' % (' (%s)' % facts['reason'] if facts['reason'] else ''), ['no_speculation'])
        return False
    generation = facts['generation']
    line = facts['product_line']
    allowed = _devices.speculation_allowed(line)
    if generation == 'thor' or allowed == 'yes':
        d.ground('%s may speculate (%s has memory for the target plus an EAGLE-3 head or a draft).'
                 % (label, 'Thor' if generation == 'thor' else 'AGX Orin'))
        return False
    if generation == 'orin' and allowed == 'small':
        if method in MEMORY_FREE_METHODS and not allow_small_devices:
            d.warn('%s: method %s was asked for by name; it loads no draft weights, so it is tried here without '
                   'allow_small_devices. The benchmark decides, as for any method.' % (label, method))
            d.ground('%s may try %s speculation: it needs no memory for a draft (EAGLE-3 and draft models stay '
                     'refused on this device without allow_small_devices).' % (label, method))
            return True
        if not allow_small_devices:
            d.refuse('family', '%s is not planned for speculation: its shared CPU+GPU memory rarely holds the target '
                     'plus a draft and the server runs out of memory at startup (EAGLE-3 never; draft_model and mtp '
                     'only with allow_small_devices; ngram and suffix, which load no draft, when asked for by name '
                     'with method). Serve a smaller or better-quantised model, or tune memory, instead.'
                     % label, ['smaller_model', 'better_quantisation', 'memory_tuning', 'no_speculation'])
            return False
        d.warn('%s: speculation allowed by allow_small_devices; expect out-of-memory at startup unless the target is '
               'small. EAGLE-3 stays refused on this device.' % label)
        d.ground('%s may try draft-model, mtp, ngram or suffix speculation because allow_small_devices is true.'
                 % label)
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


def _target_mtp_layers(target_model, read_model_config):
    """(layers, source): the MTP layers a local target's config.json declares, else (None, None)."""
    if read_model_config is None or not target_model.startswith('/'):
        return None, None
    layers = mtp_layers(read_model_config(target_model))
    return (layers, 'config.json') if layers is not None else (None, None)


def _model_type(model, read_model_config):
    """A local checkpoint's config.json model_type (None for a hub id, an unreadable config or no reader)."""
    if read_model_config is None or not model or not model.startswith('/'):
        return None
    config = read_model_config(model)
    value = config.get('model_type') if isinstance(config, dict) else None
    return value if isinstance(value, str) else None


def _is_mtp_assistant(model, read_model_config):
    """A Gemma 4 assistant (an MTP drafter checkpoint): by its local config.json's model_type, else by its hub
    name (google/gemma-4-E4B-it-assistant)."""
    if not model:
        return False
    model_type = _model_type(model, read_model_config)
    if model_type is not None:
        return model_type in MTP_ASSISTANT_TYPES
    name = model.rsplit('/', 1)[-1].lower()
    return not model.startswith('/') and name.startswith('gemma-4') and name.endswith('-assistant')


def _is_gemma4_target(target_model, read_model_config):
    """True / False when the target is known to be (or not to be) Gemma 4, None when it cannot be told here."""
    model_type = _model_type(target_model, read_model_config)
    if model_type is not None:
        return model_type.startswith('gemma4')
    if target_model.startswith('/'):
        return None
    return target_model.rsplit('/', 1)[-1].lower().startswith('gemma-4')


def _method_minimum(method, model, catalogue, target_model, read_model_config):
    """The first vLLM release that runs ``method`` for this target and model, beyond the method's own minimum."""
    if method == 'mtp' and model is not None:
        return MTP_ASSISTANT_TYPES.get(_model_type(model, read_model_config), MIN_VLLM_MTP_ASSISTANT)
    if method == 'mtp':
        return mtp_minimum(catalogue, target_model)
    return None


def _dflash_draft_problem(draft, read_model_config):
    """Why a local DFlash draft cannot start (vLLM's own text), or None (fine, or not readable here)."""
    if read_model_config is None or not draft.startswith('/'):
        return None
    config = read_model_config(draft)
    if not isinstance(config, dict):
        return None
    speculators = config.get('speculators_config')
    if isinstance(speculators, dict) or 'speculators_model_type' in config:
        kind = config.get('speculators_model_type')
        if kind in DFLASH_SPECULATORS_TYPES:
            return None
        return ('its config.json is a speculators checkpoint of type %s, not dflash' % show(kind))
    dflash = config.get('dflash_config')
    if (isinstance(dflash, dict) and dflash.get('mask_token_id') is not None) or config.get('pard_token') is not None \
            or config.get('ptd_token_id') is not None:
        return None
    return ('its config.json has no dflash_config.mask_token_id, and vLLM refuses to start ("the draft model config '
            'must have `pard_token`, `ptd_token_id`, or `dflash_config.mask_token_id` specified in its config.json")')


def _method_rule(d, facts, method, target_model, eagle3_head, draft_model, catalogue, small, layers=(None, None),
                 version=None, read_model_config=None):
    """Return (method, model, draft_source) or (None/method, None, None) with a refusal.

    ``layers`` is (MTP layers, 'config.json') for a local target whose config says, else (None, None).
    """
    entry = lookup_catalogue(catalogue, target_model)
    mtp_count, mtp_source = layers
    if mtp_count is None and entry.get('mtp'):
        mtp_count, mtp_source = None, 'catalogue'
    has_mtp = bool(mtp_count) or mtp_source == 'catalogue'
    mtp_where = ('%s MTP layer(s) in its config.json' % mtp_count if mtp_source == 'config.json'
                 else 'MTP layers, from the catalogue')
    head, head_source = (eagle3_head, 'option') if eagle3_head else (entry.get('eagle3_head'), 'catalogue')
    draft, draft_source = (draft_model, 'option') if draft_model else (entry.get('draft_model'), 'catalogue')
    if not head:
        head_source = None
    if not draft:
        draft_source = None
    no_head = ('No published EAGLE-3 head is known for %s and no draft_model was given: do not train one ad hoc; pass '
               'a small same-family draft_model (same tokenizer and vocabulary) or do not speculate.' % target_model)
    eagle3_blocked = small or _devices.speculation_allowed(facts['product_line']) == 'small'
    never_eagle3 = ('Never EAGLE-3 on %s: there is rarely room for the target plus the head and the server runs out '
                    'of memory at startup.' % _device_label(facts))

    if method in MEMORY_FREE_METHODS:
        what = 'ngram (prompt lookup)' if method == 'ngram' else 'suffix (suffix decoding, Arctic Inference)'
        if eagle3_head or draft_model:
            d.warn('method %s uses no draft weights: eagle3_head/draft_model are ignored.' % what)
        d.ground('Method %s was asked for explicitly; it needs no draft weights.' % what)
        if method == 'suffix':
            d.warn('Suffix decoding needs the arctic-inference package in the vLLM environment; without it vLLM '
                   'refuses to start ("Arctic Inference is required for suffix decoding") and the change is '
                   'reverted.')
        return method, None, None
    if method == 'dflash':
        return _dflash_rule(d, target_model, eagle3_head, draft_model, read_model_config)
    if method == 'mtp' and draft_model and _is_mtp_assistant(draft_model, read_model_config):
        return _mtp_assistant_rule(d, target_model, draft_model, read_model_config)
    if method == 'mtp':
        if eagle3_head or draft_model:
            d.warn('method mtp drafts with the target\'s own MTP layers: eagle3_head/draft_model are ignored (a '
                   'draft_model is used only when it is a Gemma 4 assistant, an MTP drafter: model_type '
                   'gemma4_assistant, or a hub id named gemma-4-...-assistant).')
        if mtp_source == 'config.json' and not mtp_count:
            d.refuse('method', 'method mtp was asked for, but %s declares no MTP layers in its config.json '
                     '(num_nextn_predict_layers / mtp_num_hidden_layers): vLLM has nothing to draft with. Use '
                     'another method or do not speculate.' % target_model, ['provide_draft_model', 'no_speculation'])
            return 'mtp', None, None
        if has_mtp:
            d.ground('Method mtp: %s has %s; no head or draft to download.' % (target_model, mtp_where))
            return 'mtp', None, mtp_source
        d.warn('method mtp was asked for; whether %s has MTP layers is not known here (not a local model with a '
               'config.json, not in the catalogue): vLLM refuses to start if it has none, and the change is '
               'reverted.' % target_model)
        d.ground('Method mtp was asked for explicitly (the target\'s own MTP layers).')
        return 'mtp', None, None
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
    # auto: what the operator passed first, then the target's own MTP layers, then the catalogue's head or draft
    if draft_model and _is_mtp_assistant(draft_model, read_model_config):
        if eagle3_head:
            d.warn('Both an EAGLE-3 head (%s) and a Gemma 4 assistant (%s) are given: the assistant is used (method '
                   'mtp); leave draft_model out to use the head.' % (eagle3_head, draft_model))
        d.ground('Method auto chose mtp: draft_model %s is a Gemma 4 assistant (an MTP drafter), which vLLM runs as '
                 'method mtp with it as the model, not as a generic draft.' % draft_model)
        return _mtp_assistant_rule(d, target_model, draft_model, read_model_config)
    if has_mtp and not eagle3_head and not draft_model:
        minimum = mtp_minimum(catalogue, target_model)
        if version is not None and not _at_least(version, minimum):
            d.warn('%s has %s, but vLLM %s predates method mtp%s (%s+): planning the other methods instead.'
                   % (target_model, mtp_where, _vstr(version),
                      ' for its family' if minimum != MIN_VLLM_BY_METHOD['mtp'] else '', _vstr(minimum)))
        else:
            d.ground('Method auto chose mtp: %s has %s; no head or draft to download, and almost no extra memory.'
                     % (target_model, mtp_where))
            return 'mtp', None, mtp_source
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


def _dflash_rule(d, target_model, eagle3_head, draft_model, read_model_config):
    """method dflash, asked for by name: the DFlash draft is draft_model (never chosen by auto, never catalogued)."""
    if eagle3_head:
        d.warn('method dflash drafts with a DFlash draft (draft_model): eagle3_head is ignored.')
    if not draft_model:
        d.refuse('method', 'method dflash was asked for, but no draft_model is given: DFlash drafts with a block-diffusion '
                 'draft trained for %s (a DFlashDraftModel checkpoint such as z-lab/Qwen3-8B-DFlash-b16 for '
                 'Qwen/Qwen3-8B); pass it as draft_model, or use another method.' % target_model,
                 ['provide_draft_model', 'no_speculation'])
        return 'dflash', None, None
    problem = _dflash_draft_problem(draft_model, read_model_config)
    if problem:
        d.refuse('method', 'method dflash was asked for with draft_model %s, but %s. Use a DFlash draft checkpoint.'
                 % (draft_model, problem), ['provide_draft_model', 'no_speculation'])
        return 'dflash', None, None
    d.ground('Method dflash (asked for by name): DFlash draft %s for %s; it drafts a block of num_speculative_tokens '
             'tokens in one parallel pass.' % (draft_model, target_model))
    d.warn('DFlash on a Jetson is not verified by this collection (method auto never picks it): its draft weights '
           'count as a draft model\'s in the memory rule, and the benchmark decides. vLLM needs Triton for it, and on '
           '0.20 to 0.23 an attention backend with non-causal attention (FLASH_ATTN or FLEX_ATTENTION), else the '
           'start-up fails and the change is reverted.')
    return 'dflash', draft_model, 'option'


def _mtp_assistant_rule(d, target_model, assistant, read_model_config):
    """method mtp with a separate MTP drafter checkpoint (Gemma 4's assistant), given as draft_model."""
    model_type = _model_type(assistant, read_model_config)
    gemma4 = _is_gemma4_target(target_model, read_model_config)
    if gemma4 is False:
        d.refuse('method', 'draft_model %s is a Gemma 4 assistant (an MTP drafter), but the target %s is not a Gemma 4 '
                 'model: an assistant drafts only for the Gemma 4 model it was trained with.' % (assistant, target_model),
                 ['provide_draft_model', 'no_speculation'])
        return 'mtp', None, None
    if gemma4 is None:
        d.warn('Whether the target %s is a Gemma 4 model is not known here (a local path without a readable '
               'config.json): the assistant %s drafts only for its own Gemma 4 model.' % (target_model, assistant))
    if model_type is not None and model_type not in MTP_ASSISTANT_TYPES:
        d.refuse('method', 'method mtp with draft_model %s: an MTP drafter checkpoint must be a Gemma 4 assistant '
                 '(config.json model_type %s), and this one is %s. Use method draft_model for a generic draft, or '
                 'method mtp without draft_model for a target with its own MTP layers.'
                 % (assistant, ' or '.join(sorted(MTP_ASSISTANT_TYPES)), show(model_type)),
                 ['provide_draft_model', 'no_speculation'])
        return 'mtp', None, None
    d.ground('Method mtp with the MTP drafter %s (a Gemma 4 assistant, %s) for %s.'
             % (assistant, 'model_type %s' % model_type if model_type else 'by its name', target_model))
    if model_type is None:
        d.warn('%s is not a local checkpoint: that it is a Gemma 4 assistant (model_type gemma4_assistant, or '
               'gemma4_unified_assistant for the 12B, which needs vLLM 0.23+) is not checked here. vLLM reads it '
               'with the installed transformers (5.8+ for Gemma 4 assistants, per vLLM\'s own test registry).'
               % assistant)
    return 'mtp', assistant, 'option'


def _runner_rule(d, method, version, parallel_drafting):
    """Which model runner runs the method (model_runner.runner): a reason, a warning when vLLM falls back."""
    found = _model_runner.runner(method, version, parallel_drafting)
    if found['fallback']:
        d.warn(found['text'])
    else:
        d.ground(found['text'])
    if parallel_drafting:
        d.warn('parallel_drafting: the %s must be trained for parallel drafting (P-EAGLE for an EAGLE-3 head, PARD '
               'for a draft model); vLLM runs it on the V1 runner only, and not for a multimodal target.'
               % ('head' if method == 'eagle3' else 'draft'))
    return found['runner']


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


def _image_forbidden(image, forbidden):
    """The entry of jetson_facts' forbidden_images that ``image`` matches (same repository and tag), or None."""
    repository, tag, _digest = _devices.split_image(image)
    for item in forbidden:
        item_repository, item_tag, _item_digest = _devices.split_image(item)
        if repository == item_repository and (item_tag is None or item_tag == tag):
            return item
    return None


def check_image_matches_version(image, version):
    """An upstream image tag naming a vLLM version must agree with vllm_version; else raise."""
    if image is None or version is None:
        return
    tagged = _devices.image_tag_version(image)
    if tagged is None:
        return
    if tuple(version[:len(tagged)]) != tagged:
        raise SpeculativeInputError(
            'runtime_image %s is vLLM %s by its tag, but vllm_version says %s: one of them is wrong. Pass the '
            'version GET /version reports and the image the baseline service really runs.'
            % (show(image), _vstr(tagged), _vstr(version)))


_OTHER_IMAGE = ('runtime_image %s is neither the upstream image (%s) nor a native install: make sure it is a '
                'validated vLLM %s+ build for %s.')


def _runtime_rule(d, facts, version, image, method, method_minimum=None):
    generation, l4t = facts['generation'], facts['l4t_major']
    if generation not in ('thor', 'orin'):
        return  # the family rule already refused
    rule = _devices.runtime_rule(generation, l4t)
    upstream_min = _vstr(_devices.UPSTREAM_MIN_VLLM)
    minimum = MIN_VLLM_SPECULATIVE_CONFIG
    where = 'any speculation (the JSON --speculative-config form and EAGLE-3)'
    kind = _devices.image_kind(image) if image else None
    refusals_before = len(d.refusals)
    if generation == 'thor':
        minimum, where = rule['min_vllm_version'], 'Thor (upstream vllm/vllm-openai or a validated native install)'
        built_for = _devices.nvidia_image_device(image) if kind == 'nvidia-ai-iot' else None
        if kind == 'nvidia-ai-iot' and built_for == 'orin':
            d.refuse('runtime', 'Never use the NVIDIA-AI-IOT Orin image on Thor (runtime_image %s, built for Orin by its '
                     'tag): Thor runs NVIDIA\'s Thor image (%s), upstream vLLM %s+ (%s) or a validated native vLLM %s+.'
                     % (image, _devices.THOR_IMAGE, upstream_min, _devices.UPSTREAM_IMAGE, upstream_min),
                     ['change_runtime', 'no_speculation'])
        elif kind == 'nvidia-ai-iot' and built_for == 'thor':
            d.ground('runtime_image %s is NVIDIA\'s Thor image (by its tag).' % image)
        elif kind == 'nvidia-ai-iot':
            d.warn('runtime_image %s is an NVIDIA-AI-IOT vLLM image whose tag does not say which Jetson it is built for '
                   '(a digest only, or latest): on Thor it must be the Thor build (%s), never the Orin one (%s). Check '
                   'the image; the benchmark decides.' % (image, _devices.THOR_IMAGE, _devices.ORIN_IMAGE))
        elif kind == 'upstream' and _devices.upstream_cuda12_tag(image):
            d.refuse('runtime', 'runtime_image %s is an upstream CUDA 12 build (its -cu12x tag): those have no sm_110 '
                     'kernels and cannot run on Thor (vllm PR #39233). Use a plain tag, a CUDA 13 build (%s).'
                     % (image, _devices.UPSTREAM_IMAGE), ['change_runtime', 'no_speculation'])
        elif kind == 'other':
            d.warn(_OTHER_IMAGE % (image, _devices.UPSTREAM_IMAGE, upstream_min, 'Thor'))
    elif rule['path'] == 'upstream':
        minimum, where = rule['min_vllm_version'], 'Orin on L4T r%s (JetPack 7.2+, upstream vLLM)' % l4t
        if kind == 'nvidia-ai-iot':
            d.refuse('runtime', 'Orin on L4T r%s runs upstream vLLM %s+ (%s); the NVIDIA-AI-IOT image %s targets '
                     'JetPack 6 and does not match this release.' % (l4t, upstream_min, _devices.UPSTREAM_IMAGE, image),
                     ['change_runtime', 'no_speculation'])
        elif kind == 'other':
            d.warn(_OTHER_IMAGE % (image, _devices.UPSTREAM_IMAGE, upstream_min, 'Orin on L4T r%s' % l4t))
    else:
        release = 'r%s' % l4t if l4t is not None else 'unknown'
        if rule['assumed']:
            d.warn(_devices.UNKNOWN_L4T_ON_ORIN + '.')
        if kind == 'upstream' and rule['assumed']:
            d.warn('runtime_image %s is the upstream image, which only an Orin on L4T r%s+ runs: check the L4T '
                   'release.' % (image, _devices.ORIN_UPSTREAM_L4T_MAJOR))
        elif kind == 'upstream':
            d.refuse('runtime', 'Orin on L4T %s (before r%s) uses the NVIDIA-AI-IOT vLLM image matching its JetPack '
                     '(%s), not the upstream image %s.'
                     % (release, _devices.ORIN_UPSTREAM_L4T_MAJOR, _devices.ORIN_IMAGE, image),
                     ['change_runtime', 'no_speculation'])
        elif image is None:
            d.warn('runtime_image not given: on Orin L4T %s the baseline recipe uses %s; make sure the baseline '
                   'matches it.' % (release, _devices.ORIN_IMAGE))
        elif kind == 'other':
            d.warn('runtime_image %s is not an NVIDIA-AI-IOT image (%s) that Orin L4T %s uses: make sure it matches '
                   'your JetPack.' % (image, _devices.ORIN_IMAGE, release))
        if l4t is not None and l4t < 36:
            d.warn('NVIDIA-AI-IOT vLLM images target JetPack 6 (L4T r36); on L4T r%s check that your image matches '
                   'the JetPack release.' % l4t)
        where = 'Orin on L4T %s (NVIDIA-AI-IOT image)' % release
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
        needs = ''
        if method == 'draft_model':
            needs = ' and %s for draft_model' % _vstr(MIN_VLLM_DRAFT_MODEL)
        elif method in ('mtp', 'suffix', 'dflash'):
            needs = ' and %s for method %s%s' % (_vstr(max(MIN_VLLM_BY_METHOD[method], method_minimum or ())), method,
                                                 ' with this model' if method_minimum else '')
        d.warn('vLLM version unknown: cannot check that it meets %s for %s%s.' % (_vstr(minimum), where, needs))
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
    elif method in ('mtp', 'suffix', 'dflash'):
        minimum = max(MIN_VLLM_BY_METHOD[method], method_minimum or ())
        if not _at_least(version, minimum):
            d.refuse('runtime', 'vLLM %s does not know method %s%s (it first ships in %s): it refuses the '
                     '--speculative-config.' % (_vstr(version), method,
                                                ' for this model' if minimum != MIN_VLLM_BY_METHOD[method] else '',
                                                _vstr(minimum)),
                     ['upgrade_vllm', 'no_speculation'])
        else:
            d.ground('vLLM %s supports method %s (>= %s).' % (_vstr(version), method, _vstr(minimum)))


def _known_bad_rule(d, method, version, model, read_model_config):
    """Warn when vLLM ``version`` is known to speculate badly with ``method`` (known_bad.KNOWN_BAD)."""
    if method is None:
        return
    config = read_model_config(model) if read_model_config is not None and model and model.startswith('/') else None
    for text in _known_bad.warnings_for(method, version, model, config):
        d.warn(text)


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


def _mtp_tokens_rule(d, k, layers, override):
    """K for method mtp, given the target's MTP layer count n when config.json says it.

    vLLM (vllm/config/speculative.py, 0.11 to 0.32) reuses the n layers in turn: K above n must be a multiple of n,
    else it refuses to start ("num_speculative_tokens:K must be divisible by n_predict=n"). A default K is rounded
    down to a multiple (or to n); a K the operator gave that vLLM would refuse is an input error.
    """
    count, source = layers
    if k is None or source != 'config.json' or not count or k <= count or k % count == 0:
        return k
    if override is not None:
        raise SpeculativeInputError('num_speculative_tokens %s: the target has %s MTP layers, and vLLM needs a value '
                                    'up to %s or a multiple of it ("must be divisible by n_predict"); try %s.'
                                    % (override, count, count, (k // count) * count))
    fitted = (k // count) * count
    d.ground('num_speculative_tokens %s (the default %s rounded down to a multiple of the target\'s %s MTP layers, '
             'as vLLM requires).' % (fitted, k, count))
    return fitted


def _memory_rule(d, method, baseline, free_mb, draft_mb, facts, opts):
    """Return the new gpu_memory_utilization (the baseline for ngram / refusals).

    Near the ceiling (the baseline within one step of gpu_memory_utilization_ceiling, or above it)
    speculation is enabled only when the MEASURED free memory leaves min_free_memory_after_draft_mb
    after the draft; elsewhere an unknown free memory or draft size is only a warning.
    """
    if method in MEMORY_FREE_METHODS:
        d.ground('%s needs no draft weights: gpu_memory_utilization stays at %.2f and the draft headroom check '
                 'does not apply.' % (method, baseline))
        return round(baseline, 2)
    ceiling, floor = opts['gpu_memory_utilization_ceiling'], opts['min_gpu_memory_utilization']
    step, need = opts['gpu_memory_utilization_step'], opts['min_free_memory_after_draft_mb']
    new = round(baseline - step, 2)
    near = baseline >= ceiling - step - EPSILON
    if new < floor - EPSILON:
        d.refuse('memory', 'Lowering gpu_memory_utilization from %.2f by %.2f gives %.2f, below the floor of %.2f: the '
                 'target would keep too little KV cache. Tune memory first.'
                 % (baseline, step, new, floor), ['memory_tuning', 'no_speculation'])
    else:
        d.ground('gpu_memory_utilization lowered from %.2f to %.2f to leave room for the draft.' % (baseline, new))
    source = 'free_memory_mb'
    if free_mb is None:
        free_mb, source = facts['available_mb'], "jetson_facts' memory.available_mb (MemAvailable)"
    unknown = ' and '.join(n for n, v in (('free memory', free_mb), ('draft size', draft_mb)) if v is None)
    if near:
        case = ('Near the ceiling: the baseline gpu_memory_utilization %.2f is within one step (%.2f) of the ceiling '
                '%.2f' % (baseline, step, ceiling))
        if unknown:
            d.refuse('memory', '%s, and the %s is unknown, so the %s MB left after the draft cannot be confirmed: '
                     'free at least %s MB first, or pass free_memory_mb (measured while the baseline serves) and '
                     'draft_size_mb.' % (case, unknown, need, need), ['free_memory', 'memory_tuning', 'no_speculation'])
        elif free_mb - draft_mb < need:
            d.refuse('memory', '%s, and the measured free memory leaves %s MB after the draft (%s MB free from %s - %s '
                     'MB draft), below %s MB: free at least %s MB first.'
                     % (case, free_mb - draft_mb, free_mb, source, draft_mb, need, need),
                     ['free_memory', 'memory_tuning', 'smaller_draft', 'no_speculation'])
        else:
            d.ground('%s; enabled because the measured free memory leaves %s MB after the draft (%s MB free from %s - '
                     '%s MB draft, >= %s MB).' % (case, free_mb - draft_mb, free_mb, source, draft_mb, need))
        return new
    if unknown:
        d.warn('Free memory after the draft cannot be checked (%s unknown): pass free_memory_mb and draft_size_mb; '
               'an out-of-memory at startup means lowering gpu_memory_utilization, a smaller draft or no speculation.'
               % unknown)
    elif free_mb - draft_mb < need:
        d.refuse('memory', 'Free memory after the draft would be %s MB (%s MB free from %s - %s MB draft), below %s MB: '
                 'free at least %s MB first.' % (free_mb - draft_mb, free_mb, source, draft_mb, need, need),
                 ['free_memory', 'memory_tuning', 'smaller_draft', 'no_speculation'])
    else:
        d.ground('Free memory after the draft: %s MB (>= %s MB).' % (free_mb - draft_mb, need))
    return new
