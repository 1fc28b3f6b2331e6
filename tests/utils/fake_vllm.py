"""A deterministic vLLM *simulator* written for this collection's tests (not vLLM).

It speaks the parts of vLLM's OpenAI-compatible HTTP API that vllm_benchmark uses, with
known timings and token counts, so tests can check the module's arithmetic exactly:

* POST /v1/completions (stream=true): after ``ttft`` seconds the first chunk (1 token), then
  a chunk every ``itl`` seconds carrying ``tokens_per_chunk`` tokens (the last one the
  remainder) until max_tokens, then a usage chunk ({"choices": [], "usage": {...}}) and
  ``data: [DONE]``. Chunk times are scheduled from the moment the request body was read,
  against absolute deadlines, so sleep overshoot does not accumulate. The simulator also
  records when it really wrote each chunk (``timelines``): on a loaded machine a sleep can
  wake late, and tests compare the client's figures with these recorded times.
* GET /v1/models, /version, /health, /metrics (Prometheus text with vLLM's counter names,
  including vllm:spec_decode_* when ``spec_k`` is set: each chunk after the first counts
  as one draft of ``spec_k`` tokens of which tokens_in_chunk - 1 were accepted).
* POST /tokenize and /detokenize with a toy word tokenizer: ids 0-2 are special (BOS,
  EOS, PAD; they decode to nothing), ids 3..vocab_size-1 decode to "tok<id>", any other
  whitespace-separated word encodes to a stable hash id; ids >= vocab_size decode to nothing.
* Failure modes (``mode``, applied to every ``fail_every``-th completion, or all when 0):
  ok, http500, truncated (body ends without usage/[DONE]), drop (connection closed in the
  middle of the body), no_usage, malformed (a data message that is not JSON), error_event
  (an {"error": ...} message), slow (no answer for ``slow_s``); ``tokenize=False`` makes
  /tokenize and /detokenize answer 404. With ``api_key`` set, /v1/* answers 401 without it.
  ``keepalive_timeout`` closes idle keep-alive connections (as uvicorn does after 5 s).
* Faulty servers (``fault``, for the hostile-input suite; see FAULTS for the list): streams kept
  open with SSE keep-alive comments, no answer at all, /detokenize failing, malformed
  /v1/models answers, invalid usage counts, cut streams, redirect loops, non-UTF-8 bodies,
  oversized headers, endless bodies. ``behaviour(name)`` gives the FakeVLLM arguments of a
  named behaviour (a fault or one of the failure modes above).
* ``request_spec=True`` (with ``spec_k``) adds vLLM 0.29+'s per-request ``metrics.speculative_decoding`` to the
  usage chunk, built from the same drafts the counters count (``request_spec_metrics``).
* GET /_sim/timelines returns the record of chunk write times (see ``timelines``).
* ``burst=True`` renders the whole stream at once and writes it in 64 KiB pieces (for
  measuring the client's own ceiling: the simulator then costs almost nothing).

Run standalone: ``python3 tests/utils/fake_vllm.py --port 8000 --ttft 0.05 --itl 0.01``.
"""

import argparse
import json
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SPECIAL_IDS = (0, 1, 2)
BOS = 0

