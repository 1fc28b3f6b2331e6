# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and writing a target's files safely (private): regular files only, bounded, never blocking;
written whole or not at all.

A FIFO or a device node where a file belongs would block the module forever or never end; a huge
file would be read whole. ``read_regular_bytes`` opens without blocking, checks what it opened,
and reads at most ``limit`` bytes. Callers phrase the problems for their own outputs.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import stat
import tempfile

_FILE_KINDS = (
    (stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a FIFO'), (stat.S_ISCHR, 'a character device'),
    (stat.S_ISBLK, 'a block device'), (stat.S_ISSOCK, 'a socket'),
)

MISSING = 'missing'
NOT_REGULAR = 'not_regular'
TOO_LARGE = 'too_large'
UNREADABLE = 'unreadable'


def file_kind(mode):
    """'a directory', 'a FIFO'... for a stat mode that is not a regular file."""
    for test, name in _FILE_KINDS:
        if test(mode):
            return name
    return 'not a file'


def read_regular_bytes(real, limit):
    """Read host path ``real``: (data, mode, problem, detail).

    ``problem`` is None (``data`` holds the bytes), MISSING, NOT_REGULAR (``detail``: what it is),
    TOO_LARGE (``detail``: the limit) or UNREADABLE (``detail``: the system's words).
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag.
        descriptor = os.open(real, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0))
    except (IOError, OSError) as exc:
        code = getattr(exc, 'errno', None)
        if code in (errno.ENOENT, errno.ENOTDIR) or not os.path.lexists(real):
            return None, None, MISSING, None
        if code == errno.EISDIR:
            return None, stat.S_IFDIR, NOT_REGULAR, 'a directory'
        return None, None, UNREADABLE, getattr(exc, 'strerror', None) or '%s' % exc
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            return None, mode, NOT_REGULAR, file_kind(mode)
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return None, mode, TOO_LARGE, limit
        return b''.join(chunks), mode, None, None
    except (IOError, OSError) as exc:
        return None, None, UNREADABLE, getattr(exc, 'strerror', None) or '%s' % exc
    finally:
        os.close(descriptor)


def parent_problem(path):
    """Why the file ``path`` cannot be created (an ancestor that exists but is not a directory), or None."""
    directory = os.path.dirname(os.path.abspath(path))
    while directory and directory != '/':
        if os.path.lexists(directory):
            if os.path.isdir(directory):
                return None
            try:
                kind = file_kind(os.stat(directory).st_mode)
            except OSError:
                kind = 'a broken link' if os.path.islink(directory) else 'not a directory'
            return 'its parent %s is %s, not a directory' % (directory, 'a regular file' if kind == 'not a file' else kind)
        directory = os.path.dirname(directory)
    return None


def write_atomic(module, path, content, mode=0o644):
    """Write ``content`` (bytes, or text as UTF-8) to ``path`` whole or not at all, with ``mode``.

    A temporary file beside ``path`` (missing directories are made, 0755) is written, given its mode and moved over
    ``path`` with the module's ``atomic_move``: a reader never sees half a file, an interrupted run leaves the old one.
    ``atomic_move`` gives the new file the mode of the one it replaces, so an existing ``path`` is first narrowed to
    the stricter of both modes (a 0644 file that now receives a secret is never readable by others, not even between
    the move and the last chmod), and ``mode`` is set once the new file is in place.

    A path that cannot be written (a parent that is a file, a full or read-only file system) fails the module with
    the path and the system's words; the old file, if any, is left as it was.
    """
    if not isinstance(content, bytes):
        content = content.encode('utf-8')
    problem = parent_problem(path)
    if problem:
        module.fail_json(msg='Cannot write %s: %s. Nothing was changed.' % (path, problem))
    directory = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path))
        with os.fdopen(descriptor, 'wb') as handle:
            handle.write(content)
        os.chmod(temporary, mode)
        if os.path.isfile(path) and not os.path.islink(path):
            os.chmod(path, os.stat(path).st_mode & mode & 0o7777)
    except (IOError, OSError) as exc:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
        module.fail_json(msg='Cannot write %s: %s. Nothing was changed.'
                         % (path, getattr(exc, 'strerror', None) or exc))
    try:
        module.atomic_move(temporary, path)
        os.chmod(path, mode)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
