# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The K-tuning filters (tuning_start, tuning_next, tuning_step, tuning_result): see their .yml documentation."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import tuning as T


def _call(name, function, *args):
    try:
        return function(*args)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s: %s' % (name, type(exc).__name__, exc))


def _mapping(name, what, value):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s is %s, not a dictionary' % (name, what, type(value).__name__))
    return value


def tuning_start(speculative_config, gpu_memory_utilization, runs):
    """The tuning state from the kept configuration and its candidate benchmark's runs."""
    return _call('tuning_start', T.start, _mapping('tuning_start', 'the speculative_config', speculative_config),
                 gpu_memory_utilization, runs)


def tuning_next(tune, min_acceptance, max_k):
    """Whether K + 1 can pay: go, k, stop, tune, speculative_config, gpu_memory_utilization."""
    return _call('tuning_next', T.next_step, _mapping('tuning_next', 'the tuning state', tune), min_acceptance, max_k)


def tuning_step(tune, step, k, health, judged, benchmark, max_steps):
    """The tuning state after one step."""
    return _call('tuning_step', T.record_step, _mapping('tuning_step', 'the tuning state', tune), step, k,
                 _mapping('tuning_step', 'health', health), _mapping('tuning_step', 'judged', judged),
                 benchmark, max_steps)


def tuning_result(outcome, tune, max_steps):
    """The run's outcome after tuning."""
    return _call('tuning_result', T.result, _mapping('tuning_result', 'the outcome', outcome),
                 _mapping('tuning_result', 'the tuning state', tune), max_steps)


class FilterModule(object):
    def filters(self):
        return {'tuning_start': tuning_start, 'tuning_next': tuning_next, 'tuning_step': tuning_step,
                'tuning_result': tuning_result}
