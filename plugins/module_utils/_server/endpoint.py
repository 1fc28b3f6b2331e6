# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options every module that talks to a vLLM server shares (private to this collection).

``endpoint_argument_spec()`` returns the argument spec of ``endpoint``, ``api_key``,
``request_timeout`` and ``request_deadline``, documented once in the ``jetson_llm.vllm.endpoint``
doc fragment (plugins/doc_fragments/endpoint.py); ``check_endpoint_options()`` validates them.
Also here: ``echo()``, which every error message uses to show a value the user gave (truncated,
never a secret), and ``mask_url()``, which hides a password written into a URL.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re

from urllib.parse import urlsplit

from ansible_collections.jetson_llm.vllm.plugins.module_utils._errors import OptionError  # noqa: F401 pylint: disable=unused-import
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import CHAR_NAMES

SECRET_MASK = '********'
DEFAULT_ENDPOINT = 'http://127.0.0.1:8000'
#: Characters of a user-given value shown in a message; longer values are cut.
ECHO_LIMIT = 120
#: Longest endpoint URL accepted.
ENDPOINT_MAX_CHARS = 2048
#: Longest api_key accepted (vLLM compares the whole header; keys are tens of characters).
API_KEY_MAX_CHARS = 4096
#: request_timeout: seconds of silence allowed on one network operation, (0, 3600].
REQUEST_TIMEOUT_DEFAULT = 300.0
REQUEST_TIMEOUT_MAX = 3600.0
#: request_deadline: seconds one whole HTTP exchange may take, (0, 86400]. Unset: DEFAULT, except where a module
#: derives it from its workload (vllm_benchmark: benchmark_deadline()).
REQUEST_DEADLINE_DEFAULT = 120.0
REQUEST_DEADLINE_MAX = 86400.0

_HOST = re.compile(r'^(?:[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?|[0-9a-f:.]+(?:%[a-z0-9_.-]+)?)\Z')
_USERINFO = re.compile(r'(//)([^/@?#]*)@')


def endpoint_argument_spec():
    """The argument spec of the shared endpoint options (documented by the ``endpoint`` doc fragment)."""
    return dict(
        endpoint=dict(type='str', default=DEFAULT_ENDPOINT),
        api_key=dict(type='str', no_log=True),
        request_timeout=dict(type='float', default=REQUEST_TIMEOUT_DEFAULT),
        request_deadline=dict(type='float'),
    )


_LOOPBACK = re.compile(r'^(?:127(?:\.\d{1,3}){3}|localhost|::1|\[::1\]|0{0,4}(?::0{0,4}){0,6}:0{0,3}1)\Z', re.I)


def exposure_warning(listen_host, api_key, port=None):
    """A warning when vLLM listens beyond this host (``--host``) and takes requests without an API key, else None."""
    host = ('%s' % (listen_host,)).strip()
    if not host or _LOOPBACK.match(host) or api_key:
        return None
    where = 'every address of this host' if host in ('0.0.0.0', '::', '[::]') else host
    return ('vLLM listens on %s%s without an API key: anyone who can reach this host can use the model. Set an API '
            'key (vllm_api_key), or serve this host only (vllm_host: 127.0.0.1).'
            % (where, ' (port %s)' % port if port else ''))


def mask_url(text):
    """``text`` with the password (or the whole user information) of any URL in it replaced by the mask."""
    def repl(match):
        user, sep, _password = match.group(2).partition(':')
        return '%s%s%s%s@' % (match.group(1), user, sep, SECRET_MASK if sep else '')
    return _USERINFO.sub(repl, '%s' % (text,))


def cut(text, limit=300):
    """Plain ``text`` (a server's message, say) cut to ``limit`` characters, URL passwords masked."""
    text = mask_url(text)
    if len(text) > limit:
        return '%s... (%d characters)' % (text[:limit], len(text))
    return text


def echo(value, limit=ECHO_LIMIT):
    """A user-given value for a message: its repr, cut to ``limit`` characters, URL passwords masked.

    Never pass a secret (api_key): its length or first characters would still be shown.
    """
    if isinstance(value, str):
        text = mask_url(value)
        if len(text) > limit:
            return '%r... (%d characters)' % (text[:limit], len(value))
        return repr(text)
    text = mask_url(repr(value))
    if len(text) > limit:
        return '%s... (%d characters)' % (text[:limit], len(text))
    return text


