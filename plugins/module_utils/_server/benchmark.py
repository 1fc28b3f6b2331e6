# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of the vllm_benchmark module (private to this collection).

Nothing here touches the network: option validation, the SSE parser and per-request
timing record, vLLM's metric definitions, Prometheus parsing and speculative-decoding
deltas, workload (prompt) generation over an injected tokenizer, and result assembly.

The definitions follow vLLM's own ``vllm bench serve`` (files vllm/benchmarks/serve.py and
vllm/benchmarks/lib/endpoint_request_func.py of the vLLM repository, v0.32, not of this one):

* TTFT: time from just before the POST to the first SSE ``data:`` message with choices.
* ITL: time between consecutive messages with choices (per chunk, not per token).
* E2EL (latency): time from just before the POST to the last message with choices.
* TPOT: (latency - ttft) / (output_tokens - 1), only for output_tokens > 1.
* output_tokens: ``usage.completion_tokens`` of the final usage chunk.
* duration: from just before the first measured request to the end of the last one;
  output throughput = sum(output_tokens) / duration, request throughput = completed / duration.
* Percentiles: numpy's default (linear interpolation); medians as numpy.median.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import math
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._errors import BenchmarkError
from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.devices import is_max_performance
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import loads
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import (  # pylint: disable=unused-import
    REQUEST_DEADLINE_MAX, OptionError, check_endpoint_options, check_integer, check_number, cut, echo, normalise_endpoint)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._stats import mean, median, percentile  # pylint: disable=unused-import

SKILL = 'jetson_llm.vllm.vllm_benchmark'
DATASETS = ('builtin', 'random', 'file')
#: Rough tokens per English word, used only when the server has no /tokenize endpoint.
TOKENS_PER_WORD = 1.3
#: How many error messages a run keeps.
MAX_ERRORS = 5
#: Mean prompt length may differ from input_len by this fraction before we warn.
PROMPT_LEN_TOLERANCE = 0.10


class StreamError(Exception):
    """The SSE stream of one request was malformed or reported an error."""


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

#: Bounds of the counts (each is checked before anything is built or sent).
LIMITS = {
    'concurrency': (1, 256),        # requests in flight at one level
    'concurrency_levels': (1, 16),  # levels in one run
    'num_prompts': (1, 10000),
    'warmup_prompts': (0, 1000),
    'input_len': (1, 131072),       # tokens
    'output_len': (1, 131072),      # tokens
    'seed': (0, 2 ** 32 - 1),
}
#: Longest model id and container label accepted.
NAME_MAX_CHARS = 512


#: The derived request_deadline of a streamed completion (benchmark_deadline): generous against the slowest Jetson
#: (an Orin Nano decodes several tokens a second per request even at concurrency 8, and prefills a 2048-token
#: prompt in seconds), and bounded, so a server that sends keep-alive comments and never a token ends the run.
DEADLINE_FLOOR_S = 120.0
DEADLINE_PER_OUTPUT_TOKEN_S = 1.0
DEADLINE_PER_INPUT_TOKEN_S = 0.02


def benchmark_deadline(input_len, output_len):
    """The request_deadline vllm_benchmark uses when none is given: floor + output x 1 s + input x 0.02 s."""
    return min(REQUEST_DEADLINE_MAX,
               DEADLINE_FLOOR_S + DEADLINE_PER_OUTPUT_TOKEN_S * output_len + DEADLINE_PER_INPUT_TOKEN_S * input_len)


def _check_int(p, name):
    low, high = LIMITS[name]
    p[name] = check_integer(name, p.get(name), low, high)


def check_options(params):
    """Validate the module's options; return a normalised copy. Raises BenchmarkError.

    ``params`` is the AnsibleModule params dict (types already converted by Ansible). Every
    count is bounded (LIMITS), every float must be finite, and messages show values truncated.
    """
    p = dict(params)
    derive_deadline = p.get('request_deadline') is None
    try:
        p.update(check_endpoint_options(p))
        conc = p.get('concurrency')
        low, high = LIMITS['concurrency_levels']
        if not isinstance(conc, list) or not low <= len(conc) <= high:
            raise BenchmarkError('concurrency must be a list of %d to %d positive integers, e.g. [1, 8]; got %s'
                                 % (low, high, echo(conc)))
        seen = set()
        low, high = LIMITS['concurrency']
        for c in conc:
            if isinstance(c, bool) or not isinstance(c, int) or not low <= c <= high:
                raise BenchmarkError('concurrency must hold integers from %d to %d only; %s is not allowed (got %s)'
                                     % (low, high, echo(c), echo(conc)))
            if c in seen:
                raise BenchmarkError('concurrency lists %d twice (%s); give each level once' % (c, echo(conc)))
            seen.add(c)
        for name in ('num_prompts', 'warmup_prompts', 'input_len', 'output_len', 'seed'):
            _check_int(p, name)
        p['temperature'] = check_number('temperature', p.get('temperature'), minimum=0, allow_none=True,
                                        hint=' (0 = greedy) or unset for the server default')
        p['max_failed_ratio'] = check_number('max_failed_ratio', p.get('max_failed_ratio'), minimum=0, maximum=1,
                                             hint=' (0 = any failed request fails the module)')
        if derive_deadline:
            p['request_deadline'] = benchmark_deadline(p['input_len'], p['output_len'])
    except OptionError as exc:
        raise BenchmarkError('%s' % (exc,))
    if p.get('dataset') not in DATASETS:
        raise BenchmarkError('dataset must be one of %s; got %s' % (', '.join(DATASETS), echo(p.get('dataset'))))
    if p['dataset'] == 'file' and not p.get('prompts_file'):
        raise BenchmarkError('dataset=file needs prompts_file (a JSONL file on the target, one {"prompt": "..."} per line)')
    if p['dataset'] != 'file' and p.get('prompts_file'):
        raise BenchmarkError('prompts_file is only used with dataset=file (dataset is %s); remove it or set dataset: file'
                             % (echo(p['dataset']),))
    for name, what in (('model', 'a served model id (see GET /v1/models) or left unset'),
                       ('container', 'a label such as dustynv/vllm:0.20-r36.4 or left unset')):
        value = p.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > NAME_MAX_CHARS:
            raise BenchmarkError('%s must be %s, 1 to %d characters; got %s' % (name, what, NAME_MAX_CHARS, echo(value)))
    return p


