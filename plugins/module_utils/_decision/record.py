# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The outcome record a host keeps (/etc/ansible/facts.d/jetson_vllm_speculative.fact): its one owner.

The module ``speculative_state`` reads it, the module ``speculative_record`` writes it and the fleet
report reads it, all through this file. Standard library only (it runs on the targets).

Every record carries the ``schema`` it was written with (``SCHEMA_VERSION``, 1: the first release). A record of a
newer schema, written by a newer release of this collection, is an error naming both versions (``NewerSchema``):
this release does not overwrite what it cannot read. A damaged record (not JSON, nested too deep, a number JSON
cannot carry such as ``1e999``, not an object, no or an invalid schema, an unknown status, a number field that is
not a number) reads as no record, with the problem said, never as a crash: the host is verified again.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import math
import re
import time

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, dumps as json_dumps, loads

SCHEMA_VERSION = 1
# What a record may say. ``pending``: a change is in flight (written before the restart, replaced by the
# outcome); every other status is an outcome.
STATUSES = ('enabled', 'reverted', 'refused', 'skipped', 'disabled', 'failed', 'pending')
# Outcomes a re-run with the same inputs keeps (``failed`` is tried again).
SETTLED = ('enabled', 'reverted', 'refused', 'skipped', 'disabled')
MAX_RECORD_BYTES = 1048576


# The record's numbers, by path: written as numbers (or null) whatever the caller's templating made of them.
# ansible-core 2.18 (Jinja2 not native) renders a lone "{{ number }}" as a string and "{{ none }}" as "";
# a record read back must not depend on the ansible-core that wrote it.
NUMBERS = (
    (('baseline_gpu_memory_utilization',), float),
    (('candidate_gpu_memory_utilization',), float),
    (('num_speculative_tokens',), int),
    (('baseline_age_s',), float),
    (('revert_check', 'baseline_throughput_tok_s'), float),
    (('revert_check', 'restored_throughput_tok_s'), float),
    (('revert_check', 'ratio'), float),
    (('batch_aware', 'max_batch'), int),
    (('tuning', 'from_k'), int),
)


class RecordError(ValueError):
    """A record that cannot be written as given."""


