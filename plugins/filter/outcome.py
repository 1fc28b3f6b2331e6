# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The outcome filters (after_plan, batch_aware_note, verdict_outcome, attempt_note, attempt_next,
startup_failure_outcome, failure_outcome, undrain_step): see their .yml documentation."""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import outcome as O
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.lifecycle import ACTIONS, after_plan as _after_plan


def batch_aware_note(first, limit, config, health, judged):
    """The record of a batch-size-aware attempt (tried or not) after the planned configuration's verdict."""
    for what, value in (('the first verdict', first), ('limit', limit)):
        if not isinstance(value, dict):
            raise AnsibleFilterError('batch_aware_note: %s is %s, not a dictionary' % (what, type(value).__name__))
    try:
        return O.batch_aware_note(first, limit, config, health, judged)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('batch_aware_note: %s' % exc)


def verdict_outcome(outcome, verdict, candidate, batch_aware, resumed_reasons, revert_check, measurement):
    """The run's outcome after the verdict that decides."""
    for what, value in (('the outcome', outcome), ('the verdict', verdict)):
        if not isinstance(value, dict):
            raise AnsibleFilterError('verdict_outcome: %s is %s, not a dictionary' % (what, type(value).__name__))
    if resumed_reasons is not None and not isinstance(resumed_reasons, list):
        raise AnsibleFilterError('verdict_outcome: resumed_reasons is %s, not a list' % type(resumed_reasons).__name__)
    return O.after_verdict(outcome, verdict, candidate, batch_aware, resumed_reasons, revert_check, measurement)


def _listed(name, what, value):
    if value is not None and not isinstance(value, list):
        raise AnsibleFilterError('%s: %s is %s, not a list' % (name, what, type(value).__name__))


def attempt_note(attempts, index, attempt, health, memory):
    """The start-up attempts with this one's entry added."""
    _listed('attempt_note', 'the attempts', attempts)
    try:
        return O.attempt_note(attempts, index, attempt, health, memory)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('attempt_note: %s' % exc)


def attempt_next(attempt, index, max_attempts, health, plan_next):
    """The attempt after this one: up, try (the plan's next step) or failed."""
    try:
        return O.attempt_next(attempt, index, max_attempts, health, plan_next)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('attempt_next: index %r and max_attempts %r must be integers (%s)'
                                 % (index, max_attempts, exc))


def startup_failure_outcome(outcome, attempt, attempts, resumed_reasons):
    """The outcome when no attempt started."""
    if not isinstance(outcome, dict):
        raise AnsibleFilterError('startup_failure_outcome: the outcome is %s, not a dictionary' % type(outcome).__name__)
    _listed('startup_failure_outcome', 'the attempts', attempts)
    _listed('startup_failure_outcome', 'resumed_reasons', resumed_reasons)
    return O.after_startup_failure(outcome, attempt, attempts, resumed_reasons)


def after_plan(action, plan, is_jetson, outcome):
    """The run's action and outcome once the plan has answered (a refusal ends the run as refuse)."""
    if action not in ACTIONS:
        raise AnsibleFilterError('after_plan: the action is %r; allowed: %s' % (action, ', '.join(ACTIONS)))
    if not isinstance(outcome, dict):
        raise AnsibleFilterError('after_plan: the outcome is %s, not a dictionary' % type(outcome).__name__)
    try:
        jetson = boolean(is_jetson, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError('after_plan: is_jetson: %s' % exc)
    return _after_plan(action, plan, jetson, outcome)


def failure_outcome(outcome, failure, revert_failure, changed, overlays, service):
    """The outcome when a task failed after the change, the revert's failure kept apart from the first one."""
    for what, value in (('the outcome', outcome), ('the failure', failure)):
        if not isinstance(value, dict):
            raise AnsibleFilterError('failure_outcome: %s is %s, not a dictionary' % (what, type(value).__name__))
    if revert_failure is not None and not isinstance(revert_failure, dict):
        raise AnsibleFilterError('failure_outcome: the revert failure is %s, not a dictionary or none'
                                 % type(revert_failure).__name__)
    _listed('failure_outcome', 'the overlays', overlays)
    try:
        changed = boolean(changed, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError('failure_outcome: changed: %s' % exc)
    return O.after_failure(outcome, failure, revert_failure, changed, overlays, service)


def undrain_step(outcome, drained, hook, revert_failure, serving=True):
    """Whether the undrain hook runs at the end of the run, and the outcome (a reason when the host stays out)."""
    if not isinstance(outcome, dict):
        raise AnsibleFilterError('undrain_step: the outcome is %s, not a dictionary' % type(outcome).__name__)
    if revert_failure is not None and not isinstance(revert_failure, dict):
        raise AnsibleFilterError('undrain_step: the revert failure is %s, not a dictionary or none'
                                 % type(revert_failure).__name__)
    if not isinstance(hook, str):
        raise AnsibleFilterError('undrain_step: the hook is %s, not a string' % type(hook).__name__)
    try:
        drained, serving = boolean(drained, strict=True), boolean(serving, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError('undrain_step: drained and serving: %s' % exc)
    return O.undrain_step(outcome, drained, hook, revert_failure, serving)


class FilterModule(object):
    def filters(self):
        return {'after_plan': after_plan, 'batch_aware_note': batch_aware_note, 'verdict_outcome': verdict_outcome, 'attempt_note': attempt_note,
                'attempt_next': attempt_next, 'startup_failure_outcome': startup_failure_outcome,
                'failure_outcome': failure_outcome, 'undrain_step': undrain_step}
