# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a vLLM service to serve, and telling why it does not (private).

``classify_log`` reads what vLLM printed while starting (the journal, compose logs) and names the
failure with the line that proves it. ``wait_healthy`` polls the server (GET /health 200 AND the
served model listed by /v1/models) while watching the service manager, so an early exit or a
crash loop (systemd ``Restart=``, Docker ``restart:``) ends the wait at once instead of looking
like a slow start.

Only the standard library: this runs on the Jetson.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import time

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.http import Endpoint, EndpointError

# Substrings vLLM prints (wording drifts between releases: match the stable parts), most specific
# first. A start-up OOM is followed by "Engine core initialization failed", so memory patterns come
# before the generic engine one; a rejected config never reaches the engine.
LOG_PATTERNS = (
    ('config_rejected', (
        'should have the same vocabulary size',
        'num_speculative_tokens was provided but without speculative model',
        'Unsupported speculative method',
        'is not a valid argument in the speculative_config',
        'Speculative decoding with draft model is not supported',
        'must be <= prompt_lookup_max',
        # MTP: vLLM reuses the target's n MTP layers in turn (0.10.0 to 0.34.0; vllm/config/speculative.py, moved to
        # vllm/v1/worker/gpu/spec_decode/speculator_config.py in 0.34.0).
        'must be divisible by n_predict',
        # Suffix decoding without its package (0.12 to 0.32, SpeculativeConfig._validate_suffix_decoding).
        'Arctic Inference is required for suffix decoding',
        # A method the runtime does not implement for this model (NVIDIA's forum: MTP on Nemotron-3, vLLM 0.20.2).
        'NotImplementedError',
        # Model Runner V2 forced (VLLM_USE_V2_MODEL_RUNNER=1) with a method it does not run (0.20 to 0.33; texts from
        # vllm/config/vllm.py, _get_v2_model_runner_unsupported_features; unset, vLLM falls back to V1 and warns).
        'Model Runner V2 does not yet support',
        'VLLM_USE_V2_MODEL_RUNNER does not yet support',
        # A speculators checkpoint whose verifier is a local path (0.33.0+, vllm/transformers_utils/config.py).
        'Speculators verifier must name a remote model repository',
        # P-EAGLE and parallel drafting (0.34.0, vllm/config/speculative.py).
        'P-EAGLE (parallel drafting EAGLE-3) is not supported',
        'parallel_drafting is only supported by the dflash and dspark',
        'num_speculative_tokens must be provided with speculative model',
        'Unexpected keyword argument',
        'cannot be converted to',
        'validation error for SpeculativeConfig',   # the generic header: the lines above say why
    )),
    # The weights loaded, but what is left for the KV cache does not hold one request of --max-model-len.
    # vLLM's own advice is a higher utilisation or a shorter --max-model-len: a lower utilisation makes it worse.
    ('kv_cache', (
        'No available memory for the cache blocks',
        'larger than the available KV cache memory',
    )),
    # Out of memory, as CUDA says it and as a Jetson says it: unified memory allocations fail in NvMap
    # ("NvMapMemAllocInternalTagged: <tag> error 12", ENOMEM), or the kernel's OOM killer ends the process
    # (systemd: "A process of this unit has been killed by the OOM killer", "Failed with result 'oom-kill'";
    # the kernel: "Out of memory: Killed process N (python3)"); a main process killed by SIGKILL during a
    # start-up (status=9/KILL, a container's exit code 137) is the OOM killer on a Jetson too.
    ('oom', (
        'CUDA out of memory',
        'OutOfMemoryError',
        'on startup is less than desired GPU memory utilization',
        'NvMapMemAllocInternalTagged',
        'killed by the OOM killer',
        "Failed with result 'oom-kill'",
        'Out of memory: Killed process',
        'Cannot allocate memory',
        'code=killed, status=9/KILL',
        # NVIDIA's recipe runs vLLM as a unit whose ExecStart is `docker run --runtime nvidia ...`: when the
        # container is OOM-killed, docker run exits 137 (128 + SIGKILL) and systemd says so (systemd 252 to 257).
        'code=exited, status=137/n/a',
        'exited with code 137',
        'exit code 137',
    )),
    ('engine_init', (
        'Engine core initialization failed',
        'EngineCore failed to start',
    )),
)

_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
#: systemd's own lines for a start of the unit ("Starting vllm.service - ...", "Started vllm.service - ...").
_START = re.compile(r'\bStart(ing|ed) \S+\.service\b')
#: Needles that say how a main process ended: read after the unit's last start only.
EXIT_NEEDLES = ('code=killed, status=9/KILL', 'code=exited, status=137/n/a')
MAX_EVIDENCE = 400


