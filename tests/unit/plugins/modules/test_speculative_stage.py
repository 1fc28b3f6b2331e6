# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""speculative_stage's plumbing: options checked, documented results, check mode and diff, a copy it does not own."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.modules import speculative_stage
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import (
    ExitJson, FailJson, capture_module, run_main)

FILES = {'config.json': b'{}\n', 'model.safetensors': b'\x00' * 4096}


@pytest.fixture
def warnings(monkeypatch):
    found = []
    capture_module(monkeypatch, found)
    return found


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / 'mirror'
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    (root / 'SHA256SUMS').write_text(''.join('%s  %s\n' % (hashlib.sha256(d).hexdigest(), n) for n, d in FILES.items()))
    return root


def run(args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    return run_main(speculative_stage.main, args)


def test_stage_then_nothing_to_do_with_every_documented_result(warnings, mirror, tmp_path):
    dest = tmp_path / 'models' / 'draft'
    kind, result = run({'source': str(mirror), 'dest': str(dest), 'min_free_mb': 0})
    assert kind is ExitJson and result['changed'] is True, result
    documented = yaml.safe_load(speculative_stage.RETURN)
    assert sorted(documented) == sorted(k for k in result if k not in ('changed', 'invocation', 'diff'))
    assert result['copied_bytes'] == result['bytes'] == sum(len(d) for d in FILES.values())
    assert [f['path'] for f in result['files']] == ['config.json', 'model.safetensors']
    assert (dest / 'model.safetensors').read_bytes() == FILES['model.safetensors']
    kind, again = run({'source': str(mirror), 'dest': str(dest), 'min_free_mb': 0})
    assert kind is ExitJson and again['changed'] is False and again['copied_bytes'] == 0, again
    assert again['files'] == result['files']


def test_check_mode_and_diff_copy_nothing(warnings, mirror, tmp_path):
    dest = tmp_path / 'draft'
    kind, result = run({'source': str(mirror), 'dest': str(dest), 'min_free_mb': 0}, check=True, diff=True)
    assert kind is ExitJson and result['changed'] is True and not dest.exists()
    assert result['diff']['after'] == 'config.json\nmodel.safetensors\n' and result['diff']['before'] == ''
    assert result['reason'] == '%s does not exist' % dest


def test_a_directory_it_did_not_stage_is_never_replaced_an_empty_one_is_used(warnings, mirror, tmp_path):
    dest = tmp_path / 'draft'
    dest.mkdir()
    kind, result = run({'source': str(mirror), 'dest': str(dest), 'min_free_mb': 0})
    assert kind is ExitJson and result['changed'] is True
    theirs = tmp_path / 'theirs'
    theirs.mkdir()
    (theirs / 'model.safetensors').write_bytes(b'an operator\'s model')
    kind, result = run({'source': str(mirror), 'dest': str(theirs), 'min_free_mb': 0})
    assert kind is FailJson and 'was not staged by this module' in result['msg'], result
    assert (theirs / 'model.safetensors').read_bytes() == b'an operator\'s model'


@pytest.mark.parametrize('args, words', [
    ({'timeout': float('nan')}, 'timeout is nan; allowed: a number of seconds above 0 and at most 3600'),
    ({'timeout': float('inf')}, 'timeout is inf'),
    ({'deadline': 0}, 'deadline is 0.0; allowed'),
    ({'min_free_mb': -1}, 'min_free_mb is -1; allowed: 0 to 1048576'),
    ({'max_total_mb': 10 ** 12}, 'max_total_mb is 1000000000000; allowed: 1 to 1048576'),
    ({'manifest': '../SHA256SUMS'}, "manifest: '../SHA256SUMS' is not inside the model directory"),
    ({'checksums': {'a.bin': 'abc'}}, "checksums['a.bin'] is 'abc', not a SHA-256"),
    ({'source': 'http://u:pw-Kq2@mirror/m/'}, 'holds credentials in its URL'),
])
def test_bad_options_fail_naming_the_value_and_write_nothing(warnings, mirror, tmp_path, args, words):
    dest = tmp_path / 'draft'
    kind, result = run(dict({'source': str(mirror), 'dest': str(dest)}, **args))
    assert kind is FailJson and words in result['msg'], result['msg']
    assert 'pw-Kq2' not in json.dumps(result)
    assert not dest.exists()


def test_the_token_is_never_in_the_result(warnings, mirror, tmp_path):
    kind, result = run({'source': str(mirror), 'dest': str(tmp_path / 'draft'), 'min_free_mb': 0,
                        'token': 'tok-Vd93hQ'})
    assert kind is ExitJson
    assert 'tok-Vd93hQ' not in json.dumps(result)
