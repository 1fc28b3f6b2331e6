# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks shared by the speculative-decoding decisions (private to this collection).

Every check raises ``SpeculativeInputError`` with a sentence naming the option, the (truncated)
value and what is allowed; ``speculative_plan`` and ``speculative_verdict`` report it with
``fail_json``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as _devices
from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import compare_versions, parse_version_strict


_LONG_WORD = re.compile(r'\S{%d,}' % 160)
MAX_MESSAGE_CHARS = 2000


def _shorten(match):
    word = match.group(0)
    return '%s... (%d characters)' % (word[:80], len(word))


class SpeculativeInputError(ValueError):
    """Invalid input: the caller must fix it (modules report it with fail_json).

    Echoed values are kept short: any run of 160+ non-space characters is cut to 80, and the
    whole message to MAX_MESSAGE_CHARS, so a 10 000-character value is never repeated whole.
    """

    def __init__(self, message):
        message = _LONG_WORD.sub(_shorten, message)
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + '... (message cut)'
        super(SpeculativeInputError, self).__init__(message)


# Floating-point comparisons at the documented boundaries (e.g. 100 -> 130 tok/s is exactly a
# 30 % gain, but 130 / 100 - 1 is 0.30000000000000004 and 26.5 -> 34.45 gives 0.2999999999999998)
# are made with this tolerance: a value within EPSILON of a threshold counts as reaching it.
EPSILON = 1e-9

# vLLM itself checks only num_speculative_tokens > 0, so there is no upstream maximum to copy. The cap is
# this collection's: each speculative step reserves K extra KV slots and K+1 query tokens per sequence
# (out of the same unified memory), while the expected accepted length is bounded by 1 / (1 - acceptance):
# even at acceptance 0.9, K = 16 already reaches 8.3 of the 10 possible tokens per step. A larger K is
# an input error (a typo such as 1000000000 must never reach a unit file).
MAX_NUM_SPECULATIVE_TOKENS = 16

UPSTREAM_IMAGE_EXAMPLE = 'vllm/vllm-openai:v0.20.1'
MAX_MODEL_REF_CHARS = 1024   # a Hugging Face id is at most 193 characters; a path gets room to spare
MAX_IMAGE_REF_CHARS = 512    # registry/repository (255) + tag (128) + digest (71), rounded up


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------

SHOW_LIMIT = 80


def show(value, limit=SHOW_LIMIT):
    """``repr(value)`` cut to ``limit`` characters, for echoing an input in an error message."""
    text = repr(value)
    if len(text) > limit:
        text = text[:limit] + '... (%s characters)' % len(text)
    return text


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(name, value, minimum=None, maximum=None, optional=False, allowed=None):
    """Return ``value`` if it is an int within [minimum, maximum]; else raise.

    ``allowed`` (e.g. 'an integer from 200 to 20000') replaces the generic wording of every message.
    """
    if value is None and optional:
        return None
    if not _is_int(value):
        raise SpeculativeInputError('%s must be %s, got %s (%s).'
                                    % (name, allowed or 'an integer', show(value), type(value).__name__))
    if minimum is not None and value < minimum:
        raise SpeculativeInputError('%s must be %s, got %s.' % (name, allowed or '>= %s' % minimum, show(value)))
    if maximum is not None and value > maximum:
        raise SpeculativeInputError('%s must be %s, got %s.' % (name, allowed or '<= %s' % maximum, show(value)))
    return value


def check_choice(name, value, choices):
    """Return ``value`` if it is one of the strings ``choices``; else raise naming the value and the choices."""
    if not isinstance(value, str) or value not in choices:
        raise SpeculativeInputError('%s must be one of %s, got %s (%s).'
                                    % (name, ', '.join(choices), show(value), type(value).__name__))
    return value


