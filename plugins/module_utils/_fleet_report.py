# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report: one row per host from the recorded outcomes, a text table, counts, HTML.

Controller side only (the fleet_rows / fleet_report filters call it). Plain functions over plain
data, so unit tests call them directly. The HTML is self-contained: inline CSS and an inline SVG
chart, no script, no network asset; colours follow ``prefers-color-scheme`` and print in black on
white.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import html
import json
import math
import os

# Statuses a row can have: the role's (first five), and what the fleet pieces add.
STATUSES = ('enabled', 'reverted', 'refused', 'skipped', 'failed', 'disabled', 'pending', 'unreachable', 'not_attempted',
            'left_to_rollout', 'no_record')
# What an operator must look at: never hidden in a summary. left_to_rollout (a canary job's other hosts, which the
# rollout job that follows it verifies) is not: nothing went wrong there.
ATTENTION = ('reverted', 'refused', 'failed', 'unreachable', 'not_attempted', 'no_record')
FAMILY_GROUPS = {'thor': 'thor', 'agx_orin': 'orin-agx', 'orin_nx': 'orin-nx', 'orin_nano': 'orin-nano'}
CONCURRENCIES = (1, 8)


class FleetReportError(ValueError):
    """The input of a fleet report is not what the role records."""


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return value


def _run_at(runs, concurrency):
    for run in runs or []:
        if isinstance(run, dict) and run.get('concurrency') == concurrency:
            return run
    return {}


def _family(record, groups):
    jetson = record.get('jetson') or {}
    if jetson.get('product_line'):
        return jetson['product_line']
    for group in groups or []:
        if group in FAMILY_GROUPS:
            return FAMILY_GROUPS[group]
    return None


def _interval(value):
    """[low, high] of a recorded 95 % interval, or None when it is missing or not two finite numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    low, high = _number(value[0]), _number(value[1])
    return [low, high] if low is not None and high is not None and low <= high else None


def _handoff_text(record):
    handoff = record.get('handoff') or {}
    if isinstance(handoff, dict) and handoff.get('summary'):
        return handoff['summary']
    recommendation = record.get('recommendation') or {}
    if record.get('status') != 'enabled' and isinstance(recommendation, dict) and recommendation.get('message'):
        return recommendation['message']
    return ''


def _exposure_warning(record):
    exposure = record.get('exposure')
    if isinstance(exposure, dict) and exposure.get('exposed') is True and isinstance(exposure.get('warning'), str):
        return exposure['warning'][:400]
    return None


def _cohort(record):
    """{key, label, role, canary} of the host's cohort from its record (docs/fleet.md), or None."""
    cohort = record.get('cohort')
    if not isinstance(cohort, dict) or not isinstance(cohort.get('key'), str):
        return None
    return dict((name, cohort.get(name) if isinstance(cohort.get(name), str) else None)
                for name in ('key', 'label', 'role', 'canary'))


