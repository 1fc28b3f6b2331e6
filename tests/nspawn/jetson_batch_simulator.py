"""SIMULATOR - Jetson continuous-batching speed simulator for vLLM (tests only; not vLLM).

Why a simulator: the batch-size-aware branch of the speculative_decoding role (tasks/batch_aware.yml)
keeps a configuration only when it speculates at concurrency 1, stops speculating at concurrency 8,
and so passes both rules. On a Jetson that is the usual case: decoding reads the weights once per
step whatever the batch, so a lone request gains from K drafted tokens, while a batch of 8 verifying
K + 1 tokens each becomes compute-bound and loses. The CPU test bed cannot show it (measured:
tests/integration/test_roles.py, docs/performance.md): with a cheap draft the planned configuration
already passes at concurrency 8, with a costly one concurrency 8 still loses with speculation off.
So this one test host runs this simulator as its vLLM. The real path (the CPU build of vLLM) keeps
its own test of the same branch; this simulator never replaces it.

It is installed in a test host as an executable named ``vllm`` (the installer adds the
``#!/usr/bin/python3`` line) and started by the serve role's unit like the real one::

    ExecStart=/opt/jetson-batch-simulator/bin/vllm serve MODEL --served-model-name NAME --port P \
              --gpu-memory-utilization 0.70 --speculative-config {"method":"draft_model",...}

What it serves is fake_vllm's HTTP interface (``/v1/completions`` streaming with usage,
``/v1/models``, ``/health``, ``/version``, ``/tokenize``, ``/detokenize``, ``/metrics`` with vLLM's
counter names, the API key from ``--api-key`` or ``VLLM_API_KEY``), driven by one engine thread that
runs steps the way vLLM's scheduler does:

* every step decodes all running requests together; a request that arrived during a step joins the
  next one (its prefill is that step's work, and its first token comes out of it);
* a step's K is the speculative configuration's ``num_speculative_tokens``, or the
  ``num_speculative_tokens_per_batch_size`` range that holds the step's batch size (vLLM's rule:
  inclusive ranges, the last one carries on); without ``--speculative-config`` K = 0;
* step time (ms) = ``target_weight_ms + target_token_ms x sum(K + 1 per decoding request)
  + prefill_token_ms x prompt tokens`` for the target, plus, when K > 0,
  ``K x (draft_weight_ms + draft_token_ms x decoding requests)`` for the draft, plus
  ``draft_prefill_token_ms x prompt tokens`` whenever a draft is configured (its KV cache is filled
  even when it does not speculate), times a random factor within ``1 +- step_jitter``;
* each drafted token is accepted with probability ``acceptance`` (per draft directory name, or
  ``default``) until the first rejection: ``1 + accepted`` tokens per request and step; the
  ``vllm:spec_decode_*`` counters count them as vLLM does.

``GET /_sim/steps`` answers how many steps ran with each batch size and K (``{"steps": {"8": {"0": 130},
"1": {"4": 40}}}``): the test reads it to see which configuration really served.

Start-up checks, as vLLM makes them: the model directory (and the draft's) must hold a config.json,
and ``num_speculative_tokens_per_batch_size`` must be a list of [low, high, K] ranges; otherwise it
prints the reason and exits 1. The speed profile is a JSON file (``--sim-config``, default
``/etc/jetson-batch-simulator.json``, or ``JETSON_BATCH_SIMULATOR_CONFIG``); every key has a default
(``PROFILE``). Only the standard library: the test host has no pip packages.
"""
import argparse
import json
import os
import queue
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import fake_vllm  # noqa: E402  pylint: disable=wrong-import-position

#: The speed profile (ms) and its defaults: a memory-bound target whose batch of 8 x (K + 1) tokens
#: turns compute-bound (c=1: +58 % tok/s with K = 4 at acceptance 0.8; c=8: -18 %).
PROFILE = {
    'target_weight_ms': 20.0,
    'target_token_ms': 4.0,
    'prefill_token_ms': 0.5,
    'draft_weight_ms': 2.0,
    'draft_token_ms': 0.8,
    'draft_prefill_token_ms': 0.05,
    'acceptance': {'default': 0.8},
    'step_jitter': 0.02,
    'startup_s': 2.0,
    'version': '0.32.0',
    'max_model_len': 1024,
    # Planted faults, for the tests of what the role does when things break (off by default): the engine dies
    # after this many steps when speculating (0: never), as a crashed vLLM engine ends its process; a start
    # without --speculative-config fails (the previous service cannot come back).
    'fault_crash_after_speculative_steps': 0,
    'fault_start_fails_without_speculation': False,
}
DEFAULT_CONFIG = '/etc/jetson-batch-simulator.json'