def check_number(name, value, minimum=None, maximum=None, above=None, allow_none=False, hint=''):
    """``value`` as a finite float within bounds, or OptionError naming ``name``, the value and the range."""
    if value is None and allow_none:
        return None
    parts = []
    if above is not None:
        parts.append('> %s' % (above,))
    if minimum is not None:
        parts.append('>= %s' % (minimum,))
    if maximum is not None:
        parts.append('<= %s' % (maximum,))
    allowed = 'a finite number %s%s' % (' and '.join(parts), hint)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError('%s must be %s; got %s' % (name, allowed, echo(value)))
    if not math.isfinite(value) or (above is not None and not value > above) or \
            (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise OptionError('%s must be %s; got %s' % (name, allowed, echo(value)))
    return float(value)


def check_integer(name, value, minimum, maximum, hint=''):
    """``value`` as an int within [minimum, maximum], or OptionError naming the limits."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise OptionError('%s must be an integer from %d to %d%s; got %s' % (name, minimum, maximum, hint, echo(value)))
    return value


def normalise_endpoint(value):
    """Return ``scheme://host[:port]`` for an endpoint URL, or raise OptionError.

    Only http and https with a host, an optional port and no path (other than "/"), query,
    fragment or credentials. Messages show the value truncated, with any password masked.
    """
    if not isinstance(value, str):
        raise OptionError('endpoint must be a URL string such as %s; got %s' % (DEFAULT_ENDPOINT, echo(value)))
    text = value.strip()
    shown = echo(value)
    if len(text) > ENDPOINT_MAX_CHARS:
        raise OptionError('endpoint %s is longer than %d characters; use the server root such as %s'
                          % (shown, ENDPOINT_MAX_CHARS, DEFAULT_ENDPOINT))
    if any(ord(ch) < 0x21 or ord(ch) > 0x7e for ch in text):
        raise OptionError('endpoint %s contains spaces, control or non-ASCII characters; use the server root such as %s '
                          '(an internationalised host name in its xn-- form)' % (shown, DEFAULT_ENDPOINT))
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise OptionError('endpoint %s is not a valid URL (%s); use e.g. %s' % (shown, mask_url(exc), DEFAULT_ENDPOINT))
    if parts.scheme not in ('http', 'https'):
        raise OptionError('endpoint %s must start with http:// or https:// (e.g. %s)' % (shown, DEFAULT_ENDPOINT))
    if parts.username is not None or parts.password is not None or '@' in parts.netloc:
        raise OptionError('endpoint %s must not carry credentials; give the key in api_key' % (shown,))
    if not parts.hostname:
        raise OptionError('endpoint %s has no host; use e.g. %s' % (shown, DEFAULT_ENDPOINT))
    host = parts.hostname
    if len(host) > 253 or not _HOST.match(host):
        raise OptionError('endpoint %s has an invalid host %s; use a host name, an IPv4 address or an IPv6 address '
                          'in brackets' % (shown, echo(host)))
    if port == 0:
        raise OptionError('endpoint %s has port 0; give the port the server listens on (1-65535)' % (shown,))
    if parts.path not in ('', '/') or parts.query or parts.fragment:
        raise OptionError('endpoint %s must be the server root without a path (the module adds /v1/completions, '
                          '/metrics...); use e.g. %s' % (shown, echo('%s://%s' % (parts.scheme, parts.netloc))))
    if ':' in host:
        host = '[%s]' % host
    base = '%s://%s' % (parts.scheme, host)
    if port is not None:
        base += ':%d' % port
    return base


def url_password(value):
    """The password written in an endpoint URL, or None (so the caller can hide it everywhere)."""
    if not isinstance(value, str):
        return None
    match = _USERINFO.search(value)
    if not match:
        return None
    _user, sep, password = match.group(2).partition(':')
    return password if sep and password else None


def check_api_key(value):
    """None or the key, checked to be sendable in ``Authorization: Bearer <key>``.

    Messages say what is wrong and where, never the key or any part of it.
    """
    if value is None or value == '':
        return None
    if not isinstance(value, str):
        raise OptionError('api_key must be a string')
    if len(value) > API_KEY_MAX_CHARS:
        raise OptionError('api_key is %d characters long; at most %d are accepted' % (len(value), API_KEY_MAX_CHARS))
    for index, char in enumerate(value):
        if not 0x20 <= ord(char) <= 0x7e:
            what = CHAR_NAMES.get(char) or ('a control character' if ord(char) < 0x20 or ord(char) == 0x7f
                                            else 'a non-ASCII character')
            hint = ''
            if char in '\r\n':
                hint = (' (a YAML "|" block adds a trailing newline: use "{{ key | trim }}", a ">-" block or a quoted '
                        'string)')
            raise OptionError('api_key contains %s at character %d of %d; an HTTP header allows printable ASCII only'
                              '%s' % (what, index + 1, len(value), hint))
    if value != value.strip():
        raise OptionError('api_key starts or ends with a space; vLLM compares the whole key, remove the spaces')
    return value


def check_endpoint_options(params):
    """Validate the shared endpoint options of ``params``; return them normalised. Raises OptionError."""
    return {
        'endpoint': normalise_endpoint(params.get('endpoint')),
        'api_key': check_api_key(params.get('api_key')),
        'request_timeout': check_number('request_timeout', params.get('request_timeout'), above=0,
                                        maximum=REQUEST_TIMEOUT_MAX, hint=' (seconds)'),
        'request_deadline': (REQUEST_DEADLINE_DEFAULT if params.get('request_deadline') is None else
                             check_number('request_deadline', params.get('request_deadline'), above=0,
                                          maximum=REQUEST_DEADLINE_MAX, hint=' (seconds)')),
    }