def row(host, record=None, groups=None, state=None, error=None):
    """One report row.

    ``record``: the role's summary (the fact file's JSON) or None. ``state``: what the play saw when
    no record says more: ``unreachable``, ``not_attempted``, ``left_to_rollout``, ``failed`` or None.
    """
    record = record if isinstance(record, dict) else {}
    if record and not isinstance(record.get('status'), str):
        raise FleetReportError('The record of %s has no status: %r' % (host, record)[:300])
    status = record.get('status') or state or 'no_record'
    if state in ('unreachable', 'failed') and record.get('status') in (None, 'pending'):
        status = state
    if status not in STATUSES:
        status = str(status)
    reasons = [str(r) for r in (record.get('reasons') or [])]
    if error and record.get('status') != 'failed':  # a failed record's reasons already carry the error
        reasons.append(str(error))
    if not record and not reasons:
        reasons = {
            'unreachable': ['The host was unreachable; its outcome is unknown. The next run resolves an interrupted '
                            'change (the guard and the fact file).'],
            'not_attempted': ['Not attempted: the rollout stopped before this host (canary or max_fail_percentage), '
                              'or its batch has not run yet.'],
            'left_to_rollout': ['Left to the rollout job: this job (jetson_spec_rollout_part: canaries) verifies one '
                                'canary per cohort; the job that follows it (jetson_spec_rollout_part: others) '
                                'confirms, follows or stops this host by its cohort\'s verdict.'],
            'failed': ['Failed before an outcome was recorded (see the task output).'],
            'no_record': ['No outcome is recorded on this host (the speculative_decoding role has not run here).'],
        }.get(status, [])
    jetson = record.get('jetson') or {}
    deltas = record.get('deltas') or {}
    baseline, candidate = record.get('baseline') or [], record.get('candidate') or []
    result = {
        'host': host,
        'status': status,
        'family': _family(record, groups),
        'variant': jetson.get('variant'),
        'sku': jetson.get('sku'),
        'jetpack': jetson.get('jetpack'),
        'l4t': jetson.get('l4t'),
        'vllm_version': record.get('vllm_version') or None,
        'method': record.get('method'),
        'num_speculative_tokens': record.get('num_speculative_tokens'),
        'gpu_memory_utilization_before': _number(record.get('baseline_gpu_memory_utilization')),
        'gpu_memory_utilization_after': _number(record.get('candidate_gpu_memory_utilization')),
        'acceptance_rate': _number(deltas.get('acceptance_rate')),
        'deltas': dict(deltas) if isinstance(deltas, dict) else {},
        'verdict': record.get('verdict'),
        'verdict_summary': record.get('verdict_summary') if isinstance(record.get('verdict_summary'), str) else None,
        'change_c1': _number(deltas.get('throughput_gain_c1')) if isinstance(deltas, dict) else None,
        'change_c8': _number(deltas.get('throughput_change_c8')) if isinstance(deltas, dict) else None,
        'interval_c1': _interval((record.get('intervals') or {}).get('c1') if isinstance(record.get('intervals'), dict) else None),
        'interval_c8': _interval((record.get('intervals') or {}).get('c8') if isinstance(record.get('intervals'), dict) else None),
        'reason': ' '.join(reasons),
        'handoff': _handoff_text(record),
        'finished': record.get('finished'),
        'exposure_warning': _exposure_warning(record),
        'cohort': _cohort(record),
    }
    for concurrency in CONCURRENCIES:
        before, after = _run_at(baseline, concurrency), _run_at(candidate, concurrency)
        result['c%d' % concurrency] = {
            'throughput_before': _number(before.get('throughput_tok_s')),
            'throughput_after': _number(after.get('throughput_tok_s')),
            'tpot_p50_before': _number(before.get('tpot_ms_p50')),
            'tpot_p50_after': _number(after.get('tpot_ms_p50')),
            'ttft_p50_before': _number(before.get('ttft_ms_p50')),
            'ttft_p50_after': _number(after.get('ttft_ms_p50')),
        }
    if result['acceptance_rate'] is None:
        result['acceptance_rate'] = _number(_run_at(candidate, 1).get('acceptance_rate'))
    return result


def rows_from_hosts(hosts, host_data):
    """Rows for ``hosts`` (inventory order kept) from ``host_data``: {host: {record, groups, state, error}}."""
    rows = []
    for host in hosts:
        data = host_data.get(host) or {}
        rows.append(row(host, data.get('record'), data.get('groups'), data.get('state'), data.get('error')))
    return rows


def counts(rows):
    """Hosts per status (every status named, zeros included), and the hosts that need attention."""
    result = dict((status, 0) for status in STATUSES)
    for item in rows:
        result[item['status']] = result.get(item['status'], 0) + 1
    return {
        'total': len(rows),
        'exposed': [item['host'] for item in rows if item.get('exposure_warning')],
        'by_status': result,
        'attention': [item['host'] for item in rows if item['status'] in ATTENTION],
        'hosts_by_status': dict((status, [item['host'] for item in rows if item['status'] == status])
                                for status in result if result[status]),
        'cohorts': cohorts(rows),
    }


def cohorts(rows):
    """One entry per cohort of the rows, by key: its label, canary and the canary's status, hosts per status."""
    found = {}
    for item in rows:
        cohort = item.get('cohort')
        if not cohort:
            continue
        entry = found.setdefault(cohort['key'], {'key': cohort['key'], 'label': cohort.get('label'), 'canary': None,
                                                 'canary_status': None, 'by_status': {}, 'hosts': []})
        entry['hosts'].append(item['host'])
        entry['by_status'][item['status']] = entry['by_status'].get(item['status'], 0) + 1
        canary = cohort.get('canary')
        if canary and canary != item['host']:
            entry['canary'] = entry['canary'] or canary
        elif cohort.get('role') == 'verified' and not entry['canary']:
            entry['canary'] = item['host']
    for entry in found.values():
        owner = [item for item in rows if item['host'] == entry['canary']]
        entry['canary_status'] = owner[0]['status'] if owner else None
        # the canary's own measurement: what gated its cohort
        entry['evidence'] = dict((name, owner[0].get(name)) for name in ('change_c1', 'interval_c1', 'acceptance_rate')
                                 ) if owner else None
    return [found[key] for key in sorted(found)]


# --- text ------------------------------------------------------------------------------------------------
def _fmt(value, pattern='%.1f'):
    return '-' if value is None else pattern % value


def _pair(before, after, pattern='%.1f'):
    if before is None and after is None:
        return '-'
    return '%s -> %s' % (_fmt(before, pattern), _fmt(after, pattern))


