# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative_verdict decision (private to this collection).

``verdict(baseline, candidate, ...)``: does the measured benchmark justify keeping speculation?
Accept at >= 30 % more throughput and >= 20 % lower TPOT at concurrency 1; reject below 10 %
or on a regression at concurrency 8; marginal in between. Invalid or failed benchmarks raise
``SpeculativeInputError``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import sys

from ansible_collections.jetson_llm.vllm.plugins.module_utils._spec_checks import (
    EPSILON, SHOW_LIMIT, SpeculativeInputError, _is_int, _is_number, check_bool, check_float, show)

VERDICT_DEFAULTS = {
    'min_throughput_gain': 0.30,
    'min_tpot_reduction': 0.20,
    'disable_below_gain': 0.10,
    'c8_tolerance': 0.0,
    'high_acceptance_rate': 0.6,
    'low_acceptance_rate': 0.4,
}


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


def check_workloads_match(baseline, candidate):
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
    opts['c8_tolerance'] = check_float('c8_tolerance', opts['c8_tolerance'], minimum=0.0, maximum=1.0)
    for key in ('high_acceptance_rate', 'low_acceptance_rate'):
        opts[key] = check_float(key, opts[key], minimum=0.0, maximum=1.0)
    if opts['disable_below_gain'] > opts['min_throughput_gain']:
        raise SpeculativeInputError('disable_below_gain (%s) must not exceed min_throughput_gain (%s).'
                                    % (opts['disable_below_gain'], opts['min_throughput_gain']))
    if opts['low_acceptance_rate'] > opts['high_acceptance_rate']:
        raise SpeculativeInputError('low_acceptance_rate (%s) must not exceed high_acceptance_rate (%s).'
                                    % (opts['low_acceptance_rate'], opts['high_acceptance_rate']))
    return opts


def _pct(value):
    return '%.1f %%' % (value * 100.0)


