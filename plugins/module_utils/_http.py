# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small standard-library HTTP client for vLLM's OpenAI-compatible server (private).

Persistent (keep-alive) http.client connections, JSON helpers, and error messages that
name the endpoint and the cause without ever showing the API key.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import json
import select
import socket
import ssl

import http.client as httplib
from urllib.parse import urlsplit

SECRET_MASK = '********'


class EndpointError(Exception):
    """The endpoint could not be used. ``status`` is the HTTP status when there was one."""

    def __init__(self, message, status=None, body=None):
        super(EndpointError, self).__init__(message)
        self.status = status
        self.body = body


def describe_exception(exc):
    """A short sentence for a network exception."""
    if isinstance(exc, socket.timeout):
        return 'timed out'
    if isinstance(exc, ConnectionRefusedError):
        return 'connection refused (is the server running and listening on this address and port?)'
    if isinstance(exc, socket.gaierror):
        return 'cannot resolve the host name (%s)' % (exc.strerror or exc,)
    if isinstance(exc, ssl.SSLError):
        return 'TLS error (%s)' % (exc,)
    if isinstance(exc, httplib.IncompleteRead):
        return 'the server closed the connection in the middle of the response (%d bytes read)' % len(exc.partial)
    if isinstance(exc, httplib.RemoteDisconnected):
        return 'the server closed the connection without answering'
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return 'the connection was reset by the server'
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return 'no route to the host (%s)' % (exc.strerror,)
    if isinstance(exc, httplib.HTTPException):
        return 'invalid HTTP response (%s: %s)' % (type(exc).__name__, exc)
    text = '%s' % (exc,)
    return '%s%s' % (type(exc).__name__, (': ' + text) if text else '')


def error_detail(body):
    """The message of an OpenAI/vLLM JSON error body, or a short excerpt of the body."""
    if not body:
        return ''
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get('error', data.get('detail'))
        if isinstance(err, dict):
            return '%s' % (err.get('message') or err)
        if err:
            return '%s' % (err,)
        if data.get('message'):
            return '%s' % (data['message'],)
    text = ' '.join(body.split())
    return text[:200] + ('...' if len(text) > 200 else '')


class Endpoint:
    """One vLLM server: ``base_url`` is scheme://host[:port] (see _benchmark.normalise_endpoint)."""

    def __init__(self, base_url, api_key=None, timeout=300.0):
        self.base_url = base_url
        self.api_key = api_key or None
        self.timeout = float(timeout)
        parts = urlsplit(base_url)
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self._ssl_context = ssl.create_default_context() if self.scheme == 'https' else None

    def headers(self, json_body=False):
        headers = {'Accept': 'application/json, text/event-stream', 'User-Agent': 'jetson_llm.vllm'}
        if json_body:
            headers['Content-Type'] = 'application/json'
        if self.api_key:
            headers['Authorization'] = 'Bearer %s' % self.api_key
        return headers

    def scrub(self, text):
        text = '%s' % (text,)
        if self.api_key:
            text = text.replace(self.api_key, SECRET_MASK)
        return text

    def connect(self):
        """A new, connected http.client connection."""
        if self.scheme == 'https':
            conn = httplib.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self._ssl_context)
        else:
            conn = httplib.HTTPConnection(self.host, self.port, timeout=self.timeout)
        conn.connect()
        return conn

    def call(self, method, path, body=None, conn=None):
        """One request; returns (status, body bytes). Network errors raise EndpointError.

        A given ``conn`` is used and left open; otherwise a connection is opened and closed.
        """
        own = conn is None
        payload = None if body is None else json.dumps(body).encode('utf-8')
        try:
            if own:
                conn = self.connect()
            conn.request(method, path, body=payload, headers=self.headers(json_body=payload is not None))
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, data
        except (OSError, httplib.HTTPException) as exc:
            raise EndpointError(self.scrub('%s %s%s failed: %s' % (method, self.base_url, path, describe_exception(exc))))
        finally:
            if own and conn is not None:
                conn.close()

    def get_json(self, path, conn=None):
        """GET ``path`` expecting 200 and a JSON body; raises EndpointError otherwise."""
        return self.json_call('GET', path, None, conn)

    def post_json(self, path, body, conn=None):
        return self.json_call('POST', path, body, conn)

    def json_call(self, method, path, body=None, conn=None):
        status, data = self.call(method, path, body, conn)
        if status != 200:
            raise EndpointError(self.scrub('%s %s%s answered HTTP %d%s' % (
                method, self.base_url, path, status, (': ' + error_detail(data)) if data else '')), status=status, body=data)
        try:
            return json.loads(data.decode('utf-8'))
        except ValueError:
            raise EndpointError('%s %s%s answered HTTP 200 but not with JSON: %s' % (method, self.base_url, path, error_detail(data)),
                                status=status, body=data)

    def get_text(self, path, conn=None):
        status, data = self.call('GET', path, None, conn)
        if status != 200:
            raise EndpointError(self.scrub('GET %s%s answered HTTP %d%s' % (
                self.base_url, path, status, (': ' + error_detail(data)) if data else '')), status=status, body=data)
        return data.decode('utf-8', 'replace')


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