def table(rows):
    """The run summary as lines of text (what ansible prints): one line per host, then the counts."""
    columns = '%-18s %-16s %-10s %-14s %-7s %-12s %-3s %-11s %-17s %-17s %-17s %-17s %-5s %-9s %s'
    lines = [columns % ('host', 'status', 'family', 'variant', 'JetPack', 'method', 'K', 'gpu util',
                        'tok/s c=1', 'TPOT p50 c=1', 'TTFT p50 c=1', 'tok/s c=8', 'acc', 'verdict',
                        'reason / hand-off')]
    for item in rows:
        reason = item['reason']
        if item.get('verdict_summary'):
            reason = '[%s] %s' % (item['verdict_summary'], reason)
        if item['handoff']:
            reason = '%s %s' % (reason, item['handoff'])
        lines.append(columns % (
            item['host'][:18], item['status'].upper() + ('*' if item.get('earlier_run') else ''), item['family'] or '-', (item['variant'] or '-')[:14],
            item['jetpack'] or '-', item['method'] or '-', _fmt(item['num_speculative_tokens'], '%d'),
            _pair(item['gpu_memory_utilization_before'], item['gpu_memory_utilization_after'], '%.2f'),
            _pair(item['c1']['throughput_before'], item['c1']['throughput_after']),
            _pair(item['c1']['tpot_p50_before'], item['c1']['tpot_p50_after'], '%.2f'),
            _pair(item['c1']['ttft_p50_before'], item['c1']['ttft_p50_after']),
            _pair(item['c8']['throughput_before'], item['c8']['throughput_after']),
            _fmt(item['acceptance_rate'], '%.2f'), item['verdict'] or '-', reason[:400]))
    summary = counts(rows)
    earlier = [item for item in rows if item.get('earlier_run')]
    if earlier:
        lines.append('* not in this run (--limit or another play): the outcome of an earlier run, kept from the '
                     'previous report (%s)' % ', '.join('%s finished %s' % (item['host'], item.get('finished') or '?')
                                                        for item in earlier))
    lines.append('%d hosts: %s' % (summary['total'], ', '.join(
        '%s %d' % (status, number) for status, number in summary['by_status'].items() if number)))
    for entry in summary['cohorts']:
        lines.append('Cohort %s (%s): canary %s (%s); %s' % (
            entry['key'], entry['label'] or '?', entry['canary'] or '-', entry['canary_status'] or '-',
            ', '.join('%s %d' % (status, number) for status, number in sorted(entry['by_status'].items()))))
    if summary['exposed']:
        lines.append('Exposed (vLLM listens beyond the host without an API key): %s' % ', '.join(summary['exposed']))
    if summary['attention']:
        lines.append('Needs attention: %s' % ', '.join(
            '%s (%s)' % (item['host'], item['status']) for item in rows if item['status'] in ATTENTION))
    return lines


