# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The cohort rollout's filters (cohort_canaries, cohort_gate, cohort_verdict, cohort_confirm, cohort_collect,
rollout_failures, rollout_waves): see
their .yml docs.

They only translate between Ansible's values and module_utils/_decision/rollout.py, where the decisions are.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import rollout as _rollout
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, loads


def _time(name, value):
    parsed = _rollout.parse_time(value)
    if parsed is None:
        raise AnsibleFilterError('%s is %r; allowed: an ISO 8601 time such as 2026-12-06T18:00:00Z' % (name, value))
    return parsed


def _max_age(value):
    try:
        return int(_rollout.number(value, 'jetson_spec_baseline_max_age', 0, 9999999999))
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('%s' % exc)


def _get(host_vars, key):
    try:
        return host_vars[key] if key in host_vars else None
    # An undefined or broken variable of one host must not hide the others.
    except Exception:  # pylint: disable=broad-except
        return None


def _verdicts(value, what='jetson_spec_cohort_verdicts'):
    """A dictionary of cohort key to verdict from ``value`` (a dictionary, or JSON text: a saved file)."""
    if value is None or value == '':
        return {}
    if isinstance(value, str):
        try:
            value = loads(value, what)
        except InputError as exc:
            raise AnsibleFilterError('%s; fix it or remove it' % exc)
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s must be a dictionary of cohort key to verdict, not %s' % (what, type(value).__name__))
    return value


def _names(value, what):
    """``value`` as a list of host names; AnsibleFilterError ("<what> takes a list of host names") otherwise."""
    if isinstance(value, (str, dict)) or not hasattr(value, '__iter__'):
        raise AnsibleFilterError('%s takes a list of host names, not %s' % (what, type(value).__name__))
    return list(value)


def _vars_of(hostvars, name):
    """The variables of host ``name`` (empty when the play does not know it)."""
    return hostvars[name] if name in hostvars else {}


def _from_hostvars(names, hostvars):
    """{name: {cohort, action, prefer}} from the hosts' variables (the role's _jetson_spec_cohort, _jetson_spec_action,
    the operator's jetson_spec_canary)."""
    hosts = {}
    for name in names:
        host_vars = _vars_of(hostvars, name)
        cohort = _get(host_vars, '_jetson_spec_cohort')
        prefer = _get(host_vars, 'jetson_spec_canary')
        hosts[name] = {'cohort': cohort.get('key') if isinstance(cohort, dict) else None,
                       'action': _get(host_vars, '_jetson_spec_action'),
                       'prefer': prefer is True or str(prefer).lower() in ('true', 'yes', '1')}
    return hosts


def cohort_canaries(hosts, verdicts, now, max_age, run_started=None, hostvars=None, extra=None, part='all'):
    """{canaries, by_cohort, verdicts}: the hosts that verify their cohort in full (rollout.pick_canaries), and the
    verdicts that gate the others (``verdicts`` updated with ``extra``, the usable ones). ``part`` others (a job that
    follows a canary job): no canary."""
    if hostvars is not None:
        hosts = _from_hostvars(_names(hosts, 'cohort_canaries with hostvars='), hostvars)
    try:
        merged = dict(_verdicts(verdicts, 'the saved cohort verdicts (jetson_spec_report_dir/cohort-verdicts.json)'))
        merged.update(_verdicts(extra))
        return _rollout.pick_canaries(hosts, merged, _time('now', now), _max_age(max_age), run_started,
                                      pick=_rollout.rollout_part(part) != 'others')
    except (_rollout.RolloutError, TypeError, ValueError, OverflowError) as exc:
        raise AnsibleFilterError('cohort_canaries: %s' % exc)


def cohort_gate(key, verdicts, now, max_age, run_started=None, verify_each_host=False, host=None, part='all'):
    """{action, reason, verdict} of a host whose own decision is to verify (rollout.gate); ``part`` others (a job that
    follows a canary job): a host whose cohort has no usable verdict is not attempted."""
    try:
        part = _rollout.rollout_part(part)
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('cohort_gate: %s' % exc)
    try:
        return _rollout.gate(key, _verdicts(verdicts), _time('now', now), _max_age(max_age), run_started=run_started,
                             verify_each_host=bool(verify_each_host), host=host,
                             without_verdict='stop' if part == 'others' else 'verify')
    except (TypeError, ValueError, OverflowError) as exc:
        raise AnsibleFilterError('cohort_gate: jetson_spec_cohort_verdicts cannot be read (%s)' % exc)


