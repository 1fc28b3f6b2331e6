# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small standard-library HTTP client for vLLM's OpenAI-compatible server (private).

Persistent (keep-alive) http.client connections, JSON helpers, and error messages that
name the endpoint and the cause without ever showing the API key. Every exchange ends within
``deadline`` seconds (``request_deadline``) however the server trickles bytes, and no answer
is read beyond MAX_BODY_BYTES.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import errno
import json
import select
import socket
import ssl
import time

import http.client as httplib
from urllib.parse import urlsplit

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import loads
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.endpoint import (
    REQUEST_DEADLINE_DEFAULT, REQUEST_TIMEOUT_DEFAULT, SECRET_MASK, cut, mask_url)

#: Errors of a keep-alive connection the server closed while it was idle.
STALE_ERRORS = (httplib.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
#: Largest JSON or /metrics answer read (vLLM's /metrics is about 100 kB).
MAX_BODY_BYTES = 16 * 1024 * 1024
READ_SIZE = 65536


class DeadlineExceeded(Exception):
    """An exchange ran past its deadline (the server kept sending, or said nothing, for too long)."""


class EndpointError(Exception):
    """The endpoint could not be used. ``status`` is the HTTP status when there was one."""

    def __init__(self, message, status=None, body=None, stale=False):
        super(EndpointError, self).__init__(message)
        self.status = status
        self.body = body
        self.stale = stale  # a reused keep-alive connection the server had closed: retrying on a new one is safe


def describe_exception(exc):
    """A short sentence for a network exception."""
    if isinstance(exc, DeadlineExceeded):
        return '%s' % (exc,)
    if isinstance(exc, socket.timeout):
        return 'timed out'
    if isinstance(exc, ConnectionRefusedError):
        return 'connection refused (is the server running and listening on this address and port?)'
    if isinstance(exc, socket.gaierror):
        return 'cannot resolve the host name (%s)' % (exc.strerror or exc,)
    if isinstance(exc, ssl.SSLError):
        return 'TLS error (%s)' % (exc,)
    if isinstance(exc, httplib.IncompleteRead):
        return 'the server closed the connection in the middle of the response'
    if isinstance(exc, httplib.RemoteDisconnected):
        return 'the server closed the connection without answering'
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return 'the connection was reset by the server'
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return 'no route to the host (%s)' % (exc.strerror,)
    if isinstance(exc, httplib.HTTPException):
        return 'invalid HTTP response (%s: %s)' % (type(exc).__name__, cut('%s' % (exc,), 200))
    text = cut('%s' % (exc,), 200)
    return '%s%s' % (type(exc).__name__, (': ' + text) if text else '')


def error_detail(body):
    """The message of an OpenAI/vLLM JSON error body, or a short excerpt of the body."""
    if not body:
        return ''
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    try:
        data = loads(body, 'the answer', finite=False)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get('error', data.get('detail'))
        if isinstance(err, dict):
            return cut('%s' % (err.get('message') or err,), 200)
        if err:
            return cut('%s' % (err,), 200)
        if data.get('message'):
            return cut('%s' % (data['message'],), 200)
    text = ' '.join(body.split())
    return cut(text, 200)


class Endpoint:
    """One vLLM server: ``base_url`` is scheme://host[:port] (see _endpoint.normalise_endpoint).

    ``timeout`` bounds each network operation (connect, each read); ``deadline`` bounds a whole
    exchange (one JSON call, or one streamed completion in _benchmark_runner).
    """

    def __init__(self, base_url, api_key=None, timeout=REQUEST_TIMEOUT_DEFAULT, deadline=REQUEST_DEADLINE_DEFAULT):
        self.base_url = base_url
        self.api_key = api_key or None
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        parts = urlsplit(base_url)
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self._ssl_context = ssl.create_default_context() if self.scheme == 'https' else None

    def within(self, seconds):
        """This endpoint with every exchange (and each operation in it) ending within ``seconds`` (at least 0.1 s)."""
        bounded = copy.copy(self)
        seconds = max(0.1, float(seconds))
        bounded.timeout = min(self.timeout, seconds)
        bounded.deadline = min(self.deadline, seconds)
        return bounded

    def headers(self, json_body=False):
        headers = {'Accept': 'application/json, text/event-stream', 'User-Agent': 'jetson_llm.vllm'}
        if json_body:
            headers['Content-Type'] = 'application/json'
        if self.api_key:
            headers['Authorization'] = 'Bearer %s' % self.api_key
        return headers

    def scrub(self, text):
        """``text`` without the API key (and without any URL password)."""
        text = mask_url('%s' % (text,))
        if self.api_key:
            text = text.replace(self.api_key, SECRET_MASK)
        return text

    def operation_timeout(self, deadline_at):
        """Seconds the next network operation may take: request_timeout, or less near ``deadline_at``."""
        remaining = deadline_at - time.perf_counter()
        if remaining <= 0:
            raise DeadlineExceeded('did not finish within request_deadline=%gs' % self.deadline)
        return min(self.timeout, remaining)

    def arm(self, conn, deadline_at):
        """Set the socket timeout of ``conn`` for its next operation (see operation_timeout)."""
        timeout = self.operation_timeout(deadline_at)
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        else:
            conn.timeout = timeout

    def connect(self, deadline_at=None):
        """A new, connected http.client connection."""
        timeout = self.timeout if deadline_at is None else self.operation_timeout(deadline_at)
        if self.scheme == 'https':
            conn = httplib.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._ssl_context)
        else:
            conn = httplib.HTTPConnection(self.host, self.port, timeout=timeout)
        conn.connect()
        conn.sock.settimeout(self.timeout)
        return conn

    def read_body(self, resp, conn, deadline_at, limit=MAX_BODY_BYTES):
        """The whole body of ``resp``, read piece by piece within ``deadline_at`` and ``limit`` bytes."""
        pieces = []
        size = 0
        while True:
            self.arm(conn, deadline_at)
            data = resp.read1(READ_SIZE)
            if not data:
                break
            size += len(data)
            if size > limit:
                raise DeadlineExceeded('the answer is larger than %d bytes' % limit)
            pieces.append(data)
        pieces.append(resp.read())  # nothing left to read: marks the response closed so the connection can be reused
        return b''.join(pieces)

    def call(self, method, path, body=None, conn=None):
        """One request; returns (status, body bytes). Network errors raise EndpointError.

        A given ``conn`` is used and left open; otherwise a connection is opened and closed.
        The exchange ends within request_deadline seconds, and its answer is at most MAX_BODY_BYTES.
        """
        own = conn is None
        payload = None if body is None else json.dumps(body, allow_nan=False).encode('utf-8')
        deadline_at = time.perf_counter() + self.deadline
        try:
            for attempt in (0, 1):
                if own:
                    conn = self.connect(deadline_at)
                self.arm(conn, deadline_at)
                try:
                    conn.request(method, path, body=payload, headers=self.headers(json_body=payload is not None))
                    self.arm(conn, deadline_at)
                    resp = conn.getresponse()
                except STALE_ERRORS:
                    if not own or attempt:
                        raise
                    conn.close()  # closed before it answered (an idle timeout racing a new connection): once more
                    continue
                data = self.read_body(resp, conn, deadline_at)
                if not own:
                    conn.sock.settimeout(self.timeout)
                return resp.status, data
        except (OSError, httplib.HTTPException, DeadlineExceeded) as exc:
            if not own and conn is not None:
                conn.close()
            message = '%s %s%s failed: %s%s' % (method, self.base_url, path, describe_exception(exc), timeout_hint(self, exc))
            raise EndpointError(self.scrub(message), stale=not own and isinstance(exc, STALE_ERRORS))
        finally:
            if own and conn is not None:
                conn.close()

    def get_json(self, path, conn=None):
        """GET ``path`` expecting 200 and a JSON body; raises EndpointError otherwise."""
        return self.json_call('GET', path, None, conn)

    def post_json(self, path, body, conn=None):
        return self.json_call('POST', path, body, conn)

    def _status_error(self, method, path, status, data):
        hint = ''
        if 300 <= status < 400:
            hint = ' (a redirect; the module does not follow redirects: give the server root it redirects to as endpoint)'
        return EndpointError(self.scrub('%s %s%s answered HTTP %d%s%s' % (
            method, self.base_url, path, status, (': ' + error_detail(data)) if data else '', hint)), status=status, body=data)

    def json_call(self, method, path, body=None, conn=None):
        status, data = self.call(method, path, body, conn)
        if status != 200:
            raise self._status_error(method, path, status, data)
        try:
            return loads(data, 'the answer', max_bytes=len(data) + 1, finite=False)
        except ValueError:
            raise EndpointError(self.scrub('%s %s%s answered HTTP 200 but not with UTF-8 JSON: %s' % (
                method, self.base_url, path, error_detail(data) or 'an empty body')), status=status, body=data)

    def get_text(self, path, conn=None):
        status, data = self.call('GET', path, None, conn)
        if status != 200:
            raise self._status_error('GET', path, status, data)
        return data.decode('utf-8', 'replace')


def timeout_hint(endpoint, exc):
    """Which option bounded a timed-out operation."""
    if isinstance(exc, socket.timeout):
        return ' (no data for request_timeout=%gs, or request_deadline=%gs reached)' % (endpoint.timeout, endpoint.deadline)
    return ''


def connection_is_stale(conn):
    """True when an idle keep-alive connection was closed by the server (readable = EOF or junk)."""
    sock = getattr(conn, 'sock', None)
    if sock is None:
        return True
    try:
        readable, _w, _x = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
