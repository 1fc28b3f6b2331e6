# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small, dependency-free version helpers (private to this collection).

``parse_version`` keeps the leading dotted numbers of a version string and ignores
everything after them (pre-release tags, local labels, Debian revisions):

    parse_version("0.20.1rc1+cpu")         -> (0, 20, 1)
    parse_version("36.4.3-20250107174145") -> (36, 4, 3)
    parse_version("v1.2")                  -> (1, 2)
    parse_version("rc1")                   -> None
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

_LEADING = re.compile(r'^\s*[vV]?(\d+(?:\.\d+)*)')


def parse_version(value):
    """Return the leading numeric components of ``value`` as a tuple of ints, or None.

    Accepts strings, ints and tuples/lists of ints (returned as a tuple unchanged).
    A Debian epoch ("1:2.3") is dropped.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in value):
            return tuple(value)
        return None
    if isinstance(value, int):
        return (value,) if value >= 0 else None
    if not isinstance(value, str):
        return None
    text = value
    epoch = re.match(r'^\s*\d+:', text)
    if epoch:
        text = text[epoch.end():]
    match = _LEADING.match(text)
    if not match:
        return None
    return tuple(int(p) for p in match.group(1).split('.'))


# A version string as vLLM (PEP 440) or a Debian package writes it: numbers, an optional
# pre/post/dev release and an optional local label ("0.20.1", "v0.20.1rc1", "0.20.1.dev12+g1234abc",
# "0.32.0+cpu"). Anything after that (spaces, ';', newlines) is refused by parse_version_strict.
_STRICT = re.compile(r'^[vV]?(\d+(?:\.\d+){0,3})'
                     r'(?:[.-]?(?:a|b|c|rc|alpha|beta|pre|preview|post|dev)\.?\d*)*'
                     r'(?:\+[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*)?$')


def parse_version_strict(value):
    """Like ``parse_version`` for a whole version string; raise ValueError on anything else.

    "0.20.1rc1+cpu" -> (0, 20, 1); "0.20.1; rm -rf /" and "0.20.1 foo" raise.
    """
    if not isinstance(value, str):
        raise ValueError('a version must be a string, got %r' % (value,))
    match = _STRICT.match(value.strip())
    if not match:
        raise ValueError('%r is not a version such as 0.20.1 (digits and dots, optionally followed by a '
                         'pre-release such as rc1 or dev12 and a local label such as +cpu)' % (value[:80],))
    return tuple(int(p) for p in match.group(1).split('.'))


def compare_versions(left, right):
    """Compare two versions: -1, 0 or 1. Missing trailing parts count as 0 ("0.20" == "0.20.0").

    Raises ValueError when either side cannot be parsed.
    """
    lt = parse_version(left)
    rt = parse_version(right)
    if lt is None or rt is None:
        raise ValueError('cannot compare versions %r and %r: expected dotted numbers such as "0.20.1"' % (left, right))
    width = max(len(lt), len(rt))
    lt = lt + (0,) * (width - len(lt))
    rt = rt + (0,) * (width - len(rt))
    return (lt > rt) - (lt < rt)


def version_at_least(version, minimum):
    """True when ``version`` >= ``minimum``.

    A ``minimum`` of None means "no minimum" (True). A ``version`` that cannot be parsed
    (None, "unknown", "main") is never assumed to be new enough (False).
    Raises ValueError when ``minimum`` itself is not a version.
    """
    if minimum is None:
        return True
    if parse_version(minimum) is None:
        raise ValueError('minimum version %r is not a version such as "0.20"' % (minimum,))
    if parse_version(version) is None:
        return False
    return compare_versions(version, minimum) >= 0