def option_warnings(p):
    """Warnings that follow from the options alone."""
    warnings = []
    if p['output_len'] == 1:
        warnings.append('output_len is 1: TPOT and ITL need at least 2 output tokens and are reported as null.')
    if not p.get('ignore_eos'):
        warnings.append('ignore_eos is false: requests may stop before output_len tokens, so runs with different '
                        'outputs are not comparable token for token.')
    return warnings


# --------------------------------------------------------------------------------------------
# SSE parsing and the per-request record
# --------------------------------------------------------------------------------------------

class SSEParser:
    """Incremental Server-Sent-Events parser over bytes.

    ``feed(data)`` returns the data payloads (str) of the events completed by ``data``.
    Events end with a blank line; lines end with LF, CRLF or CR; comment lines (":...")
    and fields other than ``data`` are ignored; several data lines are joined with LF.
    """

    def __init__(self):
        self._buf = b''

    def feed(self, data):
        buf = self._buf + data if self._buf else data
        hold = b''
        if b'\r' in buf:
            if buf.endswith(b'\r'):
                buf, hold = buf[:-1], b'\r'
            buf = buf.replace(b'\r\n', b'\n').replace(b'\r', b'\n')
        if b'\n\n' not in buf:
            self._buf = buf + hold
            return []
        events = buf.split(b'\n\n')
        self._buf = events.pop() + hold
        out = []
        for event in events:
            if event.startswith(b'data: ') and b'\n' not in event:
                out.append(event[6:].decode('utf-8'))
                continue
            lines = []
            for line in event.split(b'\n'):
                if not line or line.startswith(b':'):
                    continue
                field, _sep, value = line.partition(b':')
                if value.startswith(b' '):
                    value = value[1:]
                if field == b'data':
                    lines.append(value)
            if lines:
                out.append(b'\n'.join(lines).decode('utf-8'))
        return out

    def pending(self):
        """True when bytes of an unfinished event are buffered."""
        return bool(self._buf.strip(b'\n'))


def _error_text(data):
    err = data.get('error')
    if isinstance(err, dict):
        return err.get('message') or json.dumps(err, sort_keys=True)
    if err:
        return '%s' % (err,)
    if data.get('object') == 'error':
        return data.get('message') or json.dumps(data, sort_keys=True)
    return None


#: The largest num_spec_tokens a per-request speculative metrics object may report (vLLM's histogram has K + 1 bins).
MAX_REQUEST_SPEC_TOKENS = 64
#: The largest count a per-request speculative metrics object may report (far above any one request's tokens).
MAX_REQUEST_SPEC_COUNT = 10 ** 9


def request_spec_metrics(value):
    """(counts, None) or (None, problem) from a response's ``metrics.speculative_decoding`` object.

    vLLM 0.29+ started with ``--per-request-spec-decode-metrics summary`` (or ``detailed``) reports, for each
    single-sequence request, its own verify steps and draft tokens (vllm#48915; ``SpeculativeDecodingMetrics``
    of vllm/entrypoints/generate/base/protocol.py, built by ``RequestSpecDecodeMetrics.to_dict`` in
    vllm/v1/metrics/stats.py): ``acceptance_histogram[j]`` counts the verify steps that accepted exactly j draft
    tokens (K + 1 bins, the bonus token excluded), ``num_spec_steps`` is their sum, ``num_accepted_draft_tokens``
    is sum(j * histogram[j]) and ``num_draft_tokens`` the tokens proposed. Those identities are checked, so a
    server that lies is caught; the derived rates the server also sends are recomputed here, not trusted.
    counts = {steps, accepted, drafted, k, histogram}.
    """
    if not isinstance(value, dict):
        return None, 'metrics.speculative_decoding is %s, not an object' % (echo(value, 40),)
    counts = {}
    for key, name in (('steps', 'num_spec_steps'), ('accepted', 'num_accepted_draft_tokens'),
                      ('drafted', 'num_draft_tokens'), ('k', 'num_spec_tokens')):
        number = value.get(name)
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_REQUEST_SPEC_COUNT:
            return None, ('metrics.speculative_decoding.%s is %s, not an integer from 0 to %d'
                          % (name, echo(number, 40), MAX_REQUEST_SPEC_COUNT))
        counts[key] = number
    if not 1 <= counts['k'] <= MAX_REQUEST_SPEC_TOKENS:
        return None, ('metrics.speculative_decoding.num_spec_tokens is %d, not from 1 to %d'
                      % (counts['k'], MAX_REQUEST_SPEC_TOKENS))
    histogram = value.get('acceptance_histogram')
    if not isinstance(histogram, list) or len(histogram) != counts['k'] + 1 or any(
            isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_REQUEST_SPEC_COUNT for n in histogram):
        return None, ('metrics.speculative_decoding.acceptance_histogram is %s, not %d counts (num_spec_tokens + 1)'
                      % (echo(histogram, 60), counts['k'] + 1))
    if sum(histogram) != counts['steps']:
        return None, ('metrics.speculative_decoding: the histogram counts %d verify steps, num_spec_steps says %d'
                      % (sum(histogram), counts['steps']))
    accepted = sum(j * n for j, n in enumerate(histogram))
    if accepted != counts['accepted']:
        return None, ('metrics.speculative_decoding: the histogram accepts %d draft tokens, num_accepted_draft_tokens '
                      'says %d' % (accepted, counts['accepted']))
    if not counts['accepted'] <= counts['drafted'] <= counts['steps'] * counts['k']:
        return None, ('metrics.speculative_decoding: %d accepted of %d drafted tokens in %d steps of at most %d is '
                      'not possible' % (counts['accepted'], counts['drafted'], counts['steps'], counts['k']))
    counts['histogram'] = list(histogram)
    return counts, None