# --- HTML ------------------------------------------------------------------------------------------------
_CSS = """
:root { --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --grid: #d0d7de; --row: #f6f8fa; --c1: #0969da;
        --c8: #8250df; --ok: #1a7f37; --ok-bg: #dafbe1; --warn: #9a6700; --warn-bg: #fff8c5; --bad: #cf222e;
        --bad-bg: #ffebe9; --off: #57606a; --off-bg: #eaeef2; --up: #1a7f37; --down: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --grid: #30363d; --row: #161b22; --c1: #4493f8;
          --c8: #ab7df8; --ok: #3fb950; --ok-bg: #12261e; --warn: #d29922; --warn-bg: #272115; --bad: #f85149;
          --bad-bg: #2d1214; --off: #9198a1; --off-bg: #21262d; --up: #3fb950; --down: #f85149; }
}
@page { size: A4 landscape; margin: 10mm; }
@media print {
  :root { --bg: #ffffff; --fg: #000000; --muted: #333333; --grid: #999999; --row: #eeeeee; --c1: #000000;
          --c8: #666666; --ok: #000000; --ok-bg: #ffffff; --warn: #000000; --warn-bg: #ffffff; --bad: #000000;
          --bad-bg: #ffffff; --off: #000000; --off-bg: #ffffff; --up: #000000; --down: #000000; }
  body { font-size: 9pt; } details > div { display: block; }
}
* { box-sizing: border-box; }
html, body { background: var(--bg); color: var(--fg); }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto;
       padding: 1.2rem; max-width: 1400px; line-height: 1.35; }
h1 { font-size: 1.35rem; margin: 0 0 .3rem 0; }
p.meta, figcaption, .muted, small { color: var(--muted); }
ul.totals { list-style: none; padding: 0; margin: .8rem 0; display: flex; flex-wrap: wrap; gap: .5rem; }
ul.totals li { border: 1px solid var(--grid); border-radius: .5rem; padding: .35rem .7rem; display: flex;
               align-items: center; gap: .45rem; }
ul.totals b { font-size: 1.15rem; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; border-radius: 1rem; padding: .1rem .55rem; font-size: .72rem; font-weight: 700;
         text-transform: uppercase; letter-spacing: .02em; white-space: nowrap; }
.status-enabled { color: var(--ok); background: var(--ok-bg); }
.status-reverted, .status-refused, .status-pending, .status-not_attempted, .status-no_record { color: var(--warn); background: var(--warn-bg); }
.status-left_to_rollout { color: var(--muted); background: var(--row); }
.status-failed, .status-unreachable { color: var(--bad); background: var(--bad-bg); }
.status-skipped, .status-disabled { color: var(--off); background: var(--off-bg); }
p.note { margin: .4rem 0; } .exposed { color: var(--bad); }
figure { margin: 1rem 0; } figure svg { width: 100%; height: auto; max-width: 760px; display: block; }
svg text { fill: var(--fg); font-size: 13px; } svg .muted { fill: var(--muted); } svg tspan.name { font-weight: 600; }
svg .axis, svg .tick { stroke: var(--grid); } svg .threshold { stroke: var(--ok); stroke-dasharray: 4 3; }
svg .zero { stroke: var(--muted); } svg .bar-c1 { fill: var(--c1); } svg .bar-c8 { fill: var(--c8); }
svg .ci { stroke: var(--fg); stroke-width: 1.2; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; table-layout: fixed; }
th, td { border-bottom: 1px solid var(--grid); padding: .4rem .45rem; text-align: left; vertical-align: top; }
th { font-size: .75rem; color: var(--muted); font-weight: 600; }
tbody tr:nth-child(even) { background: var(--row); }
col.host { width: 17%; } col.outcome { width: 9%; } col.change { width: 13%; } col.method { width: 12%; }
td.num { font-variant-numeric: tabular-nums; } td.num small { display: block; white-space: nowrap; }
.up { color: var(--up); font-weight: 600; } .down { color: var(--down); font-weight: 600; }
td.host b { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
td.host small { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
details > summary { cursor: pointer; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
details[open] > summary { white-space: normal; }
details > div { margin-top: .4rem; font-size: .8rem; }
details table.numbers { font-size: .75rem; margin-top: .4rem; table-layout: auto; width: auto; }
details table.numbers td, details table.numbers th { padding: .15rem .4rem; }
span.earlier { display: block; font-size: .7rem; color: var(--muted); }
@media (max-width: 640px) {
  body { padding: .7rem; }
  table.hosts, table.hosts tbody, table.hosts tr, table.hosts td { display: block; width: 100%; }
  table.hosts thead, table.hosts colgroup { display: none; }
  table.hosts tr.host-row { border: 1px solid var(--grid); border-radius: .5rem; margin-bottom: .6rem;
                            padding: .3rem .5rem; }
  table.hosts td { border: 0; padding: .15rem 0; }
  table.hosts td[data-label]::before { content: attr(data-label) " "; color: var(--muted); font-size: .75rem; }
  table.hosts td.num small { display: inline; margin-left: .3rem; }
  svg text { font-size: 21px; }
}
"""

#: Rows in this order: what needs an operator first, then the outcomes of the loop.
ORDER = ('failed', 'unreachable', 'reverted', 'refused', 'enabled', 'disabled', 'skipped', 'pending', 'not_attempted',
         'left_to_rollout', 'no_record')
#: The totals always shown at the top (the others when a host has them).
TOTALS = ('enabled', 'reverted', 'refused', 'skipped', 'failed')
#: The specification's keep bar at concurrency 1 (drawn on the chart), and the chart's bounds at least.
KEEP_BAR = 0.30
_CHART_SPAN = (-0.2, 0.4)


def _e(value):
    return html.escape('' if value is None else str(value), quote=True)


#: At most this many hosts get a bar group on the chart (a screenful); beyond it, the cohorts' canaries, then the
#: measured hosts that need attention, and the table has the others' numbers.
CHART_MAX_HOSTS = 12
#: At most this many host lines are open in the table; the others are one click away (hosts that need attention
#: first, so they are the open ones).
HOST_ROWS_OPEN = 25


def sort_rows(rows):
    """The rows sorted: the hosts that need attention (ATTENTION) first, then by outcome (ORDER), then by host name."""
    rank = dict((status, index) for index, status in enumerate(ORDER))
    return sorted(rows, key=lambda item: (item['status'] not in ATTENTION, rank.get(item['status'], len(ORDER)),
                                          item['host']))


def chart_rows(rows):
    """(the rows the chart draws, how many measured rows it leaves to the table): every measured row up to
    CHART_MAX_HOSTS; beyond, each cohort's canary first, then the measured hosts that need attention, then the
    others, in ``rows``' order, up to CHART_MAX_HOSTS."""
    measured = [item for item in rows if item['change_c1'] is not None or item['change_c8'] is not None]
    if len(measured) <= CHART_MAX_HOSTS:
        return measured, 0
    canaries = set(entry['canary'] for entry in cohorts(rows) if entry['canary'])
    ranked = sorted(enumerate(measured), key=lambda pair: (pair[1]['host'] not in canaries,
                                                           pair[1]['status'] not in ATTENTION, pair[0]))
    shown = [item for _index, item in ranked[:CHART_MAX_HOSTS]]
    return shown, len(measured) - len(shown)


