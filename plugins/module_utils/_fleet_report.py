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
            'no_record')
# What an operator must look at: never hidden in a summary.
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


def row(host, record=None, groups=None, state=None, error=None):
    """One report row.

    ``record``: the role's summary (the fact file's JSON) or None. ``state``: what the play saw when
    no record says more: ``unreachable``, ``not_attempted``, ``failed`` or None.
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
        'reason': ' '.join(reasons),
        'handoff': _handoff_text(record),
        'finished': record.get('finished'),
        'exposure_warning': _exposure_warning(record),
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
    }


# --- text ------------------------------------------------------------------------------------------------
def _fmt(value, pattern='%.1f'):
    return '-' if value is None else pattern % value


def _pair(before, after, pattern='%.1f'):
    if before is None and after is None:
        return '-'
    return '%s -> %s' % (_fmt(before, pattern), _fmt(after, pattern))


def table(rows):
    """The run summary as lines of text (what ansible prints): one line per host, then the counts."""
    columns = '%-18s %-11s %-10s %-14s %-7s %-12s %-3s %-11s %-17s %-17s %-17s %-17s %-5s %-9s %s'
    lines = [columns % ('host', 'status', 'family', 'variant', 'JetPack', 'method', 'K', 'gpu util',
                        'tok/s c=1', 'TPOT p50 c=1', 'TTFT p50 c=1', 'tok/s c=8', 'acc', 'verdict',
                        'reason / hand-off')]
    for item in rows:
        reason = item['reason']
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
    if summary['exposed']:
        lines.append('Exposed (vLLM listens beyond the host without an API key): %s' % ', '.join(summary['exposed']))
    if summary['attention']:
        lines.append('Needs attention: %s' % ', '.join(
            '%s (%s)' % (item['host'], item['status']) for item in rows if item['status'] in ATTENTION))
    return lines


# --- HTML ------------------------------------------------------------------------------------------------
_CSS = """
:root { --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --grid: #d0d7de; --before: #8c959f; --after: #0969da;
        --before8: #c9cfd6; --after8: #54aeff; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --row: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --grid: #30363d; --before: #6e7681; --after: #4493f8;
          --before8: #3d444d; --after8: #1f6feb; --ok: #3fb950; --warn: #d29922; --bad: #f85149; --row: #161b22; }
}
@page { size: A4 landscape; margin: 10mm; }
@media print {
  :root { --bg: #ffffff; --fg: #000000; --muted: #333333; --grid: #999999; --before: #777777; --after: #000000;
          --before8: #bbbbbb; --after8: #444444; --ok: #000000; --warn: #000000; --bad: #000000; --row: #eeeeee; }
  body { font-size: 9pt; }
}
html, body { background: var(--bg); color: var(--fg); }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 1.5rem; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem 0; }
p.meta, td.reason, figcaption { color: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: .8rem; margin-top: 1rem; }
th, td { border-bottom: 1px solid var(--grid); padding: .3rem .4rem; text-align: left; vertical-align: top; }
tbody tr:nth-child(even) { background: var(--row); }
div.table { overflow-x: auto; }
td.reason { min-width: 14rem; }
td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status { font-weight: 700; text-transform: uppercase; }
.status-enabled { color: var(--ok); }
.status-reverted, .status-refused, .status-skipped, .status-disabled, .status-not_attempted, .status-no_record { color: var(--warn); }
.status-failed, .status-unreachable { color: var(--bad); }
.exposed { color: var(--bad); }
span.earlier { font-weight: 400; text-transform: none; color: var(--muted); font-size: .7rem; }
ul.counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 1rem; }
svg text { fill: var(--fg); font-size: 11px; }
svg .axis { stroke: var(--grid); }
svg .bar-before { fill: var(--before); } svg .bar-after { fill: var(--after); }
svg .bar-before8 { fill: var(--before8); } svg .bar-after8 { fill: var(--after8); }
svg text.muted { fill: var(--muted); }
"""

_BARS = (('c1', 'throughput_before', 'bar-before', 'c=1 before'), ('c1', 'throughput_after', 'bar-after', 'c=1 after'),
         ('c8', 'throughput_before', 'bar-before8', 'c=8 before'), ('c8', 'throughput_after', 'bar-after8', 'c=8 after'))


def _e(value):
    return html.escape('' if value is None else str(value), quote=True)


def chart_svg(rows):
    """Before/after throughput (tok/s, c=1 and c=8) per host: an inline SVG, horizontal grouped bars."""
    label_w, plot_w, bar_h, gap, top = 170, 520, 9, 14, 34
    group_h = bar_h * len(_BARS) + gap
    height = top + group_h * max(len(rows), 1) + 24
    values = [item[spec[0]][spec[1]] for item in rows for spec in _BARS if item[spec[0]][spec[1]] is not None]
    scale_max = max(values) if values else 1.0
    full_w = label_w + plot_w + 90
    parts = ['<svg id="throughput-chart" role="img" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" aria-labelledby="chart-title">' % (full_w, height, full_w, height),
             '<title id="chart-title">Output throughput before and after speculative decoding, per host</title>']
    for index, legend in enumerate(_BARS):
        css, text = legend[2], legend[3]
        x = label_w + index * 120
        parts.append('<rect class="legend %s" x="%d" y="6" width="12" height="10"/><text x="%d" y="15">%s</text>'
                     % (css, x, x + 16, _e(text)))
    for index, item in enumerate(rows):
        y0 = top + index * group_h
        parts.append('<g class="host" data-host="%s">' % _e(item['host']))
        parts.append('<text x="0" y="%d">%s</text>' % (y0 + 2 * bar_h, _e(item['host'][:26])))
        parts.append('<text class="muted" x="0" y="%d">%s</text>' % (y0 + 3.6 * bar_h, _e(item['status'])))
        measured = False
        for slot, (conc, key, css, text) in enumerate(_BARS):
            value = item[conc][key]
            if value is None:
                continue
            measured = True
            width = max(1.0, plot_w * value / scale_max)
            y = y0 + slot * bar_h
            parts.append(
                '<rect class="bar %s" x="%d" y="%d" width="%.1f" height="%d"><title>%s %s: %.1f tok/s</title></rect>'
                '<text x="%.1f" y="%d">%.1f</text>' % (css, label_w, y, width, bar_h - 1, _e(item['host']), _e(text),
                                                       value, label_w + width + 4, y + bar_h - 1, value))
        if not measured:
            parts.append('<text class="muted" x="%d" y="%d">no measurement (%s)</text>'
                         % (label_w, y0 + 2 * bar_h, _e(item['status'])))
        parts.append('</g>')
    axis_y = top + group_h * max(len(rows), 1)
    parts.append('<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>' % (label_w, top - 4, label_w, axis_y))
    parts.append('<text class="muted" x="%d" y="%d">tok/s (0 to %.1f)</text>' % (label_w, axis_y + 16, scale_max))
    parts.append('</svg>')
    return ''.join(parts)


def _cell(value, pattern='%.1f'):
    return '<td class="num">%s</td>' % _e(_fmt(value, pattern))


def report_html(rows, title='Speculative decoding: fleet report', generated=None):
    """The self-contained HTML report."""
    summary = counts(rows)
    head = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="color-scheme" content="light dark"><title>%s</title><style>%s</style></head><body>'
            % (_e(title), _CSS))
    body = ['<h1>%s</h1>' % _e(title),
            '<p class="meta">%d hosts%s. Throughput is output tokens per second, TPOT the median time per output '
            'token; before = the non-speculative baseline, after = the speculative candidate, same workload.</p>'
            % (summary['total'], (', generated ' + _e(generated)) if generated else ''),
            '<ul class="counts" id="counts">%s</ul>' % ''.join(
                '<li><span class="status status-%s">%s</span> %d</li>' % (_e(s), _e(s), n)
                for s, n in summary['by_status'].items() if n)]
    if summary['attention']:
        body.append('<p id="attention"><strong>Needs attention:</strong> %s</p>' % _e(', '.join(
            '%s (%s)' % (item['host'], item['status']) for item in rows if item['status'] in ATTENTION)))
    if summary['exposed']:
        body.append('<p id="exposed" class="exposed"><strong>Exposed:</strong> vLLM listens beyond the host without an '
                    'API key on %s. Set an API key (vllm_api_key), or serve the host only (vllm_host: 127.0.0.1).</p>'
                    % _e(', '.join(summary['exposed'])))
    body.append('<figure>%s<figcaption>Output throughput (tok/s) before and after, at concurrency 1 and 8.'
                '</figcaption></figure>' % chart_svg(rows))
    headers = ('Host', 'Status', 'Family', 'Variant', 'JetPack', 'vLLM', 'Method', 'K', 'GPU util before',
               'GPU util after', 'tok/s c=1 before', 'tok/s c=1 after', 'TPOT p50 c=1 before (ms)',
               'TPOT p50 c=1 after (ms)', 'TTFT p50 c=1 before (ms)', 'TTFT p50 c=1 after (ms)', 'tok/s c=8 before',
               'tok/s c=8 after', 'TPOT p50 c=8 before (ms)', 'TPOT p50 c=8 after (ms)', 'TTFT p50 c=8 before (ms)',
               'TTFT p50 c=8 after (ms)', 'Acceptance', 'Verdict', 'Reason', 'Hand-off')
    body.append('<div class="table"><table id="fleet"><thead><tr>%s</tr></thead><tbody>' % ''.join('<th>%s</th>' % _e(h) for h in headers))
    for item in rows:
        earlier = item.get('earlier_run')
        body.append('<tr class="host-row%s" data-host="%s" data-status="%s"><td>%s</td>'
                    '<td class="status status-%s">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>%s%s%s'
                    '%s%s%s%s%s%s%s%s%s%s%s%s%s<td>%s</td><td class="reason">%s</td><td class="reason">%s</td></tr>' % (
                        ' earlier-run' if earlier else '', _e(item['host']), _e(item['status']), _e(item['host']),
                        _e(item['status']),
                        _e(item['status']) + ('<br><span class="earlier">earlier run, finished %s</span>'
                                              % _e(item.get('finished') or '?') if earlier else ''),
                        _e(item['family'] or '-'), _e(item['variant'] or '-'),
                        _e(item['jetpack'] or '-'), _e(item['vllm_version'] or '-'), _e(item['method'] or '-'),
                        _cell(item['num_speculative_tokens'], '%d'),
                        _cell(item['gpu_memory_utilization_before'], '%.2f'),
                        _cell(item['gpu_memory_utilization_after'], '%.2f'),
                        _cell(item['c1']['throughput_before']), _cell(item['c1']['throughput_after']),
                        _cell(item['c1']['tpot_p50_before'], '%.2f'), _cell(item['c1']['tpot_p50_after'], '%.2f'),
                        _cell(item['c1']['ttft_p50_before']), _cell(item['c1']['ttft_p50_after']),
                        _cell(item['c8']['throughput_before']), _cell(item['c8']['throughput_after']),
                        _cell(item['c8']['tpot_p50_before'], '%.2f'), _cell(item['c8']['tpot_p50_after'], '%.2f'),
                        _cell(item['c8']['ttft_p50_before']), _cell(item['c8']['ttft_p50_after']),
                        _cell(item['acceptance_rate'], '%.2f'), _e(item['verdict'] or '-'),
                        ('<strong class="exposed">Exposed: %s</strong> ' % _e(item['exposure_warning'])
                         if item.get('exposure_warning') else '') + _e(item['reason']),
                        _e(item['handoff'])))
    body.append('</tbody></table></div></body></html>\n')
    return head + ''.join(body)


REPORT_NAME = 'fleet-report'


def _same_as_previous(rows, title, previous):
    """The previous report's rows (in this run's host order) when nothing this run measured differs, else None.

    ``previous`` is the text of the JSON twin already on disk. The hosts this run has reached so far
    (every row but ``not_attempted``) must each equal their row there, and the previous report must
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
    reached = [item for item in rows if item['status'] != 'not_attempted']
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
