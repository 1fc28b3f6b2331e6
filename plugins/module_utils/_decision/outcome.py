# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the speculative_decoding run's outcome says after its verdict (private, standard library only).

* ``batch_aware_note()``: the record of a batch-size-aware attempt (tried or not, and why), after the planned
  configuration passed at concurrency 1 but regressed at concurrency 8 (``spec_config.batch_aware_trigger``);
* ``after_verdict()``: the outcome once the change is judged (kept: enabled; otherwise reverted), with the reasons
  of the verdict that decided, the measurement, and a warning when the restored service measured slower than the
  baseline.

The role's tasks (verify.yml, batch_aware.yml) call them through the filters ``batch_aware_note`` and
``verdict_outcome``.

* ``after_failure()``: the outcome when a task failed after the change (main.yml's ``rescue``): the failure that
  started it first, then either the revert's proof or, when the revert failed too, its own failure and what the
  operator must do. The first failure is kept apart from the revert's (a nested ``rescue`` rebinds
  ``ansible_failed_task``), so the cause is never lost.
* ``undrain_step()``: whether the host goes back in service at the end of the run (the undrain hook), after a drain
  of this run or of an interrupted earlier one.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

#: The keys of batch_aware_note() that go into the outcome's reasons, not into its ``batch_aware`` record.
NOTE_ONLY = ('first_reasons', 'summary', 'reasons')

_PASSED_C1 = 'The planned configuration passed at concurrency 1 but regressed at concurrency 8 (verdict %s); '


def _mapping(value):
    return value if isinstance(value, dict) else {}


def batch_aware_note(first, limit, config, health, judged):
    """The batch-size-aware attempt after the planned configuration's verdict ``first``: ``limit`` is
    batch_aware_limit's result (``max_batch`` 0: nothing was tried, and its ``reason`` says why), ``config`` the
    batch-size-aware configuration, ``health`` vllm_health's result for its start and ``judged`` its verdict (both
    ignored when nothing was tried; ``judged`` also when it did not start)."""
    first = _mapping(first)
    limit = _mapping(limit)
    max_batch = int(limit.get('max_batch') or 0)
    if max_batch <= 0:
        return {'tried': False, 'max_batch': 0, 'limit_reason': limit.get('reason'), 'speculative_config': None,
                'healthy': None, 'failure': None, 'verdict': None, 'deltas': {}, 'drafting': None, 'kept': False,
                'first_reasons': first.get('reasons'), 'reasons': [],
                'summary': (_PASSED_C1 % first.get('verdict')) + 'batch-size-aware speculation was not tried: %s'
                % limit.get('reason')}
    health = _mapping(health)
    judged = _mapping(judged)
    healthy = bool(health.get('healthy'))
    kept = healthy and bool(judged.get('keep'))
    reason = limit.get('reason')
    summary = (_PASSED_C1 % first.get('verdict')) + 'tried speculating only up to %s requests at a time ' % max_batch
    summary += '(num_speculative_tokens_per_batch_size%s): ' % ((': ' + reason.rstrip('.')) if reason else '')
    if healthy:
        summary += 'verdict %s, %s.' % (judged.get('verdict'), 'kept' if kept else 'not kept')
    else:
        summary += 'it did not start: %s.' % health.get('failure')
    return {'tried': True, 'max_batch': max_batch, 'limit_reason': reason, 'speculative_config': config,
            'healthy': healthy, 'failure': health.get('failure'),
            'verdict': judged.get('verdict') if healthy else None,
            'deltas': judged.get('deltas') if healthy else {},
            'drafting': judged.get('drafting') if healthy else None,
            'kept': kept, 'first_reasons': first.get('reasons'),
            'reasons': judged.get('reasons') if healthy else [], 'summary': summary}


