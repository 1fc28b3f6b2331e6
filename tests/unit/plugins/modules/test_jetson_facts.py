# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the jetson_facts module: what main() exits with for the fixture roots."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as _jetson
from ansible_collections.jetson_llm.vllm.plugins.modules import jetson_facts
from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import (
    ExitJson, FailJson, capture_module, run_main)

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FIXTURES = os.path.join(TOP, 'tests', 'fixtures', 'rootfs')


@pytest.fixture
def module_calls(monkeypatch):
    """Capture exit_json / fail_json / warn / run_command of AnsibleModule."""
    calls = {'warnings': [], 'commands': [], 'command_result': (0, '', ''), 'bin_paths': {}}

    def run_command(self, args, **kwargs):
        calls['commands'].append((list(args), kwargs))
        return calls['command_result']

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return calls['bin_paths'].get(name)

    capture_module(monkeypatch, calls['warnings'])
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    return calls


def run_module(args):
    return run_main(jetson_facts.main, args)


@pytest.mark.parametrize('name, is_jetson, variant, path, warned', [
    ('thor-t5000', True, 'thor-t5000', 'upstream', False),
    ('thor-t4000', True, 'thor-t4000', 'upstream', False),
    ('orin-agx-64gb', True, 'orin-agx-64gb', 'nvidia-ai-iot', False),
    ('orin-agx-32gb', True, 'orin-agx-32gb', 'nvidia-ai-iot', True),   # MODE_30W
    ('orin-agx-r39', True, 'orin-agx-64gb', 'upstream', False),
    ('orin-nano-8gb-super', True, 'orin-nano-8gb', 'nvidia-ai-iot', False),
    ('orin-nano-4gb', True, 'orin-nano-4gb', 'nvidia-ai-iot', True),   # 25W
    ('bad-release', True, 'orin-agx-64gb', 'nvidia-ai-iot', True),     # unparseable release file
    ('xavier-agx', True, 'xavier-agx', 'unsupported', False),
    ('non-jetson-x86', False, 'unknown', 'unsupported', False),
    ('dgx-spark-like', False, 'unknown', 'unsupported', False),
])
def test_fixture_roots(module_calls, name, is_jetson, variant, path, warned):
    kind, result = run_module({'root': os.path.join(FIXTURES, name)})
    assert kind is ExitJson
    assert result['changed'] is False
    facts = result['ansible_facts']['jetson']
    assert facts == _jetson.gather_facts(os.path.join(FIXTURES, name))
    assert facts['is_jetson'] is is_jetson
    assert facts['variant'] == variant
    assert facts['vllm_runtime']['path'] == path
    assert bool(module_calls['warnings']) is warned
    for message in module_calls['warnings']:
        assert message in facts['warnings']
    assert module_calls['commands'] == []  # offline root: nvpmodel never runs


def test_check_mode_same_result(module_calls):
    root = os.path.join(FIXTURES, 'orin-agx-32gb')
    kind, normal = run_module({'root': root})
    kind_check, checked = run_module({'root': root, '_ansible_check_mode': True})
    assert kind is ExitJson and kind_check is ExitJson
    assert checked['changed'] is False
    assert checked['ansible_facts'] == normal['ansible_facts']


def test_root_default_is_the_running_system(module_calls):
    kind, result = run_module({})
    assert kind is ExitJson
    facts = result['ansible_facts']['jetson']
    # This CI machine is not a Jetson: not an error, a fact.
    assert facts['is_jetson'] is False
    assert facts['reason']
    assert facts['memory']['total_mb'] > 0
    assert module_calls['commands'] == []


@pytest.mark.parametrize('root, fragment', [
    ('/nonexistent/jetson-root', 'does not exist'),
    (os.path.join(FIXTURES, 'thor-t5000', 'etc', 'nv_tegra_release'), 'is not a directory'),
])
def test_bad_root_fails_clearly(module_calls, root, fragment):
    kind, result = run_module({'root': root})
    assert kind is FailJson
    assert fragment in result['msg']
    assert root in result['msg']
    assert result['root'] == root


def test_bad_option_type_fails(module_calls):
    kind, result = run_module({'root': '/', 'run_nvpmodel': 'sometimes'})
    assert kind is FailJson
    assert 'run_nvpmodel' in result['msg']


def test_unknown_option_fails(module_calls):
    kind, result = run_module({'root': '/', 'gather_subset': ['all']})
    assert kind is FailJson
    assert 'gather_subset' in result['msg']


def live(monkeypatch, module_calls, name, output, rc=0):
    root = os.path.join(FIXTURES, name)
    monkeypatch.setattr(_jetson, 'LIVE_ROOT', os.path.abspath(root))
    module_calls['bin_paths']['nvpmodel'] = '/usr/sbin/nvpmodel'
    module_calls['command_result'] = (rc, output, '')
    return root


def test_nvpmodel_query_on_live_system(monkeypatch, module_calls):
    root = live(monkeypatch, module_calls, 'orin-nano-8gb-super',
                'NVPM WARN: fan mode is not set!\nNV Power Mode: 25W\n1\n')
    kind, result = run_module({'root': root})
    assert kind is ExitJson
    assert [c[0] for c in module_calls['commands']] == [['/usr/sbin/nvpmodel', '-q']]
    power = result['ansible_facts']['jetson']['power']
    assert power == {'mode_name': '25W', 'mode_id': 1, 'source': 'nvpmodel', 'max_performance': False}
    assert len(module_calls['warnings']) == 1 and '25W' in module_calls['warnings'][0]


def test_nvpmodel_failure_falls_back_to_status(monkeypatch, module_calls):
    root = live(monkeypatch, module_calls, 'orin-nano-8gb-super', '', rc=1)
    kind, result = run_module({'root': root})
    facts = result['ansible_facts']['jetson']
    assert facts['power'] == {'mode_name': 'MAXN_SUPER', 'mode_id': 2, 'source': 'nvpmodel-status', 'max_performance': True}
    assert any('nvpmodel -q failed (rc=1)' in w for w in facts['warnings'])


def test_run_nvpmodel_false(monkeypatch, module_calls):
    root = live(monkeypatch, module_calls, 'orin-nano-8gb-super', 'NV Power Mode: 25W\n1\n')
    kind, result = run_module({'root': root, 'run_nvpmodel': False})
    assert module_calls['commands'] == []
    assert result['ansible_facts']['jetson']['power']['source'] == 'nvpmodel-status'


def test_documentation_matches_argument_spec():
    import yaml
    doc = yaml.safe_load(jetson_facts.DOCUMENTATION)
    assert sorted(doc['options']) == ['root', 'run_nvpmodel']
    assert doc['options']['root']['default'] == '/'
    assert doc['extends_documentation_fragment'] == ['jetson_llm.vllm._attributes', 'jetson_llm.vllm._attributes.facts']
    from ansible_collections.jetson_llm.vllm.plugins.doc_fragments._attributes import ModuleDocFragment
    attributes = yaml.safe_load(ModuleDocFragment.FACTS)['attributes']
    assert attributes['check_mode']['support'] == 'full' and attributes['facts']['support'] == 'full'
    ret = yaml.safe_load(jetson_facts.RETURN)
    documented = set(ret['ansible_facts']['contains']['jetson']['contains'])
    assert documented == set(_jetson.gather_facts(os.path.join(FIXTURES, 'thor-t5000')))
