# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd units as systemd reads them: unit file syntax, drop-ins, ExecStart= words, specifiers,
environment variables, and ``systemctl show`` output (standard library only).

Rules followed (systemd.syntax(7), systemd.service(5), systemd.unit(5), systemd.exec(5)):

* a line ending in an unescaped backslash continues on the next line (the backslash becomes a
  space); comment lines (``#``, ``;``) inside a continuation are skipped;
* specifiers (``%n``, ``%i``, ``%%``...) are expanded in the whole value first; unknown ones are
  reported, never guessed;
* the value is split into words: double or single quotes wrap (parts of) a word, C escapes
  (``\\n``, ``\\x41``, ``\\s``...) are decoded, in quotes too;
* the first word may carry the prefixes ``-``, ``@``, ``:``, ``+``, ``!``, ``!!``;
* ``${VAR}`` is replaced inside a word by the value as one argument, ``$VAR`` as a whole word is
  split at whitespace into zero or more arguments, ``$$`` is a literal ``$`` (not with ``:``);
  variables come from ``Environment=`` and then ``EnvironmentFile=`` (the files win);
* an empty ``ExecStart=``, ``Environment=`` or ``EnvironmentFile=`` resets the list; drop-ins
  ``<unit>.d/*.conf`` (and the template's) are applied in file-name order after the unit.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files

UNIT_DIRS = ('/etc/systemd/system', '/run/systemd/system', '/usr/local/lib/systemd/system',
             '/lib/systemd/system', '/usr/lib/systemd/system')

SHOW_PROPERTIES = ('MainPID', 'ActiveState', 'SubState', 'NRestarts', 'ActiveEnterTimestamp',
                   'FragmentPath', 'NeedDaemonReload', 'LoadState', 'ExecMainCode', 'ExecMainStatus')

_WHITESPACE = ' \t\n\r'
_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_SIMPLE_ESCAPES = {'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
                   '\\': '\\', '"': '"', "'": "'", 's': ' '}


class UnitSyntaxError(ValueError):
    pass


# --------------------------------------------------------------------------------------------
# Unit names
# --------------------------------------------------------------------------------------------

def unit_name(name):
    """'vllm' or 'vllm.service' -> 'vllm.service'."""
    return name if name.endswith('.service') else name + '.service'


def unit_base(name):
    """'vllm.service' -> 'vllm'."""
    return name[:-len('.service')] if name.endswith('.service') else name


def template_of(unit):
    """'vllm@qwen.service' -> 'vllm@.service'; None for a unit that is not an instance."""
    base = unit_base(unit)
    if '@' in base and not base.endswith('@'):
        return base.split('@', 1)[0] + '@.service'
    return None


def unescape_unit_name(text):
    """systemd-escape --unescape: '-' -> '/', '\\xNN' -> the byte."""
    out = re.sub(r'\\x([0-9a-fA-F]{2})', lambda m: chr(int(m.group(1), 16)), text.replace('-', '/'))
    return out


# --------------------------------------------------------------------------------------------
# Unit file syntax
# --------------------------------------------------------------------------------------------

def logical_lines(text):
    """Yield logical lines (continuations joined, comments dropped)."""
    pending = None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is not None:
            if line[:1] in ('#', ';'):
                continue
        elif not line or line[0] in '#;':
            continue
        escaped = False
        for char in line:
            escaped = (not escaped) if char == '\\' else False
        if escaped:
            pending = (pending or '') + line[:-1] + ' '
            continue
        yield (pending or '') + line
        pending = None
    if pending is not None:
        yield pending.rstrip()


def parse_unit_text(text):
    """Return [(section, key, value)] in file order."""
    entries = []
    section = None
    for line in logical_lines(text):
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition('=')
        if not sep:
            continue
        entries.append((section, key.strip(), value.strip()))
    return entries


# --------------------------------------------------------------------------------------------
# Specifiers
# --------------------------------------------------------------------------------------------

def specifier_table(unit, fragment_path=None, hostname=None, machine_id=None):
    """The specifiers that have one right value for a system service, keyed by letter."""
    base = unit_base(unit)
    prefix, _at, instance = base.partition('@')
    table = {
        'n': unit, 'N': base, 'p': prefix, 'P': unescape_unit_name(prefix),
        'i': instance, 'I': unescape_unit_name(instance),
        'j': prefix.rsplit('-', 1)[-1], 'J': unescape_unit_name(prefix.rsplit('-', 1)[-1]),
        'f': '/' + unescape_unit_name(instance or prefix).lstrip('/'),
        't': '/run', 'S': '/var/lib', 'C': '/var/cache', 'L': '/var/log', 'E': '/etc',
        'T': '/tmp', 'V': '/var/tmp', 'd': '/run/credentials/' + unit,
        '%': '%',
    }
    if fragment_path:
        table['y'] = fragment_path
        table['Y'] = os.path.dirname(fragment_path)
    if hostname:
        table['H'] = hostname
        table['l'] = hostname.split('.', 1)[0]
    if machine_id:
        table['m'] = machine_id
    return table


def expand_specifiers(value, table, unknown):
    """Replace %X; unknown letters are kept as written and added to ``unknown``."""
    out = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == '%' and index + 1 < len(value):
            letter = value[index + 1]
            if letter in table:
                out.append(table[letter])
            else:
                out.append('%' + letter)
                if '%' + letter not in unknown:
                    unknown.append('%' + letter)
            index += 2
            continue
        out.append(char)
        index += 1
    return ''.join(out)


# --------------------------------------------------------------------------------------------
# Words (ExecStart=, Environment=)
# --------------------------------------------------------------------------------------------

def _unescape_at(text, index):
    """Decode the C escape starting at text[index] == '\\'; return (string, next index)."""
    if index + 1 >= len(text):
        raise UnitSyntaxError('a backslash ends the value')
    char = text[index + 1]
    if char in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[char], index + 2
    lengths = {'x': 2, 'u': 4, 'U': 8}
    if char in lengths:
        digits = text[index + 2:index + 2 + lengths[char]]
        if len(digits) != lengths[char] or not re.match(r'^[0-9a-fA-F]+$', digits):
            raise UnitSyntaxError('invalid escape \\%s%s' % (char, digits))
        return chr(int(digits, 16)), index + 2 + lengths[char]
    if char in '01234567':
        digits = text[index + 1:index + 4]
        if len(digits) != 3 or not re.match(r'^[0-7]{3}$', digits):
            raise UnitSyntaxError('invalid escape \\%s' % digits)
        return chr(int(digits, 8)), index + 4
    raise UnitSyntaxError('invalid escape \\%s' % char)


def split_words(text):
    """Split a value into words with systemd's quoting and C escapes (ValueError when malformed)."""
    words = []
    index = 0
    length = len(text)
    while True:
        while index < length and text[index] in _WHITESPACE:
            index += 1
        if index >= length:
            return words
        word = []
        quote = None
        while index < length:
            char = text[index]
            if quote is not None:
                if char == quote:
                    quote = None
                    index += 1
                elif char == '\\':
                    decoded, index = _unescape_at(text, index)
                    word.append(decoded)
                else:
                    word.append(char)
                    index += 1
                continue
            if char in _WHITESPACE:
                break
            if char in '"\'':
                quote = char
                index += 1
            elif char == '\\':
                decoded, index = _unescape_at(text, index)
                word.append(decoded)
            else:
                word.append(char)
                index += 1
        if quote is not None:
            raise UnitSyntaxError('unbalanced %s quote' % quote)
        words.append(''.join(word))


def strip_exec_prefixes(words):
    """Remove '-@:+!' prefixes of the first word. Return (words, prefixes)."""
    if not words:
        return words, ''
    first = words[0]
    position = 0
    while position < len(first) and first[position] in '-@:+!':
        position += 1
    prefixes = first[:position]
    rest = [first[position:]] + list(words[1:])
    if '@' in prefixes and len(rest) >= 2:
        # "@/usr/bin/x name args": the second word is only argv[0]; the process runs the first.
        rest = [rest[0]] + rest[2:]
    return rest, prefixes


def _replace_in_word(word, env, missing):
    out = []
    index = 0
    while index < len(word):
        char = word[index]
        if char == '$' and index + 1 < len(word):
            following = word[index + 1]
            if following == '$':
                out.append('$')
                index += 2
                continue
            if following == '{':
                end = word.find('}', index + 2)
                name = word[index + 2:end] if end != -1 else ''
                if end != -1 and _ENV_NAME.match(name):
                    if name in env:
                        out.append(env[name])
                    elif name not in missing:
                        missing.append(name)
                    index = end + 1
                    continue
        out.append(char)
        index += 1
    return ''.join(out)


def expand_variables(words, env, missing):
    """systemd's replace_env_argv: ``$VAR`` (whole word, split), ``${VAR}`` (in a word), ``$$``."""
    out = []
    for word in words:
        if word.startswith('$') and len(word) > 1 and word[1] not in '{$' and _ENV_NAME.match(word[1:]):
            name = word[1:]
            if name in env:
                out.extend(env[name].split())
            elif name not in missing:
                missing.append(name)
            continue
        out.append(_replace_in_word(word, env, missing))
    return out


# --------------------------------------------------------------------------------------------
# One unit with its drop-ins
# --------------------------------------------------------------------------------------------

def find_unit_file(root, unit):
    """The first existing unit file for ``unit`` (or its template) in the unit directories, or None."""
    names = [unit]
    template = template_of(unit)
    if template:
        names.append(template)
    for name in names:
        for directory in UNIT_DIRS:
            path = directory + '/' + name
            if files.host_path(root, path) is not None and os.path.lexists(files.host_path(root, path)):
                return path
    return None


def drop_in_paths(root, unit, exclude=()):
    """Drop-in files of ``unit`` (and of its template), in the order systemd applies them.

    ``exclude``: file names left out (this collection's own overlay, to read the baseline without it).
    """
    chosen = {}
    names = [unit]
    template = template_of(unit)
    if template:
        names.insert(0, template)
    for name in names:
        for directory in reversed(UNIT_DIRS):  # higher-priority directories overwrite
            folder = directory + '/' + name + '.d'
            for entry in files.list_dir(root, folder):
                if entry.endswith('.conf') and entry not in exclude:
                    chosen[entry] = folder + '/' + entry
    return [chosen[entry] for entry in sorted(chosen)]


class UnitConfig(object):
    """The [Service] settings that matter here, after the unit and its drop-ins."""

    def __init__(self):
        self.exec_start = []        # raw values, after resets
        self.environment = []       # raw values, after resets
        self.environment_files = []  # raw values, after resets
        self.sources = []           # files read
        self.problems = []
        self.service_type = None

    def apply(self, text, source):
        self.sources.append(source)
        for section, key, value in parse_unit_text(text):
            if section != 'Service':
                continue
            if key == 'Type':
                self.service_type = value or None
            target = {'ExecStart': self.exec_start, 'Environment': self.environment,
                      'EnvironmentFile': self.environment_files}.get(key)
            if target is None:
                continue
            if value == '':
                del target[:]
            else:
                target.append(value)


def environment_from(config, table, root, unknown_specifiers, problems):
    """(env dict, env file paths, names of secret-looking keys). Env file values stay internal."""
    env = {}
    for value in config.environment:
        try:
            words = split_words(expand_specifiers(value, table, unknown_specifiers))
        except UnitSyntaxError as exc:
            problems.append('Environment=%s: %s' % (value.split('=', 1)[0], exc))
            continue
        for word in words:
            name, sep, val = word.partition('=')
            if sep and _ENV_NAME.match(name):
                env[name] = val
    paths = []
    for value in config.environment_files:
        path = expand_specifiers(value, table, unknown_specifiers).strip()
        optional = path.startswith('-')
        path = path.lstrip('-')
        paths.append(path)
        read = files.read_regular(root, path)
        if read.data is None:
            if read.error:
                problems.append('EnvironmentFile %s: %s' % (path, read.error))
            elif not optional:
                problems.append('EnvironmentFile %s does not exist (systemd refuses to start the unit)' % path)
            continue
        for name, val in files.parse_env_file(read.text):
            env[name] = val
    return env, paths


def exec_words(value, table, env, unknown):
    """One ExecStart= value as systemd runs it: (argv, prefixes, names of unset variables).

    Specifiers are expanded, the value is split into words, the prefixes (``-@:+!``) are taken off, and
    ``$VAR``/``${VAR}`` are expanded from ``env`` unless the ``:`` prefix says not to. Raises UnitSyntaxError.
    """
    words, prefixes = strip_exec_prefixes(split_words(expand_specifiers(value, table, unknown)))
    missing = []
    if ':' not in prefixes:
        words = expand_variables(words, env, missing)
    return words, prefixes, missing


def parse_unit(root, unit, path, hostname=None, machine_id=None, read=None, exclude=()):
    """Read ``unit`` from ``path`` (and its drop-ins, but those named in ``exclude``) below ``root``.

    Returns a dict: file (FileRead), argv (list or None), env (dict, internal), env_files,
    problems (sentences), unknown_specifiers, exec_count, exec_start_raw (the effective ExecStart= value as
    written, before specifiers and variables are expanded), sources (the files read, in order, with their bytes).
    """
    read = read or files.read_regular(root, path)
    result = {'file': read, 'argv': None, 'env': {}, 'env_files': [], 'problems': [],
              'unknown_specifiers': [], 'exec_count': 0, 'prefixes': '', 'exec_start_raw': None, 'sources': []}
    if read.error:
        result['problems'].append(read.error)
    if read.data is None:
        return result
    config = UnitConfig()
    config.apply(read.text, path)
    result['sources'].append((path, read.data))
    for drop_in in drop_in_paths(root, unit, exclude=exclude):
        drop = files.read_regular(root, drop_in)
        if drop.data is None:
            if drop.error:
                result['problems'].append(drop.error)
            continue
        config.apply(drop.text, drop_in)
        result['sources'].append((drop_in, drop.data))
    table = specifier_table(unit, fragment_path=path, hostname=hostname, machine_id=machine_id)
    unknown = result['unknown_specifiers']
    env, env_files = environment_from(config, table, root, unknown, result['problems'])
    result['env'], result['env_files'] = env, env_files
    result['exec_count'] = len(config.exec_start)
    if not config.exec_start:
        result['problems'].append('%s has no ExecStart= in [Service]' % unit)
        return result
    if len(config.exec_start) > 1 and config.service_type != 'oneshot':
        result['problems'].append('%s has %d ExecStart= lines after its drop-ins; systemd only accepts that for '
                                  'Type=oneshot (an empty ExecStart= in the drop-in resets the list): the last one is read'
                                  % (unit, len(config.exec_start)))
    value = config.exec_start[-1]
    result['exec_start_raw'] = value
    try:
        words, prefixes, missing = exec_words(value, table, env, unknown)
    except UnitSyntaxError as exc:
        result['problems'].append('ExecStart= of %s cannot be parsed: %s' % (unit, exc))
        return result
    result['prefixes'] = prefixes
    for name in missing:
        result['problems'].append('ExecStart= uses $%s, which no Environment= or EnvironmentFile= sets '
                                  '(expanded to nothing)' % name)
    for spec in unknown:
        result['problems'].append('specifier %s in %s is not expanded (kept as written)' % (spec, unit))
    result['argv'] = words
    return result


# --------------------------------------------------------------------------------------------
# systemctl show
# --------------------------------------------------------------------------------------------

def parse_systemctl_show(text):
    """``Key=value`` lines -> dict (values as strings)."""
    props = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition('=')
        if sep:
            props[key.strip()] = value
    return props


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def state_from_show(props):
    """The module's state dict from ``systemctl show`` properties."""
    load = props.get('LoadState', '')
    active = props.get('ActiveState', '')
    if load == 'not-found':
        status = 'not-found'
    elif active in ('active', 'reloading', 'refreshing'):
        status = 'active'
    elif active in ('activating',):
        status = 'activating'
    elif active in ('failed',):
        status = 'failed'
    elif active in ('inactive', 'deactivating', 'maintenance'):
        status = 'inactive'
    else:
        status = 'unknown'
    main_pid = _int_or_none(props.get('MainPID'))
    since = props.get('ActiveEnterTimestamp') or None
    if since in ('n/a', '0'):
        since = None
    reload_flag = props.get('NeedDaemonReload')
    return {
        'active': status == 'active',
        'status': status,
        'main_pid': main_pid if main_pid else None,
        'restarts': _int_or_none(props.get('NRestarts')),
        'since': since,
        'need_daemon_reload': {'yes': True, 'no': False}.get(reload_flag),
        'container_id': None,
    }


def parse_proc_cmdline(data):
    """/proc/<pid>/cmdline bytes -> argv list (empty for a kernel thread or a zombie)."""
    if not data:
        return []
    parts = data.split(b'\0')
    if parts and parts[-1] == b'':
        parts = parts[:-1]
    return [part.decode('utf-8', 'replace') for part in parts]