def token_count_problem(name, value, maximum=None, minimum=0):
    """None, or a sentence saying why ``value`` is not a usable token count (an int in [minimum, maximum])."""
    if isinstance(value, bool) or not isinstance(value, int):
        return '%s is %s (a JSON %s), not a whole number of tokens' % (
            name, echo(value, 40), {'str': 'string', 'float': 'number with a fraction', 'NoneType': 'null',
                                    'list': 'array', 'dict': 'object'}.get(type(value).__name__, type(value).__name__))
    if value < minimum:
        return '%s is %d; it must be at least %d' % (name, value, minimum)
    if maximum is not None and value > maximum:
        return ('%s is %d, more than the max_tokens %d the request asked for (a server that ignores max_tokens, or '
                'a wrong count): refusing to count it' % (name, value, maximum))
    return None


class RequestRecord:
    """Timing of one streamed completion, built exactly as vLLM's request function does.

    ``start`` is perf_counter() taken just before the request was sent; ``feed(data, t)``
    takes the bytes received at perf_counter() time ``t``. ``finish()`` decides success.
    ``max_tokens`` (when known) bounds the usage.completion_tokens the server may report.
    """

    __slots__ = ('start', 'ttft', 'itl', 'latency', 'output_tokens', 'prompt_tokens', 'success',
                 'error', 'done', 'chunks', '_last', '_parser', 'text_chars', 'max_tokens', 'received', 'usage_seen',
                 'spec', 'spec_problem')

    def __init__(self, start, max_tokens=None):
        self.start = start
        self.ttft = None
        self.itl = []
        self.latency = None
        self.output_tokens = None
        self.prompt_tokens = None
        self.success = False
        self.error = None
        self.done = False
        self.chunks = 0
        self.text_chars = 0
        self.max_tokens = max_tokens
        self.received = 0
        self.usage_seen = False
        self.spec = None          # this request's own speculative counts (request_spec_metrics), when the server sent them
        self.spec_problem = None  # why the server's per-request speculative metrics were not usable
        self._last = start
        self._parser = SSEParser()

    def progress(self):
        """What arrived so far, for messages about a stream that broke off."""
        return '%d token chunk(s), %d byte(s) of the stream had arrived' % (self.chunks, self.received)

    def feed(self, data, t):
        """Consume received bytes; raise StreamError on malformed or error events."""
        self.received += len(data)
        try:
            payloads = self._parser.feed(data)
        except UnicodeDecodeError as exc:
            raise StreamError('malformed SSE stream: invalid UTF-8 (%s)' % (exc,))
        for payload in payloads:
            if self.done:
                continue
            if payload == '[DONE]':
                self.done = True
                continue
            try:
                message = loads(payload, 'the message', max_bytes=len(payload) + 1, finite=False)
            except ValueError as exc:
                raise StreamError('malformed SSE stream: a data message is not JSON (%s): %s' % (exc, echo(payload)))
            if not isinstance(message, dict):
                raise StreamError('malformed SSE stream: a data message is not a JSON object: %s' % (echo(payload),))
            err = _error_text(message)
            if err is not None:
                raise StreamError('the server reported an error in the stream: %s' % (cut(err),))
            choices = message.get('choices')
            if choices:
                if self.ttft is None:
                    self.ttft = t - self.start
                else:
                    self.itl.append(t - self._last)
                self._last = t
                self.chunks += 1
                first = choices[0] if isinstance(choices, list) else None
                if isinstance(first, dict) and isinstance(first.get('text'), str):
                    self.text_chars += len(first['text'])
            else:
                usage = message.get('usage')
                if usage is None:
                    continue
                if not isinstance(usage, dict):
                    raise StreamError('malformed SSE stream: "usage" is %s, not an object' % (echo(usage, 40),))
                self.usage_seen = True
                self.output_tokens = usage.get('completion_tokens')
                if usage.get('prompt_tokens') is not None:
                    self.prompt_tokens = usage.get('prompt_tokens')
                metrics = message.get('metrics')
                if metrics is not None and not isinstance(metrics, dict):
                    self.spec, self.spec_problem = None, '"metrics" is %s, not an object' % (echo(metrics, 40),)
                elif metrics is not None and metrics.get('speculative_decoding') is not None:
                    self.spec, self.spec_problem = request_spec_metrics(metrics['speculative_decoding'])

    def finish(self):
        """Mark the request complete (end of body reached). Returns self."""
        if self.ttft is None:
            self.fail('the stream ended without any token chunk (no data message with choices; %s)' % self.progress())
        elif not self.done:
            self.fail('truncated SSE stream: the response ended without "data: [DONE]" (%s)' % self.progress())
        elif self._parser.pending():
            self.fail('malformed SSE stream: unterminated event at the end of the response')
        elif not self.usage_seen:
            self.fail('truncated SSE stream: no usage chunk with completion_tokens (the module sends '
                      'stream_options.include_usage; is this a vLLM OpenAI-compatible server?)')
        else:
            problem = (token_count_problem('usage.completion_tokens', self.output_tokens, self.max_tokens, minimum=1)
                       or (token_count_problem('usage.prompt_tokens', self.prompt_tokens)
                           if self.prompt_tokens is not None else None))
            if problem:
                self.fail('the server reported an invalid token count: %s' % problem)
            else:
                self.latency = self._last - self.start
                self.success = True
        return self

    def fail(self, error):
        self.success = False
        self.error = error
        return self


