# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cohort rollout's decisions (private, standard library only): canaries, the gate, the confirmation.

Hosts whose verification would measure the same thing share a cohort (``_decision.cohort``). One host of each
cohort, its **canary**, runs the full protocol (baseline, candidate, verdict, tuning); its outcome, a **cohort
verdict** (``cohort_verdict()``, data: saved on the controller, published with set_stats), then gates the others
(``gate()``):

=======================================  ==========  ===============================================================
cohort verdict                           gate        what the host does
=======================================  ==========  ===============================================================
none usable (none yet, expired, other    verify      the full protocol on its own (a cohort of one, the canary);
key), or ``verify_each_host``                       ``stop`` instead in a job that follows a canary job (AWX's
                                                     sliced rollout: ``without_verdict='stop'``, no canary picked)
kept (``enabled``)                       confirm     the kept configuration, one restart, a short candidate
                                                     benchmark at concurrency 1 judged by ``confirm()``; a host
                                                     that fails it is reverted and verified in full on its own
reverted, refused by measurement,        follow      not restarted; recorded with the canary's name and evidence
undetermined (a keep held for live
traffic counts as undetermined)
failed (or unreachable)                  stop        untouched; reported as not attempted, with the reason
=======================================  ==========  ===============================================================

``confirm()`` is a stated test. Let B and C be the canary's median TPOT at concurrency 1 with speculation off
(baseline) and on (candidate), g = ln(B / C) its gain, and x the log of the host's median TPOT over a short run of
the kept configuration. The host is confirmed when both hold, and its acceptance rate is within
``ACCEPTANCE_TOLERANCE`` of the canary's:

