# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Staging a model directory (_service/stage.py, speculative_stage's logic): from a directory and from a real HTTP
server on the loopback (http.server in a thread, its faults chosen per request), every file checked, whole or
nothing."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import http.server
import os
import threading
import time

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import stage as S

FILES = {'config.json': b'{"model_type": "llama"}\n', 'model.safetensors': os.urandom(300000),
         'tokenizer/vocab.json': b'{"a": 1}\n'}


def sha(data):
    return hashlib.sha256(data).hexdigest()


def manifest(files=None):
    return ''.join('%s  %s\n' % (sha(data), path) for path, data in sorted((files or FILES).items()))


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / 'mirror' / 'draft'
    for path, data in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    (root / 'SHA256SUMS').write_text(manifest())
    return root


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves the mirror directory; ``server.fault`` changes what one path gets."""

    def log_message(self, *args):  # quiet
        pass

    def _send(self, head):
        server = self.server
        if server.token and self.headers.get('Authorization') != 'Bearer %s' % server.token:
            self.send_error(401)
            return
        server.seen.append((self.command, self.path, self.headers.get('Authorization')))
        path = self.path.lstrip('/')
        fault = server.faults.get(path)
        if fault == 'redirect':
            self.send_response(302)
            self.send_header('Location', 'http://localhost:%d/%s' % (server.server_address[1], path + '.moved'))
            self.end_headers()
            return
        if path.endswith('.moved'):
            path = path[:-len('.moved')]
        full = os.path.join(server.root, path)
        if not os.path.isfile(full):
            self.send_error(404)
            return
        with open(full, 'rb') as handle:
            data = handle.read()
        if fault == 'no_head' and head:
            self.send_error(405)
            return
        if fault in ('corrupt',) and not head:
            data = bytes([data[0] ^ 1]) + data[1:]
        length = len(data)
        if fault == 'truncated':
            length = len(data) + 10
        if fault == 'short_length':
            length = len(data) - 3    # a client reads what is announced: the end is missing
        self.send_response(200)
        self.send_header('Content-Length', str(length))
        self.end_headers()
        if head:
            return
        if fault == 'hang':
            time.sleep(20)
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self._send(False)

    def do_HEAD(self):  # noqa: N802
        self._send(True)


@pytest.fixture
def server(mirror):
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    httpd.daemon_threads = True
    httpd.root = str(mirror)
    httpd.faults = {}
    httpd.seen = []
    httpd.token = None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = 'http://127.0.0.1:%d/' % httpd.server_address[1]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def stage(source, dest, token=None, checksums=None, min_free=0, max_total=S.MB * 100, deadline=30.0, timeout=5.0,
          check=False):
    src = S.open_source(source, token=token, timeout=timeout)
    limit = S.Deadline(deadline)
    entries = S.check_checksums(checksums) if checksums is not None else S.read_manifest(src, 'SHA256SUMS', limit)
    stager = S.Stager(src, dest, entries, min_free, max_total, limit)
    difference = stager.difference()
    if difference is None:
        return 0
    stager.measure()
    if check:
        return None
    stager.copy()
    stager.write_stamp(source)
    return difference


def assert_staged(dest):
    for path, data in FILES.items():
        assert (dest / path).read_bytes() == data
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob('*') if p.is_file()) == sorted(FILES)
    assert not [p for p in dest.parent.iterdir() if '.partial-' in p.name or '.old-' in p.name]


def test_from_a_directory_then_again_nothing_to_do(mirror, tmp_path):
    dest = tmp_path / 'models' / 'draft'
    assert stage(str(mirror), str(dest)) == '%s does not exist' % dest
    assert_staged(dest)
    assert (dest / 'model.safetensors').stat().st_mode & 0o777 == 0o644
    stamp = S.read_stamp(str(dest))
    assert stamp['source'] == str(mirror) and stamp['files']['config.json'] == sha(FILES['config.json'])
    assert stage(str(mirror), str(dest)) == 0


def test_from_a_real_http_server_with_a_token_then_again_nothing_to_do(server, tmp_path):
    server.token = 'mirror-token-Zq81'
    dest = tmp_path / 'models' / 'draft'
    stage(server.url, str(dest), token=server.token)
    assert_staged(dest)
    assert ('HEAD', '/model.safetensors', 'Bearer mirror-token-Zq81') in server.seen
    assert ('GET', '/tokenizer/vocab.json', 'Bearer mirror-token-Zq81') in server.seen
    server.seen[:] = []
    assert stage(server.url, str(dest), token=server.token) == 0
    assert server.seen == [('GET', '/SHA256SUMS', 'Bearer mirror-token-Zq81')], 'only the manifest is read again'


def test_a_missing_token_is_the_servers_401_named(server, tmp_path):
    server.token = 'mirror-token-Zq81'
    with pytest.raises(S.StageError, match=r'GET http://127.0.0.1:\d+/SHA256SUMS answered HTTP 401'):
        stage(server.url, str(tmp_path / 'draft'))


@pytest.mark.parametrize('fault, words', [
    ('corrupt', 'model.safetensors has SHA-256 '),
    ('truncated', 'ended after 13 of the 23 bytes it announced (truncated)'),
    ('short_length', 'model.safetensors has SHA-256 '),
])
def test_a_corrupt_or_lying_copy_is_refused_and_nothing_is_replaced(server, tmp_path, fault, words):
    dest = tmp_path / 'models' / 'draft'
    stage(server.url, str(dest))
    before = {p: p.stat().st_mtime_ns for p in dest.rglob('*')}
    stale = dict(FILES, **{'model.safetensors': b'a new release'})
    (tmp_path / 'mirror' / 'draft' / 'model.safetensors').write_bytes(stale['model.safetensors'])
    server.root = str(tmp_path / 'mirror' / 'draft')
    (tmp_path / 'mirror' / 'draft' / 'SHA256SUMS').write_text(manifest(stale))
    server.faults['model.safetensors'] = fault
    with pytest.raises(S.StageError, match=words.replace('(', r'\(').replace(')', r'\)')):
        stage(server.url, str(dest))
    assert_staged(dest)   # the previous copy, untouched
    assert {p: p.stat().st_mtime_ns for p in dest.rglob('*')} == before


def test_a_server_that_hangs_is_bounded_by_the_timeout(server, tmp_path):
    server.faults['config.json'] = 'hang'
    started = time.monotonic()
    with pytest.raises(S.StageError, match='timed out'):
        stage(server.url, str(tmp_path / 'draft'), timeout=0.5)
    assert time.monotonic() - started < 10   # 0.5 s here, a loaded machine aside; the server waits 20 s
    assert not (tmp_path / 'draft').exists()
    assert not [p for p in tmp_path.iterdir() if '.partial-' in p.name]


def test_the_deadline_bounds_the_whole_staging(server, tmp_path):
    server.faults['config.json'] = 'hang'
    with pytest.raises(S.StageError, match=r'deadline \(1 s\)|timed out'):
        stage(server.url, str(tmp_path / 'draft'), timeout=5.0, deadline=1.0)


def test_a_redirect_to_another_host_does_not_carry_the_token(server, tmp_path):
    server.faults['config.json'] = 'redirect'     # to localhost: another host name than 127.0.0.1
    dest = tmp_path / 'draft'
    stage(server.url, str(dest), token='mirror-token-Zq81')
    assert_staged(dest)
    moved = [seen for seen in server.seen if seen[1] == '/config.json.moved']
    assert moved and all(auth is None for _method, _path, auth in moved), server.seen


def test_a_server_without_head_is_sized_while_copying(server, tmp_path):
    server.faults['model.safetensors'] = 'no_head'
    stage(server.url, str(tmp_path / 'draft'))
    assert_staged(tmp_path / 'draft')


def test_not_enough_disk_space_writes_nothing(mirror, tmp_path):
    dest = tmp_path / 'draft'
    with pytest.raises(S.StageError, match=r'Not enough disk space for .*min_free_mb asks \d+ MB to remain; nothing '
                                           r'was written'):
        stage(str(mirror), str(dest), min_free=S.free_bytes(str(tmp_path)))
    assert not dest.exists()


def test_max_total_bounds_what_a_source_may_send(mirror, tmp_path):
    with pytest.raises(S.StageError, match='larger than max_total_mb'):
        stage(str(mirror), str(tmp_path / 'draft'), max_total=1000)


def test_check_mode_copies_nothing(mirror, tmp_path):
    assert stage(str(mirror), str(tmp_path / 'draft'), check=True) is None
    assert not (tmp_path / 'draft').exists()


def test_a_changed_copy_is_replaced_whole(mirror, tmp_path):
    dest = tmp_path / 'draft'
    stage(str(mirror), str(dest))
    (dest / 'model.safetensors').write_bytes(b'bit rot')
    (dest / 'stray.bin').write_bytes(b'not listed')
    assert stage(str(mirror), str(dest)).startswith('%s holds stray.bin' % dest)
    assert_staged(dest)


def test_given_checksums_are_used_instead_of_the_manifest(mirror, tmp_path):
    dest = tmp_path / 'draft'
    checksums = {'config.json': sha(FILES['config.json']).upper()}
    stage(str(mirror), str(dest), checksums=checksums)
    assert sorted(p.name for p in dest.iterdir()) == ['config.json']


def test_a_fifo_in_the_source_is_refused_without_blocking(mirror, tmp_path):
    os.unlink(str(mirror / 'config.json'))
    os.mkfifo(str(mirror / 'config.json'))
    with pytest.raises(S.StageError, match='config.json is a FIFO, not a regular file'):
        stage(str(mirror), str(tmp_path / 'draft'))


@pytest.mark.parametrize('line, words', [
    ('%s  ../etc/passwd' % ('0' * 64), 'is not inside the model directory'),
    ('%s  /etc/passwd' % ('0' * 64), 'is not inside the model directory'),
    ('%s  a//b' % ('0' * 64), 'is not inside the model directory'),
    ('%s  a\\b' % ('0' * 64), 'a backslash'),
    ('%s  x.jetson-llm-stage.json' % ('0' * 64), "a name this module keeps"),
    ('%s model.bin' % ('0' * 63), "is not \"<64 hex digits>  <path>\""),
    ('not a line', "is not \"<64 hex digits>  <path>\""),
])
def test_a_hostile_manifest_names_the_line(line, words):
    with pytest.raises(S.StageError) as exc:
        S.parse_manifest('# made by sha256sum\n' + line + '\n', 'The manifest')
    assert words in str(exc.value) and 'line 2' in str(exc.value)


def test_a_manifest_with_nothing_or_a_path_twice_is_refused():
    with pytest.raises(S.StageError, match='lists no file'):
        S.parse_manifest('\n# nothing\n', 'The manifest')
    twice = '%s  a.bin\n%s *a.bin\n' % ('1' * 64, '2' * 64)
    with pytest.raises(S.StageError, match="lists 'a.bin' twice"):
        S.parse_manifest(twice, 'The manifest')


@pytest.mark.parametrize('source, words', [
    ('ftp://mirror/models/', 'allowed: an http:// or https:// URL'),
    ('http://user:secret-pw@mirror/models/', 'holds credentials in its URL'),
    ('http://mirror/models/?x=1', 'has a query or a fragment'),
    ('relative/dir', 'allowed: an http:// or https:// URL'),
    ('http://mirror/models/\r\nX: 1', 'is not a URL or a path'),
    ('', 'is not a URL or a path'),
    (None, 'is not a URL or a path'),
])
def test_a_bad_source_is_named_without_its_credentials(source, words):
    with pytest.raises(S.StageError) as exc:
        S.check_source(source)
    assert words in str(exc.value)
    assert 'secret-pw' not in str(exc.value)


def test_a_dest_that_is_a_file_a_link_or_the_root_is_refused(tmp_path):
    (tmp_path / 'file').write_text('x')
    os.symlink(str(tmp_path), str(tmp_path / 'link'))
    os.mkfifo(str(tmp_path / 'fifo'))
    for dest, words in ((str(tmp_path / 'file'), 'is a regular file, not a directory'),
                        (str(tmp_path / 'fifo'), 'is a FIFO, not a directory'),
                        (str(tmp_path / 'link'), 'is a symbolic link'),
                        ('/', 'is the root directory'), ('relative', 'is not an absolute path'),
                        (str(tmp_path / 'file' / 'draft'), 'its parent')):
        with pytest.raises(S.StageError, match=words):
            S.check_dest(dest)


def test_leftovers_of_an_interrupted_run_are_removed(mirror, tmp_path):
    dest = tmp_path / 'draft'
    (tmp_path / '.draft.partial-99999').mkdir()
    (tmp_path / '.draft.old-99998').mkdir()
    (tmp_path / '.other.partial-1').mkdir()
    removed = sorted(os.path.basename(p) for p in S.remove_leftovers(str(dest)))
    assert removed == ['.draft.old-99998', '.draft.partial-99999']
    assert (tmp_path / '.other.partial-1').is_dir()
