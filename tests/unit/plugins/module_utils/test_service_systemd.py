# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _service_systemd and _service_files: unit syntax as systemd reads it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import threading

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd as sd

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'services')
ROOTS = os.path.join(FIXTURES, 'roots')
CAPTURED = os.path.join(FIXTURES, 'captured')


def _captured(name):
    with open(os.path.join(CAPTURED, name)) as handle:
        return handle.read()


# --- words ----------------------------------------------------------------------------------

@pytest.mark.parametrize('text, words', [
    ('/bin/a b  c', ['/bin/a', 'b', 'c']),
    ("a '{\"k\": 1}' b", ['a', '{"k": 1}', 'b']),
    ('a "{\\"k\\": \\"v\\"}"', ['a', '{"k": "v"}']),
    ('a "two words" \'and three here\'', ['a', 'two words', 'and three here']),
    ('a x"y z"w', ['a', 'xy zw']),
    ('a \\x41\\102\\u00e9\\s', ['a', 'AB\u00e9 ']),
    ("a 'tab\\there'", ['a', 'tab\there']),   # escapes are decoded inside single quotes too
    ('a ""', ['a', '']),
])
def test_split_words(text, words):
    assert sd.split_words(text) == words


@pytest.mark.parametrize('text', ['a "open', "a 'open", 'a \\q', 'a b\\', 'a \\x4'])
def test_split_words_rejects_malformed(text):
    with pytest.raises(sd.UnitSyntaxError):
        sd.split_words(text)


@pytest.mark.parametrize('words, result, prefixes', [
    (['-/usr/bin/x', 'a'], ['/usr/bin/x', 'a'], '-'),
    (['+!/usr/bin/x'], ['/usr/bin/x'], '+!'),
    (['!!/usr/bin/x'], ['/usr/bin/x'], '!!'),
    (['@/usr/bin/x', 'argv0', 'a'], ['/usr/bin/x', 'a'], '@'),
    (['/usr/bin/x'], ['/usr/bin/x'], ''),
])
def test_exec_prefixes(words, result, prefixes):
    assert sd.strip_exec_prefixes(words) == (result, prefixes)


def test_variable_expansion_rules():
    env = {'ARGS': '--a 1  --b 2', 'MODEL': '/m/with space', 'EMPTY': ''}
    missing = []
    words = sd.expand_variables(['x', '$ARGS', '${MODEL}', 'pre${MODEL}post', '$$ARGS', 'cost$$', '$NOPE',
                                 '${NOPE}', 'mid$ARGS', '$EMPTY'], env, missing)
    assert words == ['x', '--a', '1', '--b', '2', '/m/with space', 'pre/m/with spacepost', '$ARGS', 'cost$',
                     '', 'mid$ARGS']
    assert missing == ['NOPE']


def test_specifiers():
    table = sd.specifier_table('vllm@qwen3\\x2d8b.service', fragment_path='/etc/systemd/system/vllm@.service',
                               hostname='orin.example.com')
    unknown = []
    out = sd.expand_specifiers('%n %N %p %i %I %S %C %y %Y %H %l 100%% %b %q', table, unknown)
    assert out == ('vllm@qwen3\\x2d8b.service vllm@qwen3\\x2d8b vllm qwen3\\x2d8b qwen3-8b /var/lib /var/cache '
                   '/etc/systemd/system/vllm@.service /etc/systemd/system orin.example.com orin 100% %b %q')
    assert unknown == ['%b', '%q']


def test_logical_lines_continuation_and_comments():
    text = ('[Service]\n'
            'ExecStart=/bin/a \\\n'
            '# comment inside a continuation\n'
            '  b \\\n'
            '; another\n'
            '  c\n'
            '  # a normal comment\n'
            'Environment=A=1\\\\\n'
            'Restart=always\n')
    assert list(sd.logical_lines(text)) == ['[Service]', 'ExecStart=/bin/a  b  c', 'Environment=A=1\\\\',
                                            'Restart=always']


# --- units on fixture roots -----------------------------------------------------------------

def _unit(root, unit='vllm.service', path=None):
    root = os.path.join(ROOTS, root)
    path = path or sd.find_unit_file(root, unit)
    return sd.parse_unit(root, unit, path)