def check_float(name, value, minimum=None, maximum=None, optional=False, min_exclusive=False):
    """Return ``value`` as a float if it is a finite number within the range; else raise."""
    if value is None and optional:
        return None
    if not _is_number(value):
        raise SpeculativeInputError('%s must be a number, got %s (%s).' % (name, show(value), type(value).__name__))
    try:
        value = float(value)
    except OverflowError:
        value = float('inf')
    if not math.isfinite(value):
        raise SpeculativeInputError('%s must be a finite number, got %s.' % (name, show(value)))
    if minimum is not None and (value <= minimum if min_exclusive else value < minimum):
        raise SpeculativeInputError('%s must be %s %s, got %s.' % (name, '>' if min_exclusive else '>=', minimum, value))
    if maximum is not None and value > maximum:
        raise SpeculativeInputError('%s must be <= %s, got %s.' % (name, maximum, value))
    return value


def check_bool(name, value):
    if not isinstance(value, bool):
        raise SpeculativeInputError('%s must be a boolean (true or false), got %r.' % (name, value))
    return value


_CHAR_NAMES = {
    "'": 'a single quote', '"': 'a double quote', '`': 'a backtick', '$': 'a dollar sign',
    '%': "a percent sign (a systemd specifier)", '\\': 'a backslash', ';': 'a semicolon',
    '&': 'an ampersand', '|': 'a pipe', '<': "a '<'", '>': "a '>'", '*': 'a wildcard', '?': 'a wildcard',
    '(': 'a parenthesis', ')': 'a parenthesis', '{': 'a brace', '}': 'a brace', '[': 'a bracket',
    ']': 'a bracket', '!': "a '!'", '#': "a '#'", '~': "a '~'", '=': "an '='", ',': 'a comma',
    ':': 'a colon', '@': "an '@'",
}
_MODEL_ID_HELP = ("Use a Hugging Face repo id (owner/name made of letters, digits, '.', '_' and '-') or an absolute "
                  "path (letters, digits, '.', '_', '-', '+' and '/'); the value is written into a systemd unit file "
                  "and a compose file, so quotes, whitespace, '%', '$' and shell characters are refused.")
_HF_PART = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z')


def _bad_char(value, allowed):
    """Describe the first character of ``value`` outside ``allowed`` (a regex char class body)."""
    for char in value:
        if not re.match('[%s]' % allowed, char):
            if char.isspace():
                return 'whitespace or a line break (%r)' % char
            if ord(char) < 32 or ord(char) == 127:
                return 'a control character (%r)' % char
            return _CHAR_NAMES.get(char, 'the character %r' % char)
    return None