# --------------------------------------------------------------------------------------------
# Statistics (numpy-compatible)
# --------------------------------------------------------------------------------------------

def _ms(value):
    return None if value is None else round(value * 1000.0, 4)


def _round(value, digits=4):
    return None if value is None else round(value, digits)


#: The per-request lists of ``run['samples']`` (parallel lists, one entry per completed measured request).
SAMPLE_KEYS = ('ttft_ms', 'tpot_ms', 'output_tokens', 'latency_ms', 'start_ms', 'finish_ms')
#: Decimals of the times in ``run['samples']`` (milliseconds: 0.001 ms = 1 microsecond).
SAMPLE_DECIMALS = 3


def _sample_ms(seconds):
    return round(seconds * 1000.0, SAMPLE_DECIMALS)


def summarize_run(records, duration_s, concurrency, errors_limit=MAX_ERRORS):
    """Metrics of one measured run from its RequestRecords, with vLLM's definitions.

    Failed requests count in ``failed`` only. Values that were not measured are None.

    ``samples`` keeps what a confidence interval needs, per completed request in request order
    (parallel lists, SAMPLE_KEYS): TTFT, TPOT (None for a 1-token output, as vLLM leaves it
    undefined), output tokens, end-to-end latency, and the start and finish (last token chunk)
    offsets from the start of the first measured request; times in ms, SAMPLE_DECIMALS decimals.
    Parallel lists name each field once, so a request costs about 60 bytes of JSON.
    """
    samples = dict((key, []) for key in SAMPLE_KEYS)
    origin = min(rec.start for rec in records) if records else 0.0
    ttfts, itls, tpots, e2els = [], [], [], []
    total_output = 0
    total_input = 0
    input_known = 0
    completed = 0
    errors = []
    for rec in records:
        if not rec.success:
            if rec.error and rec.error not in errors and len(errors) < errors_limit:
                errors.append(rec.error)
            continue
        completed += 1
        out = rec.output_tokens
        total_output += out
        if rec.prompt_tokens is not None:
            total_input += rec.prompt_tokens
            input_known += 1
        tpot = (rec.latency - rec.ttft) / (out - 1) if out > 1 else None
        if tpot is not None:
            tpots.append(tpot)
        itls.extend(rec.itl)
        ttfts.append(rec.ttft)
        e2els.append(rec.latency)
        samples['ttft_ms'].append(_sample_ms(rec.ttft))
        samples['tpot_ms'].append(None if tpot is None else _sample_ms(tpot))
        samples['output_tokens'].append(out)
        samples['latency_ms'].append(_sample_ms(rec.latency))
        samples['start_ms'].append(_sample_ms(rec.start - origin))
        samples['finish_ms'].append(_sample_ms(rec.start + rec.latency - origin))
    failed = len(records) - completed
    have_duration = completed > 0 and duration_s is not None and duration_s > 0
    return {
        'concurrency': concurrency,
        'completed': completed,
        'failed': failed,
        'errors': errors,
        'duration_s': _round(duration_s, 6) if completed else None,
        'total_input_tokens': total_input if completed and input_known == completed else None,
        'total_output_tokens': total_output if completed else None,
        'throughput_tok_s': _round(total_output / duration_s) if have_duration else None,
        'request_throughput': _round(completed / duration_s, 6) if have_duration else None,
        'ttft_ms_p50': _ms(median(ttfts)),
        'ttft_ms_p99': _ms(percentile(ttfts, 99)),
        'ttft_ms_mean': _ms(mean(ttfts)),
        'itl_ms_p50': _ms(median(itls)),
        'itl_ms_p99': _ms(percentile(itls, 99)),
        'itl_ms_mean': _ms(mean(itls)),
        'tpot_ms_p50': _ms(median(tpots)),
        'tpot_ms_p99': _ms(percentile(tpots, 99)),
        'tpot_ms_mean': _ms(mean(tpots)),
        'e2e_latency_ms_p50': _ms(median(e2els)),
        'e2e_latency_ms_p99': _ms(percentile(e2els, 99)),
        'e2e_latency_ms_mean': _ms(mean(e2els)),
        'samples': samples,
    }