def test_native_unit_with_environment_files():
    parsed = _unit('native-venv')
    assert parsed['argv'] == [
        '/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/Qwen3-8B', '--host', '127.0.0.1', '--port', '8001',
        '--served-model-name', 'qwen3', 'qwen3-8b', '--max-model-len=8k', '--api-key', 'sk-unitLEAKEDkey',
        '--chat-template', '/etc/vllm/templates/100%-tools.jinja', '--enable-prefix-caching', '--max-num-seqs', '8']
    assert parsed['env_files'] == ['/etc/default/vllm', '/etc/default/vllm-missing-is-fine']
    assert parsed['problems'] == []  # a missing "-" environment file is fine


def test_template_instance_and_specifiers():
    parsed = _unit('template', 'vllm@qwen3-8b.service')
    assert parsed['file'].path == '/etc/systemd/system/vllm@.service'
    assert parsed['argv'][:7] == ['/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/qwen3-8b', '--served-model-name',
                                  'qwen3-8b', '--port', '8000']
    assert '--download-dir' in parsed['argv'] and '/var/lib/vllm' in parsed['argv']
    assert parsed['argv'][-1] == '{"temperature": 0.7, "note": "100% greedy off"}'
    assert parsed['env_files'] == ['/etc/vllm/qwen3-8b.env']


def test_drop_ins_reset_and_priority():
    parsed = _unit('dropin')
    assert parsed['file'].path == '/lib/systemd/system/vllm.service'
    # 10-speculative.conf resets ExecStart; /etc's 20-memory.conf wins over /run's (0.5)
    assert parsed['argv'] == ['/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/target', '--port', '8000',
                              '--gpu-memory-utilization', '0.8', '--speculative-config',
                              '{"method":"draft_model","model":"/srv/models/draft","num_speculative_tokens":4}']
    assert parsed['exec_count'] == 1


def test_drop_in_without_reset_is_reported():
    parsed = _unit('dropin-no-reset')
    assert parsed['exec_count'] == 2
    assert parsed['argv'][-2:] == ['--max-model-len', '2048']
    assert any('2 ExecStart= lines' in p for p in parsed['problems'])


def test_several_exec_start_allowed_for_oneshot(tmp_path):
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'vllm.service'
    unit.parent.mkdir(parents=True)
    unit.write_text('[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=/usr/bin/vllm serve M\n')
    parsed = sd.parse_unit(str(tmp_path), 'vllm.service', '/etc/systemd/system/vllm.service')
    assert parsed['problems'] == [] and parsed['exec_count'] == 2
    assert parsed['argv'] == ['/usr/bin/vllm', 'serve', 'M']


def test_symlinked_unit_resolved_inside_root(tmp_path):
    import shutil
    root = tmp_path / 'root'
    shutil.copytree(os.path.join(ROOTS, 'unit-symlink'), str(root))
    (root / 'etc' / 'systemd' / 'system').mkdir(parents=True)
    # absolute, so it only resolves correctly inside root (made here: it would point outside the repository)
    os.symlink('/opt/vllm/units/vllm.service', str(root / 'etc' / 'systemd' / 'system' / 'vllm.service'))
    parsed = sd.parse_unit(str(root), 'vllm.service', sd.find_unit_file(str(root), 'vllm.service'))
    assert parsed['file'].exists and parsed['file'].data
    assert parsed['argv'] == ['/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/target', '--port', '8123']
    assert parsed['prefixes'] == '@'


def test_unknown_specifier_reported_not_guessed():
    parsed = _unit('unknown-specifier')
    assert '/var/cache/vllm-%b' in parsed['argv']
    assert parsed['unknown_specifiers'] == ['%b']


def test_colon_prefix_disables_expansion(tmp_path):
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'vllm.service'
    unit.parent.mkdir(parents=True)
    unit.write_text('[Service]\nEnvironment=M=/m\nExecStart=:/usr/bin/vllm serve ${M} --x $$y\n')
    parsed = sd.parse_unit(str(tmp_path), 'vllm.service', '/etc/systemd/system/vllm.service')
    assert parsed['argv'] == ['/usr/bin/vllm', 'serve', '${M}', '--x', '$$y']