def check_model_ref(name, value, optional=False):
    """A Hugging Face repo id (``owner/name`` or ``name``) or an absolute path; else raise.

    The value ends up in a systemd ExecStart line and a compose command list, so only a small
    character set is accepted.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise SpeculativeInputError('%s must be a string (a Hugging Face repo id or an absolute path), got %r.'
                                    % (name, value))
    if value == '':
        raise SpeculativeInputError('%s is empty. %s' % (name, _MODEL_ID_HELP))
    if len(value) > MAX_MODEL_REF_CHARS:
        raise SpeculativeInputError('%s %s is %d characters long; at most %d are allowed. %s'
                                    % (name, show(value), len(value), MAX_MODEL_REF_CHARS, _MODEL_ID_HELP))
    bad = _bad_char(value, 'A-Za-z0-9._+/-')
    if bad:
        raise SpeculativeInputError('%s %r contains %s. %s' % (name, value, bad, _MODEL_ID_HELP))
    if value.startswith('/'):
        parts = value.split('/')[1:]
        if value == '/' or any(p in ('', '.', '..') for p in parts[:-1]) or parts[-1] in ('.', '..'):
            raise SpeculativeInputError("%s %r is not a clean absolute path (no empty, '.' or '..' components). %s"
                                        % (name, value, _MODEL_ID_HELP))
        return value.rstrip('/') if len(value) > 1 else value
    if value.startswith('.') or value.startswith('~'):
        raise SpeculativeInputError('%s %r is a relative path; use an absolute path (the service does not run in '
                                    'your working directory). %s' % (name, value, _MODEL_ID_HELP))
    parts = value.split('/')
    valid = all(_HF_PART.match(p) and len(p) <= 96 and '--' not in p and '..' not in p for p in parts)
    if len(parts) > 2 or '+' in value or not valid:
        raise SpeculativeInputError("%s %r is not a Hugging Face repo id (owner/name, each part at most 96 "
                                    "characters, starting and ending with a letter or digit, no '--' or '..'). %s"
                                    % (name, value, _MODEL_ID_HELP))
    return value


def check_image_ref(name, value, optional=True):
    """A container image reference such as ``vllm/vllm-openai:v0.20.1``; else raise."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or value == '':
        raise SpeculativeInputError('%s must be a container image reference such as %s, got %r.'
                                    % (name, UPSTREAM_IMAGE_EXAMPLE, value))
    if len(value) > MAX_IMAGE_REF_CHARS:
        raise SpeculativeInputError('%s %s is %d characters long; a container image reference has at most %d '
                                    '(e.g. %s).' % (name, show(value), len(value), MAX_IMAGE_REF_CHARS,
                                                    UPSTREAM_IMAGE_EXAMPLE))
    bad = _bad_char(value, 'A-Za-z0-9._/:@-')
    if bad or not re.match(r'^[A-Za-z0-9]', value):
        detail = '; it contains ' + bad if bad else ''
        raise SpeculativeInputError("%s %r is not a container image reference (letters, digits, '.', '_', '-', '/', "
                                    "':' and '@' only%s), e.g. %s." % (name, value, detail, UPSTREAM_IMAGE_EXAMPLE))
    return value


_MINIMUMS = '%s on Thor and on Orin r%s+, %s for draft_model' % (
    _devices.vstr(_devices.UPSTREAM_MIN_VLLM), _devices.ORIN_UPSTREAM_L4T_MAJOR, _devices.vstr(_devices.MIN_VLLM_DRAFT_MODEL))


def check_vllm_version(value):
    """Return (version tuple or None, warnings). None/''/'unknown'/unparseable -> unknown + warning."""
    if value is None:
        return None, ['vLLM version unknown (vllm_version not given): the runtime minimums (%s) cannot be checked; '
                      'read it from GET /version and plan again.' % _MINIMUMS]
    if not isinstance(value, str):
        raise SpeculativeInputError(
            "vllm_version must be a string such as '0.20.1' (quote it: YAML reads 0.20 as the number 0.2), got %r (%s)."
            % (value, type(value).__name__))
    text = value.strip()
    if text == '' or text.lower() == 'unknown':
        return None, ['vLLM version unknown (%r): the runtime minimums (%s) cannot be checked; read it from GET '
                      '/version and plan again.' % (value, _MINIMUMS)]
    if not re.match(r'^[vV]?\d+\.\d+', text):
        return None, ['vLLM version %s is not a version number such as 0.20.1: treated as unknown, so the runtime '
                      'minimums cannot be checked.' % show(value)]
    try:
        parsed = parse_version_strict(text)
    except ValueError:
        raise SpeculativeInputError(
            'vllm_version %s is not a version such as 0.20.1 (digits and dots, optionally a pre-release such as rc1 '
            'or dev12 and a local label such as +cpu); nothing may follow it. Pass the version GET /version reports.'
            % show(value))
    warnings = []
    if re.search(r'(a|b|rc|dev|alpha|beta)\d*', text.split('+')[0].lower()):
        warnings.append('vLLM %s is a pre-release or development build; it is compared as %s.'
                        % (value, '.'.join(str(p) for p in parsed)))
    return parsed, warnings


def _at_least(version, minimum):
    """True when the version tuple ``version`` is >= ``minimum`` (missing trailing parts count as 0)."""
    return compare_versions(tuple(version), tuple(minimum)) >= 0


def _vstr(version):
    return '.'.join(str(p) for p in version)