#: Faulty-server behaviours (``fault=``): what the server does wrong.
FAULTS = {
    'keepalive_forever': 'completions: one token chunk, then an SSE comment ": keep-alive" every 0.2 s, forever',
    'hang_before_headers': 'completions: reads the request and never answers (no status line)',
    'detokenize_404': '/tokenize works, /detokenize answers 404',
    'detokenize_500': '/tokenize works, /detokenize answers 500',
    'tokenize_bad_tokens': '/tokenize answers tokens that are strings, not ids',
    'models_data_int': 'GET /v1/models answers {"data": 5}',
    'models_int_ids': 'GET /v1/models lists a model whose id is the integer 5',
    'models_empty_body': 'GET /v1/models answers 200 with an empty body',
    'models_non_utf8': 'GET /v1/models answers 200 with a body that is not UTF-8',
    'models_endless_body': 'GET /v1/models answers 200 and a chunked body that never ends (a byte every 0.1 s)',
    'health_trickle': 'GET /health answers 200 with a chunked body that never ends (a byte every second)',
    'models_huge_headers': 'GET /v1/models answers with a 100 000-character header line',
    'models_many_headers': 'GET /v1/models answers with 500 header lines',
    'redirect_loop': 'every request answers 302 to itself',
    'usage_too_large': 'usage.completion_tokens is 100 times the tokens streamed (above max_tokens)',
    'usage_string': 'usage.completion_tokens is a string',
    'usage_negative': 'usage.completion_tokens is -5',
    'usage_float': 'usage.completion_tokens has a fraction',
    'cut_stream': 'completions: 4 token chunks, then the connection is closed in the middle of a chunk',
    'stream_non_utf8': 'completions: a data message that is not UTF-8',
    'metrics_nan': '/metrics counters are NaN and +Inf',
    'error_detail_huge': 'completions: HTTP 500 with a 50 000-character error message',
    'spec_metrics_lie': 'speculates (K = 2) and reports per-request metrics whose histogram does not add up to '
                        'num_spec_steps',
    'spec_metrics_inflated': 'speculates (K = 2) and reports per-request metrics claiming every draft token accepted, '
                             'more than its /metrics counters count',
}
#: Faults of a speculating server (K = 2, two tokens per chunk) that reports per-request metrics.
SPEC_FAULTS = ('spec_metrics_lie', 'spec_metrics_inflated')


def behaviour(name):
    """FakeVLLM keyword arguments of a named behaviour: a FAULTS key or a failure ``mode``."""
    if name in SPEC_FAULTS:
        return {'fault': name, 'spec_k': 2, 'tokens_per_chunk': 2, 'request_spec': True}
    if name in FAULTS:
        return {'fault': name}
    if name in ('http500', 'truncated', 'drop', 'no_usage', 'malformed', 'error_event', 'slow'):
        return {'mode': name}
    raise KeyError('unknown simulator behaviour %r; known: %s' % (name, ', '.join(sorted(FAULTS))))