# A stream whose tokens arrive faster than this per token was not streamed to the client as it was
# generated: 10 us per token is 100 000 tokens/s for one request, beyond any LLM server. It is what a
# client starved of CPU sees (the kernel buffers the whole stream; one read returns it), or a server
# that does not stream. Such a request's TPOT is ~0 and its TTFT is its whole latency.
STARVED_TPOT_MS = 0.01


def starved_requests(run):
    """(starved, with_tpot): requests of a run whose tokens all arrived at once, and requests with a TPOT."""
    tpots = [value for value in (run.get('samples') or {}).get('tpot_ms') or [] if value is not None]
    return sum(1 for value in tpots if value < STARVED_TPOT_MS), len(tpots)


def starvation_problem(run, endpoint_url):
    """(warning or None, failure or None) for a run with requests whose tokens arrived all at once.

    Half or more of them makes the p50 metrics describe the client's starvation, not the server:
    the run fails (a measurement that is not one is an error, not a number to decide on).
    """
    starved, total = starved_requests(run)
    if not starved:
        return None, None
    text = ('%d of %d requests at concurrency %d received all their tokens at once (TPOT under %s ms, TTFT = their '
            'whole latency): the benchmark client on the target was starved of CPU, or %s does not stream'
            % (starved, total, run['concurrency'], STARVED_TPOT_MS, endpoint_url))
    if 2 * starved >= total:
        return None, text + '; the TPOT and TTFT figures would describe that, not the server: measure again when the ' \
                            'target\'s CPU is not saturated.'
    return text + '; their TPOT and TTFT are not the server\'s.', None


def run_warnings(run, input_len, output_len, ignore_eos, sized, endpoint_url=None):
    """Warnings about one run's workload (prompt/output lengths), failures and, given the endpoint's URL,
    a few starved requests (starvation_problem; half or more fail the run instead)."""
    warnings = []
    c = run['concurrency']
    if run['completed'] and run['total_input_tokens'] is not None and sized:
        mean_in = run['total_input_tokens'] / run['completed']
        if abs(mean_in - input_len) > PROMPT_LEN_TOLERANCE * input_len:
            warnings.append('concurrency %d: the server counted %.1f prompt tokens per request on average (usage.prompt_tokens), '
                            'more than %d%% away from input_len %d.' % (c, mean_in, int(PROMPT_LEN_TOLERANCE * 100), input_len))
    if run['completed'] and ignore_eos and run['total_output_tokens'] is not None:
        mean_out = run['total_output_tokens'] / run['completed']
        if abs(mean_out - output_len) > 0.5:
            warnings.append('concurrency %d: requests produced %.1f tokens on average, not output_len %d, although ignore_eos '
                            'is set (max_model_len reached, or a server that ignores ignore_eos).' % (c, mean_out, output_len))
    if run['failed']:
        warnings.append('concurrency %d: %d of %d requests failed; first error: %s'
                        % (c, run['failed'], run['failed'] + run['completed'], run['errors'][0] if run['errors'] else 'unknown'))
    if endpoint_url is not None:
        starved_warning, _failure = starvation_problem(run, endpoint_url)
        if starved_warning:
            warnings.append(starved_warning)
    return warnings


# --------------------------------------------------------------------------------------------
# Prometheus text and speculative-decoding deltas
# --------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$')
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')

SPEC_DRAFTS = 'vllm:spec_decode_num_drafts_total'
SPEC_DRAFT_TOKENS = 'vllm:spec_decode_num_draft_tokens_total'
SPEC_ACCEPTED = 'vllm:spec_decode_num_accepted_tokens_total'
SPEC_PER_POS = 'vllm:spec_decode_num_accepted_tokens_per_pos_total'
GEN_TOKENS = 'vllm:generation_tokens_total'
PROMPT_TOKENS = 'vllm:prompt_tokens_total'
REQUEST_SUCCESS = 'vllm:request_success_total'
RUNNING = 'vllm:num_requests_running'
WAITING = 'vllm:num_requests_waiting'


def _unescape(value):
    return value.replace('\\"', '"').replace('\\n', '\n').replace('\\\\', '\\')


def parse_prometheus(text):
    """Parse Prometheus text exposition into {name: [(labels dict, float value)]}.

    Comments, unparsable lines and non-finite values (NaN, +Inf) are skipped.
    """
    samples = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, _braces, label_text, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        if not math.isfinite(number):  # vLLM's counters and gauges are finite; NaN/Inf would reach the result
            continue
        labels = {}
        if label_text:
            for lm in _LABEL.finditer(label_text):
                labels[lm.group(1)] = _unescape(lm.group(2))
        samples.setdefault(name, []).append((labels, number))
    return samples


def metric_sum(samples, name):
    """Sum of a metric over all its label sets; None when absent."""
    if name not in samples:
        return None
    return math.fsum(v for _labels, v in samples[name])


def snapshot(samples):
    """The counters and gauges the benchmark reads from one /metrics scrape."""
    per_pos = None
    if SPEC_PER_POS in samples:
        per_pos = {}
        for labels, value in samples[SPEC_PER_POS]:
            try:
                pos = int(labels.get('position'))
            except (TypeError, ValueError):
                continue
            per_pos[pos] = per_pos.get(pos, 0.0) + value
    return {
        'drafts': metric_sum(samples, SPEC_DRAFTS),
        'draft_tokens': metric_sum(samples, SPEC_DRAFT_TOKENS),
        'accepted_tokens': metric_sum(samples, SPEC_ACCEPTED),
        'per_pos': per_pos,
        'generation_tokens': metric_sum(samples, GEN_TOKENS),
        'prompt_tokens': metric_sum(samples, PROMPT_TOKENS),
        'request_success': metric_sum(samples, REQUEST_SUCCESS),
        'running': metric_sum(samples, RUNNING),
        'waiting': metric_sum(samples, WAITING),
    }