* x <= ln B - z * sigma_b, with sigma_b combining the stated host-to-host spread of identical Jetsons (``spread``, a
  relative SD) with the standard errors of the host's median and the canary's baseline median (from the per-request
  samples): the host is faster than the canary's baseline beyond the noise. For a twin whose speculation does not
  pay (its candidate runs at the canary's baseline speed, up to the spread), a wrong keep has a chance of at most
  Phi(-z) = 2.5 % at z = 1.96, the verdict's own A/A bound, whatever the canary's gain and sample sizes;
* x <= ln C + g / 2: nearer the canary's candidate than its baseline (a twin much slower than its canary is not kept
  on the canary's word even when it beats the baseline).

A confirmation measured while other clients used the server (the benchmark's ``metrics_polluted``) is never a
keep: it is inconclusive and the host is verified in full, as the verdict holds a keep on live traffic.

The test is only made when g / 2 >= z * sigma (sigma adds the canary's candidate median's error): otherwise it is
inconclusive and the host is verified in full. For a twin that pays as the canary does, the chance of failing
confirmation (then a full verification, not a wrong revert) is small once the gain is well past that bar. The
assumptions: hosts of one cohort differ by at most ``spread``, and the canary's baseline still describes the cohort
(it may be a stored one, up to jetson_spec_baseline_max_age old; its drift is not modelled). The Monte Carlo check is
tests/unit/plugins/module_utils/test_rollout.py; the table is docs/fleet.md's.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import math
import re

#: A cohort verdict's statuses and the gate each gives its cohort's other hosts.
GATES = {
    'enabled': 'confirm',
    'reverted': 'follow',
    'refused': 'follow',
    'undetermined': 'follow',
    'failed': 'stop',
    'unreachable': 'stop',
}
#: The canary statuses a cohort verdict is made from (the others say nothing about the cohort: in sync, skipped).
CANARY_STATUSES = frozenset(['enabled', 'reverted', 'refused', 'failed', 'unreachable'])
Z = 1.96                       # one-sided 2.5 % for each error of the confirmation
ACCEPTANCE_TOLERANCE = 0.15    # the host's acceptance rate may be this much (absolute) below the canary's
MIN_SAMPLES = 8                # fewer measured requests at concurrency 1: no confirmation (inconclusive)
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)   # the standard error of a median / that of a mean (normal data)
DEFAULT_SPREAD = 0.03


#: The parts of a rollout one job runs (jetson_spec_rollout_part): both, the canaries alone (an AWX workflow's first
#: job), or the other hosts alone on the canary job's verdicts (the workflow's sliced job: no canary is picked there,
#: since slices share nothing and each would pick its own).
ROLLOUT_PARTS = ('all', 'canaries', 'others')


class RolloutError(ValueError):
    """A value the rollout cannot decide on (the message names it and what is allowed)."""


def rollout_part(value):
    """``value`` if it is one of ROLLOUT_PARTS, else RolloutError naming it."""
    if value not in ROLLOUT_PARTS:
        raise RolloutError('jetson_spec_rollout_part is %r; allowed: %s (all: the canaries then the other hosts in one '
                           'job; canaries: the canary job of a workflow; others: the job that follows it, on its '
                           'verdicts, sliced or not)' % (value, ', '.join(ROLLOUT_PARTS)))
    return value


def parse_time(text):
    """'2026-12-06T18:00:00.123456Z' (or +00:00) -> an aware datetime; None when it is not such a time."""
    if not isinstance(text, str) or not text:
        return None
    value = text.strip()
    if value.endswith('Z'):
        value = value[:-1] + '+00:00'
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed


def number(value, name, low, high):
    """``value`` as a finite float from ``low`` to ``high``; RolloutError naming ``name`` otherwise."""
    number = None
    if not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
    if number is None or not math.isfinite(number) or number < low or number > high:
        raise RolloutError('%s is %r; allowed: a number from %s to %s' % (name, value, low, high))
    return number


def verdict_problem(verdict, key, now, max_age, run_started=None):
    """Why ``verdict`` cannot gate cohort ``key`` now (a sentence), or None when it can.

    A verdict measured in this run (at or after ``run_started``) always gates; an earlier one only while it is at
    most ``max_age`` seconds old (the baseline's rule, jetson_spec_baseline_max_age). The key is the cohort's
    fingerprint: a verdict of any other key says nothing about this cohort.
    """
    if not isinstance(verdict, dict):
        return 'the cohort verdict is %s, not a dictionary' % type(verdict).__name__
    if verdict.get('key') != key:
        return 'the cohort verdict is for cohort %r, not %r' % (verdict.get('key'), key)
    status = verdict.get('status')
    if not isinstance(status, str) or status not in GATES:
        return 'the cohort verdict has status %r; allowed: %s' % (status, ', '.join(sorted(GATES)))
    problem = _content_problem(verdict)
    if problem:
        return 'the cohort verdict %s' % problem
    measured = parse_time(verdict.get('measured_at'))
    if measured is None:
        return 'the cohort verdict has no measurement time (measured_at %r)' % (verdict.get('measured_at'),)
    if measured > now + datetime.timedelta(seconds=300):
        return 'the cohort verdict was measured in the future (%s)' % verdict.get('measured_at')
    started = parse_time(run_started)
    if started is not None and measured >= started:
        return None
    if GATES[status] == 'stop':
        return 'the cohort verdict says its canary %s in an earlier run (a failure gates its own run only)' % (
            'failed' if status == 'failed' else 'was unreachable')
    age = (now - measured).total_seconds()
    if age > max_age:
        return 'the cohort verdict is %d s old, more than jetson_spec_baseline_max_age (%d s)' % (age, max_age)
    return None


def _finite(value, low=0.0, high=None, strict=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return (value > low if strict else value >= low) and (high is None or value <= high)


#: The evidence a kept verdict must carry, each a finite number in its range (None where it may be absent).
_EVIDENCE = (('baseline_tpot_ms', 1e-6, 1e6, True, False), ('candidate_tpot_ms', 1e-6, 1e6, True, False),
             ('baseline_log_se', 0.0, 5.0, False, True), ('candidate_log_se', 0.0, 5.0, False, True),
             ('acceptance_rate', 0.0, 1.0, False, True))


def _content_problem(verdict):
    """What is wrong with a verdict's content (a phrase), or None: the canary's name, a kept verdict's
    configuration and evidence (finite numbers in range: a damaged or hand-made verdict must not confirm a host)."""
    if not isinstance(verdict.get('canary'), str) or not verdict.get('canary'):
        return 'names no canary (canary %r)' % (verdict.get('canary'),)
    if verdict['status'] != 'enabled':
        return None
    if not isinstance(verdict.get('speculative_config'), dict) or not verdict['speculative_config']:
        return 'is kept but has no speculative_config'
    evidence = verdict.get('evidence')
    if not isinstance(evidence, dict):
        return 'is kept but has no evidence'
    for name, low, high, strict, optional in _EVIDENCE:
        value = evidence.get(name)
        if value is None and optional:
            continue
        if not _finite(value, low, high, strict):
            return 'has evidence.%s %r; allowed: a number from %s to %s' % (name, value, low, high)
    return None


def usable_verdicts(verdicts, now, max_age, run_started=None):
    """{key: verdict} of the verdicts that may gate their cohort now (the others are dropped)."""
    out = {}
    for key, verdict in (verdicts or {}).items():
        if isinstance(key, str) and verdict_problem(verdict, key, now, max_age, run_started) is None:
            out[key] = verdict
    return dict(sorted(out.items()))


def _unverified(key, why, without_verdict):
    """The gate of a host whose cohort has no usable verdict: verified on its own, or (``without_verdict`` stop: a
    job that follows a canary job) not attempted."""
    if without_verdict == 'stop':
        return {'action': 'stop', 'verdict': None,
                'reason': '%s: this job follows a canary job and picks no canary (jetson_spec_rollout_part: others), so '
                          'this host was not attempted; run the canary job (jetson_spec_rollout_part: canaries) for '
                          'cohort %s first.' % (why, key)}
    return {'action': 'verify', 'reason': '%s; this host is verified on its own.' % why, 'verdict': None}


def gate(key, verdicts, now, max_age, run_started=None, verify_each_host=False, host=None, without_verdict='verify'):
    """What a host of cohort ``key`` whose own decision is to verify does: {action, reason, verdict}.

    ``action`` is verify (the full protocol), confirm, follow or stop (the module docstring's table).
    ``without_verdict``: what a host whose cohort has no usable verdict does, verify (on its own) or stop (a job that
    follows a canary job: jetson_spec_rollout_part others).
    """
    if without_verdict not in ('verify', 'stop'):
        raise RolloutError('without_verdict is %r; allowed: verify, stop' % (without_verdict,))
    if verify_each_host:
        return {'action': 'verify', 'reason': 'jetson_spec_verify_each_host is true: this host is verified on its own.',
                'verdict': None}
    if not key:
        return {'action': 'verify', 'reason': 'This host has no cohort: it is verified on its own.', 'verdict': None}
    verdict = (verdicts or {}).get(key)
    if verdict is None:
        return _unverified(key, 'No verdict of cohort %s yet' % key, without_verdict)
    problem = verdict_problem(verdict, key, now, max_age, run_started)
    if problem:
        return _unverified(key, 'Cohort %s: %s' % (key, problem), without_verdict)
    if verdict.get('canary') == host:
        # The canary's own verdict: the host was verified in full (a re-run that must verify again does it again).
        return {'action': 'verify', 'reason': 'This host is the canary of cohort %s.' % key, 'verdict': None}
    action = GATES[verdict['status']]
    canary = verdict.get('canary') or '?'
    reasons = {
        'confirm': 'Cohort %s: its canary %s kept %s; this host confirms it (one restart, a short benchmark).',
        'follow': 'Cohort %s: its canary %s was %s; this host is not changed (jetson_spec_verify_each_host: true '
                  'verifies it on its own).',
        'stop': 'Cohort %s: its canary %s %s; this cohort stops here, this host was not attempted.',
    }
    what = {
        'confirm': _config_words(verdict.get('speculative_config')),
        'follow': verdict['status'] + (' (%s)' % verdict['verdict_summary'] if verdict.get('verdict_summary') else ''),
        'stop': 'failed' if verdict['status'] == 'failed' else 'was unreachable',
    }[action]
    return {'action': action, 'reason': reasons[action] % (key, canary, what), 'verdict': verdict}


def _config_words(config):
    config = config if isinstance(config, dict) else {}
    words = [config.get('method') or 'speculation']
    if config.get('num_speculative_tokens') is not None:
        words.append('K=%s' % config['num_speculative_tokens'])
    return ' '.join('%s' % word for word in words)


def pick_canaries(hosts, verdicts, now, max_age, run_started=None, pick=True):
    """The canaries of a rollout: {'canaries': [names], 'by_cohort': {key: name}, 'verdicts': the usable ones}.

    ``hosts``: {name: {'cohort': key or None, 'action': the host's own decision, 'prefer': bool}}. Only hosts whose
    own decision is to verify take part (in-sync, refused or disabled hosts measure nothing). A cohort whose verdict
    still gates (``usable_verdicts``) needs no canary. Otherwise its canary is the first, by name, of the hosts an
    operator marked (the host variable jetson_spec_canary: true), else the first of all by name: deterministic, so
    a repeated run picks the same host. A host without a cohort is its own canary. ``pick`` false (a job that follows
    a canary job): no canary at all; the verdicts still gate.
    """
    if not isinstance(hosts, dict):
        raise RolloutError('hosts must be a dictionary of host name to {cohort, action, prefer}, not %s'
                           % type(hosts).__name__)
    usable = usable_verdicts(verdicts, now, max_age, run_started)
    members = {}
    lone = []
    for name in sorted(hosts):
        info = hosts[name] if isinstance(hosts[name], dict) else {}
        if info.get('action') != 'verify':
            continue
        key = info.get('cohort')
        if not key:
            lone.append(name)
            continue
        if key in usable:
            continue
        members.setdefault(key, []).append((not bool(info.get('prefer')), name))
    if not pick:
        return {'canaries': [], 'by_cohort': {}, 'verdicts': usable}
    by_cohort = dict((key, sorted(candidates)[0][1]) for key, candidates in members.items())
    canaries = sorted(set(by_cohort.values()) | set(lone))
    return {'canaries': canaries, 'by_cohort': by_cohort, 'verdicts': usable}


def collect(canaries, saveable=False):
    """The cohort verdicts of a run's canaries: {key: verdict}.

    ``canaries``: {name: {'verdict': its _jetson_spec_cohort_verdict or None, 'cohort': its cohort or None,
    'error': its error or None, 'done': whether its rollout tasks ended (False: it dropped off mid-change)}}. A canary
    with an error is ``failed`` whatever verdict it reached before the error (a record it could not write); one that
    never ended is ``unreachable``. With ``saveable``, only what may gate later runs: kept, reverted, refused,
    undetermined (a failure gates its own run only).
    """
    out = {}
    for name in sorted(canaries or {}):
        info = canaries[name] if isinstance(canaries[name], dict) else {}
        cohort = info.get('cohort')
        verdict = info.get('verdict')
        if info.get('error') or (not info.get('done') and not isinstance(verdict, dict)):
            status = 'failed' if info.get('error') else 'unreachable'
            reason = info.get('error') or '%s dropped off during the rollout (no outcome)' % name
            verdict = cohort_verdict(cohort, name, {'status': status, 'reasons': ['%s' % reason][:1],
                                                    'finished': info.get('now')})
        if not isinstance(verdict, dict) or not verdict.get('key'):
            continue
        if saveable and GATES.get(verdict.get('status')) == 'stop':
            continue
        out[verdict['key']] = verdict
    return out


def fail_percentage(value):
    """jetson_spec_max_fail_percentage as a number from 0 to 100 ("20" and "20%" too, as Ansible's own
    max_fail_percentage takes them); RolloutError naming it otherwise."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.endswith('%'):
        text = text[:-1].strip()
    try:
        return number(text, 'jetson_spec_max_fail_percentage', 0, 100)
    except RolloutError:
        raise RolloutError('jetson_spec_max_fail_percentage is %r; allowed: a number from 0 to 100 (a percentage)'
                           % (value,))


def failure_share(hosts, batch=None, canary=False, rollout_size=None, max_fail_percentage=20):
    """Whether the rollout stops after a batch: {stop, failed, size, msg}.

    Ansible's own max_fail_percentage does not see the rollout's failures (rescued, failed at the end of the run), so
    the share is counted from what each host noted. ``hosts``: {name: {'batch': the batch it started in or None,
    'attempted': whether its rollout tasks started, 'error': its error or None}} in inventory order. A batch of other
    hosts counts its own hosts; the canaries count against the whole run (``rollout_size``, default every host given):
    a failed canary stops its own cohort, and the canaries' failures together stop the rollout once they pass the
    fleet's budget (one failed canary alone in its batch is not 100 %). The rollout stops when more than
    ``max_fail_percentage`` of them failed. RolloutError names a bad percentage or size.
    """
    percentage = fail_percentage(max_fail_percentage)
    hosts = hosts or {}
    infos = [(name, hosts[name] if isinstance(hosts[name], dict) else {}) for name in hosts]
    if canary:
        counted = [(name, info) for name, info in infos if info.get('attempted')]
        size = len(hosts) if rollout_size is None else int(number(rollout_size, 'the rollout size', 0, 10 ** 9))
    else:
        counted = [(name, info) for name, info in infos if batch is not None and info.get('batch') == batch]
        size = len(counted)
    failed = [name for name, info in counted if info.get('error')]
    stop = len(failed) * 100 > percentage * size
    what = 'this run failed as canaries' if canary else 'this batch failed or were unreachable'
    msg = ('%d of the %d hosts of %s (%s), more than jetson_spec_max_fail_percentage (%s %%): the rollout stops here; '
           'later hosts are not attempted.' % (len(failed), size, what, ', '.join(failed), '%g' % percentage))
    return {'stop': stop, 'failed': failed, 'size': size, 'msg': msg if stop else ''}


#: Actions after which a host restarts nothing (its record stands, or its cohort stopped).
NO_RESTART = ('in_sync', 'skip', 'stop')
#: Actions that restart a host only when speculation runs there and is removed.
RESTART_IF_REMOVED = ('follow', 'refuse', 'reconcile', 'disable')
MAX_HOSTS = 100000


def batch_count(value, total, name, zero_is_all=True):
    """A serial-like size (a count, or a percentage of ``total`` as "25%") as a count of at least 1, Ansible's way
    (a percentage is rounded down, at least one host; 0 means every host, or is refused without ``zero_is_all``).
    RolloutError names a bad value."""
    text = ('%s' % value).strip() if not isinstance(value, bool) else ''
    percent = text.endswith('%')
    number_text = text[:-1].strip() if percent else text
    least = 0 if zero_is_all else 1
    if (not re.match(r'^[0-9]{1,7}\Z', number_text) or int(number_text) > (100 if percent else MAX_HOSTS)
            or int(number_text) < least):
        raise RolloutError('%s is %r; allowed: a number of hosts from %d to %d, or a percentage such as "25%%" (%d to '
                           '100 %%)' % (name, value, least, MAX_HOSTS, least))
    count = int(number_text)
    if percent:
        count = int(count / 100.0 * total)
    elif count == 0:
        count = total
    return max(count, 1)


def restarts(action, removes_speculation=False):
    """Whether a host whose decided action is ``action`` restarts its service in this run (unknown: it may)."""
    if action in NO_RESTART:
        return False
    if action in RESTART_IF_REMOVED:
        return bool(removes_speculation)
    return True


def waves(hosts, first_size, size, max_unavailable=1):
    """The batches of a rollout play under a disruption budget: {order, sizes, held}.

    ``hosts``: [(name, disruption group or None, whether it restarts)] in the play's order. Each batch takes the hosts
    in order, up to its size (``first_size`` for the first batch, ``size`` for the others, as a play's ``serial``
    list), leaving for a later batch a host that restarts while ``max_unavailable`` hosts of its disruption group
    already restart in this batch (flightctl's disruptionBudget: groupBy, maxUnavailable). A host without a group,
    or one that restarts nothing, is never held. ``max_unavailable``: a count, or a percentage of the group's hosts
    in this play ("25%", at least 1). ``order`` and ``sizes`` are the play's host pattern and ``serial``; ``held``
    the hosts that a batch left for a later one. RolloutError names a bad size or budget.
    """
    hosts = [(('%s' % name), ('%s' % group) if group not in (None, '') else None, bool(restart))
             for name, group, restart in hosts or []]
    for name, _group, _restart in hosts:
        if ',' in name or name[:1] in ('!', '&', '') or name != name.strip():
            raise RolloutError('The host name %r cannot be a play\'s host pattern (a comma, a leading "!" or "&", '
                               'white space around it); rename it in the inventory to roll out in planned batches'
                               % name)
    total = len(hosts)
    if not hosts:
        return {'order': [], 'sizes': [], 'held': []}
    first = batch_count(first_size, total, 'jetson_spec_canary_size or the first batch size')
    later = batch_count(size, total, 'jetson_spec_batch_size')
    batch_count(max_unavailable, total, 'jetson_spec_max_unavailable', zero_is_all=False)
    members = {}
    for _name, group, _restart in hosts:
        if group is not None:
            members[group] = members.get(group, 0) + 1
    budget = dict((group, batch_count(max_unavailable, count, 'jetson_spec_max_unavailable', zero_is_all=False))
                  for group, count in members.items())
    remaining, batches, held = list(hosts), [], []
    while remaining:
        cap = first if not batches else later
        batch, used, rest = [], {}, []
        for host in remaining:
            name, group, restart = host
            counted = group if restart else None
            if len(batch) >= cap:
                rest.append(host)
            elif counted is not None and used.get(counted, 0) >= budget[counted]:
                rest.append(host)
                if name not in held:
                    held.append(name)
            else:
                batch.append(name)
                if counted is not None:
                    used[counted] = used.get(counted, 0) + 1
        batches.append(batch)
        remaining = rest
    return {'order': [name for batch in batches for name in batch], 'sizes': [len(batch) for batch in batches],
            'held': held}


def _c1(benchmark):
    for run in (benchmark or {}).get('runs') or []:
        if isinstance(run, dict) and run.get('concurrency') == 1:
            return run
    return {}


def _log_tpots(run):
    values = [value for value in ((run.get('samples') or {}).get('tpot_ms') or [])
              if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0]
    return [math.log(value) for value in values]


def log_median_se(run):
    """(ln of the median TPOT, its standard error, n) of a run from its per-request samples; (None, None, n) when
    there are fewer than two."""
    logs = sorted(_log_tpots(run))
    n = len(logs)
    if n < 2:
        return None, None, n
    middle = n // 2
    median = logs[middle] if n % 2 else (logs[middle - 1] + logs[middle]) / 2.0
    mean = math.fsum(logs) / n
    sd = math.sqrt(math.fsum((value - mean) ** 2 for value in logs) / (n - 1))
    return median, MEDIAN_SE_FACTOR * sd / math.sqrt(n), n


def evidence(baseline, candidate):
    """What a confirmation compares with, from the canary's baseline and (kept) candidate benchmarks (c=1)."""
    base, cand = _c1(baseline), _c1(candidate)
    b_log, b_se, b_n = log_median_se(base)
    c_log, c_se, c_n = log_median_se(cand)
    spec = cand.get('spec_decode') if isinstance(cand.get('spec_decode'), dict) else {}
    return {
        'baseline_tpot_ms': round(math.exp(b_log), 4) if b_log is not None else base.get('tpot_ms_p50'),
        'candidate_tpot_ms': round(math.exp(c_log), 4) if c_log is not None else cand.get('tpot_ms_p50'),
        'baseline_log_se': round(b_se, 6) if b_se is not None else None,
        'candidate_log_se': round(c_se, 6) if c_se is not None else None,
        'baseline_requests': b_n, 'candidate_requests': c_n,
        'baseline_throughput_tok_s': base.get('throughput_tok_s'),
        'candidate_throughput_tok_s': cand.get('throughput_tok_s'),
        'acceptance_rate': spec.get('acceptance_rate'),
    }


def cohort_verdict(cohort, canary, summary, baseline=None, candidate=None):
    """The cohort verdict a canary's run gives (data), or None when its outcome says nothing about the cohort.

    ``cohort``: the cohort filter's {key, group, label, ...}; ``summary``: the canary's recorded outcome (the role's
    _jetson_spec_summary, or {'status': 'unreachable'} for a canary the run could not reach); ``baseline`` and
    ``candidate``: its benchmarks (for a kept change, the candidate is the kept configuration's, K as tuned).
    A keep held for live traffic (``fingerprint`` null with a verdict) is ``undetermined``: it gates like a revert.
    """
    if not isinstance(cohort, dict) or not cohort.get('key'):
        return None
    summary = summary if isinstance(summary, dict) else {}
    status = summary.get('status')
    if status not in CANARY_STATUSES:
        return None
    verdict = summary.get('verdict')
    if status == 'enabled' and summary.get('fingerprint', '') is None:
        status = 'undetermined'
    if status == 'reverted' and verdict == 'undetermined':
        status = 'undetermined'
    measured = summary.get('finished') or summary.get('started')
    out = {
        'key': cohort['key'], 'group': cohort.get('group'), 'label': cohort.get('label'),
        'canary': canary, 'status': status, 'verdict': verdict,
        'verdict_summary': summary.get('verdict_summary'),
        'reasons': list(summary.get('reasons') or [])[:6],
        'speculative_config': summary.get('speculative_config') if status == 'enabled' else None,
        'gpu_memory_utilization': summary.get('candidate_gpu_memory_utilization') if status == 'enabled' else None,
        'measured_at': measured,
        'evidence': evidence(baseline, candidate) if status == 'enabled' else None,
    }
    return out


def confirm(verdict, run_benchmark, spread=DEFAULT_SPREAD, z=Z):
    """Is the kept configuration as good on this host as on the canary? {confirmed, conclusive, reasons, figures}.

    ``verdict``: the cohort verdict (kept, with its evidence); ``run_benchmark``: this host's short vllm_benchmark
    result of the kept configuration (concurrency 1, with per-request samples). The module docstring states the
    test and its error rates.
    """
    spread = number(spread, 'jetson_spec_cohort_spread', 0.0, 0.5)
    z = number(z, 'z', 0.5, 5.0)
    ev = (verdict or {}).get('evidence') or {}
    base, cand = ev.get('baseline_tpot_ms'), ev.get('candidate_tpot_ms')
    run = _c1(run_benchmark)
    x, se_h, n = log_median_se(run)
    figures = {'host_tpot_ms': round(math.exp(x), 4) if x is not None else None, 'requests': n,
               'canary_baseline_tpot_ms': base, 'canary_candidate_tpot_ms': cand, 'spread': spread, 'z': z}
    fail = {'confirmed': False, 'conclusive': False, 'figures': figures}
    if run.get('metrics_polluted') is True:
        # as the verdict does (hold_a_keep_on_live_traffic): never keep on a measurement that is not the change's alone
        figures['metrics_polluted'] = True
        return dict(fail, reasons=['Other clients used the server during the confirmation (metrics_polluted: tokens '
                                   'in its counters that the benchmark did not send), so the measurement is not the '
                                   'kept configuration\'s alone; verifying this host on its own (take it out of its '
                                   'load balancer, or run when it is idle).'])
    if not (isinstance(base, (int, float)) and isinstance(cand, (int, float)) and base > 0 and cand > 0):
        return dict(fail, reasons=['The canary left no TPOT at concurrency 1 to compare with; verifying this host '
                                   'on its own.'])
    if x is None or n < MIN_SAMPLES:
        return dict(fail, reasons=['The confirmation measured %d request(s) with a TPOT at concurrency 1 (at least '
                                   '%d needed); verifying this host on its own.' % (n, MIN_SAMPLES)])
    gain = math.log(base / float(cand))
    se_b = ev.get('baseline_log_se') or 0.0
    se_c = ev.get('candidate_log_se') or 0.0
    sigma = math.sqrt(spread ** 2 + se_h ** 2 + (se_b ** 2 + se_c ** 2) / 4.0)
    sigma_b = math.sqrt(spread ** 2 + se_h ** 2 + se_b ** 2)
    # beyond the noise faster than the canary's baseline, and nearer its candidate than its baseline
    threshold = min(math.log(base) - z * sigma_b, math.log(cand) + gain / 2.0)
    figures.update({'threshold_tpot_ms': round(math.exp(threshold), 4), 'sigma': round(sigma, 6),
                    'sigma_baseline': round(sigma_b, 6), 'canary_gain': round(math.exp(gain), 4)})
    if gain / 2.0 < z * sigma:
        return dict(fail, reasons=[
            'The canary\'s gain at concurrency 1 (TPOT %.2f -> %.2f ms, x%.3f) is too small to confirm against the '
            'host-to-host spread (%.1f %%) and this run\'s noise (half the gain must be at least %.2f sigma = %.1f '
            '%%); verifying this host on its own.' % (base, cand, math.exp(gain), spread * 100, z, z * sigma * 100)])
    reasons = []
    ok = x <= threshold
    reasons.append('TPOT at concurrency 1 is %.2f ms over %d requests: %s the %.2f ms bar (the canary\'s candidate '
                   '%.2f ms, baseline %.2f ms: faster than the baseline by %.2f sigma, and nearer the candidate).'
                   % (math.exp(x), n, 'within' if ok else 'slower than', math.exp(threshold), cand, base, z))
    acceptance = ev.get('acceptance_rate')
    spec = run.get('spec_decode') if isinstance(run.get('spec_decode'), dict) else {}
    host_acceptance = spec.get('acceptance_rate')
    figures.update({'canary_acceptance_rate': acceptance, 'acceptance_rate': host_acceptance})
    if isinstance(acceptance, (int, float)):
        if not isinstance(host_acceptance, (int, float)):
            ok = False
            reasons.append('The server reported no acceptance rate (the canary\'s was %.2f): is speculation running?'
                           % acceptance)
        elif host_acceptance < acceptance - ACCEPTANCE_TOLERANCE:
            ok = False
            reasons.append('Its acceptance rate is %.2f, more than %.2f below the canary\'s %.2f.'
                           % (host_acceptance, ACCEPTANCE_TOLERANCE, acceptance))
        else:
            reasons.append('Its acceptance rate is %.2f (the canary\'s %.2f).' % (host_acceptance, acceptance))
    reasons.append('Confirmed: kept on the cohort\'s verdict.' if ok else
                   'Not confirmed: this host is reverted and verified on its own.')
    return {'confirmed': ok, 'conclusive': True, 'reasons': reasons, 'figures': figures}