def _number(path, value, kind):
    """A number of the record as ``kind`` (a numeric string too), None for null or ""; anything else is an error."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            _bad(path, value, kind)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
        _bad(path, value, kind)
    if kind is int and isinstance(value, float) and not value.is_integer():
        _bad(path, value, kind)
    return kind(value)


def _bad(path, value, kind):
    raise RecordError('the record field %s is %r, not %s or null'
                      % ('.'.join(path), value, 'a number' if kind is float else 'an integer'))


def _normalise_numbers(record):
    result = dict(record)
    for path, kind in NUMBERS:
        parent = result
        for key in path[:-1]:
            child = parent.get(key)
            if not isinstance(child, dict):
                parent = None
                break
            parent[key] = child = dict(child)
            parent = child
        if parent is not None and path[-1] in parent:
            parent[path[-1]] = _number(path, parent[path[-1]], kind)
    return result


class NewerSchema(Exception):
    """A record written by a newer release of this collection (a schema this one does not know)."""


def check(record):
    """A record read from a file -> (the record, problem or None); raises NewerSchema for a newer schema."""
    if not isinstance(record, dict):
        return {}, 'the record is not a JSON object'
    schema = record.get('schema')
    if schema is None:
        return {}, 'the record has no schema (this collection writes schema %d)' % SCHEMA_VERSION
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        return {}, 'the record has an invalid schema %r' % (schema,)
    if schema > SCHEMA_VERSION:
        raise NewerSchema('the record has schema %d and this release of jetson_llm.vllm reads schema %d: it was written '
                          'by a newer release. Run that release, or remove the record to verify the host again.'
                          % (schema, SCHEMA_VERSION))
    status = record.get('status')
    if status not in STATUSES:
        return {}, 'the record has an unknown status %r (allowed: %s)' % (status, ', '.join(STATUSES))
    try:
        return _normalise_numbers(record), None
    except RecordError as exc:
        return {}, '%s' % exc


def parse(data):
    """The bytes or text of a record file -> (record, problem or None); a damaged record is ({}, problem), a record
    of a newer schema raises NewerSchema."""
    if data is None:
        return {}, None
    if isinstance(data, (bytes, str)) and len(data) > MAX_RECORD_BYTES:
        return {}, 'the record is larger than %d bytes' % MAX_RECORD_BYTES
    if not (data.strip() if isinstance(data, (bytes, str)) else data):
        return {}, 'the record is empty'
    try:
        record = loads(data, 'the record', max_bytes=MAX_RECORD_BYTES)
    except InputError as exc:
        return {}, '%s' % exc
    return check(record)


def validate(record):
    """A record about to be written: a dict with a known status; returns it with the current schema."""
    if not isinstance(record, dict):
        raise RecordError('the record must be a dictionary, not %s' % type(record).__name__)
    status = record.get('status')
    if status not in STATUSES:
        raise RecordError('the record status %r is not one of %s' % (status, ', '.join(STATUSES)))
    reasons = record.get('reasons', [])
    if not isinstance(reasons, list) or not all(isinstance(item, str) for item in reasons):
        raise RecordError('the record reasons must be a list of strings')
    result = _normalise_numbers(record)
    result['schema'] = SCHEMA_VERSION
    return result


def dumps(record):
    """The file content of a validated record (stable: sorted keys, two-space indent, final newline)."""
    try:
        text = json_dumps(validate(record), 'the record', indent=2, sort_keys=True)
    except InputError as exc:
        raise RecordError('%s' % exc)
    return text + '\n'


# --- the record of one run, built from the run's facts -------------------------------------------------------------
#: What a fleet report shows of one vllm_benchmark run (the record's baseline and candidate lists).
SUMMARY_KEYS = ('concurrency', 'throughput_tok_s', 'tpot_ms_p50', 'ttft_ms_p50', 'itl_ms_p50', 'completed', 'failed')

#: The role's variables the record is built from, by name (roles/speculative_decoding/vars/main.yml passes exactly
#: these as _jetson_spec_record_inputs; a variable the run did not set is None).
#: What a host in sync is summarised from (its record as it is): the rollout reads such a host with the role's
#: record tasks alone (tasks_from: record), where the serve role's variables are not all defined.
IN_SYNC_INPUTS = ('_jetson_spec_action', '_jetson_spec_record', '_jetson_spec_outcome')
SUMMARY_INPUTS = (
    '_jetson_spec_action', '_jetson_spec_record', '_jetson_spec_outcome', '__jetson_spec_plan', '_jetson_spec_attempt',
    '_jetson_spec_attempts', '_jetson_spec_baseline', '_jetson_spec_candidate', '_jetson_spec_baseline_gmu',
    '_jetson_spec_baseline_reused', '_jetson_spec_revert_check', 'ansible_facts', '_jetson_spec_vllm_version',
    '_jetson_spec_state', 'vllm_service_name', '_vllm_service_path', '_jetson_spec_fingerprint',
    '_jetson_spec_baseline_fingerprint', '_jetson_spec_fingerprint_parts', '_jetson_spec_baseline_age',
    '_jetson_spec_overlay_committed', '_jetson_spec_cohort', '_jetson_spec_gate', '_jetson_spec_confirmation',
    'inventory_hostname')

#: What a host did in its cohort, by the run's action.
COHORT_ROLES = {'verify': 'verified', 'confirm': 'confirmed', 'follow': 'followed', 'stop': 'stopped'}


def run_summary(run):
    """The numbers of one vllm_benchmark ``run`` that a record and a fleet report keep."""
    summary = dict((key, run.get(key)) for key in SUMMARY_KEYS)
    spec = run.get('spec_decode') or {}
    summary['acceptance_rate'] = spec.get('acceptance_rate') if isinstance(spec, dict) else None
    return summary


def _mapping(value):
    return value if isinstance(value, dict) else {}


def _truthy(value):
    """A flag as Ansible renders it (a bool, or its text under ansible-core 2.18: "True", "false", "yes")."""
    if isinstance(value, str):
        return value.strip().lower() in ('true', 'yes', 'on', '1')
    return bool(value)


def _runs(benchmark):
    return [run_summary(run) for run in _mapping(benchmark).get('runs') or [] if isinstance(run, dict)]


def summary(facts, finished):
    """The record of this run (what speculative_record writes, the run's report line and set_stats show).

    ``facts``: the role's variables of SUMMARY_INPUTS by name (None when the run did not set one; a host in sync
    needs only IN_SYNC_INPUTS); ``finished``: the time the run ends (ISO 8601, UTC). A host in sync keeps its record as
    it is; a reconciled one keeps it with this run's reasons and end; every other action records its outcome, its
    configuration, its measurements, the host and the fingerprints that say when to verify again.
    """
    needed = IN_SYNC_INPUTS if facts.get('_jetson_spec_action') == 'in_sync' else SUMMARY_INPUTS
    missing = [name for name in needed if name not in facts]
    if missing:
        raise ValueError('the run facts lack %s' % ', '.join(missing))
    action = facts['_jetson_spec_action']
    previous = _mapping(facts['_jetson_spec_record'])
    outcome = _mapping(facts['_jetson_spec_outcome'])
    if action == 'in_sync':
        # Nothing recorded and nothing to do (jetson_spec_state: disabled on a host the loop never changed): the
        # outcome, with its reasons; nothing is written.
        return previous or {'status': outcome.get('status'), 'reasons': outcome.get('reasons') or [], 'handoff': {}}
    if action == 'reconcile':
        return dict(previous, reasons=outcome.get('reasons'), finished=finished)
    plan = _mapping(facts['__jetson_spec_plan'])
    attempt = _mapping(facts['_jetson_spec_attempt'])
    jetson = _mapping(_mapping(facts['ansible_facts']).get('jetson'))
    cohort = facts['_jetson_spec_cohort']
    gate = _mapping(facts['_jetson_spec_gate'])
    try:
        baseline_gmu = float(facts['_jetson_spec_baseline_gmu'])
    except (TypeError, ValueError):
        baseline_gmu = 0.0
    return {
        'status': outcome.get('status'),
        'reasons': outcome.get('reasons'),
        'handoff': outcome.get('handoff', {}),
        'verdict': outcome.get('verdict'),
        'verdict_summary': outcome.get('verdict_summary'),
        'intervals': outcome.get('intervals'),
        'deltas': outcome.get('deltas', {}),
        'recommendation': outcome.get('recommendation', {}),
        'measurement': outcome.get('measurement'),
        'method': plan.get('method'),
        'speculative_config': attempt['speculative_config'] if 'speculative_config' in attempt
        else plan.get('speculative_config', {}),
        'num_speculative_tokens': outcome['num_speculative_tokens'] if 'num_speculative_tokens' in outcome
        else plan.get('num_speculative_tokens'),
        'tuning': outcome.get('tuning'),
        'batch_aware': outcome.get('batch_aware'),
        'baseline_gpu_memory_utilization': baseline_gmu,
        'candidate_gpu_memory_utilization': attempt.get('gpu_memory_utilization'),
        'attempts': facts['_jetson_spec_attempts'] or [],
        'baseline': _runs(facts['_jetson_spec_baseline']),
        'baseline_reused': _truthy(facts['_jetson_spec_baseline_reused']),
        'candidate': _runs(facts['_jetson_spec_candidate']),
        'revert_check': facts['_jetson_spec_revert_check'],
        'jetson': {'sku': jetson.get('sku'), 'variant': jetson.get('variant'),
                   'product_line': jetson.get('product_line'), 'l4t': _mapping(jetson.get('l4t')).get('version'),
                   'jetpack': jetson.get('jetpack')},
        'vllm_version': facts['_jetson_spec_vllm_version'],
        'exposure': _mapping(facts['_jetson_spec_state']).get('exposure'),
        'service': facts['vllm_service_name'],
        'service_path': facts['_vllm_service_path'],
        'fingerprint': None if outcome.get('unsettled') else facts['_jetson_spec_fingerprint'],
        'baseline_fingerprint': facts['_jetson_spec_baseline_fingerprint'],
        'fingerprint_parts': facts['_jetson_spec_fingerprint_parts'],
        'baseline_age_s': facts['_jetson_spec_baseline_age'],
        'last_known_good': None,
        'overlay': facts['_jetson_spec_overlay_committed'],
        'started': outcome.get('started'),
        'finished': finished,
        'cohort': None if not isinstance(cohort, dict) else {
            'key': cohort.get('key'), 'group': cohort.get('group'), 'label': cohort.get('label'),
            'role': COHORT_ROLES.get(action),
            'canary': (gate.get('verdict') or {}).get('canary', facts['inventory_hostname']),
            'confirmation': facts['_jetson_spec_confirmation']},
    }


# --- Prometheus metrics (node_exporter's textfile collector) ------------------------------------------------------
METRIC_PREFIX = 'jetson_llm_vllm_speculative_'
_TIMESTAMP = re.compile(r'^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|\+00:00)?Z?\Z')


def _epoch(text):
    """Seconds since the epoch of an ISO-8601 UTC time ('2026-12-03T09:00:00.123456Z'), or None."""
    match = _TIMESTAMP.match(text) if isinstance(text, str) else None
    if not match:
        return None
    try:
        return calendar.timegm(time.strptime('%s-%s-%sT%s:%s:%s' % match.groups(), '%Y-%m-%dT%H:%M:%S'))
    except ValueError:
        return None


def _label(value):
    """A Prometheus label value: backslash, double quote and line feed escaped."""
    return '%s' % value.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value) \
        and not math.isinf(value)


def metrics(record, service):
    """The record as node_exporter's textfile collector reads it (text): one gauge per status (1 for this host's),
    the throughput change at concurrency 1 and 8, the acceptance rate, K, and the time of the last verification,
    each labelled with the service. A value the record does not have is left out (never written as NaN)."""
    record = record or {}
    service_label = 'service="%s"' % _label(service or '')
    lines = []

    def gauge(name, help_text, samples):
        samples = [(labels, value) for labels, value in samples if _finite(value)]
        if not samples:
            return
        lines.append('# HELP %s%s %s' % (METRIC_PREFIX, name, help_text))
        lines.append('# TYPE %s%s gauge' % (METRIC_PREFIX, name))
        for labels, value in samples:
            lines.append('%s%s{%s} %s' % (METRIC_PREFIX, name, ','.join([service_label] + labels), repr(float(value))
                                          if isinstance(value, float) else value))

    status = record.get('status')
    gauge('status', 'The recorded outcome: 1 for the host\'s status, 0 for the others.',
          [(['status="%s"' % name], 1 if name == status else 0) for name in STATUSES])
    deltas = record.get('deltas') if isinstance(record.get('deltas'), dict) else {}
    gauge('throughput_change', 'Throughput change of the verified configuration against its baseline (0.3 = +30 %).',
          [(['concurrency="1"'], deltas.get('throughput_gain_c1')), (['concurrency="8"'], deltas.get('throughput_change_c8'))])
    gauge('acceptance_rate', 'Draft tokens accepted per draft token proposed, at concurrency 1.',
          [([], deltas.get('acceptance_rate'))])
    gauge('num_speculative_tokens', 'K, the draft tokens proposed per step, of the recorded configuration.',
          [([], record.get('num_speculative_tokens'))])
    gauge('last_verification_timestamp_seconds', 'When the recorded outcome was decided (seconds since the epoch).',
          [([], _epoch(record.get('finished')))])
    return '\n'.join(lines) + '\n'
