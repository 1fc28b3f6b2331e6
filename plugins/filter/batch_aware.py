# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The batch_aware_limit and batch_aware_trigger filters: see their .yml documentation."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import batch_aware_limit as _limit
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import batch_aware_trigger as _trigger


def batch_aware_limit(max_batch, num_speculative_tokens, serve_args):
    """The largest batch size that speculates in a batch-size-aware config, given the serve arguments."""
    if not isinstance(serve_args, (list, tuple)):
        raise AnsibleFilterError('batch_aware_limit: serve_args must be a list of vLLM arguments, not %s'
                                 % type(serve_args).__name__)
    try:
        return _limit(max_batch, num_speculative_tokens, list(serve_args))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('batch_aware_limit: max_batch %r and num_speculative_tokens %r must be integers (%s)'
                                 % (max_batch, num_speculative_tokens, exc))


def batch_aware_trigger(verdict, max_batch, concurrency, vllm_version, speculative_config):
    """Whether to try batch-size-aware speculation after ``verdict``: {'try': bool, 'why': reason or None}."""
    if not isinstance(verdict, dict):
        raise AnsibleFilterError('batch_aware_trigger: the verdict is %s, not speculative_verdict\'s result'
                                 % type(verdict).__name__)
    if not isinstance(concurrency, (list, tuple)):
        raise AnsibleFilterError('batch_aware_trigger: concurrency is %s, not a list of levels'
                                 % type(concurrency).__name__)
    try:
        attempt, why = _trigger(verdict, max_batch, list(concurrency), vllm_version, speculative_config)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('batch_aware_trigger: max_batch %r and the concurrency levels %r must be integers (%s)'
                                 % (max_batch, concurrency, exc))
    return {'try': attempt, 'why': why}


class FilterModule(object):
    def filters(self):
        return {'batch_aware_limit': batch_aware_limit, 'batch_aware_trigger': batch_aware_trigger}
