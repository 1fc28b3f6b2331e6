# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model weights staged on a host before the change (private to this collection; speculative_stage's logic).

A draft model or an EAGLE-3 head is copied from a source the operator names (an HTTP(S) mirror, or a directory the
host sees: a mounted mirror, a copy the controller put there) into a local directory, every file checked against
its SHA-256 before anything is replaced. The candidate service then starts offline from that directory: the
download is not downtime, a failed download is not a failed change, an air-gapped site can speculate.

The checksums come from the operator (``checksums``) or from a manifest in the source, in ``sha256sum``'s format
(``<64 hex digits>  <relative path>``, one file per line), the format ``sha256sum`` writes and mirrors publish.

Whole or nothing: the copy is made in a hidden directory beside the destination (same file system), each file
hashed as it is written; only when every file matches is it moved into place (the previous copy, if any, moved
aside first, then removed). Any failure removes the partial copy and leaves the destination as it was. A
destination this collection did not stage (no stamp beside it) is never replaced: when it does not match, the
module fails naming it.

Bounded: the manifest's size and file count, the total size, each read's timeout and the whole staging's deadline;
the free space is checked before the first byte is written and again while writing. Standard library only.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import stat
import time

from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit
from urllib.request import Request, build_opener, HTTPSHandler, HTTPRedirectHandler

from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import file_kind

MB = 1024 * 1024
CHUNK = MB
MANIFEST_LIMIT = MB          # a manifest lists a few dozen files; a larger one is not one
MAX_FILES = 10000
MAX_REDIRECTS = 5
STAMP_SUFFIX = '.jetson-llm-stage.json'
#: the manifest format sha256sum writes: digest, a space, a space or "*" (binary mode), the path
_LINE = re.compile(r'^([0-9A-Fa-f]{64}) [ *](.+)$')
_HEX = re.compile(r'^[0-9a-f]{64}$')
SOURCE_ALLOWED = ('an http:// or https:// URL without credentials (the directory on the mirror), or an absolute path '
                  'of a directory on the host')


class StageError(Exception):
    """Staging failed or was refused; the message names the value and what to do. Nothing was replaced."""


def _control(text):
    for char in text:
        if ord(char) < 32 or ord(char) == 127:
            return True
    return False


def check_source(source):
    """('http', base URL ending in "/") or ('dir', absolute path) for ``source``; StageError naming it otherwise."""
    if not isinstance(source, str) or not source or _control(source) or ' ' in source:
        raise StageError('source %s is not %s; allowed: %s.' % (_show_source(source), 'a URL or a path', SOURCE_ALLOWED))
    if source.startswith('/'):
        return 'dir', source.rstrip('/') or '/'
    parts = urlsplit(source)
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise StageError('source %s is not %s; allowed: %s.' % (_show_source(source), 'a URL or a path', SOURCE_ALLOWED))
    if parts.username is not None or parts.password is not None:
        raise StageError('source %s holds credentials in its URL, which would appear in logs; give them as token '
                         '(sent as an Authorization header, never shown). Allowed: %s.'
                         % (_show_source(source), SOURCE_ALLOWED))
    if parts.query or parts.fragment:
        raise StageError('source %s has a query or a fragment; allowed: %s.' % (_show_source(source), SOURCE_ALLOWED))
    return 'http', source if source.endswith('/') else source + '/'


def _show_source(source):
    """A source for a message: a URL's credentials are never shown."""
    if not isinstance(source, str):
        return repr(source)
    try:
        parts = urlsplit(source)
        if parts.username is not None or parts.password is not None:
            source = source.replace(parts.netloc, '***@' + (parts.hostname or '') +
                                    (':%d' % parts.port if parts.port else ''), 1)
    except ValueError:
        pass
    text = repr(source)
    return text if len(text) <= 160 else text[:160] + '...'


def check_relpath(path, where):
    """``path`` if it is a relative path inside the model directory; StageError naming it otherwise."""
    if not isinstance(path, str) or not path:
        raise StageError('%s: %r is not a file name; allowed: a relative path inside the model directory.' % (where, path))
    if _control(path) or '\\' in path:
        raise StageError('%s: %r holds a control character or a backslash; allowed: a relative path inside the model '
                         'directory.' % (where, path))
    if path.startswith('/') or any(part in ('', '.', '..') for part in path.split('/')):
        raise StageError('%s: %r is not inside the model directory (absolute, empty, "." or ".." parts); allowed: a '
                         'relative path such as model.safetensors or tokenizer/vocab.json.' % (where, path))
    if path.endswith(STAMP_SUFFIX):
        raise StageError('%s: %r is a name this module keeps for itself.' % (where, path))
    return path


