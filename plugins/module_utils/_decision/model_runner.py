# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vLLM model runner runs a speculative method, per vLLM version (private, standard library only).

vLLM has two GPU model runners: V1 and Model Runner V2 ("MRv2"). Which one runs a service decides whether a
speculative configuration starts at all (``VLLM_USE_V2_MODEL_RUNNER=1`` with a method V2 does not run refuses to
start) and how a batch-size-aware schedule behaves (vllm#51510: V2 ignores K = 0 in a batch-size range). Read in the
PyPI sdists of every release from 0.12.0 to 0.34.0 (``vllm/envs.py``; ``vllm/config/vllm.py``:
``VllmConfig.use_v2_model_runner``, ``_get_v2_model_runner_unsupported_features``, ``_validate_v2_model_runner``);
docs/decision-rules.md's facts table says the same:

- up to 0.21: V1 unless ``VLLM_USE_V2_MODEL_RUNNER=1`` (then only eagle, eagle3 and mtp start);
- 0.22 to 0.28: V2 by default for some models only (Qwen3 dense in 0.22, then Llama and Mistral, a list in 0.24,
  every dense model from 0.25), V1 for the others;
- 0.29 to 0.33: V2 by default for every model; a feature V2 does not run falls back to V1 with the warning
  "Model Runner V2 does not yet support ...; using the V1 model runner instead" (with
  ``VLLM_USE_V2_MODEL_RUNNER=1``: the start-up error "Model Runner V2 does not yet support: ...");
- 0.34: V1 is removed; every method runs on V2 (``parallel_drafting`` for EAGLE-3 is refused by the configuration).

Without Triton (vLLM's CPU build) V2 is not used before 0.34: "Model Runner V2 requires Triton; using the V1 model
runner instead" (what the test bed's vLLM 0.32.0 logs).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import _at_least, _vstr as _v

# The speculative methods Model Runner V2 runs, from the release that first runs each (its
# _get_v2_model_runner_unsupported_features no longer lists it): eagle, eagle3 and mtp from the first V2 (0.12, opt-in);
# dflash 0.24; dspark 0.25 (V2 only); extract_hidden_states 0.29; draft_model 0.31; ngram 0.32; suffix 0.34 (no V1).
V2_METHOD_SINCE = {
    'eagle3': (0, 12),
    'mtp': (0, 12),
    'dflash': (0, 24),
    'draft_model': (0, 31),
    'ngram': (0, 32),
    'suffix': (0, 34),
}
V2_DEFAULT_FOR_ALL = (0, 29)    # V2 the default for every model (0.22 to 0.28: for some models only)
V2_DEFAULT_FOR_SOME = (0, 22)   # VLLM_USE_V2_MODEL_RUNNER unset lets vLLM choose (before: V1 unless set to 1)
V1_REMOVED = (0, 34)            # V1 deleted: V2 is the only runner
# Parallel drafting (P-EAGLE, PARD) runs on V1 only from 0.16 to 0.33; V2 runs it for dflash and dspark only.
PARALLEL_DRAFTING_SINCE = (0, 16)
PARALLEL_DRAFTING_REMOVED = (0, 34)


def v2_runs(method, version, parallel_drafting=False):
    """Whether Model Runner V2 of vLLM ``version`` runs ``method`` (with parallel drafting when asked)."""
    since = V2_METHOD_SINCE.get(method)
    if since is None or not _at_least(version, since):
        return False
    return not (parallel_drafting and method not in ('dflash',))


def runner(method, version, parallel_drafting=False):
    """The model runner a GPU build of vLLM ``version`` uses for ``method`` with VLLM_USE_V2_MODEL_RUNNER unset.

    Returns a dict: ``runner`` (``v1``, ``v2``, ``depends`` when the default depends on the model (0.22 to 0.28), or
    ``unknown`` for an unknown version), ``fallback`` (True when V2 is the default but does not run the method, so
    vLLM falls back to V1 with a warning), and ``text`` (one sentence for the plan's reasons).
    """
    if version is None:
        return {'runner': 'unknown', 'fallback': False,
                'text': 'vLLM version unknown: which model runner (V1 or Model Runner V2) runs method %s is not known '
                        'here.' % method}
    runs = v2_runs(method, version, parallel_drafting)
    what = method + (' with parallel drafting' if parallel_drafting else '')
    if _at_least(version, V1_REMOVED):
        return {'runner': 'v2', 'fallback': False,
                'text': 'vLLM %s has Model Runner V2 only (V1 was removed in %s): it runs %s.'
                        % (_v(version), _v(V1_REMOVED), what)}
    if _at_least(version, V2_DEFAULT_FOR_ALL):
        if runs:
            return {'runner': 'v2', 'fallback': False,
                    'text': 'vLLM %s runs %s on Model Runner V2, its default from %s.'
                            % (_v(version), what, _v(V2_DEFAULT_FOR_ALL))}
        return {'runner': 'v1', 'fallback': True,
                'text': 'vLLM %s defaults to Model Runner V2, which does not run %s: vLLM falls back to the V1 runner '
                        'with a warning ("Model Runner V2 does not yet support ..."), and refuses to start if the '
                        'service sets VLLM_USE_V2_MODEL_RUNNER=1.' % (_v(version), what)}
    if _at_least(version, V2_DEFAULT_FOR_SOME):
        if runs:
            text = ('vLLM %s runs %s on Model Runner V2 for the models it makes V2 their default (from %s: dense '
                    'models first), on V1 for the others.' % (_v(version), what, _v(V2_DEFAULT_FOR_SOME)))
            return {'runner': 'depends', 'fallback': False, 'text': text}
        return {'runner': 'v1', 'fallback': True,
                'text': 'vLLM %s runs %s on the V1 runner (Model Runner V2, the default for some models, does not run '
                        'it: vLLM falls back to V1 with a warning, and refuses to start if the service sets '
                        'VLLM_USE_V2_MODEL_RUNNER=1).' % (_v(version), what)}
    opt_in = ', which runs it' if runs else ', which does not run it: vLLM then refuses to start'
    return {'runner': 'v1', 'fallback': False,
            'text': 'vLLM %s runs %s on the V1 runner (Model Runner V2 only with VLLM_USE_V2_MODEL_RUNNER=1%s).'
                    % (_v(version), what, opt_in)}