def classify_log(text):
    """(kind, evidence line) for the first matching pattern group, or (None, None).

    Within a group the most specific needle wins, wherever its line is (vLLM prints a generic
    "1 validation error for SpeculativeConfig" before the sentence that says why).
    """
    lines = [_ANSI.sub('', line).strip() for line in (text or '').splitlines()]
    # How the main process ended is about the last start only: the previous process's stop (a docker stop that ended
    # in SIGKILL, exit 137) is in the same journal, before systemd's "Starting"/"Started" line of this start.
    starts = [index for index, line in enumerate(lines) if _START.search(line)]
    since_start = lines[starts[-1]:] if starts else lines
    for kind, needles in LOG_PATTERNS:
        for needle in needles:
            for line in (since_start if needle in EXIT_NEEDLES else lines):
                if needle in line:
                    return kind, line[:MAX_EVIDENCE]
    return None, None


def last_error_line(text):
    """The last line that looks like an error (for a failure no pattern names)."""
    for line in reversed((text or '').splitlines()):
        line = _ANSI.sub('', line).strip()
        if re.search(r'(Error|error:|Exception|FAILED|Traceback)', line):
            return line[:MAX_EVIDENCE]
    return None


# --- the service manager's view -----------------------------------------------------------------
def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ExecMainCode: the CLD_* code as systemctl show prints it (a number; a name on some versions); 0 - nothing ran yet.
_EXIT_CODES = {'1': 'exited', '2': 'killed', '3': 'dumped', 'exited': 'exited', 'killed': 'killed', 'dumped': 'dumped'}


def systemd_state(props):
    """A manager-neutral state from ``systemctl show`` properties (_service_systemd.parse_systemctl_show)."""
    active = props.get('ActiveState') or 'unknown'
    sub = props.get('SubState') or ''
    if props.get('LoadState') == 'not-found':
        status = 'not-found'
    elif active == 'active' and sub in ('running', 'exited'):
        status = 'running'
    elif active == 'activating' and sub == 'auto-restart':
        status = 'restarting'
    elif active in ('activating', 'reloading'):
        status = 'starting'
    elif active in ('failed', 'inactive', 'deactivating'):
        status = 'stopped'
    else:
        status = 'unknown'
    return {'status': status, 'restarts': _int(props.get('NRestarts')), 'main_pid': _int(props.get('MainPID')) or None,
            'detail': '%s (%s)' % (active, sub) if sub else active,
            # How the last main process ended: ExecMainCode 1 exited, 2 killed, 3 dumped (CLD_* codes; systemd's
            # `show` prints the number), ExecMainStatus the exit status or the signal.
            'exit_code': _EXIT_CODES.get(props.get('ExecMainCode') or ''),
            'exit_status': _int(props.get('ExecMainStatus')), 'oom_killed': None}


def docker_state(inspect):
    """A manager-neutral state from one ``docker inspect`` object (never reads Config.Env)."""
    state = inspect.get('State') or {}
    raw = state.get('Status') or 'unknown'
    status = {'running': 'running', 'restarting': 'restarting', 'created': 'starting',
              'exited': 'stopped', 'dead': 'stopped', 'paused': 'stopped'}.get(raw, 'unknown')
    oom = state.get('OOMKilled')
    return {'status': status, 'restarts': _int(inspect.get('RestartCount')), 'main_pid': _int(state.get('Pid')) or None,
            'detail': raw, 'exit_code': 'exited' if raw in ('exited', 'dead') else None,
            'exit_status': _int(state.get('ExitCode')), 'oom_killed': oom if isinstance(oom, bool) else None}


def oom_evidence(state):
    """Why the manager's own view says the service was killed for memory, or None.

    Docker's ``State.OOMKilled``; a main process killed by SIGKILL (the kernel's OOM killer on a Jetson, where
    nothing else sends SIGKILL during a start-up); a main process that exited 137, as ``docker run`` does when its
    container is killed by SIGKILL (NVIDIA's systemd recipe runs vLLM that way).
    """
    if not state or state.get('status') not in ('stopped', 'restarting', 'not-found', 'unknown'):
        return None
    if state.get('oom_killed') is True:
        return 'Docker: the container was killed for memory (State.OOMKilled true, exit code %s)' % state.get('exit_status')
    code, status = state.get('exit_code'), state.get('exit_status')
    if code == 'killed' and status == 9:
        return 'the main process was killed by SIGKILL (ExecMainCode=killed, ExecMainStatus=9): the OOM killer'
    if code == 'exited' and status == 137:
        return ('the main process exited with status 137 (128 + SIGKILL, as docker run does when its container is '
                'killed by the OOM killer)')
    return None