def _percent(value):
    return '%+.0f %%' % (value * 100.0) if value is not None else '-'


def _change_cell(value, interval, label):
    if value is None:
        return '<td class="num" data-label="%s"><span class="muted">-</span></td>' % _e(label)
    css = 'up' if value > 0.005 else ('down' if value < -0.005 else '')
    note = ('95 %% CI %s to %s' % (_percent(interval[0]), _percent(interval[1]))) if interval else 'no interval'
    return '<td class="num" data-label="%s"><span class="%s">%s</span><small>%s</small></td>' % (
        _e(label), css, _e(_percent(value)), _e(note))


def chart_svg(rows):
    """The relative throughput change per host at concurrency 1 and 8, against the host's own baseline: an inline SVG
    of horizontal bars from a zero line, their 95 % intervals as whiskers, and the keep bar (+30 %) drawn. Each host's
    name and numbers are a line of text above its bars, so the chart stays legible when a phone scales it down. At
    most CHART_MAX_HOSTS hosts (chart_rows): the page stays a screenful high at any fleet size."""
    left, plot_w, right, bar_h, top = 8, 600, 8, 10, 30
    measured, _left_out = chart_rows(rows)
    values = [v for item in measured for v in (item['change_c1'], item['change_c8']) if v is not None]
    values += [v for item in measured for key in ('interval_c1', 'interval_c8') for v in (item[key] or [])]
    low = min([_CHART_SPAN[0]] + values)
    high = max([_CHART_SPAN[1], KEEP_BAR] + values)
    scale = plot_w / (high - low)

    def x_of(value):
        return left + (value - low) * scale

    group_h = 58
    height = top + group_h * max(len(measured), 1) + 30
    full_w = left + plot_w + right
    zero, keep_x = x_of(0.0), x_of(KEEP_BAR)
    parts = ['<svg id="change-chart" role="img" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" aria-labelledby="chart-title" data-scale="%.6f">' % (full_w, height, full_w, height, scale),
             '<title id="chart-title">Throughput change against each host\'s own baseline, at concurrency 1 and 8</title>',
             '<rect class="legend bar-c1" x="%d" y="6" width="12" height="10"/><text x="%d" y="16">c=1</text>'
             % (left, left + 16),
             '<rect class="legend bar-c8" x="%d" y="6" width="12" height="10"/><text x="%d" y="16">c=8</text>'
             % (left + 80, left + 96),
             '<text class="muted" x="%d" y="16">whiskers: 95 %% interval</text>' % (left + 160)]
    axis_bottom = top + group_h * max(len(measured), 1)
    parts.append('<line class="zero" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>' % (zero, top, zero, axis_bottom))
    parts.append('<line class="threshold" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>' % (keep_x, top, keep_x, axis_bottom))
    # the zero label left of its line, the keep bar's right of its own: they never overlap, however close
    parts.append('<text class="muted" x="%.1f" y="%d" text-anchor="end">0 %%</text>' % (zero - 3, axis_bottom + 22))
    parts.append('<text class="muted" x="%.1f" y="%d" text-anchor="start">+%d %% keep bar</text>'
                 % (keep_x + 3, axis_bottom + 22, int(round(KEEP_BAR * 100))))
    for index, item in enumerate(measured):
        y0 = top + index * group_h
        said = ' · '.join('%s %s' % (label, _percent(item['change_' + key]))
                          for key, label in (('c1', 'c=1'), ('c8', 'c=8')) if item['change_' + key] is not None)
        parts.append('<g class="host" data-host="%s">' % _e(item['host']))
        parts.append('<text x="%d" y="%d"><tspan class="name">%s</tspan> <tspan class="muted">%s</tspan></text>'
                     % (left, y0 + 22, _e(item['host'][:32]), _e(said)))
        for slot, (key, css, label) in enumerate((('c1', 'bar-c1', 'c=1'), ('c8', 'bar-c8', 'c=8'))):
            value = item['change_' + key]
            if value is None:
                continue
            y = y0 + 30 + slot * (bar_h + 3)
            x0, x1 = sorted((zero, x_of(value)))
            parts.append('<rect class="bar %s" data-change="%.6f" x="%.1f" y="%d" width="%.1f" height="%d">'
                         '<title>%s %s: %s</title></rect>' % (css, value, x0, y, max(x1 - x0, 0.0), bar_h,
                                                              _e(item['host']), label, _percent(value)))
            interval = item['interval_' + key]
            if interval:
                mid = y + bar_h / 2.0
                parts.append('<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>'
                             % (x_of(interval[0]), mid, x_of(interval[1]), mid))
        parts.append('</g>')
    if not measured:
        parts.append('<text class="muted" x="%d" y="%d">no host was measured</text>' % (left, top + 22))
    parts.append('</svg>')
    return ''.join(parts)