def after_verdict(outcome, verdict, candidate, batch_aware, resumed_reasons, revert_check, measurement):
    """The outcome after ``verdict`` (the one that decides: the batch-size-aware attempt's when it was kept):
    enabled when it keeps the change, reverted otherwise. ``candidate`` is the judged benchmark, ``batch_aware``
    batch_aware_note()'s result (None when none was considered), ``resumed_reasons`` what an interrupted run's
    recovery said first, ``revert_check`` the restored service's check (None when nothing was restored) and
    ``measurement`` the role's jetson_spec_measurement."""
    verdict = _mapping(verdict)
    candidate = _mapping(candidate)
    criteria = _mapping(verdict.get('criteria'))
    if isinstance(batch_aware, dict):
        judged_reasons = list(batch_aware.get('first_reasons') or []) + [batch_aware.get('summary')] + list(
            batch_aware.get('reasons') or [])
        record = dict((key, value) for key, value in batch_aware.items() if key not in NOTE_ONLY)
    else:
        judged_reasons, record = list(verdict.get('reasons') or []), None
    check = _mapping(revert_check)
    warning = [] if check.get('at_baseline_speed', True) else [
        'Warning: the restored service measured %s x the baseline throughput at concurrency 1 (healthy, byte for '
        'byte the previous service).' % check.get('ratio')]
    sequential = _mapping(candidate.get('sequential')) if 'sequential' in candidate else None
    return dict(outcome, **{
        'status': 'enabled' if verdict.get('keep') else 'reverted',
        'unsettled': _mapping(verdict.get('live_traffic')).get('verdict_without_it') is not None,
        'reasons': list(resumed_reasons or []) + judged_reasons + warning,
        'verdict': verdict.get('verdict'),
        'verdict_summary': verdict.get('summary'),
        'intervals': {'c1': _mapping(criteria.get('throughput_gain_c1')).get('interval'),
                      'c8': _mapping(criteria.get('regression_c8')).get('interval')},
        'measurement': {'mode': measurement,
                        'requests': _mapping(sequential.get('requests')).get('total') if sequential is not None
                        else None,
                        'stopped': sequential.get('stopped') if sequential is not None else None,
                        'reason': sequential.get('reason') if sequential is not None else None},
        'batch_aware': record,
        'deltas': verdict.get('deltas'),
        'recommendation': verdict.get('recommendation')})


# --- start-up attempts (attempt.yml, apply.yml) ---------------------------------------------------------------------
#: The plan's next steps after a start-up failure that are another attempt (speculative_plan's previous_attempt).
RETRY_STEPS = ('lower_gpu_memory_utilization', 'smaller_draft')


def attempt_note(attempts, index, attempt, health, memory):
    """``attempts`` with this start-up attempt's entry added: number ``index`` (0 for the first) started ``attempt``
    (its speculative_config, gpu_memory_utilization and model), with vllm_health's result ``health`` and the memory
    it started in; its ``summary`` is the sentence the outcome's reasons carry."""
    health = _mapping(health)
    attempt = _mapping(attempt)
    what = attempt.get('model') or _mapping(attempt.get('speculative_config')).get('method')
    if health.get('healthy'):
        said = 'healthy after %s s' % health.get('elapsed_s')
    else:
        said = 'failed to start: %s' % health.get('failure')
        if health.get('evidence'):
            said += ' ("%s")' % health.get('evidence')
    return list(attempts or []) + [{
        'speculative_config': attempt.get('speculative_config'),
        'gpu_memory_utilization': attempt.get('gpu_memory_utilization'),
        'healthy': health.get('healthy'), 'failure': health.get('failure'), 'evidence': health.get('evidence'),
        'elapsed_s': health.get('elapsed_s'), 'memory': memory,
        'summary': 'Attempt %d (%s, --gpu-memory-utilization %s): %s' % (
            int(index) + 1, what, attempt.get('gpu_memory_utilization'), said)}]


def attempt_next(attempt, index, max_attempts, health, plan_next):
    """The attempt after number ``index``: ``up`` when it serves; otherwise ``try`` the plan's next step
    (``plan_next``: speculative_plan's result given this failure) while one is left and it is another start-up
    (RETRY_STEPS), else ``failed`` with the plan's reasons and hand-off."""
    if _mapping(health).get('healthy'):
        return dict(_mapping(attempt), state='up')
    plan_next = _mapping(plan_next)
    if plan_next.get('enable') and plan_next.get('next_step') in RETRY_STEPS and int(index) + 1 < int(max_attempts):
        return {'state': 'try', 'speculative_config': plan_next.get('speculative_config'),
                'gpu_memory_utilization': plan_next.get('gpu_memory_utilization'), 'model': plan_next.get('model')}
    return {'state': 'failed', 'reasons': plan_next.get('reasons'), 'handoff': plan_next.get('handoff')}