# --- waiting ----------------------------------------------------------------------------------------
def probe(endpoint, model, limit=None):
    """(healthy, what) for one look at the server: /health 200 and ``model`` listed by /v1/models.

    ``limit``: seconds the whole look may take (both exchanges), whatever the endpoint's own deadlines; a server that
    trickles its answer is cut off then.
    """
    until = None if limit is None else time.monotonic() + limit

    def bounded():
        return endpoint if until is None else endpoint.within(until - time.monotonic())
    try:
        status, _body = bounded().call('GET', '/health')
    except EndpointError as exc:
        return False, '%s' % exc
    if status != 200:
        return False, 'GET /health answered HTTP %d' % status
    try:
        models = bounded().get_json('/v1/models')
    except EndpointError as exc:
        return False, '%s' % exc
    data = models.get('data') if isinstance(models, dict) else None
    ids = [item.get('id') for item in data if isinstance(item, dict)] if isinstance(data, list) else []
    if model and model not in ids:
        return False, '/v1/models lists %s, not %s' % (json.dumps(ids[:10]), json.dumps(model))
    return True, 'GET /health answered 200 and /v1/models lists %s' % json.dumps(model or (ids[0] if ids else None))


def wait_healthy(endpoint, model, read_state, read_log, timeout, interval=2.0, max_restarts=0,
                 grace=20.0, clock=time.monotonic, sleep=time.sleep):
    """Poll until healthy, an early exit, a crash loop or the timeout; returns a result dict.

    ``read_state()`` returns a manager-neutral state (see systemd_state / docker_state) or None when
    the manager cannot be asked; ``read_log()`` returns the service's log since the start (text).
    ``grace``: seconds a stopped service is given before it counts as an early exit (a restart
    that has just been requested may still show the previous stop).
    """
    start = clock()
    deadline = start + timeout
    first_restarts = None
    last_state = None
    last_probe = None
    polls = 0
    while True:
        polls += 1
        # A look never outlasts the wait: a server that trickles bytes is cut off at the deadline.
        healthy, last_probe = probe(endpoint, model, limit=max(0.0, deadline - clock()))
        state = read_state() if read_state else None
        if state is not None:
            last_state = state
            if first_restarts is None:
                first_restarts = state.get('restarts')
        if healthy:
            return _result(True, None, None, last_probe, last_state, start, clock, polls, first_restarts)
        elapsed = clock() - start
        if state is not None:
            restarts = state.get('restarts')
            if (restarts is not None and first_restarts is not None and restarts - first_restarts > max_restarts) or \
                    (state['status'] == 'restarting' and max_restarts == 0):
                return _failed('crash_loop', read_log, last_probe, state, start, clock, polls, first_restarts)
            if state['status'] in ('stopped', 'not-found') and elapsed >= min(grace, timeout):
                return _failed('early_exit', read_log, last_probe, state, start, clock, polls, first_restarts)
        if clock() >= deadline:
            return _failed('timeout', read_log, last_probe, last_state, start, clock, polls, first_restarts)
        sleep(max(0.0, min(interval, deadline - clock())))


def _result(healthy, kind, evidence, probe_text, state, start, clock, polls, first_restarts):
    restarts = state.get('restarts') if state else None
    return {
        'healthy': healthy,
        'failure': kind,
        'evidence': evidence,
        'probe': probe_text,
        'state': state,
        'restarts_during_wait': (restarts - first_restarts) if restarts is not None and first_restarts is not None else None,
        'elapsed_s': round(clock() - start, 1),
        'polls': polls,
    }


def _failed(how, read_log, probe_text, state, start, clock, polls, first_restarts):
    """Name the failure from the log when it says why; else by how the wait ended."""
    log = read_log() if read_log else ''
    kind, evidence = classify_log(log)
    if kind is None:
        evidence = oom_evidence(state)
        kind = 'oom' if evidence else how
        evidence = evidence or last_error_line(log)
    return _result(False, kind, evidence, probe_text, state, start, clock, polls, first_restarts)


def make_endpoint(base_url, api_key=None, timeout=10.0, deadline=60.0):
    return Endpoint(base_url, api_key=api_key, timeout=timeout, deadline=deadline)