def cohort_collect(canaries, hostvars, now, saveable=False):
    """{key: verdict} of a run's canaries, from their variables (rollout.collect): a failed canary is ``failed``
    whatever it reached, one whose rollout tasks never ended (it dropped off mid-change) ``unreachable``."""
    info = {}
    for name in _names(canaries, 'cohort_collect'):
        host_vars = _vars_of(hostvars, name)
        info[name] = {'verdict': _get(host_vars, '_jetson_spec_cohort_verdict'),
                      'cohort': _get(host_vars, '_jetson_spec_cohort'),
                      'error': _get(host_vars, '_jetson_fleet_error'),
                      'done': bool(_get(host_vars, '_jetson_fleet_done')), 'now': now}
    return _rollout.collect(info, saveable=bool(saveable))


def cohort_verdict(summary, cohort, canary, baseline=None, candidate=None):
    """The cohort verdict a canary's outcome gives, or None (rollout.cohort_verdict)."""
    return _rollout.cohort_verdict(cohort, canary, summary, baseline, candidate)


def cohort_confirm(benchmark, verdict, spread=_rollout.DEFAULT_SPREAD):
    """{confirmed, conclusive, reasons, figures} of a confirmation run (rollout.confirm)."""
    try:
        return _rollout.confirm(verdict, benchmark, spread)
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('cohort_confirm: %s' % exc)


def rollout_failures(hosts, hostvars, batch=None, canary=False, rollout_size=None, max_fail_percentage=20):
    """{stop, failed, size, msg}: whether the rollout stops after this batch (rollout.failure_share), from the hosts'
    variables (_jetson_fleet_batch, _jetson_fleet_attempted, _jetson_fleet_error)."""
    info = {}
    for name in _names(hosts, 'rollout_failures'):
        host_vars = _vars_of(hostvars, name)
        info[name] = {'batch': _get(host_vars, '_jetson_fleet_batch'),
                      'attempted': bool(_get(host_vars, '_jetson_fleet_attempted')),
                      'error': _get(host_vars, '_jetson_fleet_error')}
    try:
        return _rollout.failure_share(info, batch=batch, canary=bool(canary), rollout_size=rollout_size,
                                      max_fail_percentage=max_fail_percentage)
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('%s' % exc)


def _disruption_group(name, host_vars):
    """The host's jetson_spec_disruption_group, or None; a variable that cannot be read is an error, never "no group"
    (which would let the host restart beside the others of its group)."""
    try:
        group = host_vars['jetson_spec_disruption_group'] if 'jetson_spec_disruption_group' in host_vars else None
    except Exception as exc:  # pylint: disable=broad-except
        raise AnsibleFilterError('jetson_spec_disruption_group of %s cannot be read: %s' % (name, exc))
    if group is not None and (isinstance(group, bool) or not isinstance(group, (str, int))):
        raise AnsibleFilterError('jetson_spec_disruption_group of %s is %r; allowed: a name (a site, a pool)'
                                 % (name, group))
    return group


def rollout_waves(hosts, hostvars, canaries=None, canary_size=1, batch_size='25%', max_unavailable=1,
                  max_fail_percentage=20):
    """{canaries: {order, sizes, held, pattern}, others: {...}}: the batches of the canary play and of the other hosts'
    play under the disruption budget (rollout.waves), from the hosts' variables (jetson_spec_disruption_group, the
    read's _jetson_spec_action and _jetson_spec_state.remove_speculation); a canary always restarts. ``pattern`` is the
    play's host pattern (the names, comma-separated, a comma last: a name with ":" stays one name). Every rollout
    setting is checked here, before anything changes (``max_fail_percentage`` too)."""
    hosts = _names(hosts, 'rollout_waves')
    try:
        _rollout.fail_percentage(max_fail_percentage)
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('%s' % exc)
    canaries = set(canaries or [])
    rows = {'canaries': [], 'others': []}
    for name in hosts:
        host_vars = _vars_of(hostvars, name)
        group = _disruption_group(name, host_vars)
        state = _get(host_vars, '_jetson_spec_state')
        removes = isinstance(state, dict) and bool(state.get('remove_speculation'))
        if name in canaries:
            rows['canaries'].append((name, group, True))
        else:
            rows['others'].append((name, group, _rollout.restarts(_get(host_vars, '_jetson_spec_action'), removes)))
    try:
        plans = {'canaries': _rollout.waves(rows['canaries'], canary_size, batch_size, max_unavailable),
                 'others': _rollout.waves(rows['others'], batch_size, batch_size, max_unavailable)}
    except _rollout.RolloutError as exc:
        raise AnsibleFilterError('%s' % exc)
    for plan in plans.values():
        plan['pattern'] = ''.join('%s,' % name for name in plan['order'])
    return plans


class FilterModule(object):
    def filters(self):
        return {'cohort_canaries': cohort_canaries, 'cohort_gate': cohort_gate, 'cohort_verdict': cohort_verdict,
                'cohort_confirm': cohort_confirm, 'cohort_collect': cohort_collect,
                'rollout_failures': rollout_failures, 'rollout_waves': rollout_waves}