def _details(item):
    """The reason, one click away: the verdict's one line as the summary, the reasons, hand-off and numbers inside."""
    summary = item.get('verdict_summary') or item['reason'] or item['status']
    inner = []
    if item.get('exposure_warning'):
        inner.append('<p class="exposed"><strong>Exposed:</strong> %s</p>' % _e(item['exposure_warning']))
    if item['reason']:
        inner.append('<p>%s</p>' % _e(item['reason']))
    if item['handoff']:
        inner.append('<p><strong>Next:</strong> %s</p>' % _e(item['handoff']))
    numbers = []
    for conc in CONCURRENCIES:
        data = item['c%d' % conc]
        if any(value is not None for value in data.values()):
            numbers.append('<tr><th>c=%d</th><td>%s</td><td>%s</td><td>%s</td></tr>' % (
                conc, _e(_pair(data['throughput_before'], data['throughput_after'])),
                _e(_pair(data['tpot_p50_before'], data['tpot_p50_after'], '%.2f')),
                _e(_pair(data['ttft_p50_before'], data['ttft_p50_after']))))
    if numbers:
        inner.append('<table class="numbers"><tr><th></th><th>tok/s</th><th>TPOT p50 (ms)</th><th>TTFT p50 (ms)</th>'
                     '</tr>%s</table>' % ''.join(numbers))
    utilisation = None
    if item['gpu_memory_utilization_before'] is not None:
        utilisation = _pair(item['gpu_memory_utilization_before'], item['gpu_memory_utilization_after'], '%.2f')
    acceptance = _fmt(item['acceptance_rate'], '%.2f') if item['acceptance_rate'] is not None else None
    cohort = item.get('cohort') or {}
    cohort_text = None
    if cohort:
        cohort_text = '%s (%s)' % (cohort.get('key'), cohort.get('role') or '?')
        if cohort.get('canary') and cohort.get('canary') != item['host']:
            cohort_text += ', canary %s' % cohort['canary']
    facts = [('vLLM', item['vllm_version']), ('GPU util', utilisation), ('acceptance', acceptance),
             ('cohort', cohort_text), ('finished', item.get('finished'))]
    shown = ', '.join('%s %s' % (name, value) for name, value in facts if value)
    if shown:
        inner.append('<p class="muted">%s</p>' % _e(shown))
    return '<details><summary>%s</summary><div>%s</div></details>' % (_e(summary), ''.join(inner))


def report_html(rows, title='Speculative decoding: fleet report', generated=None):
    """The self-contained HTML report: totals, the chart of relative change, one compact line per host."""
    summary = counts(rows)
    ordered = sort_rows(rows)
    head = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="color-scheme" content="light dark"><title>%s</title><style>%s</style></head><body>'
            % (_e(title), _CSS))
    body = ['<h1>%s</h1>' % _e(title),
            '<p class="meta">%d hosts%s. Change = the speculative candidate against the host\'s own non-speculative '
            'baseline, same workload (output throughput); kept at concurrency 1 from +%d %%, with no loss at '
            'concurrency 8.</p>' % (summary['total'], (', generated ' + _e(generated)) if generated else '',
                                    int(round(KEEP_BAR * 100)))]
    shown = [status for status in STATUSES if status in TOTALS or summary['by_status'].get(status)]
    body.append('<ul class="totals" id="totals">%s</ul>' % ''.join(
        '<li data-status="%s"><span class="badge status-%s">%s</span><b>%d</b></li>'
        % (_e(status), _e(status), _e(status.replace('_', ' ')), summary['by_status'].get(status, 0)) for status in shown))
    if summary['attention']:
        body.append('<p class="note" id="attention"><strong>Needs attention:</strong> %s</p>' % _e(', '.join(
            '%s (%s)' % (item['host'], item['status']) for item in ordered if item['status'] in ATTENTION)))
    if summary['exposed']:
        body.append('<p class="note exposed" id="exposed"><strong>Exposed:</strong> vLLM listens beyond the host without '
                    'an API key on %s. Set an API key (vllm_api_key), or serve the host only (vllm_host: 127.0.0.1).</p>'
                    % _e(', '.join(summary['exposed'])))
    if summary['cohorts']:
        body.append('<table id="cohorts"><thead><tr><th>Cohort</th><th>Canary</th><th>Hosts by outcome</th></tr>'
                    '</thead><tbody>%s</tbody></table>' % ''.join(
                        '<tr data-cohort="%s"><td><b>%s</b><small>%s</small></td><td>%s</td><td><details><summary>%s'
                        '</summary><div>%s</div></details></td></tr>' % (
                            _e(entry['key']), _e(entry['label'] or entry['key']), _e(entry['key']),
                            _canary_cell(entry),
                            _e(', '.join('%s %d' % (status.replace('_', ' '), number)
                                         for status, number in sorted(entry['by_status'].items()))),
                            _e(', '.join(entry['hosts']))) for entry in summary['cohorts']))
    _shown, left_out = chart_rows(ordered)
    body.append('<figure>%s<figcaption>Throughput change per host (bars), its 95 %% interval (whiskers), the keep bar '
                'at concurrency 1 (dashed).%s</figcaption></figure>' % (
                    chart_svg(ordered),
                    (' The cohorts\' canaries and the hosts that need attention first: %d more measured host%s in the '
                     'table.' % (left_out, '' if left_out == 1 else 's')) if left_out else ''))
    body.append(_host_table('fleet', ordered[:HOST_ROWS_OPEN]))
    rest = ordered[HOST_ROWS_OPEN:]
    if rest:
        by_status = {}
        for item in rest:
            by_status[item['status']] = by_status.get(item['status'], 0) + 1
        body.append('<details id="more-hosts"><summary>%d more hosts: %s</summary>%s</details>' % (
            len(rest), _e(', '.join('%s %d' % (status.replace('_', ' '), by_status[status])
                                    for status in ORDER if status in by_status)),
            _host_table('fleet-more', rest)))
    body.append('</body></html>\n')
    return head + ''.join(body)