def test_missing_required_environment_file_and_variable(tmp_path):
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'vllm.service'
    unit.parent.mkdir(parents=True)
    unit.write_text('[Service]\nEnvironmentFile=/etc/vllm/absent.env\nExecStart=/usr/bin/vllm serve ${MODEL}\n')
    parsed = sd.parse_unit(str(tmp_path), 'vllm.service', '/etc/systemd/system/vllm.service')
    assert parsed['argv'] == ['/usr/bin/vllm', 'serve', '']
    assert any('absent.env does not exist' in p for p in parsed['problems'])
    assert any('$MODEL' in p for p in parsed['problems'])


def test_fifo_unit_and_env_file_are_refused_without_blocking(tmp_path):
    folder = tmp_path / 'etc' / 'systemd' / 'system'
    folder.mkdir(parents=True)
    os.mkfifo(str(folder / 'vllm.service'))
    (tmp_path / 'etc' / 'vllm').mkdir()
    os.mkfifo(str(tmp_path / 'etc' / 'vllm' / 'env'))
    (folder / 'ok.service').write_text('[Service]\nEnvironmentFile=/etc/vllm/env\nExecStart=/usr/bin/vllm serve M\n')
    outcome = {}

    def work():
        outcome['fifo'] = sd.parse_unit(str(tmp_path), 'vllm.service', '/etc/systemd/system/vllm.service')
        outcome['env'] = sd.parse_unit(str(tmp_path), 'ok.service', '/etc/systemd/system/ok.service')
    thread = threading.Thread(target=work)
    thread.daemon = True
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), 'reading a FIFO blocked'
    fifo = outcome['fifo']
    assert fifo['argv'] is None and fifo['file'].exists
    assert 'a FIFO, not a regular file' in fifo['problems'][0]
    assert fifo['file'].info()['sha256'] is None
    assert outcome['env']['argv'] == ['/usr/bin/vllm', 'serve', 'M']
    assert any('a FIFO' in p for p in outcome['env']['problems'])


def test_large_file_refused(tmp_path):
    (tmp_path / 'big').write_bytes(b'#' * (files.MAX_FILE_BYTES + 1))
    read = files.read_regular(str(tmp_path), '/big')
    assert read.data is None and 'more than' in read.error


def test_device_refused():
    read = files.read_regular('/', '/dev/null')
    assert read.data is None and 'character device' in read.error


def test_env_file_parser():
    text = ('# comment\n; also\nA=1\nexport B="two words \\"q\\""\nC=\'single $X\'\nD=unquoted value # tail\n'
            'E=line\\\ncontinued\n 9BAD=x\nnoequals\n')
    assert files.parse_env_file(text) == [('A', '1'), ('B', 'two words "q"'), ('C', 'single $X'),
                                          ('D', 'unquoted value'), ('E', 'linecontinued')]


# --- systemctl show (captured from systemd 252) ---------------------------------------------

@pytest.mark.parametrize('name, expected', [
    ('systemctl-show-active.txt', {'active': True, 'status': 'active', 'main_pid': 35, 'restarts': 0,
                                   'since': 'Mon 2026-11-30 17:26:10 UTC', 'need_daemon_reload': False}),
    ('systemctl-show-crashloop.txt', {'active': False, 'status': 'activating', 'main_pid': None, 'restarts': 3,
                                      'need_daemon_reload': False}),
    ('systemctl-show-failed.txt', {'active': False, 'status': 'failed', 'main_pid': None, 'restarts': 0}),
    ('systemctl-show-inactive.txt', {'active': False, 'status': 'inactive', 'since': None}),
    ('systemctl-show-not-found.txt', {'active': False, 'status': 'not-found', 'since': None}),
    ('systemctl-show-need-reload.txt', {'active': True, 'need_daemon_reload': True}),
])
def test_state_from_captured_systemctl_show(name, expected):
    state = sd.state_from_show(sd.parse_systemctl_show(_captured(name)))
    for key, value in expected.items():
        assert state[key] == value, key
    assert state['container_id'] is None


def test_proc_cmdline():
    assert sd.parse_proc_cmdline(b'/usr/bin/python3\0/v/vllm\0serve\0\0') == ['/usr/bin/python3', '/v/vllm', 'serve', '']
    assert sd.parse_proc_cmdline(b'') == []