def fail(message):
    print('ERROR SIMULATOR: %s' % message, file=sys.stderr, flush=True)
    sys.exit(1)


def k_for(spec, batch):
    """K for a step of ``batch`` requests under a speculative config (None: no speculation)."""
    if not spec:
        return 0
    ranges = spec.get('num_speculative_tokens_per_batch_size')
    if not ranges:
        return int(spec.get('num_speculative_tokens') or 0)
    for low, high, k in ranges:
        if low <= batch <= high:
            return int(k)
    return int(ranges[-1][2]) if batch > ranges[-1][1] else 0


def check_spec(spec):
    """The reason a speculative config cannot start, or None."""
    if not isinstance(spec, dict):
        return '--speculative-config must be a JSON object'
    k = spec.get('num_speculative_tokens')
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return 'num_speculative_tokens must be a positive integer, not %r' % (k,)
    ranges = spec.get('num_speculative_tokens_per_batch_size')
    if ranges is not None:
        ok = isinstance(ranges, list) and ranges and all(
            isinstance(r, list) and len(r) == 3 and all(isinstance(v, int) and not isinstance(v, bool) for v in r)
            and 1 <= r[0] <= r[1] and 0 <= r[2] <= k for r in ranges)
        if not ok:
            return ('num_speculative_tokens_per_batch_size must be a list of [low, high, K] ranges with '
                    '1 <= low <= high and 0 <= K <= num_speculative_tokens, not %s' % json.dumps(ranges))
    draft = spec.get('model')
    if draft and not os.path.isfile(os.path.join(draft, 'config.json')):
        return 'the draft model %s has no config.json' % draft
    return None


def step_ms(profile, decoding, k, prefill_tokens, drafted):
    """The time of one step (ms, before jitter): ``decoding`` requests verifying K + 1 tokens each,
    ``prefill_tokens`` prompt tokens of joining requests, ``drafted``: a draft is configured."""
    t = (profile['target_weight_ms'] + profile['target_token_ms'] * decoding * (k + 1)
         + profile['prefill_token_ms'] * prefill_tokens)
    if k > 0 and decoding:
        t += k * (profile['draft_weight_ms'] + profile['draft_token_ms'] * decoding)
    if drafted:
        t += profile['draft_prefill_token_ms'] * prefill_tokens
    return t


class _Request:
    def __init__(self, prompt_tokens, max_tokens):
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.produced = 0
        self.out = queue.Queue()   # token counts per step, then None
        self.aborted = False