def _canary_cell(entry):
    """The cohort's canary, its outcome and the measurement that gated the cohort."""
    if not entry['canary']:
        return '-'
    text = '%s (%s)' % (entry['canary'], entry['canary_status'])
    evidence = entry.get('evidence') or {}
    said = []
    if evidence.get('change_c1') is not None:
        interval = evidence.get('interval_c1')
        said.append('c=1 %s%s' % (_percent(evidence['change_c1']), (' (95 %% CI %s to %s)' % (
            _percent(interval[0]), _percent(interval[1]))) if interval else ''))
    if evidence.get('acceptance_rate') is not None:
        said.append('acceptance %s' % _fmt(evidence['acceptance_rate'], '%.2f'))
    return _e(text) + (('<small>%s</small>' % _e(', '.join(said))) if said else '')


def _host_table(table_id, rows):
    """The table of host lines (one compact line per host, its reason one click away)."""
    body = ['<table id="%s" class="hosts"><colgroup><col class="host"><col class="outcome"><col class="change">'
            '<col class="change"><col class="method"><col></colgroup><thead><tr><th>Host</th><th>Outcome</th>'
            '<th>Throughput c=1</th><th>Throughput c=8</th><th>Method, K</th><th>Why (click for details)</th>'
            '</tr></thead><tbody>' % table_id]
    for item in rows:
        earlier = item.get('earlier_run')
        where = ' · '.join(str(part) for part in (item['family'], item['variant'],
                                                  ('JetPack ' + str(item['jetpack'])) if item['jetpack'] else None)
                           if part)
        method = item['method'] or '-'
        if item['num_speculative_tokens'] is not None:
            method = '%s, K=%s' % (method, item['num_speculative_tokens'])
        body.append(
            '<tr class="host-row%s" data-host="%s" data-status="%s">'
            '<td class="host"><b>%s</b><small>%s</small></td>'
            '<td data-label="Outcome"><span class="badge status-%s">%s</span>%s</td>%s%s'
            '<td data-label="Method">%s</td><td class="why">%s</td></tr>' % (
                ' earlier-run' if earlier else '', _e(item['host']), _e(item['status']), _e(item['host']),
                _e(where or '-'), _e(item['status']), _e(item['status'].replace('_', ' ')),
                ('<span class="earlier">earlier run, finished %s</span>' % _e(item.get('finished') or '?'))
                if earlier else '',
                _change_cell(item['change_c1'], item['interval_c1'], 'c=1'),
                _change_cell(item['change_c8'], item['interval_c8'], 'c=8'),
                _e(method), _details(item)))
    body.append('</tbody></table>')
    return ''.join(body)


REPORT_NAME = 'fleet-report'


def _same_as_previous(rows, title, previous):
    """The previous report's rows (in this run's host order) when nothing this run measured differs, else None.

    ``previous`` is the text of the JSON twin already on disk. The hosts this run has reached so far
    (every row but ``not_attempted`` and ``left_to_rollout``) must each equal their row there, and the previous report must
    cover the same hosts under the same title: then the previous report is still the truth (the hosts
    not reached yet are untouched since), and keeping it byte for byte keeps a re-run idempotent.
    """
    twin = _previous_twin(previous, title)
    if twin is None:
        return None
    before = dict((item['host'], item) for item in twin['hosts']
                  if isinstance(item, dict) and isinstance(item.get('host'), str))
    if sorted(before) != sorted(item['host'] for item in rows) or len(before) != len(twin['hosts']):
        return None
    reached = [item for item in rows if item['status'] not in ('not_attempted', 'left_to_rollout')]
    if not reached or any(json.loads(json.dumps(item)) != before[item['host']] for item in reached):
        return None
    return [before[item['host']] for item in rows], twin.get('generated')


