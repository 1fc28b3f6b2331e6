# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative_verdict decision (private to this collection).

``verdict(baseline, candidate, ...)``: does the measured benchmark justify keeping speculation?
Accept at >= 30 % more throughput and >= 20 % lower TPOT at concurrency 1; reject below 10 %
or on a regression at concurrency 8; marginal in between. Invalid or failed benchmarks raise
``SpeculativeInputError``.

TTFT is reported next to TPOT (deltas ``ttft_change_c1`` / ``ttft_change_c8``) and never credited to
speculation; ``max_ttft_increase`` (off by default) reverts a change whose concurrency-1 TTFT p50 rose by
more than that share (a point-estimate rule, applied after the throughput and TPOT criteria).

Noise: with per-request samples (vllm_benchmark's ``runs[].samples``) every criterion gets a
95 % interval from a percentile bootstrap over requests (_bootstrap) and is met, not_met or
undetermined; without them the point estimates decide, and the reasons say so. ``phase_shift`` widens
every interval for a shift of the whole host between the baseline and candidate phases (measured by an
A/A comparison; see _bootstrap), and marks the criteria it alone leaves open (``shift_bound``). The
speed-up is explained from the acceptance rate and the TPOT ratio (_speedup).

``verdict()`` checks its options (``verdict_options()``) and runs ``Verdict``, whose ``run()`` lists the steps of
one verdict in order (read, measure, estimate the intervals, classify, decide, explain, result), one method each.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import itertools
import math
import sys

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.bootstrap import (
    CONFIDENCE, DEFAULT_RESAMPLES, MAX_PHASE_SHIFT, MAX_REQUESTS, MIN_BLOCKS, MIN_REQUESTS, RESAMPLES_RANGE, block_size,
    data_seed, min_requests, ratio_interval, resamples_within_budget, shift_bound, throughput_statistic, tpot_p50,
    with_phase_shift)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import (
    EPSILON, MAX_NUM_SPECULATIVE_TOKENS, SHOW_LIMIT, SpeculativeInputError, _is_int, _is_number, check_bool,
    check_choice, check_float, check_int, show)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import power as _power
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spending
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.speedup import (
    draft_tokens_per_step, explain, measured_tokens_per_step)

VERDICT_DEFAULTS = {
    'min_throughput_gain': 0.30,
    'min_tpot_reduction': 0.20,
    'disable_below_gain': 0.10,
    'c8_tolerance': 0.02,
    'c8_margin': 0.05,
    'high_acceptance_rate': 0.6,
    'low_acceptance_rate': 0.4,
    'bootstrap_resamples': DEFAULT_RESAMPLES,
    'max_ttft_increase': None,
}
#: A rise of the concurrency-1 TTFT p50 beyond this share is a warning even when max_ttft_increase is off:
#: speculation shortens decoding, not the prefill, so an operator must see what it costs there.
TTFT_WARN_INCREASE = 0.10
#: max_ttft_increase's range (a share: 0.25 = the TTFT p50 at concurrency 1 may rise by 25 %).
MAX_TTFT_INCREASE = 10.0
#: At concurrency 8 the burden of proof is on the change (non-inferiority, the one rule): a measured loss beyond
#: c8_tolerance reverts, and a change is kept only when the interval rules out a loss larger than c8_margin; an
#: interval that does not is an open regression, never a pass (decided as a regression on the point estimates, or left
#: undetermined), so a wider interval (noise, a declared phase shift) can only make the verdict more careful.
#: (The opposite burden of proof and the measured change alone kept 80 to 93 % and 24 to 50 % of the candidates losing
#: 10 % at concurrency 8 at the CPU test bed's noise: docs/performance.md.)
#: The most c8_tolerance and c8_margin may be: a concurrency-8 loss of 10 % or more is never inside them, so every
#: option combination reverts it (at exactly 10 %, the interval's one-sided error bounds a keep).
MAX_C8_LOSS = 0.10
#: decide_undetermined: what to answer when the intervals do not settle the verdict.
DECIDE_UNDETERMINED = ('point_estimate', 'undetermined')
#: The criteria, each met / not_met / undetermined. Accept needs the first two met; reject follows from
#: minimum_gain_c1 not_met or regression_c8 met.
CRITERIA = ('throughput_gain_c1', 'tpot_reduction_c1', 'minimum_gain_c1', 'regression_c8')
#: The criteria whose undetermined status can leave a verdict open; an undetermined regression_c8 is open too
#: (decide() adds it when it is).
DECIDING = CRITERIA[:3]
#: phase_shift's keys: the concurrency level each applies to.
PHASE_SHIFT_LEVELS = {'c1': 1, 'c8': 8}


# --------------------------------------------------------------------------------------------
# verdict
# --------------------------------------------------------------------------------------------

WORKLOAD_FIELDS = ('input_len', 'output_len', 'num_prompts', 'dataset', 'prompt_set_id', 'concurrency',
                   'ignore_eos', 'temperature')
LOW_CONCURRENCY = 1
HIGH_CONCURRENCY = 8
_MISSING = object()


def unwrap_benchmark(name, value):
    """Accept a registered vllm_benchmark result (with a ``benchmark`` key) or the bare benchmark dict."""
    if not isinstance(value, dict):
        raise SpeculativeInputError('%s must be a vllm_benchmark result (a dictionary), got %r.' % (name, value))
    if value.get('failed') is True:
        raise SpeculativeInputError('%s is a failed vllm_benchmark task (%s): fix the benchmark first; a failed run '
                                    'is an error, not a verdict.' % (name, value.get('msg', 'no message')))
    if 'benchmark' in value:
        value = value['benchmark']
        if not isinstance(value, dict):
            raise SpeculativeInputError('%s.benchmark must be a dictionary, got %r.' % (name, value))
    if not isinstance(value.get('config'), dict):
        raise SpeculativeInputError('%s has no config dictionary: pass the result of jetson_llm.vllm.vllm_benchmark.'
                                    % name)
    runs = value.get('runs')
    if not isinstance(runs, list) or not runs:
        raise SpeculativeInputError('%s has no runs (empty benchmark result): nothing to compare.' % name)
    return value


def runs_by_concurrency(name, bench):
    runs = {}
    for index, run in enumerate(bench['runs']):
        if not isinstance(run, dict):
            raise SpeculativeInputError('%s.runs[%s] must be a dictionary, got %r.' % (name, index, run))
        conc = run.get('concurrency')
        if not _is_int(conc) or conc < 1:
            raise SpeculativeInputError('%s.runs[%s].concurrency must be an integer >= 1, got %r.' % (name, index, conc))
        if conc in runs:
            raise SpeculativeInputError('%s has two runs at concurrency %s.' % (name, conc))
        failed = run.get('failed')
        if not _is_int(failed) or failed < 0:
            raise SpeculativeInputError('%s run at concurrency %s has no valid failed count (%r).' % (name, conc, failed))
        if failed > 0:
            first = _first_error(run.get('errors'))
            raise SpeculativeInputError('%s run at concurrency %s had %s failed request(s)%s: a failed run is an error, '
                                        'not a verdict; fix the server or benchmark and measure again.'
                                        % (name, conc, failed, ' (first error: %s)' % first if first else ''))
        runs[conc] = run
    listed = bench['config'].get('concurrency')
    if listed is not None:
        _check_concurrency_list(name, listed)
    if isinstance(listed, list) and sorted(listed) != sorted(runs):
        raise SpeculativeInputError('%s lists concurrency %s in its config but has runs at %s: incomplete result.'
                                    % (name, listed, sorted(runs)))
    return runs


def _first_error(errors):
    """The first error of a run's ``errors`` (a list of sentences per the contract; any shape tolerated)."""
    if isinstance(errors, (list, tuple)):
        errors = errors[0] if errors else None
    elif isinstance(errors, dict):
        errors = next(iter(errors.items()), None)
    if errors is None or errors == '':
        return None
    text = errors if isinstance(errors, str) else repr(errors)
    return text if len(text) <= SHOW_LIMIT else text[:SHOW_LIMIT] + '...'


def _check_concurrency_list(name, listed):
    if not isinstance(listed, list) or not listed or not all(_is_int(c) and c >= 1 for c in listed):
        raise SpeculativeInputError('%s config.concurrency must be a non-empty list of integers >= 1, got %s.'
                                    % (name, show(listed)))


def metric(name, run, key, conc):
    value = run.get(key)
    # Subnormal numbers (below sys.float_info.min) are not measurements: a ratio against them overflows.
    if not _is_number(value) or not math.isfinite(value) or value < sys.float_info.min:
        raise SpeculativeInputError('%s run at concurrency %s has no usable %s (%s; a positive finite number is '
                                    'needed): the decision needs it; measure again.' % (name, conc, key, show(value)))
    return float(value)


def _ratio_change(name, new, old):
    """new / old - 1, refused when it is not a finite number (absurd measurements)."""
    try:
        change = new / old - 1.0
    except (OverflowError, ZeroDivisionError):
        change = float('inf')
    if not math.isfinite(change):
        raise SpeculativeInputError('The %s change from %s to %s is not a finite number: these measurements are '
                                    'not plausible; measure again.' % (name, show(old), show(new)))
    return change


#: A sequential candidate (vllm_benchmark with ``sequential``) measures a number of requests decided by its rounds and
#: continues the baseline's seeded prompt sequence: these fields may differ, and its config.sequential names the
#: baseline's prompt_set_id instead (vllm_benchmark checked, per level, that its first prompts are the baseline's).
SEQUENTIAL_FREE_FIELDS = ('num_prompts', 'prompt_set_id')


def check_workloads_match(baseline, candidate):
    sequential = candidate['config'].get('sequential')
    if baseline['config'].get('sequential') is not None:
        raise SpeculativeInputError('The baseline is a sequential benchmark (config.sequential is set): measure the '
                                    'baseline with a fixed number of requests, and only the candidate sequentially.')
    if sequential is not None:
        named = sequential.get('baseline_prompt_set_id') if isinstance(sequential, dict) else None
        if named != baseline['config'].get('prompt_set_id'):
            raise SpeculativeInputError('The sequential candidate was measured against another baseline: its '
                                        'config.sequential.baseline_prompt_set_id is %s, the baseline\'s prompt_set_id '
                                        'is %s. Pass the baseline the candidate was measured against.'
                                        % (show(named), show(baseline['config'].get('prompt_set_id'))))
    for label, bench in (('baseline', baseline), ('candidate', candidate)):
        listed = bench['config'].get('concurrency')
        if listed is not None:
            _check_concurrency_list(label, listed)
        for field in WORKLOAD_FIELDS:
            value = bench['config'].get(field)
            if isinstance(value, float) and not math.isfinite(value):
                raise SpeculativeInputError('%s config.%s is %s: workload settings must be finite numbers; measure '
                                            'again with a valid setting.' % (label, field, show(value)))
    for field in WORKLOAD_FIELDS:
        if sequential is not None and field in SEQUENTIAL_FREE_FIELDS:
            continue
        left = baseline['config'].get(field, _MISSING)
        right = candidate['config'].get(field, _MISSING)
        if field == 'concurrency' and isinstance(left, list) and isinstance(right, list):
            left, right = sorted(left), sorted(right)
        if left != right or isinstance(left, bool) != isinstance(right, bool):
            shown = [('missing' if v is _MISSING else show(v)) for v in (left, right)]
            raise SpeculativeInputError('The benchmarks ran different workloads: config.%s is %s in the baseline and %s '
                                        'in the candidate. Run both with the same settings.' % (field, shown[0], shown[1]))


def _check_verdict_options(opts):
    for key in ('min_throughput_gain', 'min_tpot_reduction', 'disable_below_gain'):
        opts[key] = check_float(key, opts[key], minimum=0.0, maximum=10.0 if key != 'min_tpot_reduction' else 1.0)
    opts['c8_tolerance'] = check_c8_loss('c8_tolerance', opts['c8_tolerance'])
    for key in ('high_acceptance_rate', 'low_acceptance_rate'):
        opts[key] = check_float(key, opts[key], minimum=0.0, maximum=1.0)
    if opts['disable_below_gain'] > opts['min_throughput_gain']:
        raise SpeculativeInputError('disable_below_gain (%s) must not exceed min_throughput_gain (%s).'
                                    % (opts['disable_below_gain'], opts['min_throughput_gain']))
    if opts['low_acceptance_rate'] > opts['high_acceptance_rate']:
        raise SpeculativeInputError('low_acceptance_rate (%s) must not exceed high_acceptance_rate (%s).'
                                    % (opts['low_acceptance_rate'], opts['high_acceptance_rate']))
    return opts


def check_c8_loss(name, value):
    """c8_tolerance or c8_margin: a share of concurrency-8 throughput from 0.0 to MAX_C8_LOSS."""
    value = check_float(name, value, minimum=0.0)
    if value > MAX_C8_LOSS:
        raise SpeculativeInputError('%s must be from 0.0 to %s, got %s: a concurrency-8 loss of %s or more always '
                                    'reverts, whatever the calibration.' % (name, MAX_C8_LOSS, value, pct(MAX_C8_LOSS)))
    return value


def noninferiority_margin(opts):
    """The loss at concurrency 8 the interval must rule out: c8_margin, never less than c8_tolerance."""
    return max(opts['c8_margin'], opts['c8_tolerance'])


def pct(value):
    """A share as a percentage with one decimal: 0.083 -> "8.3 %"."""
    return '%.1f %%' % (value * 100.0)


def _signed_whole(value):
    """A change as a signed whole percentage: 0.412 -> "+41 %", -0.013 -> "-1 %"."""
    rounded = int(round(value * 100.0))
    return '%+d %%' % rounded if rounded else '0 %'


def level_text(confidence):
    """'95 %' for the fixed protocol's confidence, '99.84 %' for a sequential look's (never rounded up to 100 %)."""
    if abs(confidence - CONFIDENCE) < 1e-9:
        return '%d %%' % int(round(CONFIDENCE * 100))
    digits = 2
    while digits < 8 and float('%.*f' % (digits, confidence * 100)) >= 100.0:
        digits += 1
    return '%s %%' % ('%.*f' % (digits, math.floor(confidence * 100 * 10 ** digits) / 10 ** digits)).rstrip('0').rstrip('.')


def summary_line(criteria, result, keep, confidence=None):
    """How sure the verdict is, in one line a person can read, e.g.
    "c=1 +41 % (95 % CI +33 % to +49 %), c=8 -1 % (95 % CI -4 % to +2 %): accept, kept".

    ``confidence``: {'c1': .., 'c8': ..} (None: 95 % at both levels).
    """
    confidence = confidence or {'c1': CONFIDENCE, 'c8': CONFIDENCE}
    parts = []
    for label, name in (('c=1', 'throughput_gain_c1'), ('c=8', 'regression_c8')):
        entry = criteria.get(name)
        if not entry or entry.get('point') is None:
            continue
        interval = entry.get('interval')
        if interval:
            parts.append('%s %s (%s CI %s to %s)' % (label, _signed_whole(entry['point']),
                                                     level_text(confidence[label.replace('=', '')]),
                                                     _signed_whole(interval[0]), _signed_whole(interval[1])))
        else:
            parts.append('%s %s (no interval: too few requests)' % (label, _signed_whole(entry['point'])))
    return '%s: %s, %s' % (', '.join(parts) or 'no measurement', result, 'kept' if keep else 'reverted')


def _samples(name, run, conc):
    """The per-request samples of a run (vllm_benchmark's ``runs[].samples``), checked.

    None when the run has none (an older result, or a stored baseline without them). Otherwise
    {'pairs': [(output_tokens, latency_ms)], 'tpot': [tpot_ms of requests with more than one token]}.
    Only the lists the verdict resamples are read; a malformed list is an error naming it.
    """
    samples = run.get('samples')
    if samples is None:
        return None
    where = '%s run at concurrency %s' % (name, conc)
    if not isinstance(samples, dict):
        raise SpeculativeInputError('The %s has samples that are %s, not a dictionary of per-request lists: pass the '
                                    'result of jetson_llm.vllm.vllm_benchmark unchanged.' % (where, show(samples)))
    lists = {}
    for key in ('output_tokens', 'latency_ms', 'tpot_ms'):
        values = samples.get(key)
        if not isinstance(values, list):
            raise SpeculativeInputError('The %s has samples.%s %s: a list with one value per request is needed.'
                                        % (where, key, 'missing' if values is None else 'that is %s, not a list' % show(values)))
        lists[key] = values
    count = len(lists['output_tokens'])
    if count > MAX_REQUESTS:
        raise SpeculativeInputError('The %s has %d samples; at most %d are accepted (the num_prompts limit of '
                                    'vllm_benchmark).' % (where, count, MAX_REQUESTS))
    for key in ('latency_ms', 'tpot_ms'):
        if len(lists[key]) != count:
            raise SpeculativeInputError('The %s has %d samples.output_tokens but %d samples.%s: the per-request lists '
                                        'must have the same length.' % (where, count, len(lists[key]), key))
    completed = run.get('completed')
    if _is_int(completed) and completed != count:
        raise SpeculativeInputError('The %s has %d samples but completed is %d: the samples do not belong to this run.'
                                    % (where, count, completed))
    for index in range(count):
        out, lat, tpot = lists['output_tokens'][index], lists['latency_ms'][index], lists['tpot_ms'][index]
        if not _is_int(out) or out < 1:
            raise SpeculativeInputError('The %s has samples.output_tokens[%d] = %s: a whole number of tokens >= 1 is '
                                        'needed.' % (where, index, show(out)))
        if not _is_number(lat) or not math.isfinite(lat) or lat < sys.float_info.min:
            raise SpeculativeInputError('The %s has samples.latency_ms[%d] = %s: a positive finite number of '
                                        'milliseconds is needed.' % (where, index, show(lat)))
        if tpot is not None and (not _is_number(tpot) or not math.isfinite(tpot) or tpot < 0):
            raise SpeculativeInputError('The %s has samples.tpot_ms[%d] = %s: a finite number of milliseconds >= 0, or '
                                        'null for a 1-token output, is needed.' % (where, index, show(tpot)))
    return {'pairs': [(out, float(lat)) for out, lat in zip(lists['output_tokens'], lists['latency_ms'])],
            'tpot': [float(t) for t in lists['tpot_ms'] if t is not None]}


def _at_least(point, interval, threshold):
    """met / not_met / undetermined for "value >= threshold" (EPSILON at the boundary), on the interval if any."""
    if interval is None:
        return 'met' if point >= threshold - EPSILON else 'not_met'
    low, high = interval
    if low >= threshold - EPSILON:
        return 'met'
    if high < threshold - EPSILON:
        return 'not_met'
    return 'undetermined'


_OPPOSITE = {'met': 'not_met', 'not_met': 'met', 'undetermined': 'undetermined'}


def _criterion(point, interval, threshold, status, point_status, basis, bound=False):
    return {'status': status, 'point_status': point_status, 'basis': basis, 'point': round(point, 4),
            'interval': None if interval is None else [round(interval[0], 4), round(interval[1], 4)],
            'threshold': threshold, 'shift_bound': bool(bound and status == 'undetermined')}


def _rule(statuses):
    """The specification's rule on met / not_met statuses."""
    if statuses['minimum_gain_c1'] == 'not_met' or statuses.get('regression_c8') == 'met':
        return 'reject'
    if statuses['throughput_gain_c1'] == 'met' and statuses['tpot_reduction_c1'] == 'met':
        return 'accept'
    return 'marginal'


def classify(name, point, interval, threshold):
    """(status, point_status) of one criterion: met / not_met / undetermined on its interval (None: on the point),
    and met / not_met on its point. regression_c8 is met when the change is below ``threshold`` (a regression)."""
    if name == 'regression_c8':
        return _OPPOSITE[_at_least(point, interval, threshold)], _OPPOSITE[_at_least(point, None, threshold)]
    return _at_least(point, interval, threshold), _at_least(point, None, threshold)


def decide(criteria, decide_undetermined='point_estimate'):
    """The verdict from classified criteria ({name: {'status', 'point_status'}}, as verdict() builds them).

    An undetermined regression_c8 is open (the interval does not rule out a loss beyond c8_margin), and
    decide_undetermined=point_estimate settles it as a regression, not on its point estimate: not ruling a loss out is
    not a pass. Returns (verdict, final statuses, the criteria left undetermined (empty when the intervals settle the
    verdict), the point estimates' verdict).
    """
    statuses = dict((name, entry['status']) for name, entry in criteria.items())
    deciding = CRITERIA if statuses.get('regression_c8') == 'undetermined' else DECIDING
    point_verdict = _rule(dict((name, entry['point_status']) for name, entry in criteria.items()))
    settled, open_names = _settle(statuses, deciding)
    final = dict(statuses)
    if settled is not None:
        return settled, final, [], point_verdict
    if decide_undetermined == 'point_estimate':
        for name in deciding:
            if final.get(name) == 'undetermined':
                final[name] = 'met' if name == 'regression_c8' else criteria[name]['point_status']
        return _rule(final), final, open_names, point_verdict
    return 'undetermined', final, open_names, point_verdict


def c8_regression_only(criteria, final=None):
    """True when concurrency 8 regressed (regression_c8 met) while concurrency 1 passes: both c=1 bars met on their
    intervals, or on their point estimates where the intervals leave them open.

    ``final``: the verdict's final statuses (decide()). An open regression_c8 that decide_undetermined=point_estimate
    settled as a regression counts (the change was reverted only because concurrency 8 was not shown to be no
    regression: non-inferiority), so a noisy concurrency 8 does not hide the one remedy that targets it.

    What makes batch-size-aware speculation worth a try (the role's trigger; that attempt is verified on its own). A
    sequential benchmark stops as soon as the c=8 regression settles the reject, often before its first-look intervals
    at concurrency 1 (99.9998 %) can show a bar, so an open c=1 criterion counts on its point estimate here.
    """
    def passes(name):
        entry = criteria.get(name) or {}
        return entry.get('status') == 'met' or (entry.get('status') == 'undetermined' and entry.get('point_status') == 'met')
    regression = (final or {}).get('regression_c8') or (criteria.get('regression_c8') or {}).get('status')
    return passes('throughput_gain_c1') and passes('tpot_reduction_c1') and regression == 'met'


def keep_of(verdict, keep_marginal=False):
    """Whether a verdict keeps the change: accept, or marginal with keep_marginal."""
    return verdict == 'accept' or (verdict == 'marginal' and bool(keep_marginal))


def _outcomes(statuses, deciding):
    """(open names, {combo of met / not_met for them: verdict}) over every possible way of settling them."""
    open_names = [name for name in deciding if statuses.get(name) == 'undetermined']
    outcomes = {}
    for combo in itertools.product(('met', 'not_met'), repeat=len(open_names)):
        trial = dict(statuses)
        trial.update(zip(open_names, combo))
        if trial['throughput_gain_c1'] == 'met' and trial['minimum_gain_c1'] == 'not_met':
            continue  # impossible: disable_below_gain <= min_throughput_gain
        outcomes[combo] = _rule(trial)
    return open_names, outcomes


def _settle(statuses, deciding=DECIDING):
    """(verdict, []) when every way of settling the undetermined criteria gives the same verdict, else (None, names).

    ``names`` are the undetermined criteria on which the verdict depends. ``deciding``: the criteria whose
    undetermined status is open (the sequential benchmark also counts regression_c8, see settle_all).
    """
    open_names, outcomes = _outcomes(statuses, deciding)
    if len(set(outcomes.values())) == 1:
        return next(iter(outcomes.values())), []
    matter = []
    for index, name in enumerate(open_names):
        for combo, result in outcomes.items():
            flipped = combo[:index] + (_OPPOSITE[combo[index]],) + combo[index + 1:]
            if flipped in outcomes and outcomes[flipped] != result:
                matter.append(name)
                break
    return None, matter


def settle_all(statuses):
    """(verdict, []) or (None, open criteria) from criterion statuses, counting EVERY undetermined criterion as open.

    A regression_c8 that is undetermined is open here, as in the verdict: a sequential benchmark measures on until
    the concurrency-8 interval shows a regression or rules out a loss beyond c8_margin, when that could change the
    verdict.
    """
    return _settle(statuses, CRITERIA)


def settle_keep(statuses, keep_marginal=False):
    """(keep, possible verdicts): ``keep`` is True or False when every way of settling the undetermined criteria
    (all of them, as settle_all) gives the same keep-or-revert decision, else None.

    With keep_marginal false, marginal and reject both revert: a sequential benchmark whose open criteria can only
    move the verdict between the two has its decision, and need not measure on for the verdict's name.
    """
    _names, outcomes = _outcomes(statuses, CRITERIA)
    verdicts = sorted(set(outcomes.values()))
    keeps = set(keep_of(verdict, keep_marginal) for verdict in verdicts)
    return (keeps.pop() if len(keeps) == 1 else None), verdicts


def _signed(value):
    return '%+.1f %%' % (value * 100.0)


def _interval_text(interval, signed=True, level='95 %'):
    fmt = _signed if signed else pct
    return '%s interval %s to %s' % (level, fmt(interval[0]), fmt(interval[1]))


CRITERION_WORDS = {
    'throughput_gain_c1': ('the throughput gain at concurrency 1', True),
    'tpot_reduction_c1': ('the TPOT reduction at concurrency 1', False),
    'minimum_gain_c1': ('the throughput gain at concurrency 1', True),
    'regression_c8': ('the throughput change at concurrency 8', True),
}


def _intervals(base_runs, cand_runs, levels, point_ratios, opts, warnings):
    """The intervals of the candidate / baseline ratios at opts['confidence'] (95 %, or a sequential look's level;
    percentile bootstrap over requests, see _bootstrap).

    At concurrency above 1 the throughput resamples blocks of ``concurrency`` consecutive requests (the requests in
    flight together are not independent); TPOT is only judged at concurrency 1, one request at a time.

    Returns (intervals, notes, resamples, seed): intervals maps (kind, concurrency) to (low, high) of the ratio or
    None, for kind 'throughput' (at every level) and 'tpot' (concurrency 1); a missing entry has no interval, and
    the notes (sentences for the reasons) say why.
    """
    samples = {}
    for conc in levels:
        samples[conc] = (_samples('baseline', base_runs[conc], conc), _samples('candidate', cand_runs[conc], conc))
    notes = []
    usable = {}
    for conc in levels:
        missing = [label for label, got in zip(('baseline', 'candidate'), samples[conc]) if got is None]
        if missing:
            notes.append('No per-request samples in the %s run%s at concurrency %d (an older benchmark result or a stored '
                         'baseline without them): point estimate only.'
                         % (' and '.join(missing), 's' if len(missing) > 1 else '', conc))
            continue
        kinds = ('throughput', 'tpot') if conc == LOW_CONCURRENCY else ('throughput',)
        for kind in kinds:
            items = [got['pairs'] if kind == 'throughput' else got['tpot'] for got in samples[conc]]
            least = min_requests(conc) if kind == 'throughput' else MIN_REQUESTS
            few = [(label, len(got)) for label, got in zip(('baseline', 'candidate'), items) if len(got) < least]
            if few:
                what = 'requests' if kind == 'throughput' else 'requests with a TPOT'
                counts = ' and '.join('%d %s in the %s run' % (n, what, label) for label, n in few)
                why = ('at least %d' % least if least == MIN_REQUESTS else
                       'at least %d: requests in flight together are resampled as blocks of %d, and %d blocks are needed'
                       % (least, block_size(conc), MIN_BLOCKS))
                notes.append('Only %s at concurrency %d: too few for an interval (%s); %s point estimate only.'
                             % (counts, conc, why, 'throughput' if kind == 'throughput' else 'TPOT'))
                continue
            usable[(kind, conc)] = items
    draws = sum(len(items[0]) + len(items[1]) for items in usable.values())
    resamples = resamples_within_budget(opts['bootstrap_resamples'], draws)
    if resamples < opts['bootstrap_resamples']:
        warnings.append('%d resamples of %d requests would take too long: the intervals use %d resamples.'
                        % (opts['bootstrap_resamples'], draws, resamples))
    seed = data_seed(resamples, sorted([kind, conc, items] for (kind, conc), items in usable.items()))
    intervals = {}
    for (kind, conc), items in sorted(usable.items()):
        statistic = throughput_statistic(conc) if kind == 'throughput' else tpot_p50
        intervals[(kind, conc)] = ratio_interval(seed, '%s:c%d' % (kind, conc), items[0], items[1], statistic,
                                                 resamples, point_ratios[(kind, conc)],
                                                 confidence=opts['confidence'][_level_key(conc)],
                                                 block=block_size(conc) if kind == 'throughput' else 1)
        if intervals[(kind, conc)] is None:
            notes.append('The per-request %s values at concurrency %d give a zero statistic: no interval; point estimate '
                         'only.' % ('TPOT' if kind == 'tpot' else 'throughput', conc))
    return intervals, notes, resamples, seed


def check_levels(name, value, default, minimum, maximum):
    """{'c1': float, 'c8': float} from a per-level dictionary ``value``: unknown keys are refused, a missing or null
    level is ``default``, each value is checked against [minimum, maximum]; raises naming the bad value."""
    unknown = sorted('%s' % key for key in value if key not in PHASE_SHIFT_LEVELS)
    if unknown:
        raise SpeculativeInputError('%s has unknown key(s) %s; allowed: c1, c8.'
                                    % (name, ', '.join(show(key) for key in unknown)))
    return dict((key, default if value.get(key) is None else
                 check_float('%s.%s' % (name, key), value[key], minimum=minimum, maximum=maximum))
                for key in sorted(PHASE_SHIFT_LEVELS))


def check_phase_shift(name, value):
    """{'c1': float, 'c8': float} from ``value`` (None: no shift; missing keys 0); raises naming the bad value."""
    if value is None:
        return {'c1': 0.0, 'c8': 0.0}
    if not isinstance(value, dict):
        raise SpeculativeInputError('%s must be a dictionary with c1 and c8 (the relative standard deviation of the '
                                    'host\'s shift between two phases, e.g. {c1: 0.08, c8: 0.09}); got %s.'
                                    % (name, show(value)))
    return check_levels(name, value, 0.0, 0.0, MAX_PHASE_SHIFT)


def _usable(value):
    return _is_number(value) and math.isfinite(value) and value >= sys.float_info.min


def ttft_changes(base_runs, cand_runs, levels, required=False):
    """{level: (baseline ms, candidate ms, change)} of the TTFT p50 at each of ``levels`` where both runs have one.

    ``required``: concurrency 1 must have it (max_ttft_increase decides on it); raise when it does not.
    """
    out = {}
    for level in levels:
        base, cand = base_runs[level].get('ttft_ms_p50'), cand_runs[level].get('ttft_ms_p50')
        if required and level == LOW_CONCURRENCY:
            base = metric('baseline', base_runs[level], 'ttft_ms_p50', level)
            cand = metric('candidate', cand_runs[level], 'ttft_ms_p50', level)
        elif not (_usable(base) and _usable(cand)):
            continue
        out[level] = (float(base), float(cand), _ratio_change('ttft_ms_p50', float(cand), float(base)))
    return out


def _ttft_text(ttft):
    return ', '.join('%+.1f %% at concurrency %d (%.1f -> %.1f ms)' % (change * 100, level, base, cand)
                     for level, (base, cand, change) in sorted(ttft.items()))


def _check_new_options(opts):
    opts['phase_shift'] = check_phase_shift('phase_shift', opts.get('phase_shift'))
    opts['bootstrap_resamples'] = check_int(
        'bootstrap_resamples', opts['bootstrap_resamples'], minimum=RESAMPLES_RANGE[0], maximum=RESAMPLES_RANGE[1],
        allowed='an integer from %d to %d' % RESAMPLES_RANGE)
    check_choice('decide_undetermined', opts['decide_undetermined'], DECIDE_UNDETERMINED)
    opts['max_ttft_increase'] = check_float('max_ttft_increase', opts.get('max_ttft_increase'), minimum=0.0,
                                            maximum=MAX_TTFT_INCREASE, optional=True)
    check_int('num_speculative_tokens', opts['num_speculative_tokens'], minimum=1, maximum=MAX_NUM_SPECULATIVE_TOKENS,
              optional=True, allowed='an integer from 1 to %d, or null to read it from the candidate\'s speculative-'
                                     'decoding counters' % MAX_NUM_SPECULATIVE_TOKENS)
    return opts


#: The most confidence accepted (_spending clamps every look to it).
MAX_CONFIDENCE = spending.MAX_CONFIDENCE


def _level_key(concurrency):
    """'c1' for concurrency 1, 'c8' above (the levels confidence and phase_shift name)."""
    return 'c1' if concurrency == LOW_CONCURRENCY else 'c8'


def _last_look_confidence(cand):
    """{'c1', 'c8'}: the confidence of the last planned look of a sequential candidate (95 % for a fixed one).

    shift_bound is judged there: the last look is the most permissive, so a threshold the host's phase shift alone
    covers at that confidence cannot be settled by any more rounds of the same two phases.
    """
    sequential = cand['config'].get('sequential')
    looks = sequential.get('looks') if isinstance(sequential, dict) else None
    out = {'c1': CONFIDENCE, 'c8': CONFIDENCE}
    if looks is None:
        return out
    if not isinstance(looks, dict):
        raise SpeculativeInputError('The candidate\'s config.sequential.looks must be a dictionary of level -> planned '
                                    'looks; got %s.' % show(looks))
    for key, level in (('c1', '%d' % LOW_CONCURRENCY), ('c8', '%d' % HIGH_CONCURRENCY)):
        if looks.get(level) is not None:
            planned = check_int('the candidate\'s config.sequential.looks.%s' % level, looks[level], minimum=1,
                                maximum=MAX_REQUESTS)
            out[key] = spending.bounded_confidence(planned, planned)
    return out


def _confidence_of(cand, given):
    """{'c1': confidence, 'c8': confidence} of the verdict's intervals: ``given`` (a number for both levels, or
    a dictionary), else a sequential candidate's last looks' (``config.sequential.confidence``), else 95 %."""
    name = 'confidence'
    if given is None:
        sequential = cand['config'].get('sequential')
        given = sequential.get('confidence') if isinstance(sequential, dict) else None
        name = 'the candidate\'s config.sequential.confidence'
    if given is None:
        return {'c1': CONFIDENCE, 'c8': CONFIDENCE}
    if not isinstance(given, dict):
        value = check_float(name, given, minimum=CONFIDENCE, maximum=MAX_CONFIDENCE)
        return {'c1': value, 'c8': value}
    return check_levels(name, given, CONFIDENCE, CONFIDENCE, MAX_CONFIDENCE)


def verdict(baseline, candidate, min_throughput_gain=VERDICT_DEFAULTS['min_throughput_gain'],
            min_tpot_reduction=VERDICT_DEFAULTS['min_tpot_reduction'],
            disable_below_gain=VERDICT_DEFAULTS['disable_below_gain'],
            c8_tolerance=VERDICT_DEFAULTS['c8_tolerance'], keep_marginal=False,
            high_acceptance_rate=VERDICT_DEFAULTS['high_acceptance_rate'],
            low_acceptance_rate=VERDICT_DEFAULTS['low_acceptance_rate'],
            bootstrap_resamples=VERDICT_DEFAULTS['bootstrap_resamples'],
            decide_undetermined='point_estimate', num_speculative_tokens=None, phase_shift=None,
            c8_margin=VERDICT_DEFAULTS['c8_margin'], max_ttft_increase=VERDICT_DEFAULTS['max_ttft_increase'],
            drafting_off_above=None, confidence=None):
    """Compare a speculative candidate benchmark with its baseline. See the module documentation.

    ``confidence``: the two-sided confidence of the intervals, one number or {c1, c8} per level; None: what a
    sequential candidate's last looks used (``config.sequential.confidence``, see _spending), else 95 %.

    Returns a dict: verdict, keep, reasons, warnings, deltas, measurements, recommendation, criteria,
    determined, undetermined, decision_basis, point_estimate_verdict, bootstrap, explanation, ttft, drafting, power,
    c8_regression_only.
    Raises SpeculativeInputError on invalid input (mismatched workloads, failed runs...).
    """
    opts = verdict_options(
        min_throughput_gain=min_throughput_gain, min_tpot_reduction=min_tpot_reduction,
        disable_below_gain=disable_below_gain, c8_tolerance=c8_tolerance, keep_marginal=keep_marginal,
        high_acceptance_rate=high_acceptance_rate, low_acceptance_rate=low_acceptance_rate,
        bootstrap_resamples=bootstrap_resamples,
        decide_undetermined=decide_undetermined, num_speculative_tokens=num_speculative_tokens,
        phase_shift=phase_shift, c8_margin=c8_margin, max_ttft_increase=max_ttft_increase,
        drafting_off_above=drafting_off_above)
    return Verdict(opts).run(baseline, candidate, confidence)


def verdict_options(**given):
    """verdict()'s options (all its keyword arguments but ``confidence``, which depends on the candidate) as one
    dictionary, checked; raises SpeculativeInputError naming the first bad value."""
    opts = _check_verdict_options(dict((key, given[key]) for key in (
        'min_throughput_gain', 'min_tpot_reduction', 'disable_below_gain', 'c8_tolerance', 'high_acceptance_rate',
        'low_acceptance_rate')))
    opts['keep_marginal'] = check_bool('keep_marginal', given['keep_marginal'])
    opts['c8_margin'] = check_c8_loss('c8_margin', given['c8_margin'])
    opts.update(_check_new_options(dict((key, given[key]) for key in (
        'bootstrap_resamples', 'decide_undetermined', 'num_speculative_tokens', 'phase_shift',
        'max_ttft_increase'))))
    opts['drafting_off_above'] = check_int('drafting_off_above', given['drafting_off_above'], minimum=1,
                                           maximum=65535, optional=True)
    return opts


class Verdict(object):
    """One verdict, step by step: ``run()`` lists the steps; each method does one of them.

    The steps share what they found as attributes: the benchmarks (``base``, ``cand``, ``base_runs``, ``cand_runs``),
    the measurements, the intervals, the criteria and the decision, then the ``reasons`` and ``warnings`` they write
    in the order the result gives them.
    """

    def __init__(self, opts):
        """``opts``: verdict_options(), with ``confidence`` added once the candidate is read."""
        self.opts = opts
        self.warnings = []
        self.reasons = []

    def run(self, baseline, candidate, confidence=None):
        """The verdict() result for ``baseline`` and ``candidate``; ``confidence`` as verdict() takes it."""
        self.read_benchmarks(baseline, candidate, confidence)
        self.warn_about_runs()
        self.measure_c1()
        self.measure_c8()
        self.measure_ttft()
        self.read_acceptance()
        self.estimate_intervals()
        self.classify_c1()
        self.classify_c8()
        self.decide_verdict()
        self.explain_measurements()
        self.explain_power()
        self.explain_c8_interval()
        self.explain_open_criteria()
        self.explain_speedup()
        self.explain_undetermined_and_ttft()
        self.revert_ignored_drafting()
        self.hold_a_keep_on_live_traffic()
        self.explain_outcome()
        return self.result()

    # --- the input ------------------------------------------------------------------------------

    def read_benchmarks(self, baseline, candidate, confidence):
        """Both benchmarks unwrapped and checked (the same workload and concurrency levels, one of them 1), and the
        confidence of the intervals."""
        self.base = unwrap_benchmark('baseline', baseline)
        self.cand = unwrap_benchmark('candidate', candidate)
        check_workloads_match(self.base, self.cand)
        self.opts['confidence'] = _confidence_of(self.cand, confidence)
        self.shift_confidence = _last_look_confidence(self.cand)
        #: The confidence as the reasons print it ('95 %', or a sequential look's level).
        self.level_texts = {'c1': level_text(self.opts['confidence']['c1']),
                            'c8': level_text(self.opts['confidence']['c8'])}
        self.base_runs = runs_by_concurrency('baseline', self.base)
        self.cand_runs = runs_by_concurrency('candidate', self.cand)
        if sorted(self.base_runs) != sorted(self.cand_runs):
            raise SpeculativeInputError('The benchmarks ran different concurrency lists: baseline %s, candidate %s.'
                                        % (sorted(self.base_runs), sorted(self.cand_runs)))
        if LOW_CONCURRENCY not in self.base_runs:
            raise SpeculativeInputError('Neither benchmark has a run at concurrency 1 (runs at %s): the verdict is '
                                        'decided at concurrency 1; add 1 to the concurrency list.'
                                        % sorted(self.base_runs))

    def warn_about_runs(self):
        """Warnings on what the runs say about themselves: polluted metrics (kept in ``live_traffic`` for
        hold_a_keep_on_live_traffic), a different model, device or mode."""
        self.live_traffic = []
        for label, runs in (('baseline', self.base_runs), ('candidate', self.cand_runs)):
            for conc, run in sorted(runs.items()):
                if run.get('metrics_polluted') is True:
                    self.live_traffic.append('%s at concurrency %s' % (label, conc))
                    self.warnings.append('The %s run at concurrency %s has polluted metrics (other traffic on the '
                                         'server): treat the numbers with care.' % (label, conc))
        for key in ('model', 'variant', 'l4t', 'power_mode'):
            if self.base.get(key) != self.cand.get(key):
                self.warnings.append('The baseline and candidate differ in %s (%r vs %r): make sure they measure the '
                                     'same service on the same device.' % (key, self.base.get(key), self.cand.get(key)))

    # --- the measurements -----------------------------------------------------------------------

    def measure_c1(self):
        """Throughput and TPOT p50 at concurrency 1: the gain and the TPOT reduction."""
        self.base_run1, self.cand_run1 = self.base_runs[LOW_CONCURRENCY], self.cand_runs[LOW_CONCURRENCY]
        self.base_tput1 = metric('baseline', self.base_run1, 'throughput_tok_s', 1)
        self.cand_tput1 = metric('candidate', self.cand_run1, 'throughput_tok_s', 1)
        self.base_tpot1 = metric('baseline', self.base_run1, 'tpot_ms_p50', 1)
        self.cand_tpot1 = metric('candidate', self.cand_run1, 'tpot_ms_p50', 1)
        self.gain = _ratio_change('throughput_tok_s', self.cand_tput1, self.base_tput1)
        self.reduction = -_ratio_change('tpot_ms_p50', self.cand_tpot1, self.base_tpot1)
        self.measurements = {
            'c1': {'baseline': {'throughput_tok_s': self.base_tput1, 'tpot_ms_p50': self.base_tpot1},
                   'candidate': {'throughput_tok_s': self.cand_tput1, 'tpot_ms_p50': self.cand_tpot1}},
            'c8': None}
        self.point_ratios = {('throughput', 1): self.cand_tput1 / self.base_tput1,
                             ('tpot', 1): self.cand_tpot1 / self.base_tpot1}

    def measure_c8(self):
        """Throughput at concurrency 8 and its change, or a warning that there is no such run."""
        self.change8 = self.base_tput8 = self.cand_tput8 = None
        self.levels = [LOW_CONCURRENCY]
        if HIGH_CONCURRENCY not in self.base_runs:
            self.warnings.append('No run at concurrency 8: decided on concurrency 1 only; a throughput regression '
                                 'under load was not checked (add 8 to the concurrency list).')
            return
        self.levels.append(HIGH_CONCURRENCY)
        self.base_tput8 = metric('baseline', self.base_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        self.cand_tput8 = metric('candidate', self.cand_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        self.change8 = _ratio_change('concurrency-8 throughput_tok_s', self.cand_tput8, self.base_tput8)
        self.measurements['c8'] = {'baseline': {'throughput_tok_s': self.base_tput8},
                                   'candidate': {'throughput_tok_s': self.cand_tput8}}
        self.point_ratios[('throughput', 8)] = self.cand_tput8 / self.base_tput8

    def measure_ttft(self):
        """TTFT p50 at each level (reported, never credited), with a warning when it rose at concurrency 1 and
        max_ttft_increase is off."""
        self.ttft = ttft_changes(self.base_runs, self.cand_runs, self.levels,
                                 required=self.opts['max_ttft_increase'] is not None)
        for level, (base_ttft, cand_ttft, _change) in self.ttft.items():
            self.measurements['c%d' % level]['baseline']['ttft_ms_p50'] = base_ttft
            self.measurements['c%d' % level]['candidate']['ttft_ms_p50'] = cand_ttft
        self.ttft_c1 = self.ttft.get(LOW_CONCURRENCY)
        if self.ttft_c1 and self.ttft_c1[2] > TTFT_WARN_INCREASE and self.opts['max_ttft_increase'] is None:
            self.warnings.append('TTFT p50 at concurrency 1 rose %s (%.1f -> %.1f ms): speculation is not credited '
                                 'for TTFT and the verdict does not count it; set max_ttft_increase to revert such a '
                                 'change.' % (pct(self.ttft_c1[2]), self.ttft_c1[0], self.ttft_c1[1]))

    def read_acceptance(self):
        """The candidate's acceptance rate at concurrency 1, with warnings on missing or misplaced counters."""
        self.acceptance = _acceptance(self.cand_run1)
        if self.acceptance is None:
            self.warnings.append('The candidate\'s concurrency-1 run has no speculative-decoding counters (acceptance '
                                 'rate unknown): check that --speculative-config is really active.')
        if isinstance(self.base_run1.get('spec_decode'), dict):
            self.warnings.append('The baseline run shows speculative-decoding counters: the baseline should be '
                                 'measured without --speculative-config.')

    def estimate_intervals(self):
        """The bootstrap intervals of the ratios (_intervals), widened by the declared phase shift."""
        opts = self.opts
        self.ratio_iv, self.notes, self.resamples, self.seed = _intervals(
            self.base_runs, self.cand_runs, self.levels, self.point_ratios, opts, self.warnings)
        self.shifts = dict((level, opts['phase_shift'][key]) for key, level in PHASE_SHIFT_LEVELS.items())
        for key in list(self.ratio_iv):
            self.ratio_iv[key] = with_phase_shift(self.ratio_iv[key], self.point_ratios[key], self.shifts[key[1]],
                                                  opts['confidence'][_level_key(key[1])])
        if any(self.shifts[level] and interval is not None for (_kind, level), interval in self.ratio_iv.items()):
            self.notes.append('The intervals include a shift of the whole host between the baseline and candidate '
                              'phases (phase_shift: %s, the standard deviation of an A/A comparison beyond the '
                              'request noise).' % ', '.join('%s at concurrency %d' % (pct(self.shifts[level]), level)
                                                            for level in self.levels if self.shifts[level]))

    # --- the criteria and the decision ----------------------------------------------------------

    def classify_c1(self):
        """throughput_gain_c1, tpot_reduction_c1 and minimum_gain_c1: met / not_met / undetermined."""
        opts = self.opts
        gain_iv = self.ratio_iv.get(('throughput', 1))
        self.gain_iv = None if gain_iv is None else (gain_iv[0] - 1.0, gain_iv[1] - 1.0)
        tpot_iv = self.ratio_iv.get(('tpot', 1))
        self.reduction_iv = None if tpot_iv is None else (1.0 - tpot_iv[1], 1.0 - tpot_iv[0])
        self.criteria = {}
        for name, point, interval, threshold, ratio, threshold_ratio in (
                ('throughput_gain_c1', self.gain, self.gain_iv, opts['min_throughput_gain'],
                 self.point_ratios[('throughput', 1)], 1.0 + opts['min_throughput_gain']),
                ('tpot_reduction_c1', self.reduction, self.reduction_iv, opts['min_tpot_reduction'],
                 self.point_ratios[('tpot', 1)], 1.0 - opts['min_tpot_reduction']),
                ('minimum_gain_c1', self.gain, self.gain_iv, opts['disable_below_gain'],
                 self.point_ratios[('throughput', 1)], 1.0 + opts['disable_below_gain'])):
            status, point_status = classify(name, point, interval, threshold)
            self.criteria[name] = _criterion(point, interval, threshold, status, point_status,
                                             'point_estimate' if interval is None else 'interval',
                                             interval is not None
                                             and shift_bound(ratio, threshold_ratio, self.shifts[1],
                                                             self.shift_confidence['c1']))

    def classify_c8(self):
        """regression_c8 (when there is a run at concurrency 8): non-inferiority on the interval, else the point."""
        self.change8_iv = None
        if self.change8 is None:
            return
        change8_iv = self.ratio_iv.get(('throughput', 8))
        self.change8_iv = None if change8_iv is None else (change8_iv[0] - 1.0, change8_iv[1] - 1.0)
        limit = -self.opts['c8_tolerance'] if self.opts['c8_tolerance'] else 0.0
        status, point_status = classify('regression_c8', self.change8, self.change8_iv, limit)
        if self.change8_iv is None:
            self.criteria['regression_c8'] = _criterion(self.change8, self.change8_iv, limit, point_status,
                                                        point_status, 'point_estimate')
            return
        # Non-inferiority: a measured loss beyond the tolerance is a regression; no regression only when the
        # interval's lower bound rules out a loss larger than the margin (never a smaller margin than the
        # tolerance); else open.
        margin = -noninferiority_margin(self.opts)
        if point_status == 'met':
            status = 'met'
        elif self.change8_iv[0] >= margin - EPSILON:
            status = 'not_met'
        else:
            status = 'undetermined'
        self.criteria['regression_c8'] = _criterion(
            self.change8, self.change8_iv, margin, status, point_status, 'interval',
            status == 'undetermined' and shift_bound(self.cand_tput8 / self.base_tput8, 1.0 + margin,
                                                     self.shifts[HIGH_CONCURRENCY], self.shift_confidence['c8']))

    def decide_verdict(self):
        """The verdict from the criteria (decide()), then the max_ttft_increase rule, which can only revert."""
        opts = self.opts
        self.verdict, self.final, self.open_names, self.point_verdict = decide(self.criteria,
                                                                               opts['decide_undetermined'])
        self.ttft_rule = None
        if opts['max_ttft_increase'] is not None:
            self.ttft_rule = 'not_met' if self.ttft_c1[2] > opts['max_ttft_increase'] + EPSILON else 'met'
        self.before_ttft = self.verdict
        if self.ttft_rule == 'not_met':
            self.verdict = 'reject'
        self.determined = not self.open_names
        all_intervals = all(entry['basis'] == 'interval' for entry in self.criteria.values())
        self.on_intervals = (self.determined or self.verdict == 'undetermined') and all_intervals

    # --- the reasons ----------------------------------------------------------------------------

    def explain_measurements(self):
        """What was measured: concurrency 1 and 8 with their intervals, TTFT, and the notes on the intervals."""
        text1, text8 = self.level_texts['c1'], self.level_texts['c8']
        gain_text = '; %s' % _interval_text(self.gain_iv, level=text1) if self.gain_iv else ''
        # The TPOT interval follows the sentence's direction: a reduction when TPOT fell, a rise when it rose.
        reduction_text = ''
        if self.reduction_iv:
            shown = self.reduction_iv if self.reduction >= 0 else (-self.reduction_iv[1], -self.reduction_iv[0])
            reduction_text = '; %s' % _interval_text(shown, False, text1)
        # "fell -28 %" for a TPOT that rose reads wrong: say which way it went.
        self.reasons.append('At concurrency 1, throughput_tok_s changed %+.1f %% (%.2f -> %.2f%s) and tpot_ms_p50 %s '
                            '%s (%.2f -> %.2f ms%s).'
                            % (self.gain * 100, self.base_tput1, self.cand_tput1, gain_text,
                               'fell' if self.reduction >= 0 else 'rose', pct(abs(self.reduction)), self.base_tpot1,
                               self.cand_tpot1, reduction_text))
        if self.change8 is not None:
            self.reasons.append('At concurrency 8, throughput_tok_s changed %+.1f %% (%stolerance: -%s).'
                                % (self.change8 * 100,
                                   '%s; ' % _interval_text(self.change8_iv, level=text8) if self.change8_iv else '',
                                   pct(self.opts['c8_tolerance'])))
        if self.ttft:
            max_increase = self.opts['max_ttft_increase']
            self.reasons.append('TTFT p50 changed %s: reported, not credited to speculation (it shortens decoding, '
                                'not the prefill)%s.'
                                % (_ttft_text(self.ttft), '' if max_increase is None else
                                   '; max_ttft_increase %s at concurrency 1' % pct(max_increase)))
        self.reasons.extend(self.notes)

    def explain_power(self):
        """The power the measured requests give each rule (_power), and the sentence when it is low."""
        opts = self.opts
        low1 = self.ratio_iv.get(('throughput', LOW_CONCURRENCY))
        low8 = self.ratio_iv.get(('throughput', HIGH_CONCURRENCY))
        self.power = _power.of_verdict(self.point_ratios[('throughput', LOW_CONCURRENCY)],
                                       low1[0] if low1 else None,
                                       self.point_ratios.get(('throughput', HIGH_CONCURRENCY)),
                                       low8[0] if low8 else None,
                                       opts['confidence'], opts, noninferiority_margin(opts))
        power_text = _power.sentence(self.power, opts['min_throughput_gain'], noninferiority_margin(opts))
        if power_text:
            self.reasons.append(power_text)

    def explain_c8_interval(self):
        """What the concurrency-8 interval shows against c8_margin (non-inferiority), when it decided."""
        regression = self.criteria.get('regression_c8')
        if not regression or regression['basis'] != 'interval':
            return
        text8 = self.level_texts['c8']
        if regression['status'] == 'undetermined':
            self.reasons.append('At concurrency 8 the %s interval of the change (%s to %s) does not rule out a loss '
                                'larger than %s (c8_margin): not shown to be no regression, so not kept '
                                '(non-inferiority; more measured requests at concurrency 8 narrow the '
                                'interval).' % (text8, _signed(self.change8_iv[0]), _signed(self.change8_iv[1]),
                                                pct(-regression['threshold'])))
        elif regression['status'] == 'not_met':
            self.reasons.append('At concurrency 8 the %s interval rules out a loss larger than %s (c8_margin).'
                                % (text8, pct(-regression['threshold'])))

    def explain_open_criteria(self):
        """Each criterion the intervals leave open, and how the verdict was reached without it."""
        for name in self.open_names:
            words, signed = CRITERION_WORDS[name]
            entry = self.criteria[name]
            fmt = _signed if signed else pct
            self.reasons.append(
                'Undetermined: the %s interval of %s (%s to %s) includes the %s threshold (point estimate %s)%s.'
                % (self.level_texts['c8' if name == 'regression_c8' else 'c1'], words, fmt(entry['interval'][0]),
                   fmt(entry['interval'][1]), pct(entry['threshold']), fmt(entry['point']),
                   '; the host\'s phase shift alone covers the threshold, so more requests of the same two '
                   'phases would not settle it' if entry['shift_bound'] else ''))
        if self.open_names and self.verdict != 'undetermined':
            self.reasons.append(
                'Decided on the point estimates, as decide_undetermined=point_estimate asks; %s.'
                % ('more measured requests (num_prompts) would narrow the intervals'
                   if not all(self.criteria[name]['shift_bound'] for name in self.open_names) else
                   'only a new pair of phases could narrow the intervals (decide_undetermined=undetermined '
                   'reverts such a change instead of keeping it on its point estimates)'))

    def explain_speedup(self):
        """The speed-up explained from the acceptance rate and the TPOT ratio (_speedup)."""
        self.explanation = _explanation(self.opts, self.cand_run1, self.acceptance,
                                        self.cand_tpot1 / self.base_tpot1, self.warnings)
        if self.acceptance is not None:
            self.reasons.append(self.explanation['text'])

    def explain_undetermined_and_ttft(self):
        """Why an undetermined verdict is not kept, and why a TTFT rise reverted the change."""
        if self.verdict == 'undetermined':
            self.reasons.append('Verdict undetermined, as decide_undetermined=undetermined asks: measure more requests '
                                'and decide again; speculation is not kept meanwhile (on the point estimates alone the '
                                'verdict would be %s).' % self.point_verdict)
        if self.ttft_rule == 'not_met':
            self.reasons.append('Reverted: TTFT p50 at concurrency 1 rose %s (%.1f -> %.1f ms), more than '
                                'max_ttft_increase (%s)%s.'
                                % (pct(self.ttft_c1[2]), self.ttft_c1[0], self.ttft_c1[1],
                                   pct(self.opts['max_ttft_increase']),
                                   '' if self.before_ttft == 'reject' else
                                   '; on throughput and TPOT alone the verdict would be %s' % self.before_ttft))

    def revert_ignored_drafting(self):
        """A candidate that kept drafting where its schedule sets K = 0 (drafting_off_above) is not kept."""
        self.drafting = drafting_above(self.cand_runs, self.opts['drafting_off_above'])
        if not (self.drafting and self.drafting['ignored']):
            return
        kept = keep_of(self.verdict, self.opts['keep_marginal'])
        levels_text = ', '.join('concurrency %s: %s drafts, %s of the tokens' % (conc, level['drafts'],
                                                                                 pct(level['share']))
                                for conc, level in sorted(self.drafting['levels'].items()) if level['ignored'])
        self.reasons.append('The candidate kept drafting above %s requests at a time although its schedule sets K = 0 '
                            'there (%s, from the server\'s own counters): this vLLM ignores K = 0 in a batch-size '
                            'range (Model Runner v2, vllm#51510), so the concurrency-8 result is not credited to '
                            'batch-size-aware speculation%s.'
                            % (self.opts['drafting_off_above'], levels_text, '; not kept' if kept else ''))
        if kept:
            self.verdict = 'reject'

    def hold_a_keep_on_live_traffic(self):
        """Other clients used the server during a run (``metrics_polluted``: tokens in its counters that the benchmark
        did not send): the measurement is not the change's alone, so a keep is never made on it; the verdict is
        ``undetermined`` (not kept), with what it would have been. A revert stands (keeping the baseline is safe)."""
        self.verdict_without_live_traffic = None
        if not self.live_traffic or not keep_of(self.verdict, self.opts['keep_marginal']):
            return
        self.verdict_without_live_traffic = self.verdict
        self.verdict = 'undetermined'
        self.reasons.append('Not kept: other clients used the server during the benchmark (%s: tokens in its counters '
                            'that the benchmark did not send), so the measurement is not this change\'s alone; on the '
                            'measurement alone the verdict would be %s. Take the host out of its load balancer (or run '
                            'when it is idle): the next run verifies it again.'
                            % (', '.join(self.live_traffic), self.verdict_without_live_traffic))

    def explain_outcome(self):
        """The sentence that names the verdict: the regression or too small a gain (reject), accept, marginal."""
        opts = self.opts
        if self.verdict == 'reject' and self.final.get('regression_c8') == 'met':
            self.reasons.append(self._regression_sentence())
        if self.verdict == 'reject' and self.final['minimum_gain_c1'] == 'not_met':
            shown = (', %s' % _interval_text(self.gain_iv, level=self.level_texts['c1'])
                     if self.criteria['minimum_gain_c1']['status'] == 'not_met' and self.gain_iv else
                     ', point estimate')
            self.reasons.append('The throughput gain at concurrency 1 is below %s (%s): a bad draft path is worse than '
                                'no speculation; remove --speculative-config.'
                                % (pct(opts['disable_below_gain']), _signed(self.gain) + shown))
        if self.verdict == 'accept':
            self.reasons.append('Accepted: >= %s more throughput and >= %s lower TPOT at concurrency 1%s (%s).'
                                % (pct(opts['min_throughput_gain']), pct(opts['min_tpot_reduction']),
                                   ', and no regression at concurrency 8' if self.change8 is not None else '',
                                   self._basis_text()))
        if self.verdict == 'marginal':
            missing = []
            for name, words, option in (('throughput_gain_c1', 'throughput gain', 'min_throughput_gain'),
                                        ('tpot_reduction_c1', 'TPOT reduction', 'min_tpot_reduction')):
                if self.final[name] == 'not_met':
                    missing.append('%s below %s' % (words, pct(opts[option])))
                elif self.final[name] == 'undetermined':
                    missing.append('%s not shown to reach %s' % (words, pct(opts[option])))
            self.reasons.append('Marginal (%s, but at least %s gain; %s): %s.'
                                % (' and '.join(missing), pct(opts['disable_below_gain']), self._basis_text(),
                                   'kept because keep_marginal is true' if opts['keep_marginal'] else
                                   'reverted because keep_marginal is false'))

    def _regression_sentence(self):
        """Why a concurrency-8 regression rejects: measured beyond the tolerance, or an open one settled so."""
        regression, text8 = self.criteria['regression_c8'], self.level_texts['c8']
        if regression['point_status'] == 'met' or regression['basis'] != 'interval':
            shown = self.change8_iv is not None and regression['basis'] == 'interval' \
                and self.change8_iv[1] < -self.opts['c8_tolerance']
            where = (', %s, entirely below -%s' % (_interval_text(self.change8_iv, level=text8),
                                                   pct(self.opts['c8_tolerance'])) if shown
                     else ', point estimate')
            return ('Throughput regresses at concurrency 8 beyond the tolerance (%s%s): remove '
                    '--speculative-config.' % (_signed(self.change8), where))
        return ('Reverted: at concurrency 8 a loss larger than %s is not ruled out (%s), and '
                'decide_undetermined=point_estimate settles an open regression as a regression: remove '
                '--speculative-config, or measure more requests at concurrency 8.'
                % (pct(-regression['threshold']), _interval_text(self.change8_iv, level=text8)))

    def _basis_text(self):
        """What the verdict rests on: the intervals (at which confidence) or the point estimates."""
        if not self.on_intervals:
            return 'on the point estimates'
        text1, text8 = self.level_texts['c1'], self.level_texts['c8']
        if text1 == text8 or self.change8 is None:
            return 'shown by the %s intervals' % text1
        return 'shown by the intervals (%s at concurrency 1, %s at concurrency 8)' % (text1, text8)

    # --- the result -----------------------------------------------------------------------------

    def result(self):
        """verdict()'s result dictionary."""
        opts, ttft = self.opts, self.ttft
        keep = keep_of(self.verdict, opts['keep_marginal'])
        intervals = any(self.ratio_iv.values())
        deltas = {
            'throughput_gain_c1': round(self.gain, 4),
            'tpot_reduction_c1': round(self.reduction, 4),
            'throughput_change_c8': round(self.change8, 4) if self.change8 is not None else None,
            'acceptance_rate': self.acceptance,
            'ttft_change_c1': round(ttft[LOW_CONCURRENCY][2], 4) if LOW_CONCURRENCY in ttft else None,
            'ttft_change_c8': round(ttft[HIGH_CONCURRENCY][2], 4) if HIGH_CONCURRENCY in ttft else None,
        }
        return {
            'verdict': self.verdict,
            'keep': keep,
            'summary': summary_line(self.criteria, self.verdict, keep, opts['confidence']),
            'reasons': self.reasons,
            'warnings': self.warnings,
            'deltas': deltas,
            'measurements': self.measurements,
            'recommendation': (_LIVE_TRAFFIC_ADVICE if self.verdict_without_live_traffic
                               else _recommend(self.verdict, keep, self.acceptance, opts)),
            'criteria': self.criteria,
            'determined': self.determined,
            'undetermined': self.open_names,
            'decision_basis': 'interval' if self.on_intervals else 'point_estimate',
            'point_estimate_verdict': self.point_verdict,
            'bootstrap': {'method': 'percentile bootstrap over requests; whole waves above concurrency 1',
                          'confidence': dict(opts['confidence']),
                          'resamples': self.resamples if intervals else None,
                          'seed': self.seed[:16] if intervals else None,
                          'phase_shift': dict(opts['phase_shift'])},
            'explanation': self.explanation,
            'ttft': {'max_increase': opts['max_ttft_increase'], 'status': self.ttft_rule,
                     'verdict_without_it': self.before_ttft if self.ttft_rule == 'not_met' else None},
            'drafting': self.drafting,
            'live_traffic': {'runs': self.live_traffic, 'verdict_without_it': self.verdict_without_live_traffic},
            'power': self.power,
            # not after a TTFT rise beyond max_ttft_increase: speculating at small batch sizes keeps concurrency 1 as it is
            'c8_regression_only': c8_regression_only(self.criteria, self.final) and self.ttft_rule != 'not_met',
        }


# K = 0 above a batch size is honoured when (almost) no token is generated by a drafting step at a concurrency above
# it: with every request of a run in flight together, only its first and last steps see a smaller batch. A vLLM that
# ignores it (Model Runner v2, vllm#51510) drafts for nearly every token. Half the tokens separates the two.
DRAFTING_IGNORED_SHARE = 0.5


def drafting_above(cand_runs, off_above):
    """How much the candidate drafted at each concurrency above ``off_above`` (None when there is no such schedule).

    The share of output tokens that came out of drafting steps is (drafts + accepted tokens) / output tokens: each
    drafting step of a request yields its accepted tokens plus the target's own. Returns {off_above, ignored,
    levels: {concurrency: {drafts, share, ignored}}}; a run without counters drafted nothing.
    """
    if off_above is None:
        return None
    levels = {}
    for conc, run in sorted(cand_runs.items()):
        if conc <= off_above:
            continue
        spec = run.get('spec_decode') if isinstance(run.get('spec_decode'), dict) else {}
        drafts = spec.get('drafts') or 0
        accepted = spec.get('accepted_tokens') or 0
        total = run.get('total_output_tokens')
        usable = _is_number(total) and not isinstance(total, bool) and total > 0 and _is_number(drafts) \
            and _is_number(accepted)
        share = round(min(1.0, (drafts + accepted) / float(total)), 4) if usable else None
        levels[conc] = {'drafts': drafts, 'share': share,
                        'ignored': share is not None and share > DRAFTING_IGNORED_SHARE}
    return {'off_above': off_above, 'ignored': any(level['ignored'] for level in levels.values()), 'levels': levels}


def _explanation(opts, run, acceptance, tpot_ratio, warnings):
    """The explanation dict; K from the option, else from the candidate's counters."""
    spec = run.get('spec_decode')
    counted = draft_tokens_per_step(spec)
    if counted is not None and not 1 <= counted <= MAX_NUM_SPECULATIVE_TOKENS:
        counted = None
    k = opts['num_speculative_tokens']
    if k is not None and counted is not None and k != counted:
        warnings.append('num_speculative_tokens is %d but the candidate\'s counters show %d draft tokens per step: the '
                        'explanation uses %d; check the --speculative-config that was measured.' % (k, counted, k))
    if k is None:
        k = counted
    return explain(acceptance, k, tpot_ratio, measured_tokens_per_step(spec) if acceptance is not None else None)


def _acceptance(run):
    spec = run.get('spec_decode')
    if not isinstance(spec, dict):
        return None
    value = spec.get('acceptance_rate')
    if value is None:
        return None
    if not _is_number(value) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise SpeculativeInputError('candidate spec_decode.acceptance_rate at concurrency 1 must be between 0 and 1 or '
                                    'null, got %r.' % (value,))
    return float(value)


_LIVE_TRAFFIC_ADVICE = {
    'action': 'verify_again_without_traffic',
    'message': 'Other clients used the server during the benchmark: take the host out of its load balancer (or run '
               'when it is idle) and verify again; speculation is not kept meanwhile.'}


def _recommend(result, keep, acceptance, opts):
    high, low = opts['high_acceptance_rate'], opts['low_acceptance_rate']
    acc_text = 'acceptance rate unknown' if acceptance is None else 'acceptance rate %.2f' % acceptance
    if result == 'undetermined':
        return {'action': 'measure_more',
                'message': 'The intervals do not settle the verdict: benchmark both services again with more '
                           'requests (num_prompts) and decide again; speculation is not kept meanwhile (%s).' % acc_text}
    if result == 'accept':
        if acceptance is not None and acceptance > high:
            return {'action': 'raise_num_speculative_tokens',
                    'message': 'Keep speculation; the %s is > %s, so try num_speculative_tokens + 1 (pass '
                               'measured_acceptance_rate to speculative_plan) and benchmark again.' % (acc_text, high)}
        return {'action': 'keep', 'message': 'Keep speculation (%s).' % acc_text}
    if acceptance is not None and acceptance < low:
        return {'action': 'lower_num_speculative_tokens_or_smaller_draft',
                'message': '%s speculation: the %s is < %s; lower num_speculative_tokens or use a smaller (or better '
                           'matched) draft before trying again.' % ('Keep' if keep else 'Remove', acc_text, low)}
    if keep:
        return {'action': 'keep', 'message': 'Keep speculation (marginal gain, keep_marginal is true; %s).' % acc_text}
    return {'action': 'remove_speculative_config',
            'message': 'Remove --speculative-config and keep the baseline (%s).' % acc_text}
