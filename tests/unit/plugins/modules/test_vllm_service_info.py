# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the vllm_service_info module: what main() exits with."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible.module_utils import basic

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import info as _service
from ansible_collections.jetson_llm.vllm.plugins.modules import vllm_service_info
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import (
    ExitJson, FailJson, capture_module, run_main)

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ROOTS = os.path.join(TOP, 'tests', 'fixtures', 'services', 'roots')
CAPTURED = os.path.join(TOP, 'tests', 'fixtures', 'services', 'captured')


@pytest.fixture
def module_calls(monkeypatch):
    calls = {'warnings': [], 'commands': [], 'answers': {}, 'bin_paths': {}}

    def run_command(self, args, **kwargs):
        calls['commands'].append((list(args), kwargs))
        for key, answer in calls['answers'].items():
            if key in ' '.join(args):
                return answer
        return 1, '', 'not expected'

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return calls['bin_paths'].get(name)

    capture_module(monkeypatch, calls['warnings'])
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    return calls


def test_offline_root_runs_nothing(module_calls):
    root = os.path.join(ROOTS, 'docker-run-orin')
    module_calls['bin_paths'] = {'systemctl': '/usr/bin/systemctl', 'docker': '/usr/bin/docker'}
    kind, result = run_main(vllm_service_info.main, {'name': 'vllm', 'root': root})
    assert kind is ExitJson
    assert result['changed'] is False
    assert module_calls['commands'] == []
    expected, _warnings = _service.gather('vllm', root=root)
    assert result['service'] == expected
    assert result['service']['running'] is None
    assert 'hf_unitLEAKEDvalue123' not in json.dumps(result)


def test_check_mode_same_result(module_calls):
    root = os.path.join(ROOTS, 'compose-list')
    _kind, normal = run_main(vllm_service_info.main, {'name': 'vllm', 'root': root})
    kind, checked = run_main(vllm_service_info.main, {'name': 'vllm', 'root': root, '_ansible_check_mode': True})
    assert kind is ExitJson and checked['changed'] is False
    assert checked['service'] == normal['service']


def test_warnings_are_ansible_warnings(module_calls):
    kind, result = run_main(vllm_service_info.main, {'name': 'vllm', 'root': os.path.join(ROOTS, 'bad-json')})
    assert kind is ExitJson
    assert len(module_calls['warnings']) == 1 and 'not valid JSON' in module_calls['warnings'][0]
    assert result['service']['serve']['speculative_config'] is None


def test_live_root_uses_run_command_without_shell(module_calls, monkeypatch):
    with open(os.path.join(CAPTURED, 'systemctl-show-inactive.txt')) as handle:
        show = handle.read()
    module_calls['bin_paths'] = {'systemctl': '/usr/bin/systemctl', 'timeout': '/usr/bin/timeout'}
    module_calls['answers'] = {'systemctl show': (0, show, '')}
    kind, result = run_main(vllm_service_info.main, {'name': 'jetson-llm-unit-test-absent', 'manager': 'systemd'})
    assert kind is ExitJson
    argv, kwargs = module_calls['commands'][0]
    assert argv[:4] == ['/usr/bin/timeout', '-k', '5', '30']
    assert argv[4:6] == ['/usr/bin/systemctl', 'show']
    assert argv[-2:] == ['--', 'jetson-llm-unit-test-absent.service']
    assert kwargs.get('use_unsafe_shell', False) is False and kwargs['check_rc'] is False
    assert kwargs['environ_update']['LC_ALL'] == 'C'
    assert result['service']['state']['status'] == 'inactive'


@pytest.mark.parametrize('args, message', [
    ({'name': 'vllm', 'root': '/nonexistent/jetson'}, 'root /nonexistent/jetson does not exist'),
    ({'name': 'a/b'}, "name 'a/b' is not a unit or compose service name"),
])
def test_bad_options_fail_clearly(module_calls, args, message):
    kind, result = run_main(vllm_service_info.main, args)
    assert kind is FailJson
    assert message in result['msg']


def test_manager_choices_enforced(module_calls):
    kind, result = run_main(vllm_service_info.main, {'name': 'vllm', 'manager': 'podman'})
    assert kind is FailJson
    assert 'manager' in result['msg'] and 'podman' in result['msg']