def _int(value):
    return int(round(value))


def spec_decode_delta(before, after):
    """Speculative-decoding stats between two snapshots, or None.

    None when the server exposes no spec-decode counters (it does not speculate), or when
    no draft token was proposed in between.
    acceptance_rate = d(accepted)/d(draft_tokens) (a fraction, vLLM prints it x100);
    acceptance_length = 1 + d(accepted)/d(drafts);
    per_position_acceptance[i] = d(accepted at position i)/d(drafts).
    """
    if before is None or after is None:
        return None
    keys = ('drafts', 'draft_tokens', 'accepted_tokens')
    if any(before[k] is None or after[k] is None for k in keys):
        return None
    d_drafts = after['drafts'] - before['drafts']
    d_draft_tokens = after['draft_tokens'] - before['draft_tokens']
    d_accepted = after['accepted_tokens'] - before['accepted_tokens']
    if d_draft_tokens <= 0 or d_drafts <= 0:
        return None
    per_position = []
    pos_before = before.get('per_pos') or {}
    pos_after = after.get('per_pos') or {}
    for pos in sorted(set(pos_before) | set(pos_after)):
        b = pos_before.get(pos, 0.0)
        a = pos_after.get(pos, b)
        per_position.append(round((a - b) / d_drafts, 6))
    return {
        'acceptance_rate': round(d_accepted / d_draft_tokens, 6),
        'acceptance_length': round(1 + d_accepted / d_drafts, 6),
        'draft_tokens': _int(d_draft_tokens),
        'accepted_tokens': _int(d_accepted),
        'drafts': _int(d_drafts),
        'per_position_acceptance': per_position,
    }


def request_spec_decode(records):
    """(spec_decode, problem, reported) from the completed requests' own speculative metrics.

    ``reported`` is how many completed requests carried ``metrics.speculative_decoding`` (0: the server was not
    started with ``--per-request-spec-decode-metrics``, predates it, or does not speculate). The result is usable
    only when every completed request carried a valid object (``problem`` is None and ``reported`` equals the
    completed requests); then ``spec_decode`` has spec_decode_delta's keys over exactly this run's requests, whatever
    other traffic the server had, or is None when none of them drafted (a batch-size range with K = 0 honoured).
    per_position_acceptance[i] is the share of verify steps that accepted more than i draft tokens (the histogram's
    tail), as vLLM's per-position counter divided by its drafts; ``request_acceptance_rate_mean`` is the mean of
    the requests' own acceptance rates (each request counts once, however long; vllm#42690).
    """
    done = [rec for rec in records if rec.success]
    problems = [rec.spec_problem for rec in done if rec.spec_problem]
    reported = sum(1 for rec in done if rec.spec is not None)
    if problems:
        return None, problems[0], reported
    if reported == 0:
        return None, None, 0
    if reported < len(done):
        return None, ('%d of %d completed requests carried no metrics.speculative_decoding'
                      % (len(done) - reported, len(done))), reported
    steps = sum(rec.spec['steps'] for rec in done)
    drafted = sum(rec.spec['drafted'] for rec in done)
    accepted = sum(rec.spec['accepted'] for rec in done)
    if steps <= 0 or drafted <= 0:
        return None, None, reported
    width = max(len(rec.spec['histogram']) for rec in done) - 1
    tails = [0] * width
    for rec in done:
        hist = rec.spec['histogram']
        for pos in range(min(width, len(hist) - 1)):
            tails[pos] += sum(hist[pos + 1:])
    rates = [rec.spec['accepted'] / float(rec.spec['drafted']) for rec in done if rec.spec['drafted'] > 0]
    return {
        'acceptance_rate': round(accepted / float(drafted), 6),
        'acceptance_length': round(1 + accepted / float(steps), 6),
        'draft_tokens': drafted,
        'accepted_tokens': accepted,
        'drafts': steps,
        'per_position_acceptance': [round(tail / float(steps), 6) for tail in tails],
        'request_acceptance_rate_mean': round(math.fsum(rates) / len(rates), 6) if rates else None,
        'requests': reported,
        'source': 'requests',
    }, None, reported


#: The counts both sources of speculative statistics give.
SPEC_COUNT_KEYS = ('drafts', 'draft_tokens', 'accepted_tokens')


def choose_spec_decode(records, counters):
    """(spec_decode, warning): the run's speculative statistics from its own requests when the server reported them
    for every request, else from the /metrics counter deltas ``counters`` (spec_decode_delta's result).

    The requests' own counts cannot exceed the server's counters, which count at least those requests: when they
    do, the server contradicts itself, the counters are used and the warning says so. When both are there, the
    counters' figures ride along as ``server_counters`` (more there than in the requests: other traffic).
    """
    from_requests, problem, reported = request_spec_decode(records)
    if counters is not None:
        counters = dict(counters, source='server_counters')
    if problem:
        return counters, ('the per-request speculative metrics were not usable (%s): spec_decode comes from the '
                          "server's /metrics counters" % (problem,))
    if not reported:
        return counters, None
    if from_requests is None:
        return None, None  # every request said it drafted nothing: other traffic's drafts are not this run's
    if counters is not None:
        over = [key for key in SPEC_COUNT_KEYS if from_requests[key] > counters[key]]
        if over:
            return counters, ('the requests report more speculative work than the server counted (%s): the server '
                              "contradicts itself; spec_decode comes from its /metrics counters"
                              % ', '.join('%s %d > %d' % (key, from_requests[key], counters[key]) for key in over))
        from_requests['server_counters'] = dict((key, counters[key]) for key in SPEC_COUNT_KEYS)
    return from_requests, None


