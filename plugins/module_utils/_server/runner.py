# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the vllm_benchmark workload against a live server (private to this collection).

Standard library only: one thread per concurrent request slot pulling from a shared list
(vLLM's semaphore over the request list), one keep-alive http.client connection per slot
(like aiohttp's connector), perf_counter() taken just before each POST and for every
received chunk of the SSE stream. The metric definitions live in _benchmark.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import contextlib
import http.client
import json
import random
import re
import sys
import threading
import time

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import benchmark as bm
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import prompts as _prompts
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import sequential as _sequential
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import cut, echo
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.http import (
    STALE_ERRORS, DeadlineExceeded, Endpoint, EndpointError, connection_is_stale, describe_exception, error_detail, timeout_hint)


COMPLETIONS = '/v1/completions'
READ_SIZE = 65536
#: Thread switch interval while timing (seconds); Python's default 5 ms would let a busy
#: thread delay another thread's timestamps.
SWITCH_INTERVAL = 0.0005


# --------------------------------------------------------------------------------------------
# Preflight
# --------------------------------------------------------------------------------------------

def _unusable(endpoint, exc, what):
    if exc.status in (401, 403):
        if endpoint.api_key:
            return ('The vLLM endpoint %s rejected the api_key given (HTTP %d on %s): set api_key to the key the server '
                    'was started with (--api-key or VLLM_API_KEY).' % (endpoint.base_url, exc.status, what))
        return ('The vLLM endpoint %s requires an API key (HTTP %d on %s): set api_key to the key the server was started '
                'with (--api-key or VLLM_API_KEY).' % (endpoint.base_url, exc.status, what))
    if exc.status is not None:
        return ('The vLLM endpoint %s cannot be benchmarked: %s. Is it a vLLM OpenAI-compatible server (vllm serve)?'
                % (endpoint.base_url, exc))
    return 'Cannot reach the vLLM endpoint %s: %s.' % (endpoint.base_url, exc)


def preflight(endpoint, model):
    """Check the server and pick the model. Returns {model, max_model_len, vllm_version, models}."""
    try:
        listing = endpoint.get_json('/v1/models')
    except EndpointError as exc:
        raise bm.BenchmarkError(_unusable(endpoint, exc, 'GET /v1/models'))
    cards = model_cards(endpoint, listing)
    ids = [m['id'] for m in cards]
    chosen = model if model else ids[0]
    if chosen not in ids:
        raise bm.BenchmarkError('Model %s is not served by the vLLM endpoint %s; it serves: %s. Set model to one of '
                                'these ids (the --served-model-name), or leave it unset for the first one.'
                                % (echo(chosen), endpoint.base_url, cut(', '.join(ids), 400)))
    card = cards[ids.index(chosen)]
    max_model_len = card.get('max_model_len')
    version = None
    try:
        answer = endpoint.get_json('/version')
        if isinstance(answer, dict) and isinstance(answer.get('version'), str) and answer['version'].strip():
            version = cut(answer['version'].strip(), 64)
    except EndpointError:
        version = None
    length, note = model_len(max_model_len)
    if note:
        note = ('The vLLM endpoint %s gives model %s a max_model_len of %s, %s: input_len + output_len is not checked '
                'against it.' % (endpoint.base_url, echo(chosen), echo(max_model_len, 40), note))
    return {'model': chosen, 'models': ids, 'vllm_version': version, 'max_model_len': length,
            'max_model_len_warning': note}


MAX_MODEL_LEN_LIMIT = 10 ** 9  # far above any context length; a larger count is a server that lies
_DECIMAL = re.compile(r'^[0-9]{1,10}\Z')


def model_len(value):
    """(max_model_len as an int or None, why it is unusable or None) from a /v1/models card.

    vLLM sends an integer; a decimal string of one ("4096") is read as that integer, as the Ansible way reads numeric
    strings; a missing value says nothing; anything else (a bool, a float, 0, a word, a huge count) is unusable.
    """
    if value is None:
        return None, None
    if isinstance(value, str) and _DECIMAL.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        return None, 'not an integer'
    if not 0 < value <= MAX_MODEL_LEN_LIMIT:
        return None, 'not between 1 and %d' % MAX_MODEL_LEN_LIMIT
    return value, None


def model_cards(endpoint, listing):
    """The model entries of a GET /v1/models answer, checked: {"data": [{"id": "<str>", ...}, ...]}."""
    def refuse(what):
        return bm.BenchmarkError('The vLLM endpoint %s answered GET /v1/models with %s (answer: %s); a vLLM server answers '
                                 '{"object": "list", "data": [{"id": "<model>", ...}]}. Is it a vLLM OpenAI-compatible '
                                 'server, still starting?' % (endpoint.base_url, what, cut(json.dumps(listing), 200)))
    if not isinstance(listing, dict):
        raise refuse('a JSON %s, not an object' % type(listing).__name__)
    data = listing.get('data')
    if not isinstance(data, list):
        raise refuse('"data" that is %s, not a list' % echo(data, 40))
    if not data:
        raise refuse('an empty model list')
    for entry in data:
        if not isinstance(entry, dict):
            raise refuse('a model entry that is %s, not an object' % echo(entry, 40))
        ident = entry.get('id')
        if not isinstance(ident, str) or not ident.strip():
            raise refuse('a model id that is %s, not a non-empty string' % echo(ident, 40))
    return data


# --------------------------------------------------------------------------------------------
# The server's tokenizer
# --------------------------------------------------------------------------------------------

class ServerTokenizer:
    """vLLM's /tokenize and /detokenize endpoints for one model (one keep-alive connection)."""

    def __init__(self, endpoint, model):
        self.endpoint = endpoint
        self.model = model
        self.calls = 0
        self._conn = None

    def _post(self, path, body):
        self.calls += 1
        for attempt in (0, 1):
            if self._conn is None or connection_is_stale(self._conn):
                self.close()
                try:
                    self._conn = self.endpoint.connect()
                except (OSError, http.client.HTTPException) as exc:
                    raise EndpointError(self.endpoint.scrub('POST %s%s failed: %s' % (
                        self.endpoint.base_url, path, describe_exception(exc))))
            try:
                return self.endpoint.post_json(path, body, conn=self._conn)
            except EndpointError as exc:
                self.close()
                if not (exc.stale and attempt == 0):
                    raise
        raise AssertionError('unreachable')

    def tokenize(self, text, add_special_tokens=False):
        answer = self._post('/tokenize', {'model': self.model, 'prompt': text, 'add_special_tokens': add_special_tokens})
        tokens = answer.get('tokens') if isinstance(answer, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                                                   for t in tokens):
            raise EndpointError('POST %s/tokenize answered without a "tokens" list of token ids' % self.endpoint.base_url,
                                status=200)
        return tokens

    def detokenize(self, ids):
        answer = self._post('/detokenize', {'model': self.model, 'tokens': list(ids)})
        text = answer.get('prompt') if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise EndpointError('POST %s/detokenize answered without a "prompt" string' % self.endpoint.base_url,
                                status=200)
        return text

    def is_token(self, token_id):
        """True when the id decodes to some text (a regular, in-vocabulary token)."""
        try:
            return bool(self.detokenize([token_id]))
        except EndpointError as exc:
            if exc.status is not None:
                return False
            raise

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


SAMPLE_TEXT = ('The quick brown fox jumps over the lazy dog while engineers benchmark speculative decoding on a small '
               'Jetson board; 0123456789 ({[<>]}) !?')


def probe_tokenizer(endpoint, model):
    """Find out whether /tokenize works; returns (ServerTokenizer or None, info dict).

    info: num_special (tokens the tokenizer adds, e.g. BOS), vocab_size (the id range that
    decodes to text, found with /detokenize), reason (why there is no tokenizer).
    """
    tok = ServerTokenizer(endpoint, model)
    try:
        with_special = tok.tokenize(SAMPLE_TEXT, add_special_tokens=True)
        plain = tok.tokenize(SAMPLE_TEXT, add_special_tokens=False)
    except EndpointError as exc:
        tok.close()
        if exc.status is None:
            raise bm.BenchmarkError('Cannot reach the vLLM endpoint %s: %s.' % (endpoint.base_url, exc))
        return None, {'reason': '%s' % exc, 'num_special': 0, 'vocab_size': None}
    if not plain:
        tok.close()
        return None, {'reason': '/tokenize returned no tokens for a sample text', 'num_special': 0, 'vocab_size': None}
    num_special = max(0, len(with_special) - len(plain))
    try:
        tok.detokenize(plain)  # sizing needs both directions: /tokenize alone is not enough
    except EndpointError as exc:
        tok.close()
        if exc.status is None:
            raise bm.BenchmarkError('Cannot reach the vLLM endpoint %s: %s.' % (endpoint.base_url, exc))
        return None, {'reason': '/tokenize answers but %s' % (exc,), 'num_special': 0, 'vocab_size': None}
    try:
        vocab = bm.probe_vocab_size(tok.is_token, max(plain))
    except EndpointError as exc:
        tok.close()
        raise bm.BenchmarkError('Cannot reach the vLLM endpoint %s while probing its tokenizer: %s.' % (endpoint.base_url, exc))
    return tok, {'reason': None, 'num_special': num_special, 'vocab_size': vocab}


# --------------------------------------------------------------------------------------------
# Workload
# --------------------------------------------------------------------------------------------

def build_prompts(p, c, phase, count, tok, tokinfo, file_prompts):
    """Prompts [(text, max_tokens)] for concurrency ``c`` and ``phase`` ('measured' or 'warmup').

    Seeded by (seed, dataset, c, phase) so a concurrency level gets the same prompts whatever
    other levels are run, and warm-up prompts never repeat measured ones (prefix caching).
    """
    out_len = p['output_len']
    if p['dataset'] == 'file':
        # measured prompts start at the first line; warm-ups use the lines before it, cyclically
        start = 0 if phase == 'measured' else (-count) % len(file_prompts)
        chosen = [file_prompts[(start + i) % len(file_prompts)] for i in range(count)]
        return [(text, n or out_len) for text, n in chosen]
    rng = random.Random('%s:%s:%d:%s' % (p['seed'], p['dataset'], c, phase))
    target = p['input_len'] - tokinfo['num_special']
    prompts = []
    if p['dataset'] == 'random':
        words = None if tok is not None else _prompts.words()
        for i in range(count):
            text, _n = bm.random_prompt(rng, i, target, tok, tokinfo['vocab_size'], words)
            prompts.append((text, out_len))
        return prompts
    entries = _prompts.texts()
    order = list(range(len(entries)))
    rng.shuffle(order)
    for i in range(count):
        task_index = order[i % len(order)]
        context = [entries[j] for j in order if j != task_index]
        text, _n = bm.builtin_prompt(rng, entries[task_index], context, target, tok)
        prompts.append((text, out_len))
    return prompts


def request_body(p, model, prompt, max_tokens):
    """The /v1/completions body, as vllm bench serve sends it."""
    body = {'model': model, 'prompt': prompt, 'repetition_penalty': 1.0, 'max_tokens': max_tokens,
            'stream': True, 'stream_options': {'include_usage': True}}
    if p.get('ignore_eos'):
        body['ignore_eos'] = True
    if p.get('temperature') is not None:
        body['temperature'] = p['temperature']
    return json.dumps(body, allow_nan=False).encode('utf-8')


# --------------------------------------------------------------------------------------------
# Streaming and load
# --------------------------------------------------------------------------------------------

class Slot:
    """One concurrent request slot and its keep-alive connection."""

    def __init__(self):
        self.conn = None

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # pylint: disable=broad-except
                pass
            self.conn = None


def stream_completion(endpoint, slot, body, headers, max_tokens=None):
    """Send one streamed completion on the slot's connection; return its RequestRecord.

    The request ends within endpoint.deadline seconds (request_deadline) whatever the server
    does; each silent network operation within endpoint.timeout (request_timeout).
    """
    if slot.conn is not None and connection_is_stale(slot.conn):
        slot.drop()
    rec = bm.RequestRecord(time.perf_counter(), max_tokens)
    deadline_at = rec.start + endpoint.deadline
    resp = None
    for attempt in (0, 1):
        reused = slot.conn is not None
        try:
            if slot.conn is None:
                slot.conn = endpoint.connect(deadline_at)
            endpoint.arm(slot.conn, deadline_at)
            slot.conn.request('POST', COMPLETIONS, body=body, headers=headers)
            endpoint.arm(slot.conn, deadline_at)
            resp = slot.conn.getresponse()
            break
        except STALE_ERRORS as exc:
            slot.drop()
            if reused and attempt == 0:
                continue  # the server closed an idle keep-alive connection: reconnect once
            return rec.fail(endpoint.scrub('POST %s failed: %s' % (COMPLETIONS, describe_exception(exc))))
        except (OSError, http.client.HTTPException, DeadlineExceeded) as exc:
            slot.drop()
            return rec.fail(endpoint.scrub('POST %s failed: %s%s' % (
                COMPLETIONS, _describe(endpoint, exc, deadline_at), timeout_hint(endpoint, exc))))
    if resp.status != 200:
        try:
            data = endpoint.read_body(resp, slot.conn, deadline_at, limit=READ_SIZE * 16)
        except (OSError, http.client.HTTPException, DeadlineExceeded):
            data = b''
            slot.drop()
        if resp.will_close:
            slot.drop()
        detail = error_detail(data)
        return rec.fail(endpoint.scrub('HTTP %d %s from POST %s%s' % (
            resp.status, cut('%s' % (resp.reason,), 80), COMPLETIONS, (': ' + detail) if detail else '')))
    sock = slot.conn.sock
    timeout = endpoint.timeout
    try:
        read1 = resp.read1
        perf = time.perf_counter
        feed = rec.feed
        while True:
            data = read1(READ_SIZE)
            t = perf()
            if not data:
                break
            feed(data, t)
            left = deadline_at - t
            if left < timeout:  # near the deadline: bound the next read by what is left of it
                if left <= 0:
                    raise DeadlineExceeded('did not finish within request_deadline=%gs' % endpoint.deadline)
                sock.settimeout(left)
        resp.read()  # at the end of the body: marks the response closed so the connection can be reused
        rec.finish()
    except bm.StreamError as exc:
        slot.drop()
        return rec.fail(endpoint.scrub('%s' % exc))
    except (OSError, http.client.HTTPException, DeadlineExceeded) as exc:
        slot.drop()
        return rec.fail(endpoint.scrub('reading the stream of POST %s failed: %s (%s)%s' % (
            COMPLETIONS, _describe(endpoint, exc, deadline_at), rec.progress(), timeout_hint(endpoint, exc))))
    if resp.will_close:
        slot.drop()
    elif sock is not None and sock.gettimeout() != timeout:
        sock.settimeout(timeout)
    return rec


def _describe(endpoint, exc, deadline_at):
    """describe_exception, saying when it was the request deadline that ran out."""
    if isinstance(exc, OSError) and 'timed out' in describe_exception(exc) and time.perf_counter() >= deadline_at - 0.01:
        return 'did not finish within request_deadline=%gs' % endpoint.deadline
    return describe_exception(exc)


def run_requests(endpoint, slots, bodies, concurrency, max_tokens=None):
    """Run ``bodies`` with at most ``concurrency`` in flight; return (records, duration_s).

    ``max_tokens`` (a list like ``bodies``) bounds each request's usage.completion_tokens.
    The duration runs from just before the first request to the end of the last one.
    """
    records = [None] * len(bodies)
    headers = endpoint.headers(json_body=True)
    lock = threading.Lock()
    indexes = iter(range(len(bodies)))
    go = threading.Event()

    def worker(slot):
        go.wait()
        while True:
            with lock:
                i = next(indexes, None)
            if i is None:
                return
            try:
                records[i] = stream_completion(endpoint, slot, bodies[i], headers,
                                               max_tokens[i] if max_tokens else None)
            except Exception as exc:  # pylint: disable=broad-except
                slot.drop()
                records[i] = bm.RequestRecord(time.perf_counter()).fail('internal error: %s' % endpoint.scrub(describe_exception(exc)))

    threads = [threading.Thread(target=worker, args=(slots[k],)) for k in range(min(concurrency, len(bodies)))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    start = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    duration = time.perf_counter() - start
    for i, rec in enumerate(records):
        if rec is None:
            records[i] = bm.RequestRecord(start).fail('internal error: the request was never run')
    return records, duration


# --------------------------------------------------------------------------------------------
# /metrics
# --------------------------------------------------------------------------------------------

def scrape(endpoint):
    """(snapshot, None) or (None, reason) from GET /metrics."""
    try:
        text = endpoint.get_text('/metrics')
    except EndpointError as exc:
        return None, '%s' % exc
    return bm.snapshot(bm.parse_prometheus(text)), None


def scrape_before(endpoint, attempts=10, pause=0.1):
    """Scrape before a run; wait briefly while requests (e.g. our warm-ups) are still in flight."""
    snap, reason = scrape(endpoint)
    for _i in range(attempts):
        if snap is None or bm.busy_reason(snap) is None:
            break
        time.sleep(pause)
        snap, reason = scrape(endpoint)
    return snap, reason


def scrape_after(endpoint, before, run, attempts=40, pause=0.05):
    """Scrape after a run; re-scrape briefly until the counters include this run's tokens."""
    snap, reason = scrape(endpoint)
    for _i in range(attempts):
        if snap is None or bm.counters_settled(before, snap, run):
            break
        time.sleep(pause)
        snap, reason = scrape(endpoint)
    return snap, reason


# --------------------------------------------------------------------------------------------
# The whole benchmark
# --------------------------------------------------------------------------------------------

def summary_line(run):
    def num(value, fmt):
        return 'n/a' if value is None else fmt % value
    text = 'c=%d: %s tok/s, TPOT p50 %s ms, TTFT p50 %s ms, ITL p50 %s ms, %d/%d ok' % (
        run['concurrency'], num(run['throughput_tok_s'], '%.1f'), num(run['tpot_ms_p50'], '%.2f'),
        num(run['ttft_ms_p50'], '%.1f'), num(run['itl_ms_p50'], '%.2f'), run['completed'], run['completed'] + run['failed'])
    spec = run.get('spec_decode')
    if spec:
        text += ', acceptance %.1f%% (length %.2f)' % (spec['acceptance_rate'] * 100, spec['acceptance_length'])
    return text


def open_endpoint(p, identity):
    """Preflight and tokenizer probe of a benchmark. Returns (endpoint, model, vllm_version, warnings, tok, tokinfo).

    Raises BenchmarkError when the endpoint cannot be benchmarked at all. The caller closes ``tok``.
    """
    endpoint = Endpoint(p['endpoint'], p.get('api_key'), p['request_timeout'], p['request_deadline'])
    info = preflight(endpoint, p.get('model'))
    model = info['model']
    warnings = bm.option_warnings(p) + bm.identity_warnings(identity)
    if info['max_model_len_warning']:
        warnings.append(info['max_model_len_warning'])
    max_len = info['max_model_len']
    if p['dataset'] != 'file' and max_len and p['input_len'] + p['output_len'] > max_len:
        raise bm.BenchmarkError('input_len %d + output_len %d = %d tokens exceeds the max_model_len %d of model %s on %s; '
                                'lower input_len/output_len or start vLLM with a larger --max-model-len.'
                                % (p['input_len'], p['output_len'], p['input_len'] + p['output_len'], max_len, echo(model),
                                   endpoint.base_url))
    tok, tokinfo = None, {'num_special': 0, 'vocab_size': None, 'reason': None}
    if p['dataset'] != 'file':
        tok, tokinfo = probe_tokenizer(endpoint, model)
        if tok is None:
            warnings.append('The server has no usable /tokenize endpoint (%s): prompt lengths are approximate '
                            '(about %.1f tokens per word); the real counts are in total_input_tokens.'
                            % (tokinfo['reason'], bm.TOKENS_PER_WORD))
        elif p['input_len'] - tokinfo['num_special'] < 1:
            tok.close()
            raise bm.BenchmarkError('input_len %d leaves no room for text: the tokenizer of %s adds %d special token(s); '
                                    'use input_len > %d.' % (p['input_len'], echo(model), tokinfo['num_special'],
                                                             tokinfo['num_special']))
    return endpoint, model, info['vllm_version'], warnings, tok, tokinfo


def sized_prompts(endpoint, p, c, phase, count, tok, tokinfo, file_prompts):
    """build_prompts, with a tokenizer failure reported as a BenchmarkError."""
    try:
        return build_prompts(p, c, phase, count, tok, tokinfo, file_prompts)
    except EndpointError as exc:
        raise bm.BenchmarkError('The vLLM endpoint %s failed while the prompts were sized with its tokenizer: %s. '
                                'Retry when the server is healthy.' % (endpoint.base_url, exc))


def warm_up(endpoint, slots, p, model, c, warm, warnings):
    """Send the warm-up requests (discarded); a warning when some failed."""
    if not warm:
        return
    wrecs, _d = run_requests(endpoint, slots, [request_body(p, model, t, n) for t, n in warm], c, [n for _t, n in warm])
    wfailed = [r for r in wrecs if not r.success]
    if wfailed:
        warnings.append('concurrency %d: %d of %d warm-up requests failed (discarded); first error: %s'
                        % (c, len(wfailed), len(wrecs), wfailed[0].error))


def measure(endpoint, slots, p, model, c, measured):
    """One measured run of ``measured`` prompts at concurrency ``c``, between two /metrics scrapes.

    Returns (records, duration_s, before, after, why): the snapshots are None (and ``why`` says why) when
    /metrics could not be read.
    """
    before, why = scrape_before(endpoint)
    records, duration = run_requests(endpoint, slots, [request_body(p, model, t, n) for t, n in measured], c,
                                     [n for _t, n in measured])
    run = bm.summarize_run(records, duration, c)
    after, why_after = scrape_after(endpoint, before, run) if before is not None else (None, why)
    return records, duration, before, after, why or why_after


@contextlib.contextmanager
def _connections(p, tok):
    """One connection slot per concurrent request; whatever happens, the slots are dropped, the
    tokenizer connection is closed and the interpreter's switch interval is put back."""
    slots = [Slot() for _i in range(max(p['concurrency']))]
    old_interval = sys.getswitchinterval()
    try:
        yield slots
    finally:
        sys.setswitchinterval(old_interval)
        for slot in slots:
            slot.drop()
        if tok is not None:
            tok.close()


def run_benchmark(p, identity, file_prompts=None, log=None):
    """Run the benchmark described by validated options ``p``.

    Returns (benchmark, failure): failure is None or the sentence to fail the module with
    (the benchmark then holds the runs measured so far). Raises BenchmarkError when the
    endpoint cannot be benchmarked at all (preflight).
    """
    endpoint, model, vllm_version, warnings, tok, tokinfo = open_endpoint(p, identity)
    runs = []
    measured_texts = []
    failure = None
    metrics_warned = False
    with _connections(p, tok) as slots:
        workloads = []
        for c in p['concurrency']:
            warm = sized_prompts(endpoint, p, c, 'warmup', p['warmup_prompts'], tok, tokinfo, file_prompts)
            measured = sized_prompts(endpoint, p, c, 'measured', p['num_prompts'], tok, tokinfo, file_prompts)
            workloads.append((c, warm, measured))
            measured_texts.extend(text for text, _n in measured)
        if tok is not None:
            tok.close()
        sys.setswitchinterval(SWITCH_INTERVAL)
        for c, warm, measured in workloads:
            if log:
                log('vllm_benchmark: concurrency %d: %d warm-up + %d measured requests' % (c, len(warm), len(measured)))
            warm_up(endpoint, slots, p, model, c, warm, warnings)
            records, duration, before, after, why = measure(endpoint, slots, p, model, c, measured)
            run = bm.summarize_run(records, duration, c)
            if (before is None or after is None) and not metrics_warned:
                metrics_warned = True
                warnings.append('The server metrics could not be read (%s): spec_decode and metrics_polluted are null.'
                                % why)
            run['spec_decode'], spec_warning = bm.choose_spec_decode(records, bm.spec_decode_delta(before, after))
            if spec_warning:
                warnings.append('concurrency %d: %s.' % (c, spec_warning))
            max_out = max(n for _t, n in measured)
            polluted, reasons = bm.pollution(before, after, run, max_out, p['input_len'])
            run['metrics_polluted'] = polluted
            if polluted:
                warnings.append('concurrency %d: other traffic may have polluted the server counters (%s): %s.'
                                % (c, bm.polluted_what(run), '; '.join(reasons)))
            run['prompt_set_id'] = bm.prompt_set_id(t for t, _n in measured)
            warnings.extend(bm.run_warnings(run, p['input_len'], p['output_len'], p.get('ignore_eos'),
                                            p['dataset'] != 'file', endpoint.base_url))
            runs.append(run)
            failure = failed_too_much(run, p, endpoint)
            if failure:
                break
    benchmark = bm.assemble(p, identity, model, vllm_version, bm.prompt_set_id(measured_texts), runs,
                            warnings)
    return benchmark, failure


def failed_too_much(run, p, endpoint):
    """The failure sentence when a run is not a measurement, else None.

    Either half or more of its requests got all their tokens at once (a starved client, or a server
    that does not stream: _benchmark.starvation_problem), or more of them failed than max_failed_ratio
    allows.
    """
    _warning, starved = bm.starvation_problem(run, endpoint.base_url)
    if starved:
        return starved
    total = run['completed'] + run['failed']
    if total and run['failed'] / total > p['max_failed_ratio']:
        return ('%d of %d requests to the vLLM endpoint %s failed at concurrency %d, more than max_failed_ratio %s '
                'allows; first error: %s' % (run['failed'], total, endpoint.base_url, run['concurrency'],
                                             p['max_failed_ratio'], run['errors'][0] if run['errors'] else 'unknown'))
    return None


# --------------------------------------------------------------------------------------------
# Sequential measurement (the ``sequential`` option; the round logic is in _sequential)
# --------------------------------------------------------------------------------------------

class _RoundRunner:
    """The HTTP side of _sequential.run_rounds: warm-ups, the next prompts of each level, the result."""

    def __init__(self, endpoint, slots, p, identity, model, vllm_version, prompts, warnings):
        self.endpoint = endpoint
        self.slots = slots
        self.p = p
        self.identity = identity
        self.model = model
        self.vllm_version = vllm_version
        self.prompts = prompts
        self.warnings = warnings
        self.offset = dict((c, 0) for c in prompts)
        self.metrics_warned = False

    def warm_up(self, c):
        warm_up(self.endpoint, self.slots, self.p, self.model, c, self.prompts[c][0], self.warnings)

    def measure(self, c, count):
        chunk = self.prompts[c][1][self.offset[c]:self.offset[c] + count]
        self.offset[c] += len(chunk)
        records, duration, before, after, why = measure(self.endpoint, self.slots, self.p, self.model, c, chunk)
        if (before is None or after is None) and not self.metrics_warned:
            self.metrics_warned = True
            self.warnings.append('The server metrics could not be read (%s): spec_decode and metrics_polluted are null.'
                                 % why)
        return records, duration, before, after

    def failed_too_much(self, run):
        return failed_too_much(run, self.p, self.endpoint)

    def benchmark(self, runs, config):
        p = self.p
        warnings = list(self.warnings)
        texts = []
        for run in runs:
            used = [t for t, _n in self.prompts[run['concurrency']][1][:self.offset[run['concurrency']]]]
            texts.extend(used)
            run['prompt_set_id'] = bm.prompt_set_id(used)
            warnings.extend(bm.run_warnings(run, p['input_len'], p['output_len'], p.get('ignore_eos'),
                                            p['dataset'] != 'file', self.endpoint.base_url))
            if run.get('metrics_polluted'):
                warnings.append('concurrency %d: other traffic may have polluted the server counters (%s).'
                                % (run['concurrency'], bm.polluted_what(run)))
        # config.num_prompts: the most requests measured at one level (each level's count is in runs[].completed)
        most = max([run['completed'] + run['failed'] for run in runs] or [0])
        benchmark = bm.assemble(dict(p, num_prompts=most), self.identity, self.model, self.vllm_version,
                                bm.prompt_set_id(texts), runs, warnings)
        benchmark['config']['sequential'] = dict(config)
        return benchmark


def run_sequential(p, identity, seq, file_prompts=None, log=None):
    """Measure the candidate in rounds against the fixed baseline ``seq['baseline']`` (see _sequential).

    ``seq`` is _sequential.check_sequential's result. Each level's measured prompts continue the
    baseline's seeded sequence: its first prompts are exactly the baseline's (checked), later ones
    are new (never a repeat, so the prefix cache cannot serve them).
    Returns (benchmark, failure), the benchmark with a ``sequential`` report. Raises BenchmarkError.
    """
    base = seq['baseline']
    base_runs = dict((run['concurrency'], run) for run in base['runs'])
    base_count = base['config'].get('num_prompts')
    endpoint, model, vllm_version, warnings, tok, tokinfo = open_endpoint(p, identity)
    with _connections(p, tok) as slots:
        prompts = {}
        for c in p['concurrency']:
            shared = base_runs[c]['completed'] + base_runs[c]['failed']
            if isinstance(base_count, int) and not isinstance(base_count, bool):
                shared = base_count
            warm = sized_prompts(endpoint, p, c, 'warmup', p['warmup_prompts'], tok, tokinfo, file_prompts)
            measured = sized_prompts(endpoint, p, c, 'measured', max(seq['max_prompts'], shared), tok, tokinfo,
                                     file_prompts)
            if bm.prompt_set_id(t for t, _n in measured[:shared]) != base_runs[c]['prompt_set_id']:
                raise bm.BenchmarkError(
                    'sequential.baseline was measured with other prompts at concurrency %d than this benchmark builds '
                    '(its %d measured prompts differ from the first %d of this sequence): measure the baseline with the '
                    'same dataset, prompts_file, seed, input_len and model (tokenizer) as the candidate.'
                    % (c, shared, shared))
            prompts[c] = (warm, measured)
        if tok is not None:
            tok.close()
        sys.setswitchinterval(SWITCH_INTERVAL)
        runner = _RoundRunner(endpoint, slots, p, identity, model, vllm_version, prompts, warnings)
        benchmark, report, failure = _sequential.run_rounds(p, seq, runner, log)
    benchmark['sequential'] = report
    return benchmark, failure