class Engine(threading.Thread):
    """The scheduler: one step at a time, all running requests together."""

    def __init__(self, sim, profile, spec, max_num_seqs):
        threading.Thread.__init__(self, daemon=True)
        self.sim = sim
        self.profile = profile
        self.spec = spec
        self.max_num_seqs = max_num_seqs
        self.rng = random.Random()
        draft = os.path.basename(os.path.normpath(spec['model'])) if spec and spec.get('model') else None
        acceptance = profile['acceptance']
        self.acceptance = float(acceptance.get(draft, acceptance.get('default', 0.8)))
        self.cond = threading.Condition()
        self.waiting = []
        self.running = []
        self.steps = {}
        self.speculative_steps = 0

    def submit(self, request):
        with self.cond:
            self.waiting.append(request)
            self.cond.notify()

    def _accepted(self, k):
        n = 0
        while n < k and self.rng.random() < self.acceptance:
            n += 1
        return n

    def run(self):
        # A dead engine would leave every stream waiting while /health still answers: end the process instead,
        # so the service fails the way a crashed vLLM engine does.
        try:
            self._loop()
        except Exception as exc:  # pylint: disable=broad-except
            print('ERROR SIMULATOR: the engine failed: %r' % (exc,), file=sys.stderr, flush=True)
            os._exit(1)

    def _loop(self):
        deadline = time.perf_counter()
        while not self.sim.stopping.is_set():
            with self.cond:
                self.running = [r for r in self.running if not r.aborted]
                while not self.waiting and not self.running:
                    self.cond.wait(0.5)
                    if self.sim.stopping.is_set():
                        return
                room = self.max_num_seqs - len(self.running)
                joining, self.waiting = self.waiting[:room], self.waiting[room:]
                decoding = list(self.running)
                self.running.extend(joining)
                batch = len(self.running)
            k = k_for(self.spec, batch)
            self.speculative_steps += 1 if self.spec else 0
            crash_after = int(self.profile['fault_crash_after_speculative_steps'])
            if crash_after and self.speculative_steps > crash_after:
                raise RuntimeError('planted fault: the engine dies after %d steps with speculation' % crash_after)
            prefill = sum(r.prompt_tokens for r in joining)
            ms = step_ms(self.profile, len(decoding), k, prefill, bool(self.spec))
            ms *= 1.0 + self.profile['step_jitter'] * (2.0 * self.rng.random() - 1.0)
            deadline = max(deadline, time.perf_counter()) + ms / 1000.0
            delay = deadline - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            drafts = draft_tokens = accepted = 0
            per_pos = [0] * max(k, 0)
            emitted = []
            for r in joining:
                emitted.append((r, 1))
            for r in decoding:
                n = 1
                if k > 0:
                    a = self._accepted(k)
                    drafts += 1
                    draft_tokens += k
                    accepted += a
                    for pos in range(a):
                        per_pos[pos] += 1
                    n += a
                emitted.append((r, min(n, r.max_tokens - r.produced)))
            finished = []
            with self.sim.lock:
                c = self.sim.counters
                c['prompt_tokens'] += prefill
                c['generation_tokens'] += sum(n for _r, n in emitted)
                c['drafts'] += drafts
                c['draft_tokens'] += draft_tokens
                c['accepted'] += accepted
                for pos, value in enumerate(per_pos):
                    if pos < len(c['per_pos']):
                        c['per_pos'][pos] += value
                by_k = self.steps.setdefault(str(batch), {})
                by_k[str(k)] = by_k.get(str(k), 0) + 1
            for r, n in emitted:
                r.produced += n
                r.out.put(n)
                if r.produced >= r.max_tokens:
                    r.out.put(None)
                    finished.append(r)
            with self.cond:
                self.running = [r for r in self.running if r not in finished]
                with self.sim.lock:
                    self.sim.counters['running'] = len(self.running)


class _Handler(fake_vllm._Handler):  # pylint: disable=protected-access
    """fake_vllm's routes; completions come from the engine, plus GET /_sim/steps."""

    engine = None

    def do_GET(self):
        if self.path == '/_sim/steps':
            with self.sim.lock:
                steps = {b: dict(ks) for b, ks in self.engine.steps.items()}
            self._json(200, {'steps': steps})
            return
        fake_vllm._Handler.do_GET(self)  # pylint: disable=protected-access

    def _completions(self, body):
        sim = self.sim
        if body.get('model') != sim.model:
            self._json(404, {'error': {'message': 'The model `%s` does not exist.' % body.get('model'),
                                       'type': 'NotFoundError', 'code': 404}})
            return
        max_tokens = body.get('max_tokens') or 16
        prompt_tokens = len(sim.encode(str(body.get('prompt', '')), True))
        if not isinstance(max_tokens, int) or max_tokens < 1 or prompt_tokens + max_tokens > sim.max_model_len:
            self._json(400, {'error': {'message': 'max_tokens %r with %d prompt tokens does not fit max_model_len %d'
                                       % (max_tokens, prompt_tokens, sim.max_model_len), 'code': 400}})
            return
        with sim.lock:
            sim.counters['completion_requests'] += 1
            number = sim.counters['completion_requests']
        request = _Request(prompt_tokens, max_tokens)
        self.engine.submit(request)
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        head = {'id': 'cmpl-%d' % number, 'object': 'text_completion', 'created': int(time.time()), 'model': sim.model}
        next_id = 3
        try:
            while True:
                n = request.out.get()
                if n is None:
                    break
                text = ''.join(' tok%d' % (3 + (next_id + j) % (sim.vocab_size - 3)) for j in range(n))
                next_id += n
                msg = dict(head, choices=[{'index': 0, 'text': text, 'logprobs': None, 'finish_reason': None,
                                           'stop_reason': None}], usage=None)
                self._chunk(b'data: ' + json.dumps(msg).encode('utf-8') + b'\n\n')
            usage = {'prompt_tokens': prompt_tokens, 'completion_tokens': request.produced,
                     'total_tokens': prompt_tokens + request.produced}
            self._chunk(b'data: ' + json.dumps(dict(head, choices=[], usage=usage)).encode('utf-8') + b'\n\n')
            self._chunk(b'data: [DONE]\n\n')
            self.wfile.write(b'0\r\n\r\n')
            with sim.lock:
                sim.counters['request_success'] += 1
        except (BrokenPipeError, ConnectionResetError):
            request.aborted = True
            self.close_connection = True