def parse_manifest(text, where):
    """[(path, sha256)] from a manifest in sha256sum's format; StageError naming the first bad line."""
    entries = []
    seen = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith('#'):
            continue
        match = _LINE.match(line)
        if not match:
            raise StageError('%s line %d is not "<64 hex digits>  <path>" (sha256sum\'s format): %r'
                             % (where, number, line[:120]))
        digest, path = match.group(1).lower(), match.group(2)
        check_relpath(path, '%s line %d' % (where, number))
        if path in seen:
            raise StageError('%s lists %r twice (line %d).' % (where, path, number))
        seen.add(path)
        entries.append((path, digest))
        if len(entries) > MAX_FILES:
            raise StageError('%s lists more than %d files; a model directory has a few dozen.' % (where, MAX_FILES))
    if not entries:
        raise StageError('%s lists no file: nothing to stage.' % where)
    return entries


def check_checksums(checksums):
    """[(path, sha256)] from the ``checksums`` option (a dict path -> digest); StageError naming the first bad one."""
    if not isinstance(checksums, dict) or not checksums:
        raise StageError('checksums must be a dictionary of relative path -> SHA-256 (64 hex digits), got %r.'
                         % (checksums,))
    if len(checksums) > MAX_FILES:
        raise StageError('checksums lists more than %d files; a model directory has a few dozen.' % MAX_FILES)
    entries = []
    for path in sorted(checksums, key=str):
        check_relpath(path, 'checksums')
        digest = checksums[path]
        if not isinstance(digest, str) or not _HEX.match(digest.lower()):
            raise StageError('checksums[%r] is %r, not a SHA-256 (64 hex digits).' % (path, digest))
        entries.append((path, digest.lower()))
    return entries


class Deadline(object):
    """The whole staging's deadline (monotonic clock)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self, what):
        if time.monotonic() > self.end:
            raise StageError('Staging took longer than its deadline (%s s) while %s; nothing was replaced. Raise '
                             'deadline for a slow mirror.' % (_num(self.seconds), what))

    def left(self):
        return max(0.001, self.end - time.monotonic())


def _num(value):
    return ('%g' % value) if isinstance(value, float) else '%s' % value


class _BoundedRedirects(HTTPRedirectHandler):
    """At most MAX_REDIRECTS redirects (urllib follows http and https only); the token is not sent to another host."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = HTTPRedirectHandler.redirect_request(self, req, fp, code, msg, headers, newurl)
        if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            for name in list(new.headers):
                if name.lower() == 'authorization':
                    del new.headers[name]
        return new


class HttpSource(object):
    """Files under a base URL. ``token``: sent as ``Authorization: Bearer``, never shown."""

    kind = 'http'

    def __init__(self, base, token=None, timeout=30.0, validate_certs=True):
        self.base = base
        self.timeout = timeout
        self.headers = {'User-Agent': 'jetson_llm.vllm speculative_stage'}
        if token:
            self.headers['Authorization'] = 'Bearer %s' % token
        context = ssl.create_default_context()
        if not validate_certs:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self.opener = build_opener(HTTPSHandler(context=context), _BoundedRedirects())

    def url(self, path):
        return self.base + quote(path)

    def _open(self, path, method, deadline):
        request = Request(self.url(path), headers=self.headers, method=method)
        try:
            return self.opener.open(request, timeout=min(self.timeout, deadline.left()))
        except HTTPError as exc:
            raise StageError('%s %s answered HTTP %d (%s); nothing was replaced.'
                             % (method, self.url(path), exc.code, exc.reason))
        except (URLError, http.client.HTTPException, socket.timeout, ssl.SSLError, OSError, ValueError) as exc:
            raise StageError('%s %s failed: %s; nothing was replaced.' % (method, self.url(path), _reason(exc)))

    def size(self, path, deadline):
        """The file's size from a HEAD request, or None when the server does not say (or does not answer HEAD)."""
        request = Request(self.url(path), headers=self.headers, method='HEAD')
        try:
            response = self.opener.open(request, timeout=min(self.timeout, deadline.left()))
        except HTTPError as exc:
            if exc.code in (405, 501):
                return None
            raise StageError('HEAD %s answered HTTP %d (%s); nothing was replaced.' % (self.url(path), exc.code, exc.reason))
        except (URLError, http.client.HTTPException, socket.timeout, ssl.SSLError, OSError, ValueError) as exc:
            raise StageError('HEAD %s failed: %s; nothing was replaced.' % (self.url(path), _reason(exc)))
        try:
            return _length(response.headers.get('Content-Length'))
        finally:
            response.close()

    def read_small(self, path, limit, deadline):
        response = self._open(path, 'GET', deadline)
        try:
            data = _read_bounded(response, limit, deadline, self.url(path))
        finally:
            response.close()
        return data

    def stream(self, path, deadline):
        """(a file object, its announced length or None)."""
        response = self._open(path, 'GET', deadline)
        return response, _length(response.headers.get('Content-Length'))

    def describe(self, path):
        return self.url(path)