def polluted_what(run):
    """What polluted counters affect in a run: the request-level statistics do not come from them."""
    spec = run.get('spec_decode')
    if isinstance(spec, dict) and spec.get('source') == 'requests':
        return "the pollution check comes from /metrics; spec_decode comes from the run's own requests"
    return 'spec_decode and the pollution check come from /metrics'


def busy_reason(before):
    """A sentence when the server already had requests in flight, else None."""
    if before is None:
        return None
    busy = (before.get('running') or 0) + (before.get('waiting') or 0)
    if busy > 0:
        return '%d request(s) were already running or waiting on the server when the run started' % _int(busy)
    return None


def counters_settled(before, after, run):
    """True when the server's counters account for at least what this run produced.

    vLLM updates /metrics right after it streams the outputs; a scrape just after the
    last request can be a few milliseconds early, so the caller re-scrapes until this holds.
    """
    if before is None or after is None:
        return True
    need = run.get('total_output_tokens') or 0
    if before.get('generation_tokens') is None or after.get('generation_tokens') is None:
        return True
    return after['generation_tokens'] - before['generation_tokens'] >= need


def pollution(before, after, run, max_tokens_per_failed, input_per_failed):
    """Decide whether other traffic may have moved the counters during a run.

    Returns (polluted, reasons): polluted is None when /metrics could not be read.
    """
    if before is None or after is None:
        return None, []
    reasons = []
    reason = busy_reason(before)
    if reason:
        reasons.append(reason)
    failed = run.get('failed') or 0
    checks = (
        ('generation_tokens', run.get('total_output_tokens') or 0, failed * max_tokens_per_failed, 'generated tokens'),
        ('prompt_tokens', run.get('total_input_tokens'), failed * input_per_failed, 'prompt tokens'),
        ('request_success', run.get('completed') or 0, failed, 'finished requests'),
    )
    for key, ours, slack, label in checks:
        if ours is None or before.get(key) is None or after.get(key) is None:
            continue
        delta = after[key] - before[key]
        if delta > ours + slack + 0.5:
            reasons.append('the server counted %d %s during the run, this run accounts for %d'
                           % (_int(delta), label, ours))
    return bool(reasons), reasons


# --------------------------------------------------------------------------------------------
# Workload
# --------------------------------------------------------------------------------------------

def prompt_set_id(texts):
    """sha256 hex of the JSON array of prompt texts, in send order."""
    data = json.dumps(list(texts), ensure_ascii=False, separators=(',', ':'))
    return hashlib.sha256(data.encode('utf-8')).hexdigest()


def parse_prompts_jsonl(text, source):
    """Parse a prompts file: one JSON object per line with "prompt" (str) and optional "output_len" (int >= 1).

    Blank lines are skipped. Returns [(prompt, output_len or None)]. Raises BenchmarkError
    naming the file and line.
    """
    prompts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = loads(line, 'the line', max_bytes=len(line) + 1, finite=False)
        except ValueError as exc:
            raise BenchmarkError('prompts_file %s line %d is not valid JSON (%s); each line must be an object such as '
                                 '{"prompt": "...", "output_len": 128}' % (source, number, exc))
        if not isinstance(obj, dict):
            raise BenchmarkError('prompts_file %s line %d is a JSON %s, not an object with a "prompt" key'
                                 % (source, number, type(obj).__name__))
        prompt = obj.get('prompt')
        if not isinstance(prompt, str) or not prompt.strip():
            raise BenchmarkError('prompts_file %s line %d has no non-empty string "prompt"' % (source, number))
        out = obj.get('output_len')
        if out is not None and (isinstance(out, bool) or not isinstance(out, int) or out < 1):
            raise BenchmarkError('prompts_file %s line %d: output_len must be an integer >= 1; got %s'
                                 % (source, number, echo(out)))
        unknown = sorted(set(obj) - set(('prompt', 'output_len')))
        if unknown:
            raise BenchmarkError('prompts_file %s line %d has unknown keys %s; allowed: prompt, output_len'
                                 % (source, number, ', '.join(unknown)))
        prompts.append((prompt, out))
    if not prompts:
        raise BenchmarkError('prompts_file %s holds no prompts (expected one JSON object per line)' % (source,))
    return prompts


def fit_token_ids(tokenizer, ids, target, rng, vocab_size, max_retry=10):
    """vLLM's gen_prompt_decode_to_target_len over the server's tokenizer.

    Decode ``ids`` to text, re-encode, then pad with random ids or truncate until the
    re-encoded text has ``target`` tokens (at most ``max_retry`` adjustments).
    Returns (text, token_count).
    """
    remain = max_retry
    while True:
        text = tokenizer.detokenize(ids)
        ids = tokenizer.tokenize(text)
        if remain <= 0 or len(ids) == target:
            break
        if len(ids) < target:
            ids = ids + [rng.randrange(vocab_size) for _i in range(target - len(ids))]
        else:
            ids = ids[:target]
        remain -= 1
    return text, len(ids)


