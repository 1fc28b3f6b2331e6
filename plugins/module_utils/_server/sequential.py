# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sequential measurement of a speculative candidate (private to this collection; vllm_benchmark ``sequential``).

The baseline is measured first, with a fixed number of requests, on the service without speculation; the
service is then restarted with --speculative-config, so the baseline's samples are fixed. The candidate is
measured in rounds: after each round (``round_prompts`` requests at every level still needed) the verdict
(_verdict, standard library only) is computed with its bootstrap intervals, and measuring stops as soon as
no undetermined criterion can change the verdict, or when every level still needed has measured ``max_prompts``
requests (the budget; the verdict then rests on point estimates for the open criteria, and the result says so).

Each round is a look at the intervals, and every look is a chance of a wrong decision: the 5 % error of the fixed
protocol's 95 % intervals is spent over the planned looks (planned_looks: the most rounds a level can take), look k
at the confidence _spending gives it (O'Brien-Fleming-type, union bound), so the chance of any wrong decision over
all the looks stays within 5 %. The candidate benchmark records the look it stopped at and its confidence
(``config.sequential.looks_made`` / ``confidence``), and speculative_verdict judges it at that confidence.

An undetermined throughput change at concurrency 8 (regression_c8: the interval neither shows a loss nor rules
out one beyond c8_margin) keeps concurrency 8 measuring while it could change the decision. A criterion without
an interval (fewer than 5 requests) never stops it.
Measuring also stops when the keep-or-revert decision is settled although the verdict's name is not: with
keep_marginal false, a candidate that can only end marginal or reject is reverted either way. With a
``phase_shift`` (the host's shift between two phases, see _bootstrap) it stops as soon as every open
criterion is shift-bound: its threshold lies within the shift of the measured value, where more requests of
the same two phases cannot settle it (``stopped: shift``; the report's verdict then reads them on the point
estimates, and speculative_verdict with decide_undetermined=undetermined as undetermined).

The HTTP side is a ``runner`` (see run_rounds), so the round logic is tested with known sample streams.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._errors import BenchmarkError
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.bootstrap import MIN_REQUESTS, RESAMPLES_RANGE, min_requests
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import (
    SpeculativeInputError, _is_int, check_bool, check_float, check_int, show)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spending
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V

#: The verdict options a sequential benchmark passes on (the thresholds of the decision it stops on).
VERDICT_KEYS = ('min_throughput_gain', 'min_tpot_reduction', 'disable_below_gain', 'c8_tolerance', 'c8_margin',
                'bootstrap_resamples', 'keep_marginal', 'phase_shift')
DEFAULTS = {'max_prompts': 48, 'keep_marginal': False, 'phase_shift': None}
DEFAULTS.update((key, V.VERDICT_DEFAULTS[key]) for key in VERDICT_KEYS if key in V.VERDICT_DEFAULTS)
KEYS = ('baseline', 'round_prompts', 'max_prompts') + VERDICT_KEYS
#: Which concurrency level measures which criterion.
CRITERION_LEVEL = {'throughput_gain_c1': V.LOW_CONCURRENCY, 'tpot_reduction_c1': V.LOW_CONCURRENCY,
                   'minimum_gain_c1': V.LOW_CONCURRENCY, 'regression_c8': V.HIGH_CONCURRENCY}
#: The baseline's workload settings the candidate must repeat (the prompts are compared too, per level).
BASELINE_FIELDS = ('input_len', 'output_len', 'dataset', 'temperature', 'ignore_eos', 'seed')
MAX_PROMPTS_RANGE = (MIN_REQUESTS, 10000)


def planned_looks(round_prompts, max_prompts):
    """{level: the most rounds (looks at its intervals) the level can take to fill ``max_prompts``}.

    Each level's criteria spend their error budget over that level's looks (_spending): a level measured in fewer
    rounds (it settled, or waited while another level measured) has used fewer looks, never more.
    """
    return dict((level, -(-max_prompts // size)) for level, size in round_prompts.items())


def look_confidence(look, looks):
    """The confidence the intervals of look ``look`` of ``looks`` are computed at (_spending; at most
    V.MAX_CONFIDENCE)."""
    return spending.bounded_confidence(look, looks)


def confidences(looks, looks_made):
    """The verdict's {'c1', 'c8'} confidence after ``looks_made`` {level: rounds measured} (95 % at a level that is
    not measured)."""
    out = {}
    for key, level in (('c1', V.LOW_CONCURRENCY), ('c8', V.HIGH_CONCURRENCY)):
        made = looks_made.get(level, 0)
        out[key] = round(look_confidence(made, looks[level]), 12) if made else V.CONFIDENCE
    return out


def default_round(concurrency):
    """Requests per round at a level: at least 8 and two full waves of ``concurrency`` requests (c=1: 8, c=8: 16)."""
    size = max(8, 2 * concurrency)
    return -(-size // concurrency) * concurrency


def _fail(message):
    raise BenchmarkError(message)


def check_sequential(value, p):
    """Validate the ``sequential`` option against the validated benchmark options ``p``; return a normalised copy.

    Raises BenchmarkError naming the bad value and what is allowed.
    """
    if not isinstance(value, dict):
        _fail('sequential must be a dictionary with baseline (a vllm_benchmark result), round_prompts and max_prompts; '
              'got %s.' % show(value))
    unknown = sorted(k for k in value if k not in KEYS)
    if unknown:
        _fail('sequential has unknown key(s) %s; allowed: %s.' % (', '.join(show(k) for k in unknown), ', '.join(KEYS)))
    opts = dict(DEFAULTS)
    opts.update((k, v) for k, v in value.items() if v is not None)
    if 'baseline' not in opts:
        _fail('sequential.baseline is required: the registered result (or the output_file JSON) of vllm_benchmark '
              'run on the service without speculation, with the same workload.')
    concurrency = list(p['concurrency'])
    if V.LOW_CONCURRENCY not in concurrency:
        _fail('sequential needs concurrency 1 in the concurrency list (the verdict is decided there); got %s.'
              % show(concurrency))
    try:
        opts['max_prompts'] = check_int('sequential.max_prompts', opts['max_prompts'], minimum=MAX_PROMPTS_RANGE[0],
                                        maximum=MAX_PROMPTS_RANGE[1],
                                        allowed='an integer from %d to %d (measured candidate requests per level at most)'
                                                % MAX_PROMPTS_RANGE)
        for key in ('min_throughput_gain', 'disable_below_gain'):
            opts[key] = check_float('sequential.%s' % key, opts[key], minimum=0.0, maximum=10.0)
        opts['min_tpot_reduction'] = check_float('sequential.min_tpot_reduction', opts['min_tpot_reduction'],
                                                 minimum=0.0, maximum=1.0)
        opts['c8_tolerance'] = V.check_c8_loss('sequential.c8_tolerance', opts['c8_tolerance'])
        opts['c8_margin'] = V.check_c8_loss('sequential.c8_margin', opts['c8_margin'])
        if opts['disable_below_gain'] > opts['min_throughput_gain']:
            _fail('sequential.disable_below_gain (%s) must not exceed sequential.min_throughput_gain (%s).'
                  % (opts['disable_below_gain'], opts['min_throughput_gain']))
        check_bool('sequential.keep_marginal', opts['keep_marginal'])
        opts['bootstrap_resamples'] = check_int(
            'sequential.bootstrap_resamples', opts['bootstrap_resamples'], minimum=RESAMPLES_RANGE[0],
            maximum=RESAMPLES_RANGE[1], allowed='an integer from %d to %d' % RESAMPLES_RANGE)
        opts['phase_shift'] = V.check_phase_shift('sequential.phase_shift', opts['phase_shift'])
    except SpeculativeInputError as exc:
        _fail('%s' % exc)
    budget = _budget_problem('sequential.max_prompts', opts['max_prompts'], concurrency)
    if budget:
        _fail(budget)
    opts['round_prompts'] = _check_rounds(opts.get('round_prompts'), concurrency, opts['max_prompts'])
    opts['baseline'] = _check_baseline(opts['baseline'], p, concurrency)
    return opts


def _budget_problem(name, max_prompts, concurrency):
    """The sentence when ``max_prompts`` cannot give every level an interval (two whole waves above c=1), else None."""
    least = max([min_requests(c) for c in concurrency] or [MIN_REQUESTS])
    if max_prompts < least:
        return ('%s must be at least %d with concurrency %d (two whole waves, which an interval at that level needs); '
                'got %s.' % (name, least, max(concurrency), show(max_prompts)))
    return None


#: The role's settings of sequential measurement (jetson_spec_sequential).
ROLE_KEYS = ('baseline_prompts', 'warmup_prompts', 'round_prompts', 'max_prompts')


def role_settings_problems(settings, concurrency):
    """Sentences saying what is wrong with the speculative_decoding role's ``jetson_spec_sequential`` (empty: nothing).

    The role checks them before it changes anything: the module would only see them after the baseline
    was measured and the speculative service started. ``concurrency`` is the workload's level list.
    """
    if not isinstance(settings, dict):
        return ['jetson_spec_sequential is %s; allowed: a dictionary with %s.' % (show(settings), ', '.join(ROLE_KEYS))]
    problems = []
    unknown = sorted('%s' % k for k in settings if k not in ROLE_KEYS)
    if unknown:
        problems.append('jetson_spec_sequential has unknown key(s) %s; allowed: %s.'
                        % (', '.join(show(k) for k in unknown), ', '.join(ROLE_KEYS)))
    try:
        levels = [check_int('concurrency level', c, minimum=bm.LIMITS['concurrency'][0],
                            maximum=bm.LIMITS['concurrency'][1]) for c in concurrency]
    except (SpeculativeInputError, TypeError) as exc:
        return problems + ['The benchmark workload\'s concurrency %s is not a list of levels: %s' % (show(concurrency), exc)]
    if V.LOW_CONCURRENCY not in levels:
        problems.append('Sequential measurement needs concurrency 1 in the workload\'s concurrency list %s (the verdict is '
                        'decided there).' % show(levels))
    least = max([min_requests(c) for c in levels] or [MIN_REQUESTS])
    checks = (('baseline_prompts', least, bm.LIMITS['num_prompts'][1],
               'measured baseline requests per level, at least %d: two whole waves at concurrency %d for the intervals'
               % (least, max(levels or [1]))),
              ('warmup_prompts', bm.LIMITS['warmup_prompts'][0], bm.LIMITS['warmup_prompts'][1], 'warm-up requests per level'),
              ('max_prompts', MAX_PROMPTS_RANGE[0], MAX_PROMPTS_RANGE[1], 'measured candidate requests per level at most'))
    for key, low, high, what in checks:
        if key not in settings:
            continue
        try:
            check_int('jetson_spec_sequential.%s' % key, settings[key], minimum=low, maximum=high,
                      allowed='an integer from %d to %d (%s)' % (low, high, what))
        except SpeculativeInputError as exc:
            problems.append('%s' % exc)
    max_prompts = settings.get('max_prompts', DEFAULTS['max_prompts'])
    if not problems and _budget_problem('jetson_spec_sequential.max_prompts', max_prompts, levels):
        problems.append(_budget_problem('jetson_spec_sequential.max_prompts', max_prompts, levels))
    if 'round_prompts' in settings and not problems:
        try:
            _check_rounds(settings['round_prompts'], levels, max_prompts)
        except BenchmarkError as exc:
            problems.append(('%s' % exc).replace('sequential.round_prompts', 'jetson_spec_sequential.round_prompts'))
    return problems


def _check_rounds(value, concurrency, max_prompts):
    """{level: requests per round} for every level; the given ones checked (keys may be strings: JSON has no int keys)."""
    rounds = dict((c, default_round(c)) for c in concurrency)
    if value is None:
        return rounds
    if not isinstance(value, dict):
        _fail('sequential.round_prompts must be a dictionary of concurrency level -> requests per round, e.g. '
              '{1: 8, 8: 16}; got %s.' % show(value))
    for key, size in value.items():
        level = key
        if isinstance(key, str) and key.strip().isdigit():
            level = int(key.strip())
        if not _is_int(level) or level not in concurrency:
            _fail('sequential.round_prompts has the key %s, which is not one of the concurrency levels %s.'
                  % (show(key), show(concurrency)))
        if not _is_int(size) or not min_requests(level) <= size <= max_prompts or size % level:
            _fail('sequential.round_prompts at concurrency %d must be a multiple of %d from %d to max_prompts (%d), so '
                  'that every round ends with full waves and gives an interval; got %s.'
                  % (level, level, min_requests(level), max_prompts, show(size)))
        rounds[level] = size
    return rounds


def _check_baseline(value, p, concurrency):
    """The baseline benchmark dict, checked: a fixed run of the same workload at the same levels, with samples."""
    try:
        base = V.unwrap_benchmark('sequential.baseline', value)
        runs = V.runs_by_concurrency('sequential.baseline', base)
    except SpeculativeInputError as exc:
        _fail('%s' % exc)
    if base['config'].get('sequential') is not None:
        _fail('sequential.baseline is itself a sequential benchmark: measure the baseline with a fixed number of '
              'requests (num_prompts) on the service without speculation.')
    if sorted(runs) != sorted(concurrency):
        _fail('sequential.baseline has runs at concurrency %s, this benchmark measures %s: use the same concurrency '
              'list.' % (sorted(runs), sorted(concurrency)))
    for field in BASELINE_FIELDS:
        mine = p.get(field)
        if field == 'ignore_eos':
            mine = bool(mine)
        theirs = base['config'].get(field)
        if mine != theirs or isinstance(mine, bool) != isinstance(theirs, bool):
            _fail('sequential.baseline was measured with %s = %s, this benchmark uses %s: the candidate must repeat the '
                  'baseline\'s workload; use the same options.' % (field, show(theirs), show(mine)))
    for c in concurrency:
        run = runs[c]
        samples = run.get('samples')
        count = len(samples.get('output_tokens') or []) if isinstance(samples, dict) else 0
        if count < min_requests(c):
            _fail('sequential.baseline has %s at concurrency %d: sequential stopping needs the per-request samples of '
                  'at least %d requests at that level (vllm_benchmark records them in runs[].samples; above '
                  'concurrency 1 the intervals resample blocks of concurrency requests, and need two).'
                  % ('no samples' if not isinstance(samples, dict) else '%d samples' % count, c, min_requests(c)))
        if not isinstance(run.get('prompt_set_id'), str):
            _fail('sequential.baseline has no prompt_set_id at concurrency %d: pass the vllm_benchmark result unchanged.'
                  % c)
    return base


# --------------------------------------------------------------------------------------------
# The rounds
# --------------------------------------------------------------------------------------------

def _stop_statuses(result):
    """The criterion statuses of an interim verdict result, criteria without an interval counted as undetermined
    (a criterion decided on a point estimate only, from too few requests, is open)."""
    return dict((name, 'undetermined' if entry['basis'] != 'interval' else entry['status'])
                for name, entry in result['criteria'].items())


def stop_state(result):
    """(verdict or None, open criteria) of an interim verdict result, counting criteria without an interval as open."""
    return V.settle_all(_stop_statuses(result))


def decision_state(result, keep_marginal):
    """(keep or None, possible verdicts) of an interim verdict result: keep is settled when every way the open
    criteria can go gives the same keep-or-revert decision (V.settle_keep)."""
    return V.settle_keep(_stop_statuses(result), keep_marginal)


SPEC_COUNTERS = ('drafts', 'draft_tokens', 'accepted_tokens')


class _Level:
    """What one concurrency level has measured so far (all rounds)."""

    def __init__(self, concurrency):
        self.concurrency = concurrency
        self.records = []
        self.duration = 0.0
        self.sums = dict((key, 0.0) for key in SPEC_COUNTERS)
        self.per_pos = {}
        self.speculating = True
        self.metrics_read = True
        self.polluted = False
        self.pollution = []
        self.spec_warning = None

    def add(self, records, duration, before, after, max_tokens, input_len):
        """Add one round: its records, duration and the counter deltas between its two /metrics snapshots."""
        self.records.extend(records)
        self.duration += duration
        if before is None or after is None:
            self.metrics_read = False
            return
        polluted, reasons = bm.pollution(before, after, bm.summarize_run(records, duration, self.concurrency),
                                         max_tokens, input_len)
        if polluted:
            self.polluted = True
            self.pollution.extend(reasons)
        if any(before.get(key) is None or after.get(key) is None for key in SPEC_COUNTERS):
            self.speculating = False
            return
        for key in SPEC_COUNTERS:
            self.sums[key] += after[key] - before[key]
        pos_before = before.get('per_pos') or {}
        pos_after = after.get('per_pos') or {}
        for pos in set(pos_before) | set(pos_after):
            old = pos_before.get(pos, 0.0)
            self.per_pos[pos] = self.per_pos.get(pos, 0.0) + pos_after.get(pos, old) - old

    def run(self):
        """The level's run over all its rounds (durations add up; spec_decode from the requests' own metrics when the
        server sent them for every request, else from the summed counter deltas: benchmark.choose_spec_decode)."""
        run = bm.summarize_run(self.records, self.duration, self.concurrency)
        spec = None
        if self.metrics_read and self.speculating:
            zero = dict((key, 0.0) for key in SPEC_COUNTERS)
            zero['per_pos'] = dict((pos, 0.0) for pos in self.per_pos)
            total = dict(self.sums)
            total['per_pos'] = dict(self.per_pos)
            spec = bm.spec_decode_delta(zero, total)
        run['spec_decode'], self.spec_warning = bm.choose_spec_decode(self.records, spec)
        run['metrics_polluted'] = self.polluted if self.metrics_read else None
        return run


def requests_of(bench):
    """{level: {'warmup': n, 'measured': n}} of a fixed benchmark (failed requests count: they were sent)."""
    warm = bench['config'].get('warmup_prompts')
    warm = warm if _is_int(warm) else 0
    return dict((run['concurrency'], {'warmup': warm, 'measured': run['completed'] + run['failed']})
                for run in bench['runs'])


def run_rounds(p, seq, runner, log=None):
    """Measure the candidate in rounds until the verdict is settled or the budget is spent.

    ``p``: validated benchmark options; ``seq``: check_sequential's result.
    ``runner`` has ``warm_up(concurrency)`` (sends the warm-up requests of a level, once),
    ``measure(concurrency, count)`` (the next ``count`` prompts of the level's sequence; returns
    (records, duration_s, before, after): RequestRecords and the /metrics snapshots, None when unread),
    ``failed_too_much(run)`` (the failure sentence when a run has more failed requests than allowed, else None)
    and ``benchmark(runs, sequential_config)`` (assembles the candidate benchmark dict).

    Returns (benchmark, report, failure): report is the ``sequential`` result (rounds, requests, why it stopped,
    the verdict); failure is None or the sentence to fail the module with.
    """
    levels = list(p['concurrency'])
    base = seq['baseline']
    looks = planned_looks(seq['round_prompts'], seq['max_prompts'])
    looks_made = dict((c, 0) for c in levels)
    config = {'baseline_prompt_set_id': base['config'].get('prompt_set_id'), 'max_prompts': seq['max_prompts'],
              'round_prompts': dict(('%d' % c, seq['round_prompts'][c]) for c in levels),
              'looks': dict(('%d' % c, looks[c]) for c in levels), 'looks_made': None, 'confidence': None,
              'spending': spending.METHOD}
    state = dict((c, _Level(c)) for c in levels)
    verdict_opts = dict((key, seq[key]) for key in VERDICT_KEYS)
    needed = list(levels)
    history = []
    failure = None
    result = None
    stopped = None
    open_names = []
    benchmark = None
    max_tokens = p['output_len']
    for c in levels:
        runner.warm_up(c)
    round_no = 0
    while True:
        round_no += 1
        measured = {}
        for c in needed:
            level = state[c]
            count = min(seq['round_prompts'][c], seq['max_prompts'] - len(level.records))
            if count <= 0:
                continue
            if log:
                log('vllm_benchmark: sequential round %d, concurrency %d: %d requests' % (round_no, c, count))
            records, duration, before, after = runner.measure(c, count)
            looks_made[c] += 1
            level.add(records, duration, before, after, max_tokens, p['input_len'])
            measured['%d' % c] = count
            run = level.run()
            failure = runner.failed_too_much(run)
            if failure:
                break
        runs = [state[c].run() for c in levels]
        confidence = confidences(looks, looks_made)
        config.update(looks_made=dict(('%d' % c, looks_made[c]) for c in levels), confidence=confidence)
        benchmark = runner.benchmark(runs, config)
        benchmark['warnings'].extend('concurrency %d: %s.' % (c, state[c].spec_warning) for c in levels
                                     if state[c].spec_warning)
        if failure:
            stopped = 'failed'
            break
        try:
            result = V.verdict(base, benchmark, decide_undetermined='undetermined', confidence=confidence,
                               **verdict_opts)
        except SpeculativeInputError as exc:
            failure = ('The candidate measured so far cannot be judged against the baseline: %s' % exc)
            stopped = 'failed'
            break
        settled, open_names = stop_state(result)
        if settled is not None:
            keep, possible = V.keep_of(settled, seq['keep_marginal']), [settled]
        else:
            keep, possible = decision_state(result, seq['keep_marginal'])
        bound = [name for name in open_names if result['criteria'][name]['shift_bound']]
        history.append({'round': round_no, 'measured': measured, 'confidence': dict(confidence),
                        'verdict': result['verdict'],
                        'settled': settled, 'open': list(open_names), 'decision': None if keep is None else
                        ('keep' if keep else 'revert'), 'possible': possible, 'shift_bound': bound})
        if keep is not None:
            stopped = 'determined'
            break
        if open_names and len(bound) == len(open_names):
            stopped = 'shift'
            break
        needed = sorted(set(CRITERION_LEVEL[name] for name in open_names if name not in bound))
        needed = [c for c in needed if len(state[c].records) < seq['max_prompts']]
        if not needed:
            stopped = 'budget'
            break
    report = _report(p, seq, state, history, stopped, open_names, base, benchmark, failure, verdict_opts)
    return benchmark, report, failure


def _report(p, seq, state, history, stopped, open_names, base, benchmark, failure, verdict_opts):
    # pylint: disable=too-many-locals
    levels = list(p['concurrency'])
    warm = p['warmup_prompts']
    requests = {'baseline': dict(('%d' % c, n) for c, n in requests_of(base).items()),
                'candidate': dict(('%d' % c, {'warmup': warm, 'measured': len(state[c].records)}) for c in levels)}
    totals = {}
    for phase in ('baseline', 'candidate'):
        totals[phase] = sum(entry['warmup'] + entry['measured'] for entry in requests[phase].values())
    requests['total'] = totals['baseline'] + totals['candidate']
    requests['baseline_total'] = totals['baseline']
    requests['candidate_total'] = totals['candidate']
    looks = planned_looks(seq['round_prompts'], seq['max_prompts'])
    confidence = history[-1]['confidence'] if history else confidences(looks, {})
    made = benchmark['config']['sequential']['looks_made'] if benchmark else {}
    level = ', '.join('%s at concurrency %s, look %d of %d' % (V.level_text(confidence[key]), key[1:], made.get('%d' % lv, 0), looks[lv])
                      for key, lv in (('c1', V.LOW_CONCURRENCY), ('c8', V.HIGH_CONCURRENCY)) if lv in looks)
    report = {'rounds': len(history), 'stopped': stopped, 'requests': requests, 'history': history,
              'max_prompts': seq['max_prompts'], 'looks': dict(('%d' % c, looks[c]) for c in levels),
              'confidence': dict(confidence),
              'round_prompts': dict(('%d' % c, seq['round_prompts'][c]) for c in levels),
              'verdict': None, 'determined': False, 'undetermined': list(open_names), 'name_undetermined': [],
              'decision_basis': None, 'reasons': []}
    if stopped == 'failed':
        report['reason'] = 'Stopped after round %d: %s' % (len(history) + 1, failure)
        return report
    final = V.verdict(base, benchmark, decide_undetermined='point_estimate', confidence=confidence, **verdict_opts)
    report.update(verdict=final['verdict'], determined=stopped == 'determined', decision_basis=final['decision_basis'],
                  reasons=final['reasons'], keep=final['keep'])
    counts = ', '.join('%d at concurrency %s' % (entry['measured'], c) for c, entry in
                       sorted(requests['candidate'].items(), key=lambda item: int(item[0])))
    if stopped == 'determined' and open_names:
        # The decision is settled, the verdict's name is not (marginal or reject, both reverted).
        report.update(undetermined=[], name_undetermined=list(open_names))
        report['reason'] = ('Stopped after round %d: the intervals (%s) settle the decision (%s: the '
                            'verdict is %s or %s, and %s %s still undetermined, which can only choose between them); %d '
                            'requests in all (candidate measured %s).'
                            % (len(history), level, 'keep' if final['keep'] else 'revert',
                               ' or '.join(history[-1]['possible'][:-1]), history[-1]['possible'][-1],
                               ' and '.join(open_names), 'is' if len(open_names) == 1 else 'are', requests['total'],
                               counts))
    elif stopped == 'determined':
        report['reason'] = ('Stopped after round %d: the intervals (%s) settle the verdict (%s); %d '
                            'requests in all (candidate measured %s).'
                            % (len(history), level, final['verdict'], requests['total'], counts))
    elif stopped == 'shift':
        shifts = seq['phase_shift']
        report['reason'] = ('Stopped after round %d: %s %s still undetermined, within the host\'s phase shift of the '
                            'threshold (phase_shift %s at concurrency 1, %s at concurrency 8): more requests of the same '
                            'two phases cannot settle %s. This report\'s verdict (%s) reads %s on the point estimates; '
                            'speculative_verdict with decide_undetermined=undetermined reads %s as undetermined and '
                            'does not keep the change. %d requests in all (candidate measured %s).'
                            % (len(history), ' and '.join(open_names), 'is' if len(open_names) == 1 else 'are',
                               V.pct(shifts['c1']), V.pct(shifts['c8']), 'it' if len(open_names) == 1 else 'them',
                               final['verdict'], 'it' if len(open_names) == 1 else 'them',
                               'it' if len(open_names) == 1 else 'them', requests['total'], counts))
    else:
        deciding = [name for name in open_names if name != 'regression_c8']
        how = []
        if deciding:
            how.append('rests on the point estimates for %s, and its reasons say so' % ', '.join(deciding))
        if 'regression_c8' in open_names:
            how.append('does not keep the change: at concurrency 8 its interval does not rule out a loss larger than '
                       'c8_margin (%s), and not ruling a loss out is not a pass (non-inferiority)'
                       % V.pct(V.noninferiority_margin(seq)))
        report['reason'] = ('Stopped after round %d: the budget of %d measured requests per level is spent and '
                            '%s %s still undetermined at the last look (intervals: %s); the verdict (%s) %s. %d '
                            'requests in all (candidate measured %s).'
                            % (len(history), seq['max_prompts'], ' and '.join(open_names),
                               'is' if len(open_names) == 1 else 'are', level, final['verdict'],
                               '; it '.join(how), requests['total'], counts))
    return report