def load_profile(path):
    profile = dict(PROFILE)
    if path and os.path.exists(path):
        with open(path, encoding='utf-8') as handle:
            loaded = json.load(handle)
        unknown = sorted(set(loaded) - set(PROFILE))
        if unknown:
            fail('%s: unknown keys %s; known: %s' % (path, ', '.join(unknown), ', '.join(sorted(PROFILE))))
        profile.update(loaded)
    return profile


def parse(argv):
    parser = argparse.ArgumentParser(prog='vllm', description=__doc__.splitlines()[0])
    parser.add_argument('command', choices=['serve'])
    parser.add_argument('model')
    parser.add_argument('--served-model-name', nargs='+')
    parser.add_argument('--host', default='0.0.0.0')  # noqa: S104 (vLLM's default)
    parser.add_argument('--port', type=int, default=8000)
    parser.add_argument('--api-key')
    parser.add_argument('--speculative-config')
    parser.add_argument('--gpu-memory-utilization', type=float, default=0.9)
    parser.add_argument('--max-model-len', type=int)
    parser.add_argument('--max-num-seqs', type=int, default=256)
    parser.add_argument('--sim-config', default=os.environ.get('JETSON_BATCH_SIMULATOR_CONFIG', DEFAULT_CONFIG))
    args, _ignored = parser.parse_known_args(argv)  # --dtype, --enforce-eager, ...: nothing to simulate
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    profile = load_profile(args.sim_config)
    if not os.path.isfile(os.path.join(args.model, 'config.json')):
        fail('the model %s has no config.json' % args.model)
    spec = None
    if args.speculative_config:
        try:
            spec = json.loads(args.speculative_config)
        except ValueError as exc:
            fail('--speculative-config is not JSON: %s' % exc)
        problem = check_spec(spec)
        if problem:
            fail(problem)
    if spec is None and profile['fault_start_fails_without_speculation']:
        fail('planted fault: a start without --speculative-config fails')
    name = args.served_model_name[0] if args.served_model_name else args.model
    print('INFO SIMULATOR: jetson_batch_simulator serving %s (K by batch size: %s), not vLLM'
          % (name, json.dumps({b: k_for(spec, b) for b in (1, 2, 4, 8)})), flush=True)
    time.sleep(float(profile['startup_s']))  # loading, so a restart is not instant
    sim = fake_vllm.FakeVLLM(model=name, api_key=args.api_key or os.environ.get('VLLM_API_KEY') or None,
                             version=profile['version'], spec_k=(spec or {}).get('num_speculative_tokens'),
                             max_model_len=args.max_model_len or int(profile['max_model_len']),
                             host=args.host, port=args.port)
    engine = Engine(sim, profile, spec, args.max_num_seqs)
    handler = type('Handler', (_Handler,), {'sim': sim, 'engine': engine})
    sim._server = fake_vllm._Server((args.host, args.port), handler)  # pylint: disable=protected-access
    engine.start()
    print('INFO: Application startup complete.', flush=True)
    try:
        sim._server.serve_forever(poll_interval=0.2)  # pylint: disable=protected-access
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