def after_startup_failure(outcome, attempt, attempts, resumed_reasons):
    """The outcome when no attempt started: reverted, with what an interrupted run's recovery said, the plan's
    reasons for giving up, every attempt's sentence, and the plan's hand-off."""
    attempt = _mapping(attempt)
    return dict(outcome, status='reverted',
                reasons=list(resumed_reasons or []) + list(attempt.get('reasons') or [])
                + [entry.get('summary') for entry in attempts or []],
                handoff=attempt.get('handoff', {}))


#: How much of a failure's message the record keeps (a module's message can be a whole traceback).
FAILURE_MSG_CHARS = 600
REVERT_MSG_CHARS = 400


def _cut(text, limit):
    text = '' if text is None else str(text)
    return text if len(text) <= limit else text[:limit - 3].rstrip() + '...'


def failure_message(failure):
    """A failed task's message: its ``msg``, or, for a loop (``results``: its items' results, Ansible's "One or more
    items failed"), the messages of the items that failed."""
    items = failure.get('results')
    if isinstance(items, list):
        failed = ['%s' % item.get('msg') for item in items
                  if isinstance(item, dict) and item.get('failed') and item.get('msg')]
        if failed:
            return ' '.join(failed)
    return '%s' % (failure.get('msg') or 'no message')


def after_failure(outcome, failure, revert_failure, changed, overlays, service):
    """The outcome of a run a task failed in: status failed; the reasons so far, the failed task and its message
    (``failure``: ``task``, ``msg``, and a loop's ``results``: failure_message), then, when the host was changed (``changed``), either that the previous service
    was restored and is healthy, or (``revert_failure`` given) that the revert failed too, with its own task and
    message, the ``overlays`` to remove and the ``service`` to restart."""
    failure = _mapping(failure)
    reasons = list(_mapping(outcome).get('reasons') or [])
    reasons.append('Task "%s" failed: %s' % (
        failure.get('task') or '?', _cut(failure_message(failure), FAILURE_MSG_CHARS)))
    if revert_failure:
        revert_failure = _mapping(revert_failure)
        reasons.append('REVERT FAILED (task "%s"): %s The host needs an operator; remove %s, then restart %s.' % (
            revert_failure.get('task') or '?', _cut(revert_failure.get('msg') or 'no message', REVERT_MSG_CHARS),
            ' and '.join(str(path) for path in overlays or []), service))
    elif changed:
        reasons.append('The previous service was restored and is healthy.')
    return dict(_mapping(outcome), status='failed', reasons=reasons)


def undrain_step(outcome, drained, hook, revert_failure, serving=True):
    """Whether the undrain hook (``hook``: jetson_spec_undrain_tasks, '' when none) runs at the end of this run, on a
    host taken out of service (``drained``: by this run's drain hook, or by an earlier run that was interrupted
    before it put the host back). {'run': bool, 'outcome': the outcome, with a reason when the host stays out}.

    It runs on every path where the service serves: kept, reverted, failed with the previous service restored,
    nothing changed. It does not run when the revert failed (``revert_failure``) or vLLM does not run (``serving``
    false: the run skipped the host): the host would get traffic it cannot serve; nor without a hook (an earlier
    run's drain, the hooks unset since). The reason says so and what to do."""
    outcome = _mapping(outcome)
    if not drained:
        return {'run': False, 'outcome': outcome}
    reasons = list(outcome.get('reasons') or [])
    if revert_failure or not serving:
        reasons.append('The host stays out of service (the undrain hook was not run): its service %s. Put it back in '
                       'service once the service is healthy again; the next run does it too.'
                       % ('is not back' if revert_failure else 'does not run'))
    elif not hook:
        reasons.append('An earlier run took the host out of service and was interrupted before it put it back, and no '
                       'undrain hook is set now (jetson_spec_undrain_tasks): put the host back in service yourself.')
    else:
        return {'run': True, 'outcome': outcome}
    return {'run': False, 'outcome': dict(outcome, reasons=reasons)}