class FakeVLLM:
    """The simulator; configure by attributes (they are read per request)."""

    def __init__(self, model='fake-model', ttft=0.05, itl=0.01, tokens_per_chunk=1, spec_k=None,
                 api_key=None, tokenize=True, vocab_size=1000, bos=True, max_model_len=8192,
                 mode='ok', fail_every=0, slow_s=5.0, version='0.32.0', metrics=True, burst=False,
                 keepalive_timeout=None, fault=None, host='127.0.0.1', port=0, request_spec=False):
        self.model = model
        # with spec_k: the usage chunk carries metrics.speculative_decoding, as vLLM 0.29+ started with
        # --per-request-spec-decode-metrics summary (the same drafts the /metrics counters count)
        self.request_spec = request_spec
        self.ttft = ttft
        self.itl = itl
        self.tokens_per_chunk = tokens_per_chunk
        self.spec_k = spec_k
        self.api_key = api_key
        self.tokenize_enabled = tokenize
        self.vocab_size = vocab_size
        self.bos = bos
        self.max_model_len = max_model_len
        self.mode = mode
        self.fail_every = fail_every
        self.slow_s = slow_s
        self.version = version
        self.metrics_enabled = metrics
        self.burst = burst
        self.keepalive_timeout = keepalive_timeout  # close idle keep-alive connections after this (uvicorn: 5 s)
        if fault is not None and fault not in FAULTS:
            raise ValueError('unknown fault %r' % (fault,))
        self.fault = fault
        self.stopping = threading.Event()  # ends the endless behaviours when the simulator stops
        self.lock = threading.Lock()
        self.counters = {}
        self.reset_counters()
        self.completions = []  # parsed request bodies, in arrival order
        # per completion, in arrival order: {'received': t, 'chunks': [(t_written, tokens)], 'prompt': str} with
        # t = time.perf_counter() just after the request line was read / a token chunk was written
        self.timelines = []
        self.connections = 0
        self.completion_connections = 0  # connections that carried at least one completion
        self._host = host
        self._port = port
        self._server = None
        self._thread = None
        self._sockets = set()

    def request_spec_metrics(self, sizes, fault=None):
        """One request's metrics.speculative_decoding (vLLM's SpeculativeDecodingMetrics) for its chunk ``sizes``:
        each chunk after the first is one verify step that accepted its size - 1 of spec_k draft tokens."""
        k = self.spec_k
        histogram = [0] * (k + 1)
        for n in sizes[1:]:
            histogram[min(k, n - 1)] += 1
        if fault == 'spec_metrics_inflated':  # every step accepted all k: more than the counters say
            histogram = [0] * k + [sum(histogram)]
        steps = sum(histogram)
        accepted = sum(j * count for j, count in enumerate(histogram))
        drafted = steps * k
        return {'mean_acceptance_length': 1.0 + accepted / steps if steps else 1.0,
                'draft_acceptance_rate': accepted / drafted if drafted else 0.0,
                'acceptance_histogram': histogram, 'num_spec_steps': steps + (1 if fault == 'spec_metrics_lie' else 0),
                'num_accepted_draft_tokens': accepted, 'num_draft_tokens': drafted, 'num_spec_tokens': k}

    # -- lifecycle ---------------------------------------------------------------------------
    def reset_counters(self):
        with self.lock:
            self.counters = {'generation_tokens': 0, 'prompt_tokens': 0, 'request_success': 0, 'running': 0,
                             'drafts': 0, 'draft_tokens': 0, 'accepted': 0,
                             'per_pos': [0] * (self.spec_k or 0), 'completion_requests': 0}

    def start(self):
        handler = type('Handler', (_Handler,), {'sim': self})
        self._server = _Server((self._host, self._port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def url(self):
        return 'http://%s:%d' % (self._host, self.port)

    def stop(self):
        if self._server is None:
            return
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self.lock:
            socks = list(self._sockets)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- toy tokenizer -----------------------------------------------------------------------
    def encode(self, text, add_special_tokens=True):
        ids = [BOS] if (add_special_tokens and self.bos) else []
        for word in text.split():
            if word.startswith('tok') and word[3:].isdigit() and 3 <= int(word[3:]) < self.vocab_size:
                ids.append(int(word[3:]))
            else:
                ids.append(3 + zlib.crc32(word.encode('utf-8')) % (self.vocab_size - 3))
        return ids

    def decode(self, ids):
        return ' '.join('tok%d' % i for i in ids if i not in SPECIAL_IDS and 0 <= i < self.vocab_size)

    # -- expected values ---------------------------------------------------------------------
    def chunk_sizes(self, max_tokens):
        """Tokens per streamed chunk for a request of max_tokens."""
        sizes = [1]
        left = max_tokens - 1
        while left > 0:
            n = min(self.tokens_per_chunk, left)
            sizes.append(n)
            left -= n
        return sizes

    def metrics_text(self):
        c = self.counters
        labels = 'engine="0",model_name="%s"' % self.model
        lines = [
            '# HELP vllm:num_requests_running Number of requests in model execution batches.',
            '# TYPE vllm:num_requests_running gauge',
            'vllm:num_requests_running{%s} %d.0' % (labels, c['running']),
            'vllm:num_requests_waiting{%s} 0.0' % labels,
            '# TYPE vllm:generation_tokens counter',
            'vllm:generation_tokens_total{%s} %d.0' % (labels, c['generation_tokens']),
            'vllm:generation_tokens_created{%s} 1.7e+09' % labels,
            'vllm:prompt_tokens_total{%s} %d.0' % (labels, c['prompt_tokens']),
            'vllm:request_success_total{engine="0",finished_reason="length",model_name="%s"} %d.0'
            % (self.model, c['request_success']),
            'vllm:request_success_total{engine="0",finished_reason="stop",model_name="%s"} 0.0' % self.model,
        ]
        if self.spec_k:
            lines += [
                '# TYPE vllm:spec_decode_num_drafts counter',
                'vllm:spec_decode_num_drafts_total{%s} %d.0' % (labels, c['drafts']),
                'vllm:spec_decode_num_draft_tokens_total{%s} %d.0' % (labels, c['draft_tokens']),
                'vllm:spec_decode_num_accepted_tokens_total{%s} %d.0' % (labels, c['accepted']),
            ]
            for pos, value in enumerate(c['per_pos']):
                lines.append('vllm:spec_decode_num_accepted_tokens_per_pos_total{%s,position="%d"} %d.0'
                             % (labels, pos, value))
        return '\n'.join(lines) + '\n'


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # socketserver's default (5) drops bursts of new connections
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True
    sim = None  # set by FakeVLLM.start

    def setup(self):
        self.timeout = self.sim.keepalive_timeout
        BaseHTTPRequestHandler.setup(self)
        with self.sim.lock:
            self.sim._sockets.add(self.connection)
            self.sim.connections += 1

    def finish(self):
        try:
            BaseHTTPRequestHandler.finish(self)
        finally:
            with self.sim.lock:
                self.sim._sockets.discard(self.connection)

    def parse_request(self):
        # the earliest moment this side can see a request: its first line has just been read
        # (headers and body parsing, and waiting for the GIL to do it, come after)
        self.request_line_at = time.perf_counter()
        return BaseHTTPRequestHandler.parse_request(self)

    def log_message(self, *args):  # quiet
        pass

    # -- helpers ---------------------------------------------------------------------------
    def _json(self, status, obj):
        data = json.dumps(obj).encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _text(self, status, text, ctype='text/plain; version=0.0.4'):
        data = text.encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        try:
            return json.loads(raw.decode('utf-8')) if raw else {}
        except ValueError:
            return None

    def _authorised(self):
        key = self.sim.api_key
        if not key or not self.path.startswith('/v1'):
            return True
        if self.headers.get('Authorization') == 'Bearer %s' % key:
            return True
        self._json(401, {'error': 'Unauthorized'})
        return False

    def _chunk(self, data):
        self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))

    def _fault_answer(self):
        """Answer a request the faulty way when the fault concerns it; True when it was answered."""
        fault = self.sim.fault
        if fault == 'redirect_loop':
            self.send_response(302)
            self.send_header('Location', self.path)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return True
        if self.path == '/v1/models' and self.command == 'GET':
            if fault == 'models_data_int':
                self._json(200, {'object': 'list', 'data': 5})
            elif fault == 'models_int_ids':
                self._json(200, {'object': 'list', 'data': [{'id': 5, 'object': 'model', 'max_model_len': 8192}]})
            elif fault == 'models_empty_body':
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()
            elif fault == 'models_non_utf8':
                data = b'{"data": [{"id": "\xff\xfe\xfd"}]}'
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif fault == 'models_endless_body':
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Transfer-Encoding', 'chunked')
                self.end_headers()
                self._chunk(b'{"data": [')
                while not self.sim.stopping.wait(0.1):
                    self._chunk(b' ')
                    self.wfile.flush()
            elif fault == 'models_huge_headers':
                self.send_response(200)
                self.send_header('X-Padding', 'x' * 100000)
                self.send_header('Content-Length', '0')
                self.end_headers()
            elif fault == 'models_many_headers':
                self.send_response(200)
                for i in range(500):
                    self.send_header('X-Header-%d' % i, 'v')
                self.send_header('Content-Length', '0')
                self.end_headers()
            else:
                return False
            return True
        if self.path == '/health' and fault == 'health_trickle':
            self.send_response(200)
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            while not self.sim.stopping.wait(1.0):
                self._chunk(b' ')
                self.wfile.flush()
            return True
        if self.path == '/metrics' and fault == 'metrics_nan':
            self._text(200, 'vllm:num_requests_running{engine="0"} NaN\nvllm:generation_tokens_total{engine="0"} +Inf\n'
                            'vllm:spec_decode_num_drafts_total{engine="0"} NaN\n'
                            'vllm:spec_decode_num_draft_tokens_total{engine="0"} NaN\n'
                            'vllm:spec_decode_num_accepted_tokens_total{engine="0"} NaN\n')
            return True
        if self.path == '/detokenize' and fault in ('detokenize_404', 'detokenize_500'):
            if fault == 'detokenize_404':
                self._json(404, {'detail': 'Not Found'})
            else:
                self._json(500, {'error': {'message': 'simulated detokenizer failure', 'code': 500}})
            return True
        if self.path == '/tokenize' and fault == 'tokenize_bad_tokens':
            self._json(200, {'count': 2, 'max_model_len': self.sim.max_model_len, 'tokens': ['a', 'b']})
            return True
        return False

    # -- routes ----------------------------------------------------------------------------
    def do_GET(self):
        sim = self.sim
        if not self._authorised() or self._fault_answer():
            return
        if self.path == '/health':
            self._text(200, '')
        elif self.path == '/version':
            self._json(200, {'version': sim.version})
        elif self.path == '/v1/models':
            self._json(200, {'object': 'list', 'data': [{'id': sim.model, 'object': 'model', 'owned_by': 'vllm',
                                                         'root': '/models/' + sim.model, 'max_model_len': sim.max_model_len}]})
        elif self.path == '/_sim/timelines':  # the simulator's record, for benchmarks in other processes
            with sim.lock:
                timelines = [dict(tl, chunks=list(tl['chunks'])) for tl in sim.timelines]
            self._json(200, {'timelines': timelines})
        elif self.path == '/metrics' and sim.metrics_enabled:
            with sim.lock:
                text = sim.metrics_text()
            self._text(200, text)
        else:
            self._json(404, {'detail': 'Not Found'})

    def do_POST(self):
        sim = self.sim
        body = self._body()
        if not self._authorised() or self._fault_answer():
            return
        if body is None:
            self._json(400, {'error': {'message': 'invalid JSON body', 'type': 'BadRequestError', 'code': 400}})
        elif self.path in ('/tokenize', '/detokenize'):
            if not sim.tokenize_enabled:
                self._json(404, {'detail': 'Not Found'})
            elif body.get('model') not in (None, sim.model):
                self._json(404, {'error': {'message': 'The model `%s` does not exist.' % body.get('model'), 'code': 404}})
            elif self.path == '/tokenize':
                ids = sim.encode(body.get('prompt', ''), body.get('add_special_tokens', True))
                self._json(200, {'count': len(ids), 'max_model_len': sim.max_model_len, 'tokens': ids, 'token_strs': None})
            else:
                self._json(200, {'prompt': sim.decode(body.get('tokens', []))})
        elif self.path == '/v1/completions':
            self._completions(body)
        else:
            self._json(404, {'detail': 'Not Found'})

    def _completions(self, body):
        sim = self.sim
        received = self.request_line_at
        if not getattr(self, '_counted', False):
            self._counted = True
            with sim.lock:
                sim.completion_connections += 1
        timeline = {'received': received, 'chunks': [], 'prompt': body.get('prompt')}
        with sim.lock:
            sim.completions.append(body)
            sim.timelines.append(timeline)
            sim.counters['completion_requests'] += 1
            number = sim.counters['completion_requests']
        mode = sim.mode
        if sim.fail_every and number % sim.fail_every:
            mode = 'ok'
        if body.get('model') != sim.model:
            self._json(404, {'error': {'message': 'The model `%s` does not exist.' % body.get('model'),
                                       'type': 'NotFoundError', 'code': 404}})
            return
        if mode == 'http500':
            self._json(500, {'error': {'message': 'simulated engine failure', 'type': 'InternalServerError', 'code': 500}})
            return
        if mode == 'slow':
            time.sleep(sim.slow_s)
        fault = sim.fault
        if fault == 'hang_before_headers':
            sim.stopping.wait()
            self.close_connection = True
            return
        if fault == 'error_detail_huge':
            self._json(500, {'error': {'message': 'engine exploded: ' + 'x' * 50000, 'code': 500}})
            return
        max_tokens = int(body.get('max_tokens') or 16)
        prompt_tokens = len(sim.encode(body.get('prompt', ''), True))
        sizes = sim.chunk_sizes(max_tokens)
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        with sim.lock:
            sim.counters['running'] += 1
        running = [True]

        def not_running():
            with sim.lock:
                if running[0]:
                    running[0] = False
                    sim.counters['running'] -= 1

        created = int(time.time())
        head = {'id': 'cmpl-%d' % number, 'object': 'text_completion', 'created': created, 'model': sim.model}
        # render every message first (the schedule starts from `received`, rendering is not timed)
        messages = []
        next_id = 3
        for n in sizes:
            text = ''.join(' tok%d' % (3 + (next_id + k) % (sim.vocab_size - 3)) for k in range(n))
            next_id += n
            msg = dict(head, choices=[{'index': 0, 'text': text, 'logprobs': None, 'finish_reason': None,
                                       'stop_reason': None}], usage=None)
            messages.append(b'data: ' + json.dumps(msg).encode('utf-8') + b'\n\n')
        rendered = []
        try:
            for j, n in enumerate(sizes):
                data = messages[j]
                with sim.lock:
                    c = sim.counters
                    if j == 0:
                        c['prompt_tokens'] += prompt_tokens
                    c['generation_tokens'] += n
                    if sim.spec_k and j > 0:
                        c['drafts'] += 1
                        c['draft_tokens'] += sim.spec_k
                        c['accepted'] += n - 1
                        for pos in range(n - 1):
                            c['per_pos'][pos] += 1
                if sim.burst:
                    rendered.append(data)
                    continue
                if sim.ttft or sim.itl:
                    delay = received + sim.ttft + j * sim.itl - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                self._chunk(data)
                timeline['chunks'].append((time.perf_counter(), n))
                if j == 1 and mode in ('truncated', 'drop', 'malformed', 'error_event'):
                    break
                if j == 0 and fault == 'keepalive_forever':
                    while not sim.stopping.wait(0.2):
                        self._chunk(b': keep-alive\n\n')
                        self.wfile.flush()
                    return
                if j == 0 and fault == 'stream_non_utf8':
                    self._chunk(b'data: {"choices": [{"text": "\xff\xfe"}]}\n\n')
                if j == 3 and fault == 'cut_stream':
                    self.wfile.write(b'400\r\ndata: {"choi')  # a chunk announced as 1024 bytes, cut after 14
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
            if mode == 'truncated':
                self.wfile.write(b'0\r\n\r\n')
                return
            if mode == 'drop':
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if mode == 'malformed':
                self._chunk(b'data: {"choices": [{"text": "oops"\n\n')
            if mode == 'error_event':
                error = {'error': {'message': 'simulated error mid-stream', 'type': 'InternalServerError', 'code': 500}}
                self._chunk(b'data: ' + json.dumps(error).encode('utf-8') + b'\n\n')
            tail = []
            if mode not in ('no_usage', 'malformed', 'error_event'):
                usage = {'prompt_tokens': prompt_tokens, 'completion_tokens': sum(sizes),
                         'total_tokens': prompt_tokens + sum(sizes)}
                bad = {'usage_too_large': 100 * sum(sizes), 'usage_string': str(sum(sizes)), 'usage_negative': -5,
                       'usage_float': sum(sizes) + 0.5}
                if fault in bad:
                    usage['completion_tokens'] = bad[fault]
                final = dict(head, choices=[], usage=usage)
                if sim.spec_k and sim.request_spec:
                    final['metrics'] = {'speculative_decoding': sim.request_spec_metrics(sizes, fault)}
                tail.append(b'data: ' + json.dumps(final).encode('utf-8') + b'\n\n')
            tail.append(b'data: [DONE]\n\n')
            not_running()
            if mode == 'ok':
                with sim.lock:
                    sim.counters['request_success'] += 1
            if sim.burst:
                blob = b''.join(rendered + tail)
                for k in range(0, len(blob), 65536):
                    self._chunk(blob[k:k + 65536])
            else:
                for data in tail:
                    self._chunk(data)
            self.wfile.write(b'0\r\n\r\n')
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            not_running()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--model', default='fake-model')
    parser.add_argument('--ttft', type=float, default=0.05)
    parser.add_argument('--itl', type=float, default=0.01)
    parser.add_argument('--tokens-per-chunk', type=int, default=1)
    parser.add_argument('--spec-k', type=int, default=None)
    parser.add_argument('--api-key', default=None)
    parser.add_argument('--burst', action='store_true')
    args = parser.parse_args(argv)
    sim = FakeVLLM(model=args.model, ttft=args.ttft, itl=args.itl, tokens_per_chunk=args.tokens_per_chunk,
                   spec_k=args.spec_k, api_key=args.api_key, burst=args.burst, host=args.host, port=args.port).start()
    print(sim.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sim.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