class DirSource(object):
    """Files under a directory of the host (symbolic links followed; regular files only, opened without blocking)."""

    kind = 'dir'

    def __init__(self, root):
        self.root = root
        if not os.path.isdir(root):
            what = 'does not exist' if not os.path.lexists(root) else 'is not a directory'
            raise StageError('source %r %s on this host; allowed: %s.' % (root, what, SOURCE_ALLOWED))

    def _path(self, path):
        return os.path.join(self.root, path)

    def _fd(self, path):
        real = self._path(path)
        try:
            descriptor = os.open(real, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0))
        except (IOError, OSError) as exc:
            raise StageError('Cannot read %s: %s; nothing was replaced.' % (real, _reason(exc)))
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            os.close(descriptor)
            raise StageError('%s is %s, not a regular file; nothing was replaced.' % (real, file_kind(mode)))
        return descriptor

    def size(self, path, deadline):
        descriptor = self._fd(path)
        try:
            return os.fstat(descriptor).st_size
        finally:
            os.close(descriptor)

    def read_small(self, path, limit, deadline):
        handle = os.fdopen(self._fd(path), 'rb')
        try:
            return _read_bounded(handle, limit, deadline, self._path(path))
        finally:
            handle.close()

    def stream(self, path, deadline):
        descriptor = self._fd(path)
        return os.fdopen(descriptor, 'rb'), os.fstat(descriptor).st_size

    def describe(self, path):
        return self._path(path)


def _length(value):
    try:
        length = int(value)
    except (TypeError, ValueError):
        return None
    return length if length >= 0 else None


def _reason(exc):
    reason = getattr(exc, 'reason', None)
    if reason is not None and not isinstance(reason, str):
        reason = getattr(reason, 'strerror', None) or '%s' % reason
    return reason or getattr(exc, 'strerror', None) or '%s' % exc or exc.__class__.__name__


def _reader(handle):
    """``read1`` where there is one (an HTTP response, a buffered file): what has arrived, at most one read of the
    socket, so a server that sends a byte at a time cannot keep one call waiting past the deadline."""
    return getattr(handle, 'read1', None) or handle.read


def _read_bounded(handle, limit, deadline, where):
    chunks = []
    size = 0
    read = _reader(handle)
    while True:
        deadline.check('reading %s' % where)
        try:
            chunk = read(min(65536, limit + 1 - size))
        except (http.client.HTTPException, socket.timeout, OSError, ValueError) as exc:
            raise StageError('Reading %s failed: %s; nothing was replaced.' % (where, _reason(exc)))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise StageError('%s is larger than %d bytes: not a manifest; nothing was replaced.' % (where, limit))
    return b''.join(chunks)


def open_source(source, token=None, timeout=30.0, validate_certs=True):
    kind, where = check_source(source)
    if kind == 'dir':
        return DirSource(where)
    return HttpSource(where, token=token, timeout=timeout, validate_certs=validate_certs)


def read_manifest(src, name, deadline):
    """[(path, sha256)] from the manifest file ``name`` in the source."""
    check_relpath(name, 'manifest')
    data = src.read_small(name, MANIFEST_LIMIT, deadline)
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        raise StageError('The manifest %s is not UTF-8 text; nothing was replaced.' % src.describe(name))
    return parse_manifest(text, 'The manifest %s' % src.describe(name))


def sha256_file(path, deadline):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        while True:
            deadline.check('checking %s' % path)
            chunk = handle.read(CHUNK)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)


def stamp_path(dest):
    return os.path.join(os.path.dirname(dest), '.' + os.path.basename(dest) + STAMP_SUFFIX)


