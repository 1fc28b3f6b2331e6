# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""K tuning after a kept change (private, standard library only): the speculative_decoding role's state machine.

More draft tokens per step only pay when the draft is accepted often (the specification: an acceptance rate above
0.6, the role's ``jetson_spec_tune_min_acceptance``). After a kept change the role tries K + 1 over the best K so
far, started, benchmarked and judged like the first change (same workload, same verdict, same baseline):

* ``start()``: the tuning state from the kept configuration and its candidate benchmark's runs;
* ``next_step()``: whether K + 1 can pay: not when the best K's acceptance rate at concurrency 1 is unknown or at or
  below the threshold, or K + 1 is above the most allowed; then tuning stops with that reason;
* ``record_step()``: the step's result; it is kept when its verdict keeps it **and** its concurrency-1 throughput
  beats the best so far; the first step that is not better (or does not start) ends tuning, and so does the last
  allowed step (``max_steps``);
* ``result()``: the run's outcome with the best verified configuration's verdict, every step and why tuning stopped.

The role (tasks/tune.yml, tune_step.yml) starts, benchmarks, commits or puts back what these functions decide;
tests/benchmarks/tuning.py applies the same functions to its full-size measurements.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math


def _c1(runs):
    """The benchmark run at concurrency 1 (an empty dict when there is none)."""
    for run in runs or []:
        if isinstance(run, dict) and run.get('concurrency') == 1:
            return run
    return {}


def _acceptance(run):
    return (run.get('spec_decode') or {}).get('acceptance_rate')


def _number(value, what):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError('%s is %r, not a number' % (what, value))
    if not math.isfinite(number):
        raise ValueError('%s is %r, not a finite number' % (what, value))
    return number


def start(speculative_config, gpu_memory_utilization, runs):
    """The tuning state from the kept configuration (its ``num_speculative_tokens`` is the first best K) and its
    candidate benchmark's ``runs``."""
    if not isinstance(speculative_config, dict) or 'num_speculative_tokens' not in speculative_config:
        raise ValueError('the kept speculative_config has no num_speculative_tokens: %r' % (speculative_config,))
    k = int(speculative_config['num_speculative_tokens'])
    c1 = _c1(runs)
    return {'state': 'go', 'stopped': None, 'tried': [], 'from_k': k,
            'best': {'k': k, 'speculative_config': speculative_config,
                     'gpu_memory_utilization': _number(gpu_memory_utilization, 'gpu_memory_utilization'),
                     'throughput_c1': float(c1.get('throughput_tok_s') or 0),
                     'acceptance_c1': _acceptance(c1)}}


def next_step(tune, min_acceptance, max_k):
    """What the next step does: ``go`` (try ``k`` = best K + 1 with ``speculative_config`` and
    ``gpu_memory_utilization``) or not, with ``stop`` (why it cannot pay) and ``tune`` (stopped with that reason when
    it was still going)."""
    best = tune['best']
    k = int(best['k']) + 1
    step = {'go': False, 'k': k, 'stop': None, 'tune': tune,
            'speculative_config': dict(best['speculative_config'], num_speculative_tokens=k),
            'gpu_memory_utilization': best['gpu_memory_utilization']}
    if tune['state'] != 'go':
        return step
    acceptance = best['acceptance_c1']
    if acceptance is None:
        stop = 'acceptance rate unknown at concurrency 1 (no speculative-decoding counters)'
    elif float(acceptance) <= _number(min_acceptance, 'min_acceptance'):
        stop = ('acceptance rate %s at num_speculative_tokens %s is not above %s: more draft tokens would mostly be '
                'rejected' % (round(float(acceptance), 3), best['k'], min_acceptance))
    elif k > int(max_k):
        stop = 'num_speculative_tokens %s is the most allowed (%s)' % (best['k'], max_k)
    else:
        return dict(step, go=True)
    return dict(step, stop=stop, tune=dict(tune, state='stopped', stopped=stop))


def record_step(tune, step, k, health, judged, benchmark, max_steps):
    """The tuning state after step number ``step`` tried ``k``: ``health`` is vllm_health's result for its start,
    ``judged`` the verdict's (``keep``, ``verdict``; ignored when it did not start), ``benchmark`` its benchmark."""
    best = tune['best']
    healthy = bool(health.get('healthy'))
    c1 = _c1((benchmark or {}).get('runs')) if healthy else {}
    throughput = c1.get('throughput_tok_s')
    better = healthy and bool(judged.get('keep')) and float(throughput or 0) > float(best['throughput_c1'])
    if not healthy:
        said = 'did not start: %s' % health.get('failure')
    else:
        said = 'verdict %s, %s tok/s at concurrency 1 against %s with %s: %s' % (
            judged.get('verdict'), '?' if throughput is None else throughput, best['throughput_c1'], best['k'],
            'kept' if better else 'not better, %s put back' % best['k'])
    entry = {'k': int(k), 'healthy': healthy, 'failure': health.get('failure'),
             'verdict': judged.get('verdict') if healthy else None, 'throughput_c1': throughput,
             'acceptance_c1': _acceptance(c1), 'kept': better,
             'summary': 'Tuning step %s, num_speculative_tokens %s: %s.' % (step, k, said)}
    go_on = better and int(step) < int(max_steps)
    if go_on:
        stopped = None
    elif better:
        stopped = 'reached jetson_spec_tune_max_steps (%s)' % max_steps
    else:
        stopped = 'num_speculative_tokens %s was not better' % k
    if better:
        best = {'k': int(k), 'speculative_config': dict(best['speculative_config'], num_speculative_tokens=int(k)),
                'gpu_memory_utilization': best['gpu_memory_utilization'], 'throughput_c1': float(throughput or 0),
                'acceptance_c1': _acceptance(c1), 'candidate': benchmark or {}, 'verdict': judged}
    return dict(tune, tried=tune['tried'] + [entry], state='go' if go_on else 'stopped', stopped=stopped, best=best)


def result(outcome, tune, max_steps):
    """The run's outcome after tuning: the best verified configuration's verdict (when a step was kept), every step
    and why tuning stopped in the reasons, its K, and the ``tuning`` record (the steps without their sentences)."""
    best = tune['best']
    verdict = best.get('verdict')
    steps = [entry['summary'] for entry in tune['tried']]
    said = 'Tuning kept num_speculative_tokens %s%s: %s.' % (
        best['k'], ' (from %s)' % tune['from_k'] if int(best['k']) != int(tune['from_k']) else '',
        tune['stopped'] or 'done')
    new = dict(outcome)
    if verdict is not None:
        criteria = verdict.get('criteria') or {}
        new.update({
            'reasons': list(verdict.get('reasons') or []) + steps + [said],
            'verdict': verdict.get('verdict', outcome.get('verdict')),
            'verdict_summary': verdict.get('summary', outcome.get('verdict_summary')),
            'intervals': {'c1': (criteria.get('throughput_gain_c1') or {}).get('interval'),
                          'c8': (criteria.get('regression_c8') or {}).get('interval')},
            'deltas': verdict.get('deltas', outcome.get('deltas')),
            'recommendation': verdict.get('recommendation', outcome.get('recommendation'))})
    else:
        new.update({'reasons': list(outcome.get('reasons') or []) + steps + [said],
                    'intervals': outcome.get('intervals')})
    new['num_speculative_tokens'] = int(best['k'])
    new['tuning'] = {'from_k': int(tune['from_k']), 'kept_k': int(best['k']), 'max_steps': int(max_steps),
                     'stopped': tune['stopped'],
                     'tried': [dict((key, value) for key, value in entry.items() if key != 'summary')
                               for entry in tune['tried']]}
    return new
