# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own rules for what reaches a command, a path or a parser (private, standard library only).

One place for each:

* ``check_name``: a unit, timer or compose service name. systemd's own rules allow a leading ``-`` (``-.mount``);
  this collection's do not, since a name is an operand of ``systemctl``, ``journalctl``, ``docker``: a name that
  starts with ``-`` would be read as an option (``-Hlc@evil.service`` makes ``systemctl show`` connect to a host
  over SSH). Every command is also given ``--`` before its operands (``end_of_options``), so either guard alone
  is enough.
* ``check_path``: an absolute path without NUL or control characters.
* ``loads`` and ``load_yaml``: JSON and YAML from a file, a command or a server, with a size and a nesting limit
  (a deeply nested document ends in a clear error, not in Python's recursion limit) and, by default, finite numbers
  only (``NaN``, ``Infinity``, ``1e999``).
* ``dumps``: JSON that any parser reads: a NaN or an infinity is an error naming where it is, never written.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import math
import re

#: Deepest nesting of arrays and objects accepted in a document (a record, a compose file, an answer).
MAX_DEPTH = 64
#: Largest document parsed by default.
MAX_BYTES = 4 * 1048576

NAME_ALLOWED = ('letters, digits and :_.@-\\ (1 to 250 characters), starting with a letter, a digit or one of '
                ':_@\\ (not "-" or ".")')
_NAME = re.compile(r'^[A-Za-z0-9:_@\\][A-Za-z0-9:_.@\\-]{0,249}\Z')
#: How a message names a control character (also the endpoint options' checks).
CHAR_NAMES = {'\n': 'a line feed', '\r': 'a carriage return', '\t': 'a tab', '\x00': 'a NUL byte'}
ECHO_LIMIT = 120


class InputError(ValueError):
    """A name, a path or a document that is refused; the message names the value and what is allowed.

    ``limit``: a document refused for its size or nesting (not for its syntax).
    """

    def __init__(self, message, limit=False):
        super(InputError, self).__init__(message)
        self.limit = limit


def show(value, limit=ECHO_LIMIT):
    """A value for a message: its repr, cut to ``limit`` characters (never pass a secret)."""
    text = repr(value)
    if len(text) > limit:
        return '%s... (%d characters)' % (text[:limit], len(value) if isinstance(value, str) else len(text))
    return text


def _control(value):
    for char in value:
        if ord(char) < 32 or ord(char) == 127:
            return CHAR_NAMES.get(char, 'the control character %r' % char)
    return None


def check_name(value, option='name', what='a unit or service name'):
    """``value`` if it is a name of the collection's rule (``NAME_ALLOWED``), else InputError naming it."""
    if not isinstance(value, str) or not value:
        raise InputError('%s %s is not %s; allowed: %s' % (option, show(value), what, NAME_ALLOWED))
    if value.startswith('-'):
        raise InputError('%s %s starts with "-", which a command would read as an option; allowed: %s'
                         % (option, show(value), NAME_ALLOWED))
    control = _control(value)
    if control:
        raise InputError('%s %s holds %s; allowed: %s' % (option, show(value), control, NAME_ALLOWED))
    if not _NAME.match(value):
        raise InputError('%s %s is not %s; allowed: %s' % (option, show(value), what, NAME_ALLOWED))
    return value


def check_path(value, option='path', allow_none=False):
    """``value`` if it is an absolute path without NUL or control characters, else InputError naming it."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value:
        raise InputError('%s %s is not a path; allowed: an absolute path' % (option, show(value)))
    control = _control(value)
    if control:
        raise InputError('%s %s holds %s; allowed: an absolute path without control characters'
                         % (option, show(value), control))
    if not value.startswith('/'):
        raise InputError('%s %s is not an absolute path; allowed: an absolute path (as the target sees it, for '
                         'example /etc/ansible/facts.d/jetson_vllm_speculative.fact)' % (option, show(value)))
    return value


def end_of_options(argv, operands):
    """``argv + ['--'] + operands``: the operands (names, ids) can never be read as options."""
    return list(argv) + ['--'] + list(operands)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def too_deep(text, max_depth=MAX_DEPTH):
    """Whether JSON ``text`` nests arrays and objects deeper than ``max_depth`` (strings skipped)."""
    if text.count('[') + text.count('{') <= max_depth:
        return False
    depth = 0
    for char in _STRING.sub('""', text):
        if char in '[{':
            depth += 1
            if depth > max_depth:
                return True
        elif char in ']}':
            depth -= 1
    return False


def _finite_float(text):
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        raise InputError('the number %s (infinite as a float; allowed: finite numbers)' % text[:40])
    return value


def _no_constant(name):
    raise InputError('%s (not a number JSON can carry; allowed: finite numbers)' % name)


def loads(data, what='the document', max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, finite=True):
    """JSON ``data`` (text or UTF-8 bytes) -> value; InputError (a ValueError) saying what is wrong with ``what``.

    Refused: more than ``max_bytes``, nesting deeper than ``max_depth``, text that is not JSON, and with ``finite``
    (the default) ``NaN``, ``Infinity`` and numbers too large for a float.
    """
    if isinstance(data, bytes):
        if len(data) > max_bytes:
            raise InputError('%s is larger than %d bytes' % (what, max_bytes), limit=True)
        try:
            data = data.decode('utf-8')
        except UnicodeDecodeError:
            raise InputError('%s is not UTF-8' % what)
    if not isinstance(data, str):
        raise InputError('%s is not text' % what)
    if len(data) > max_bytes:
        raise InputError('%s is larger than %d bytes' % (what, max_bytes), limit=True)
    if too_deep(data, max_depth):
        raise InputError('%s nests arrays or objects more than %d deep' % (what, max_depth), limit=True)
    kwargs = {'parse_constant': _no_constant, 'parse_float': _finite_float} if finite else {}
    try:
        return json.loads(data, **kwargs)
    except InputError as exc:
        raise InputError('%s holds %s' % (what, exc))
    except RecursionError:
        raise InputError('%s nests arrays or objects too deep' % what, limit=True)
    except ValueError as exc:
        raise InputError('%s is not JSON (%s)' % (what, str(exc)[:120]))


def load_yaml(yaml, text, what='the document', max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """YAML ``text`` -> value with PyYAML's safe loader (``yaml``: the imported module); InputError when it is
    larger than ``max_bytes``, nests deeper than ``max_depth`` (flow collections) or than Python's recursion limit
    (block collections), or is not YAML."""
    if len(text) > max_bytes:
        raise InputError('%s is larger than %d bytes' % (what, max_bytes), limit=True)
    if too_deep(text, max_depth):
        raise InputError('%s nests lists or mappings more than %d deep' % (what, max_depth), limit=True)
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise InputError('%s nests lists or mappings too deep' % what, limit=True)
    except yaml.YAMLError as exc:
        raise InputError('%s is not valid YAML: %s' % (what, str(exc).replace('\n', ' ')[:300]))


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

def non_finite(value, where=''):
    """(path, value) of the first NaN or infinity in ``value`` (path ``a.b[2]``, '' for ``value`` itself), or None."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return where, value
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            found = non_finite(value[key], '%s.%s' % (where, key) if where else str(key))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = non_finite(item, '%s[%d]' % (where, index))
            if found:
                return found
    return None


def dumps(value, what='the value', **kwargs):
    """``json.dumps(value, **kwargs)`` for a file or a command line: InputError naming the first NaN or infinity
    (which JSON cannot carry: ``NaN`` would be written, and refused only by the program that reads it)."""
    found = non_finite(value)
    if found:
        where, number = found
        raise InputError('%s%s is %r: JSON cannot carry NaN or infinity; allowed: finite numbers'
                         % (what, ('.' + where if not where.startswith('[') else where) if where else '', number))
    kwargs['allow_nan'] = False
    try:
        return json.dumps(value, **kwargs)
    except RecursionError:
        raise InputError('%s nests lists or dictionaries too deep' % what)