def read_stamp(dest):
    """The stamp this module left beside ``dest`` (a dict), or None."""
    path = stamp_path(dest)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except (IOError, OSError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        data = os.read(descriptor, MANIFEST_LIMIT)
    finally:
        os.close(descriptor)
    try:
        stamp = json.loads(data.decode('utf-8'))
    except ValueError:
        return None
    return stamp if isinstance(stamp, dict) else None


def existing_files(dest):
    """{relative path: size} of the regular files under ``dest`` (links not followed), or None when ``dest`` is not
    a directory; StageError when it holds too many entries."""
    if not os.path.isdir(dest) or os.path.islink(dest):
        return None
    found = {}
    for top, dirs, files in os.walk(dest):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, dest)
            info = os.lstat(full)
            found[rel] = info.st_size if stat.S_ISREG(info.st_mode) else None
            if len(found) > MAX_FILES:
                raise StageError('%s holds more than %d entries: not a model directory.' % (dest, MAX_FILES))
    return found


def matches(dest, entries, deadline):
    """None when ``dest`` holds exactly the manifest's files with their digests, else the first difference (text)."""
    found = existing_files(dest)
    if found is None:
        return '%s does not exist' % dest if not os.path.lexists(dest) else '%s is not a directory' % dest
    wanted = dict(entries)
    extra = sorted(set(found) - set(wanted))
    if extra:
        return '%s holds %s, which the manifest does not list' % (dest, extra[0])
    for path, digest in entries:
        if path not in found:
            return '%s is missing' % os.path.join(dest, path)
        if found[path] is None:
            return '%s is not a regular file' % os.path.join(dest, path)
        got = sha256_file(os.path.join(dest, path), deadline)
        if got != digest:
            return '%s has SHA-256 %s, not %s' % (os.path.join(dest, path), got, digest)
    return None


def free_bytes(directory):
    info = os.statvfs(directory)
    return info.f_bavail * info.f_frsize


def nearest_existing(path):
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path or '/'


def check_dest(dest):
    """StageError when ``dest`` cannot be a staged model directory (not absolute, a file, a FIFO, a link...)."""
    if not isinstance(dest, str) or not dest.startswith('/') or _control(dest):
        raise StageError('dest %r is not an absolute path without control characters.' % (dest,))
    dest = dest.rstrip('/')
    if not dest or os.path.dirname(dest) == dest:
        raise StageError('dest %r is the root directory; allowed: a directory for the model, such as '
                         '/var/lib/jetson_llm/models/draft.' % (dest,))
    if os.path.islink(dest):
        raise StageError('dest %s is a symbolic link; allowed: a directory this module creates and owns.' % dest)
    if os.path.lexists(dest) and not os.path.isdir(dest):
        kind = file_kind(os.lstat(dest).st_mode)
        raise StageError('dest %s is %s, not a directory; nothing was replaced.'
                         % (dest, 'a regular file' if kind == 'not a file' else kind))
    parent = os.path.dirname(dest)
    existing = nearest_existing(parent)
    if existing != parent and os.path.lexists(parent):
        raise StageError('dest %s cannot be created: its parent %s is not a directory.' % (dest, parent))
    return dest


def remove_leftovers(dest):
    """Remove the partial or old copies an interrupted run left beside ``dest``."""
    parent, name = os.path.dirname(dest), os.path.basename(dest)
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    removed = []
    for entry in names:
        if entry.startswith('.%s.partial-' % name) or entry.startswith('.%s.old-' % name):
            full = os.path.join(parent, entry)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
                removed.append(full)
    return removed


