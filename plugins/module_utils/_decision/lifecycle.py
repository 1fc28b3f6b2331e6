# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run of the speculative_decoding role does on one host: one decision from what is there.

``decide(observed)`` takes what ``speculative_state`` read on the host (the recorded outcome, whether
the *running* process has ``--speculative-config``, the last-known-good copy, the guard) and the
desired inputs, and returns one action of ``ACTIONS`` with its reasons. The role dispatches on it.
``RULES`` is the same decision as a table, in the order ``decide`` applies it; docs/lifecycle.md is
generated from it (tests/unit checks that the two agree).

Standard library only (it runs on the targets).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import SETTLED

# in_sync    nothing to do: the recorded outcome still describes what runs, for the same inputs
# verify     benchmark the baseline, try the planned configuration, keep it or revert it
# reconcile  the record says speculation is off but the running process has it: remove it, keep the outcome
# resume     a change was interrupted (record pending or guard armed): roll it back, then decide again
# disable    jetson_spec_state=disabled: remove speculation (when it runs) and record that
# refuse     speculation runs that this collection did not put there: leave it, say so
# skip       nothing to act on (no vLLM service, or it is not running)
ACTIONS = ('in_sync', 'verify', 'reconcile', 'resume', 'disable', 'refuse', 'skip')

# (when, action, remove_speculation, what the run does): the decision, rule by rule, first match wins.
RULES = (
    ('the service does not exist and no change is in flight', 'skip', False,
     'Records `skipped` with the reason; changes nothing.'),
    ('the record is `pending` or the guard is armed (a run was interrupted)', 'resume', True,
     'Removes the unverified overlay (back to the last verified service), proves it healthy, records the '
     'interruption, then decides again in the same run.'),
    ('speculation runs and this collection cannot take it away (the service itself has `--speculative-config`, not '
     'only this collection\'s overlay: the unit, an operator\'s drop-in or the project\'s compose files)', 'refuse', False,
     'Leaves the service as it is and says why (its non-speculative baseline is unknown); rc 0.'),
    ('`jetson_spec_state: disabled` and speculation runs', 'disable', True,
     'Removes the overlay (back to the non-speculative service), proves it healthy, records `disabled`.'),
    ('`jetson_spec_state: disabled`, speculation off, the record does not say `enabled`', 'in_sync', False,
     'Nothing (the recorded outcome, e.g. `refused`, still describes what runs).'),
    ('`jetson_spec_state: disabled`, speculation off, the record says `enabled`', 'disable', False,
     'Records `disabled` (the record said what does not run); no restart.'),
    ('speculation runs, the record says otherwise, same inputs', 'reconcile', True,
     'Removes the overlay (record = reality), keeps the recorded outcome.'),
    ('same inputs, an outcome of the loop recorded (not `failed`, `pending` or `disabled`) that matches what runs '
     '(`enabled` exactly when speculation runs), the service as recorded (the unit and its drop-ins, or the '
     'project\'s compose files, without the overlay), no `jetson_spec_force_verify`',
     'in_sync', False, 'Nothing: no restart, no request.'),
    ('the service is not running', 'skip', False,
     'The plan still runs (a refusal, e.g. of the device, is recorded as `refused`); otherwise reports `skipped` '
     '(start the service first) and changes nothing.'),
    ('the record says `enabled` but the running process has no `--speculative-config`', 'verify', False,
     'Verifies again from the running (non-speculative) service.'),
    ('anything else (no record, new inputs or software, a changed service, e.g. an operator edit, a forced run)', 'verify', None,
     'Benchmarks the baseline (after removing speculation when it runs), tries the plan, keeps or reverts it.'),
)


def fingerprint(parts):
    """sha256 of a JSON-serialisable value, keys sorted (the same value gives the same fingerprint)."""
    text = json.dumps(parts, sort_keys=True, separators=(',', ':'), allow_nan=False)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _answer(rule, reasons, remove=None):
    when, action, fixed_remove, _does = RULES[rule]
    return {'action': action, 'rule': rule + 1, 'when': when,
            'remove_speculation': fixed_remove if fixed_remove is not None else bool(remove),
            'reasons': reasons}


