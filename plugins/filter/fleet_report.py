# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The fleet report filters (fleet_rows, fleet_report): see fleet_rows.yml and fleet_report.yml."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils import _fleet_report


def _get(host_vars, key):
    try:
        return host_vars[key] if key in host_vars else None
    # An undefined or broken variable of one host must not hide the others.
    except Exception:  # pylint: disable=broad-except
        return None


def fleet_rows(hosts, hostvars, active_hosts=None, left_to_rollout=None):
    """One report row per host in ``hosts``, from the hosts' variables.

    A host's outcome is ``_jetson_fleet_record`` (read from its fact file by report.yml) or
    ``_jetson_spec_summary`` (set by the speculative_decoding role in this run). Without one, the
    row says why: ``_jetson_fleet_state`` when a play set it, else failed (``_jetson_fleet_error``
    set), unreachable (attempted, gone from ``active_hosts``), left to the rollout job (not attempted and in
    ``left_to_rollout``: a canary job's other hosts), or not attempted.
    """
    if isinstance(hosts, str) or not hasattr(hosts, '__iter__'):
        raise AnsibleFilterError('fleet_rows takes a list of host names, not %s' % type(hosts).__name__)
    active = None if active_hosts is None else set(active_hosts)
    if left_to_rollout is not None and (isinstance(left_to_rollout, str) or not hasattr(left_to_rollout, '__iter__')):
        raise AnsibleFilterError('fleet_rows left_to_rollout= takes a list of host names, not %s'
                                 % type(left_to_rollout).__name__)
    later = set(left_to_rollout or [])
    data = {}
    for host in hosts:
        host_vars = hostvars[host] if host in hostvars else {}
        record = _get(host_vars, '_jetson_fleet_record') or _get(host_vars, '_jetson_spec_summary')
        error = _get(host_vars, '_jetson_fleet_error')
        state = _get(host_vars, '_jetson_fleet_state')
        if not state:
            if error:
                state = 'failed'
            elif active is not None and host not in active:
                state = 'unreachable' if _get(host_vars, '_jetson_fleet_attempted') else 'not_attempted'
            elif active is not None and not _get(host_vars, '_jetson_fleet_attempted'):
                state = 'not_attempted'
            if state == 'not_attempted' and host in later:
                state = 'left_to_rollout'
        data[host] = {'record': record if isinstance(record, dict) else None,
                      'groups': list(_get(host_vars, 'group_names') or []), 'state': state, 'error': error}
    try:
        return _fleet_report.rows_from_hosts(list(hosts), data)
    except _fleet_report.FleetReportError as exc:
        raise AnsibleFilterError(str(exc))


def fleet_report(rows, title='Speculative decoding: fleet report', generated=None, report_dir=None, previous=None,
                 inventory_hosts=None):
    """Rows -> {rows, counts, table, html, json, unchanged} (+ report_dir, html_path, json_path on the controller).

    ``previous`` (the JSON twin already written) is merged: hosts this run did not cover (``--limit``) keep their
    earlier row, marked ``earlier_run``; ``inventory_hosts`` (``groups['all']``) drops hosts gone from the inventory.
    """
    if not isinstance(rows, list) or not all(isinstance(item, dict) for item in rows):
        raise AnsibleFilterError('fleet_report takes the list of rows fleet_rows returns')
    if previous is not None and not isinstance(previous, str):
        raise AnsibleFilterError('fleet_report previous= takes the text of the JSON twin already written, not %s'
                                 % type(previous).__name__)
    if inventory_hosts is not None and (isinstance(inventory_hosts, str) or not hasattr(inventory_hosts, '__iter__')):
        raise AnsibleFilterError('fleet_report inventory_hosts= takes a list of host names, not %s'
                                 % type(inventory_hosts).__name__)
    return _fleet_report.report(rows, title=title, generated=generated, report_dir=report_dir, previous=previous,
                                inventory_hosts=None if inventory_hosts is None else list(inventory_hosts))


def fleet_facts_table(hosts, hostvars):
    """Lines of text: one per host, from each host's ansible_facts.jetson (jetson_facts)."""
    if isinstance(hosts, str) or not hasattr(hosts, '__iter__'):
        raise AnsibleFilterError('fleet_facts_table takes a list of host names, not %s' % type(hosts).__name__)
    facts = {}
    for host in hosts:
        host_vars = hostvars[host] if host in hostvars else {}
        facts[host] = (_get(host_vars, 'ansible_facts') or {}).get('jetson')
    return _fleet_report.facts_table(facts)


class FilterModule(object):
    def filters(self):
        return {'fleet_rows': fleet_rows, 'fleet_report': fleet_report, 'fleet_facts_table': fleet_facts_table}
