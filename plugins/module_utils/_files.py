# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a target's files safely (private): regular files only, bounded, never blocking.

A FIFO or a device node where a file belongs would block the module forever or never end; a huge
file would be read whole. ``read_regular_bytes`` opens without blocking, checks what it opened,
and reads at most ``limit`` bytes. Callers phrase the problems for their own outputs.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import stat

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