def decide(observed):
    """One action for one host.

    ``observed`` keys: ``service_exists`` (bool), ``running`` (bool: a main process runs),
    ``running_speculative`` (bool: its command line has --speculative-config), ``record`` (a checked
    record or {}), ``record_problem`` (str or None), ``last_known_good`` (bool: a non-speculative service can be put
    back by removing the overlay),
    ``guard_armed`` (bool), ``state`` ('enabled' or 'disabled'), ``force_verify`` (bool),
    ``fingerprint`` (str: of the current inputs), ``fingerprint_parts`` (dict: what it was computed from, to
    name what changed), ``service_sha256`` (str or None: the service now without the overlay: the unit and its
    drop-ins, or the project's compose files), ``service`` (str: its name).
    """
    record = observed.get('record') or {}
    status = record.get('status')
    name = observed.get('service') or 'the vLLM service'
    spec = bool(observed.get('running_speculative'))
    lkg = bool(observed.get('last_known_good'))
    reasons = []
    if observed.get('record_problem'):
        reasons.append('The recorded outcome is ignored: %s.' % observed['record_problem'])

    interrupted = status == 'pending' or bool(observed.get('guard_armed'))
    if not observed.get('service_exists') and not (interrupted and lkg):
        return _answer(0, reasons + ['There is no vLLM service %s on this host: nothing to speculate on.' % name])
    if interrupted:
        why = ('a change is recorded as in flight (started %s)' % record.get('started', 'at an unknown time')
               if status == 'pending' else 'the guard of an earlier change is still armed')
        return _answer(1, reasons + ['A previous run stopped in the middle of the change: %s. The last-known-good '
                                     'service is restored and the host decided again.' % why])
    if spec and not lkg:
        return _answer(2, reasons + [
            '%s speculates without this collection\'s overlay (--speculative-config in the service itself, or a '
            'speculators checkpoint as its model; %s), so its non-speculative baseline is unknown: left as it is. '
            'Deploy the baseline '
            '(jetson_llm.vllm.serve or your own unit without --speculative-config), then run again.'
            % (name, 'a record exists' if record else 'and no record')])
    if observed.get('state') == 'disabled':
        if spec:
            return _answer(3, reasons + ['Speculative decoding is removed on purpose (jetson_spec_state: disabled).'])
        if status != 'enabled':
            return _answer(4, reasons + ['%s runs without --speculative-config, as jetson_spec_state: disabled asks%s.'
                                         % (name, ' (recorded: %s)' % status if status else '')])
        return _answer(5, reasons + ['The record says enabled, but %s runs without --speculative-config: recorded as '
                                     'disabled (jetson_spec_state: disabled).' % name])
    # A record of jetson_spec_state=disabled is not an outcome of the loop: enabling again verifies.
    same = record.get('fingerprint') == observed.get('fingerprint') and status in SETTLED and status != 'disabled'
    force = bool(observed.get('force_verify'))
    if spec and status != 'enabled' and same and not force:
        return _answer(6, reasons + ['The record says %s, but %s runs with --speculative-config: speculation is '
                                     'removed so that the host runs what its record says.' % (status, name)])
    file_same = record.get('service_sha256') is not None and record.get('service_sha256') == observed.get('service_sha256')
    if same and file_same and not force and (status == 'enabled') == spec:
        return _answer(7, reasons + ['Recorded earlier, nothing changed since.'])
    if not observed.get('running'):
        return _answer(8, reasons + ['%s is not running: start it (jetson_llm.vllm.serve), then run again.' % name])
    if status == 'enabled' and not spec:
        return _answer(9, reasons + ['The record says enabled, but the running %s has no --speculative-config: '
                                     'verified again.' % name])
    why = []
    if not record:
        why.append('no outcome is recorded')
    elif record.get('fingerprint') != observed.get('fingerprint'):
        changed = changed_parts(record.get('fingerprint_parts'), observed.get('fingerprint_parts'))
        why.append('changed since the recorded outcome: %s' % '; '.join(changed) if changed else
                   'the inputs or the software changed since the recorded outcome')
    elif status not in SETTLED or status == 'disabled':
        why.append('the recorded outcome is %s' % status)
    elif not file_same:
        why.append('the service changed since the recorded outcome (its unit, another drop-in or its compose files: '
                   'an operator\'s edit is the new baseline, measured with its flags kept)')
    if force:
        why.append('jetson_spec_force_verify is set')
    if spec and status != 'enabled':
        why.append('the record says %s but speculation runs (removed before the baseline is measured)' % status)
    return _answer(10, reasons + ['Verify: %s.' % '; '.join(why or ['requested'])], remove=spec)


def _short(value):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + '...'


def changed_parts(before, after):
    """'power_mode "MAXN" -> "15W"', ... for the keys of two fingerprint_parts dicts that differ (two levels deep)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            changes.extend('%s.%s' % (key, item) for item in changed_parts(old, new))
        elif key == 'service':  # a digest: say what it stands for
            changes.append('service (the unit, a drop-in or a compose file other than the overlay: an edit is the '
                           'new baseline)')
        else:
            changes.append('%s %s -> %s' % (key, _short(old), _short(new)))
    return changes


def lifecycle_table():
    """docs/lifecycle.md's table (Markdown), from RULES."""
    lines = ['| # | when (first match wins) | action | removes speculation | what the run does |',
             '|---|---|---|---|---|']
    for index, (when, action, remove, does) in enumerate(RULES):
        removes = 'when it runs' if remove is None else ('yes' if remove else 'no')
        lines.append('| %d | %s | `%s` | %s | %s |' % (index + 1, when, action, removes, does))
    return '\n'.join(lines) + '\n'


def after_plan(action, plan, is_jetson, outcome):
    """The run's action and outcome once speculative_plan has answered: {'action', 'outcome'}.

    A plan that refuses (``enable`` false: the device, the method or the inputs rule speculation out) ends a run that
    was to ``verify`` (or to ``skip`` a service that is not running: a refusal holds for any service) as ``refuse``:
    speculation that runs is removed, nothing is measured, and the outcome is ``refused`` on a Jetson (``skipped``
    elsewhere) with the plan's reasons and hand-off. Any other action, a plan that was not asked (``plan`` None or
    skipped) or a plan that enables, leaves both as they are.
    """
    plan = plan if isinstance(plan, dict) else {}
    if action not in ('verify', 'skip') or not plan or plan.get('skipped') or plan.get('enable'):
        return {'action': action, 'outcome': outcome}
    return {'action': 'refuse',
            'outcome': dict(outcome, status='refused' if is_jetson else 'skipped', reasons=plan.get('reasons'),
                            handoff=plan.get('handoff'))}