def _previous_twin(previous, title):
    """The previous JSON twin as a dict when it is one of this report (same title), else None."""
    if not previous:
        return None
    try:
        twin = json.loads(previous)
    except ValueError:
        return None
    if not isinstance(twin, dict) or twin.get('title') != title or not isinstance(twin.get('hosts'), list):
        return None
    return twin


def merge_earlier(rows, title, previous, inventory_hosts=None):
    """This run's rows, then the previous report's rows of the hosts this run did not cover (``--limit``, another
    play), each marked ``earlier_run`` and left as it was (its outcome and its ``finished`` time).

    A host no longer in ``inventory_hosts`` (when given) is dropped; this run's rows are ``earlier_run: false``.
    """
    rows = [dict(item, earlier_run=False) for item in rows]
    twin = _previous_twin(previous, title)
    if twin is None:
        return rows
    here = set(item['host'] for item in rows)
    known = None if inventory_hosts is None else set(inventory_hosts)
    for item in twin['hosts']:
        if not isinstance(item, dict) or not isinstance(item.get('host'), str) or item['host'] in here:
            continue
        if known is not None and item['host'] not in known:
            continue
        if not isinstance(item.get('status'), str) or not isinstance(item.get('c1'), dict) \
                or not isinstance(item.get('c8'), dict):
            continue  # not a row this module wrote: left out rather than shown wrong
        rows.append(dict(item, earlier_run=True))
        here.add(item['host'])
    return rows


def report(rows, title='Speculative decoding: fleet report', generated=None, report_dir=None, previous=None,
           inventory_hosts=None):
    """Everything the playbooks write and print: rows, counts, the text table, the HTML and its JSON twin.

    ``report_dir`` (relative to the controller's working directory) gives ``report_dir``, ``html_path``
    and ``json_path`` as absolute paths. ``previous`` (the JSON twin already written, as text) is merged:
    the hosts this run did not cover keep their earlier row (``merge_earlier``; ``inventory_hosts`` drops
    the hosts gone from the inventory), and that report is kept, date included, when this run found every
    host it reached as recorded there (``unchanged`` is then true).
    """
    rows = merge_earlier(rows, title, previous, inventory_hosts)
    kept = _same_as_previous(rows, title, previous)
    if kept:
        rows, generated = kept
    summary = counts(rows)
    twin = {'title': title, 'generated': generated, 'counts': summary, 'hosts': rows}
    paths = {}
    if report_dir:
        directory = os.path.abspath(os.path.expanduser(str(report_dir)))
        paths = {'report_dir': directory, 'html_path': os.path.join(directory, REPORT_NAME + '.html'),
                 'json_path': os.path.join(directory, REPORT_NAME + '.json')}
    return dict(paths, **{
        'unchanged': bool(kept),
        'rows': rows,
        'counts': summary,
        'table': table(rows),
        'html': report_html(rows, title=title, generated=generated),
        'json': json.dumps(twin, indent=2, sort_keys=True) + '\n',
    })


# --- the facts table (facts.yml) ------------------------------------------------------------------------
def facts_table(hosts_facts):
    """Lines of text, one per host, from {host: ansible_facts.jetson or None} (inventory order kept)."""
    columns = '%-18s %-34s %-16s %-18s %-18s %-14s %-12s %s'
    lines = [columns % ('host', 'family / variant', 'L4T / JetPack', 'memory total/avail', 'power mode',
                        'vLLM runtime', 'eagle3/draft', 'warnings')]
    for host, facts in hosts_facts.items():
        if not isinstance(facts, dict) or not facts:
            lines.append(columns % (host[:18], 'no facts (unreachable or failed)', '-', '-', '-', '-', '-', '-'))
            continue
        if not facts.get('is_jetson'):
            family = 'not a Jetson'
            release = '-'
        else:
            family = '%s / %s%s' % (facts.get('generation'), facts.get('variant'),
                                    ' (super)' if facts.get('super_mode') else '')
            release = '%s / %s' % ((facts.get('l4t') or {}).get('version') or '?', facts.get('jetpack') or '?')
        memory = facts.get('memory') or {}
        power = facts.get('power') or {}
        mode = power.get('mode_name') or '-'
        if power.get('max_performance') is False:
            mode += ' (not max)'
        speculation = facts.get('speculation') or {}
        lines.append(columns % (
            host[:18], family[:34], release, '%s / %s MB' % (memory.get('total_mb', '?'), memory.get('available_mb', '?')),
            mode[:18], (facts.get('vllm_runtime') or {}).get('path') or '-',
            '%s/%s' % ('yes' if speculation.get('eagle3_supported') else 'no',
                       'yes' if speculation.get('draft_model_supported') else 'no'),
            len(facts.get('warnings') or [])))
    return lines