def verdict(baseline, candidate, min_throughput_gain=VERDICT_DEFAULTS['min_throughput_gain'],
            min_tpot_reduction=VERDICT_DEFAULTS['min_tpot_reduction'],
            disable_below_gain=VERDICT_DEFAULTS['disable_below_gain'],
            c8_tolerance=VERDICT_DEFAULTS['c8_tolerance'], keep_marginal=False,
            high_acceptance_rate=VERDICT_DEFAULTS['high_acceptance_rate'],
            low_acceptance_rate=VERDICT_DEFAULTS['low_acceptance_rate']):
    """Compare a speculative candidate benchmark with its baseline. See the module documentation.

    Returns a dict: verdict, keep, reasons, warnings, deltas, measurements, recommendation.
    Raises SpeculativeInputError on invalid input (mismatched workloads, failed runs...).
    """
    opts = _check_verdict_options({
        'min_throughput_gain': min_throughput_gain, 'min_tpot_reduction': min_tpot_reduction,
        'disable_below_gain': disable_below_gain, 'c8_tolerance': c8_tolerance,
        'high_acceptance_rate': high_acceptance_rate, 'low_acceptance_rate': low_acceptance_rate,
    })
    check_bool('keep_marginal', keep_marginal)
    base = unwrap_benchmark('baseline', baseline)
    cand = unwrap_benchmark('candidate', candidate)
    check_workloads_match(base, cand)
    base_runs = runs_by_concurrency('baseline', base)
    cand_runs = runs_by_concurrency('candidate', cand)
    if sorted(base_runs) != sorted(cand_runs):
        raise SpeculativeInputError('The benchmarks ran different concurrency lists: baseline %s, candidate %s.'
                                    % (sorted(base_runs), sorted(cand_runs)))
    if LOW_CONCURRENCY not in base_runs:
        raise SpeculativeInputError('Neither benchmark has a run at concurrency 1 (runs at %s): the verdict is decided '
                                    'at concurrency 1; add 1 to the concurrency list.' % sorted(base_runs))

    warnings = []
    for label, runs in (('baseline', base_runs), ('candidate', cand_runs)):
        for conc, run in sorted(runs.items()):
            if run.get('metrics_polluted') is True:
                warnings.append('The %s run at concurrency %s has polluted metrics (other traffic on the server): '
                                'treat the numbers with care.' % (label, conc))
    for key in ('model', 'variant', 'l4t', 'power_mode'):
        if base.get(key) != cand.get(key):
            warnings.append('The baseline and candidate differ in %s (%r vs %r): make sure they measure the same '
                            'service on the same device.' % (key, base.get(key), cand.get(key)))

    b1, c1 = base_runs[LOW_CONCURRENCY], cand_runs[LOW_CONCURRENCY]
    b_tput = metric('baseline', b1, 'throughput_tok_s', 1)
    c_tput = metric('candidate', c1, 'throughput_tok_s', 1)
    b_tpot = metric('baseline', b1, 'tpot_ms_p50', 1)
    c_tpot = metric('candidate', c1, 'tpot_ms_p50', 1)
    gain = _ratio_change('throughput_tok_s', c_tput, b_tput)
    reduction = -_ratio_change('tpot_ms_p50', c_tpot, b_tpot)
    measurements = {'c1': {'baseline': {'throughput_tok_s': b_tput, 'tpot_ms_p50': b_tpot},
                           'candidate': {'throughput_tok_s': c_tput, 'tpot_ms_p50': c_tpot}}, 'c8': None}

    change8 = None
    if HIGH_CONCURRENCY in base_runs:
        b8 = metric('baseline', base_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        c8 = metric('candidate', cand_runs[HIGH_CONCURRENCY], 'throughput_tok_s', 8)
        change8 = _ratio_change('concurrency-8 throughput_tok_s', c8, b8)
        measurements['c8'] = {'baseline': {'throughput_tok_s': b8}, 'candidate': {'throughput_tok_s': c8}}
    else:
        warnings.append('No run at concurrency 8: decided on concurrency 1 only; a throughput regression under load '
                        'was not checked (add 8 to the concurrency list).')

    acceptance = _acceptance(c1)
    if acceptance is None:
        warnings.append('The candidate\'s concurrency-1 run has no speculative-decoding counters (acceptance rate '
                        'unknown): check that --speculative-config is really active.')
    if isinstance(b1.get('spec_decode'), dict):
        warnings.append('The baseline run shows speculative-decoding counters: the baseline should be measured without '
                        '--speculative-config.')

    reasons = []
    regress8 = change8 is not None and change8 < -opts['c8_tolerance'] - EPSILON
    meets_gain = gain >= opts['min_throughput_gain'] - EPSILON
    meets_tpot = reduction >= opts['min_tpot_reduction'] - EPSILON
    too_small = gain < opts['disable_below_gain'] - EPSILON
    c1_text = ('At concurrency 1, throughput_tok_s changed %+.1f %% (%.2f -> %.2f) and tpot_ms_p50 fell %s (%.2f -> '
               '%.2f ms).' % (gain * 100, b_tput, c_tput, _pct(reduction), b_tpot, c_tpot))
    reasons.append(c1_text)
    if change8 is not None:
        reasons.append('At concurrency 8, throughput_tok_s changed %+.1f %% (tolerance: -%s).'
                       % (change8 * 100, _pct(opts['c8_tolerance'])))
    if regress8:
        result = 'reject'
        reasons.append('Throughput regresses at concurrency 8 beyond the tolerance: remove --speculative-config.')
    if too_small:
        result = 'reject'
        reasons.append('The throughput gain at concurrency 1 is below %s: a bad draft path is worse than no '
                       'speculation; remove --speculative-config.' % _pct(opts['disable_below_gain']))
    if not regress8 and not too_small:
        if meets_gain and meets_tpot:
            result = 'accept'
            reasons.append('Accepted: >= %s more throughput and >= %s lower TPOT at concurrency 1%s.'
                           % (_pct(opts['min_throughput_gain']), _pct(opts['min_tpot_reduction']),
                              ', and no regression at concurrency 8' if change8 is not None else ''))
        else:
            result = 'marginal'
            missing = []
            if not meets_gain:
                missing.append('throughput gain below %s' % _pct(opts['min_throughput_gain']))
            if not meets_tpot:
                missing.append('TPOT reduction below %s' % _pct(opts['min_tpot_reduction']))
            reasons.append('Marginal (%s, but at least %s gain): %s.'
                           % (' and '.join(missing), _pct(opts['disable_below_gain']),
                              'kept because keep_marginal is true' if keep_marginal else
                              'reverted because keep_marginal is false'))
    keep = result == 'accept' or (result == 'marginal' and keep_marginal)
    deltas = {
        'throughput_gain_c1': round(gain, 4),
        'tpot_reduction_c1': round(reduction, 4),
        'throughput_change_c8': round(change8, 4) if change8 is not None else None,
        'acceptance_rate': acceptance,
    }
    return {
        'verdict': result,
        'keep': keep,
        'reasons': reasons,
        'warnings': warnings,
        'deltas': deltas,
        'measurements': measurements,
        'recommendation': _recommend(result, keep, acceptance, opts),
    }


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


def _recommend(result, keep, acceptance, opts):
    high, low = opts['high_acceptance_rate'], opts['low_acceptance_rate']
    acc_text = 'acceptance rate unknown' if acceptance is None else 'acceptance rate %.2f' % acceptance
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