class Stager(object):
    """One staging: plan() finds what to do, then copy() does it (not in check mode)."""

    def __init__(self, src, dest, entries, min_free_bytes, max_total_bytes, deadline):
        self.src = src
        self.dest = dest
        self.entries = entries
        self.min_free = min_free_bytes
        self.max_total = max_total_bytes
        self.deadline = deadline
        self.sizes = {}

    def difference(self):
        """None when the destination already holds the manifest's files, else why it does not."""
        return matches(self.dest, self.entries, self.deadline)

    def owned(self):
        return read_stamp(self.dest) is not None

    def measure(self):
        """The sizes of the source's files, and the disk check before anything is written."""
        total = 0
        for path, _digest in self.entries:
            self.deadline.check('asking for the size of %s' % self.src.describe(path))
            size = self.src.size(path, self.deadline)
            self.sizes[path] = size
            total += size or 0
            if total > self.max_total:
                raise StageError('The model is larger than max_total_mb (%d MB) at %s; nothing was written. Raise '
                                 'max_total_mb if it is right.' % (self.max_total // MB, self.src.describe(path)))
        parent = nearest_existing(os.path.dirname(self.dest))
        free = free_bytes(parent)
        if free - total < self.min_free:
            raise StageError('Not enough disk space for %s: %d MB free on %s, the model needs %d MB and min_free_mb '
                             'asks %d MB to remain; nothing was written.'
                             % (self.dest, free // MB, parent, -(-total // MB), self.min_free // MB))
        return total

    def copy(self):
        """Copy every file into a hidden directory beside dest, hashing as it goes; move it into place when all
        match. Returns the bytes written. Any failure removes the partial copy (StageError)."""
        parent = os.path.dirname(self.dest)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        partial = os.path.join(parent, '.%s.partial-%d' % (os.path.basename(self.dest), os.getpid()))
        written = 0
        try:
            os.mkdir(partial, 0o755)
            for path, digest in self.entries:
                written += self._copy_one(path, digest, partial, written)
            self._swap(partial)
        except StageError:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        except (IOError, OSError) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if getattr(exc, 'errno', None) == errno.ENOSPC:
                raise StageError('The disk filled while staging %s (%s); the partial copy was removed and nothing '
                                 'was replaced.' % (self.dest, _reason(exc)))
            raise StageError('Staging %s failed: %s; the partial copy was removed and nothing was replaced.'
                             % (self.dest, _reason(exc)))
        return written

    def _copy_one(self, path, digest, partial, written_before):
        target = os.path.join(partial, path)
        directory = os.path.dirname(target)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        handle, announced = self.src.stream(path, self.deadline)
        where = self.src.describe(path)
        expected = self.sizes.get(path)
        if announced is not None and expected is not None and announced != expected:
            handle.close()
            raise StageError('%s announced %d bytes, %d a moment before: the source changed while staging; nothing '
                             'was replaced.' % (where, announced, expected))
        sha = hashlib.sha256()
        size = 0
        checked = 0
        read = _reader(handle)
        try:
            with open(target, 'wb') as out:
                while True:
                    self.deadline.check('copying %s' % where)
                    try:
                        chunk = read(CHUNK)
                    except (http.client.HTTPException, socket.timeout, OSError, ValueError) as exc:
                        raise StageError('Reading %s failed after %d bytes: %s; nothing was replaced.'
                                         % (where, size, _reason(exc)))
                    if not chunk:
                        break
                    size += len(chunk)
                    if announced is not None and size > announced:
                        raise StageError('%s sent more than the %d bytes it announced; nothing was replaced.'
                                         % (where, announced))
                    if written_before + size > self.max_total:
                        raise StageError('The model is larger than max_total_mb (%d MB) at %s; nothing was replaced.'
                                         % (self.max_total // MB, where))
                    sha.update(chunk)
                    out.write(chunk)
                    if size - checked >= 64 * MB:
                        checked = size
                        if free_bytes(partial) < self.min_free:
                            raise StageError('Free space on %s fell below min_free_mb (%d MB) while copying %s; '
                                             'nothing was replaced.' % (partial, self.min_free // MB, where))
        finally:
            handle.close()
        if announced is not None and size != announced:
            raise StageError('%s ended after %d of the %d bytes it announced (truncated); nothing was replaced.'
                             % (where, size, announced))
        got = sha.hexdigest()
        if got != digest:
            raise StageError('%s has SHA-256 %s, not %s as its checksum says: a corrupt or changed copy, refused; '
                             'nothing was replaced.' % (where, got, digest))
        os.chmod(target, 0o644)
        return size

    def _swap(self, partial):
        """partial -> dest; a previous dest moved aside first, then removed."""
        old = None
        if os.path.lexists(self.dest):
            old = os.path.join(os.path.dirname(self.dest), '.%s.old-%d' % (os.path.basename(self.dest), os.getpid()))
            os.rename(self.dest, old)
        os.rename(partial, self.dest)
        if old:
            shutil.rmtree(old, ignore_errors=True)

    def write_stamp(self, source_text):
        stamp = {'source': source_text, 'files': dict(self.entries), 'staged': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                                                                             time.gmtime())}
        path = stamp_path(self.dest)
        temporary = path + '.tmp-%d' % os.getpid()
        with open(temporary, 'w') as handle:
            json.dump(stamp, handle, sort_keys=True)
        os.chmod(temporary, 0o644)
        os.rename(temporary, path)