def random_prompt(rng, index, target, tokenizer=None, vocab_size=None, words=None):
    """One prompt of vLLM's random dataset: a run of consecutive token ids from a random offset.

    With a tokenizer: (offset + index + j) % vocab_size for j < target, decoded and fitted to
    ``target`` tokens. Without: ``target / TOKENS_PER_WORD`` random words (approximate).
    Returns (text, token_count or None).
    """
    if tokenizer is not None:
        offset = rng.randrange(vocab_size)
        ids = [(offset + index + j) % vocab_size for j in range(target)]
        return fit_token_ids(tokenizer, ids, target, rng, vocab_size)
    count = max(1, int(round(target / TOKENS_PER_WORD)))
    return ' '.join(rng.choice(words) for _i in range(count)), None


def builtin_prompt(rng, task, context, target, tokenizer=None, max_retry=10):
    """A realistic prompt of ``target`` tokens: other prompts as context, then ``task`` at the end.

    Context texts are prepended (separated by blank lines) until the text is long enough,
    then the text is cut from the front to ``target`` tokens, so the task and its answer cue
    stay intact whenever they fit. Without a tokenizer the same is done on words
    (``target / TOKENS_PER_WORD`` words; approximate). Returns (text, token_count or None).
    """
    pool = list(context)
    rng.shuffle(pool)
    if tokenizer is None:
        want = max(1, int(round(target / TOKENS_PER_WORD)))
        words = task.split()
        i = 0
        while len(words) < want and pool:
            words = pool[i % len(pool)].split() + words
            i += 1
        return ' '.join(words[-want:]), None
    text = task
    ids = tokenizer.tokenize(text)
    chars_per_token = max(1.0, len(text) / max(1, len(ids)))
    i = 0
    for _attempt in range(max_retry + 1):
        if len(ids) < target:
            need_chars = (target - len(ids)) * chars_per_token * 1.2 + 64
            added = 0
            while added < need_chars and pool:
                piece = pool[i % len(pool)]
                i += 1
                text = piece + '\n\n' + text
                added += len(piece) + 2
            ids = tokenizer.tokenize(text)
            if len(ids) < target:
                continue
        if len(ids) == target:
            break
        text = tokenizer.detokenize(ids[-target:])
        ids = tokenizer.tokenize(text)
        if len(ids) == target:
            break
    return text, len(ids)


def probe_vocab_size(is_token, known, limit=1 << 24):
    """Size of the id range [0, n) that decodes to text, found by doubling then bisection.

    ``is_token(id)`` says whether an id decodes to text; ``known`` is an id that does (from
    tokenizing a sample). Tokenizers put special and padding ids at the top of the range,
    where they decode to nothing, so the answer is the regular vocabulary (an estimate when
    a tokenizer has undecodable ids in the middle of its range).
    """
    lo = max(0, int(known))
    hi = max(2 * lo, lo + 1, 2)
    while is_token(hi):
        lo = hi
        if hi >= limit:
            return hi + 1
        hi = min(hi * 2, limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if is_token(mid):
            lo = mid
        else:
            hi = mid
    return lo + 1


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------

IDENTITY_KEYS = ('sku', 'sku_label', 'generation', 'product_line', 'variant', 'l4t', 'jetpack', 'power_mode')


def identity_warnings(identity):
    """Warnings about the device state: a known power mode that is not MAXN/MAXN_*."""
    identity = identity or {}
    mode = identity.get('power_mode')
    not_max = identity.get('max_performance') is False
    if mode and identity.get('max_performance') is None:
        not_max = is_max_performance(mode) is False
    if mode and not_max:
        return ['The Jetson power mode is %s, not MAXN/MAXN_*: results are not comparable with MAXN figures '
                '(set the maximum mode with nvpmodel -m before benchmarking).' % (mode,)]
    return []


def assemble(p, identity, model, vllm_version, set_id, runs, warnings):
    """The ``benchmark`` result (the Jetson benchmark contract, extended).

    Every key of the contract is there with its meaning unchanged; the contract's readers take
    the keys they know by name (recommend.py reads ``sku``), so the extensions sit beside them,
    as ``*_mean``, ``completed`` and ``spec_decode`` already do. ``runs[].samples`` (per-request
    values, see summarize_run) is one such extension and is written to output_file too: the
    speculative_decoding role reuses a stored baseline file for later verdicts, and a verdict
    needs the samples to compute its confidence intervals.
    """
    identity = identity or {}
    result = {
        'skill': SKILL,
        'runtime': 'vllm',
        'model': model,
        'endpoint': p['endpoint'],
        'container': p.get('container'),
        'vllm_version': vllm_version,
        'config': {
            'input_len': p['input_len'],
            'output_len': p['output_len'],
            'num_prompts': p['num_prompts'],
            'warmup_prompts': p['warmup_prompts'],
            'dataset': p['dataset'],
            'prompt_set_id': set_id,
            'concurrency': list(p['concurrency']),
            'temperature': p.get('temperature'),
            'ignore_eos': bool(p.get('ignore_eos')),
            'seed': p['seed'],
        },
        'runs': runs,
        'warnings': list(warnings),
    }
    for key in IDENTITY_KEYS:
        result[key] = identity.get(key)
    return result


def render(benchmark):
    """The output_file content: sorted keys, indent 2, trailing newline."""
    return json.dumps(benchmark, sort_keys=True, indent=2, allow_nan=False) + '\n'
