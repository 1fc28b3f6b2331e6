# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading service files below a root: regular files only, size-limited, never blocking.

A FIFO, a device or a directory where a unit, compose or environment file belongs is refused
(opened with O_NONBLOCK only after ``stat`` said it is a regular file, and checked again with
``fstat`` on the open descriptor), so a hostile or broken host cannot hang the module.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import hashlib
import os
import stat

from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import NOT_REGULAR, TOO_LARGE, file_kind, read_regular_bytes
from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.facts import resolve_in_root

MAX_FILE_BYTES = 1024 * 1024


class FileRead(object):
    """The outcome of reading one file: data (bytes or None), error (sentence or None), mode."""

    def __init__(self, path, real=None, data=None, error=None, mode=None, exists=False):
        self.path = path
        self.real = real
        self.data = data
        self.error = error
        self.mode = mode
        self.exists = exists

    @property
    def text(self):
        return None if self.data is None else self.data.decode('utf-8', 'replace')

    def info(self):
        """{path, exists, sha256, mode} as the module returns it (sha256 of the bytes, null when unread)."""
        return {
            'path': self.path,
            'exists': self.exists,
            'sha256': hashlib.sha256(self.data).hexdigest() if self.data is not None else None,
            'mode': '%04o' % stat.S_IMODE(self.mode) if self.mode is not None else None,
        }


def host_path(root, path):
    """The host path of target ``path`` below ``root`` (links resolved inside root), or None (a loop)."""
    return resolve_in_root(root, path)


def read_regular(root, path, limit=MAX_FILE_BYTES, proc=False):
    """Read target file ``path`` below ``root``; refuse anything but a regular file.

    ``proc``: a /proc file (size 0 in stat, read up to ``limit``).
    """
    real = resolve_in_root(root, path)
    if real is None:
        return FileRead(path, error='too many symbolic links while resolving %s below %s' % (path, root))
    try:
        info = os.stat(real)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return FileRead(path, real)
        return FileRead(path, real, error='cannot read %s: %s' % (path, exc.strerror or exc))
    if not stat.S_ISREG(info.st_mode):
        return FileRead(path, real, mode=info.st_mode, exists=True,
                        error='%s is %s, not a regular file: not read' % (path, file_kind(info.st_mode)))
    if not proc and info.st_size > limit:
        return FileRead(path, real, mode=info.st_mode, exists=True,
                        error='%s is %d bytes, more than the %d bytes read: not read' % (path, info.st_size, limit))
    data, _mode, problem, detail = read_regular_bytes(real, limit)
    if problem == NOT_REGULAR:
        return FileRead(path, real, mode=info.st_mode, exists=True,
                        error='%s changed into something else than a regular file: not read' % path)
    if problem == TOO_LARGE:
        return FileRead(path, real, mode=info.st_mode, exists=True,
                        error='%s is more than %d bytes: not read' % (path, limit))
    if problem is not None:
        return FileRead(path, real, mode=info.st_mode, exists=True,
                        error='cannot read %s: %s' % (path, detail or 'it disappeared'))
    return FileRead(path, real, data=data, mode=info.st_mode, exists=True)


def list_dir(root, path):
    """Names in target directory ``path`` below ``root`` ([] when absent or not a directory)."""
    real = resolve_in_root(root, path)
    if real is None or not os.path.isdir(real):
        return []
    try:
        return sorted(os.listdir(real))
    except OSError:
        return []


# --------------------------------------------------------------------------------------------
# Environment files (systemd EnvironmentFile=, compose env_file / .env, docker --env-file)
# --------------------------------------------------------------------------------------------

def parse_env_file(text):
    """Parse KEY=VALUE lines as systemd and compose read them; return an ordered list of (key, value).

    Comments (``#``, ``;``), blank lines, ``export`` prefixes, single quotes (literal), double quotes
    (backslash escapes) and a trailing backslash continuing the line are understood. The values are
    only used to expand variables and to see whether a key is set; callers never return them.
    """
    pairs = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        while line.endswith('\\') and index < len(lines):
            line = line[:-1] + lines[index].strip()
            index += 1
        if not line or line[0] in '#;':
            continue
        if line.startswith('export '):
            line = line[len('export '):].lstrip()
        key, sep, value = line.partition('=')
        key = key.strip()
        if not sep or not key or not (key[0].isalpha() or key[0] == '_') or \
                not all(c.isalnum() or c == '_' for c in key):
            continue
        pairs.append((key, _env_value(value.strip())))
    return pairs


def _env_value(value):
    out = []
    quote = None
    index = 0
    while index < len(value):
        char = value[index]
        if quote == "'":
            if char == "'":
                quote = None
            else:
                out.append(char)
        elif quote == '"':
            if char == '"':
                quote = None
            elif char == '\\' and index + 1 < len(value) and value[index + 1] in '"\\$`':
                index += 1
                out.append(value[index])
            else:
                out.append(char)
        else:
            if char in '"\'':
                quote = char
            elif char == '#' and (index == 0 or value[index - 1] in ' \t'):
                break
            elif char == '\\' and index + 1 < len(value):
                index += 1
                out.append(value[index])
            else:
                out.append(char)
        index += 1
    return ''.join(out).rstrip() if quote is None else ''.join(out)
