# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the shared service options (_service/options.py) and their doc fragment (doc_fragments/service.py):
the two never drift apart, and every module documents name, manager and project_src once, as it specs them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib

import pytest
import yaml  # the test environment has PyYAML (ansible-core needs it)

from ansible.module_utils import basic

from ansible_collections.jetson_llm.vllm.plugins.doc_fragments.service import ModuleDocFragment
from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_name
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import options

SHARED = ('name', 'manager', 'project_src')
MODULES = ('speculative_state', 'speculative_overlay', 'vllm_health', 'vllm_service_info')


def _options(text):
    return yaml.safe_load(text)['options']


def _same(documented, spec, name):
    for key in ('type', 'default', 'choices'):
        assert documented.get(key) == spec.get(key), (name, key)
    assert bool(documented.get('required')) is bool(spec.get('required')), name


@pytest.mark.parametrize('section, spec', [
    ('DOCUMENTATION', options.service_argument_spec()),
    ('NAME', options.name_argument_spec()),
])
def test_each_fragment_section_matches_its_argument_spec(section, spec):
    documented = _options(getattr(ModuleDocFragment, section))
    assert sorted(documented) == sorted(spec)
    for name, entry in spec.items():
        _same(documented[name], entry, name)


def test_the_required_if_rule_names_the_options_of_the_spec():
    key, value, needed = options.COMPOSE_NEEDS_PROJECT
    spec = options.service_argument_spec()
    assert key in spec and value in spec[key]['choices'] and set(needed) <= set(spec)


@pytest.mark.parametrize('name', ['vllm', 'vllm.service', 'vllm@qwen3.service', 'a:b_c.d@e-f\\g', '_x', 'x' * 250])
def test_a_name_the_doc_allows_is_accepted(name):
    assert check_name(name) == name


@pytest.mark.parametrize('name', ['-vllm', '.vllm', 'vllm/x', 'vllm x', 'vllm$', '', 'x' * 251])
def test_a_name_the_doc_refuses_is_refused(name):
    with pytest.raises(InputError):
        check_name(name)


def test_the_name_doc_states_the_rule():
    text = ' '.join(_options(ModuleDocFragment.NAME)['name']['description'])
    assert 'Letters, digits and C(:_.@-\\)' in text
    assert '1 to 250 characters' in text and 'not starting with C(-) or C(.)' in text


class _Built(Exception):
    pass


def _argument_spec(module_name, monkeypatch):
    """The argument spec a module's main() builds (AnsibleModule is stopped before it reads any argument)."""
    built = {}

    def init(self, argument_spec, **kwargs):
        built.update(argument_spec)
        raise _Built()

    monkeypatch.setattr(basic.AnsibleModule, '__init__', init)
    module = importlib.import_module('ansible_collections.jetson_llm.vllm.plugins.modules.' + module_name)
    with pytest.raises(_Built):
        module.main()
    return module, built


@pytest.mark.parametrize('module_name', MODULES)
def test_each_module_documents_the_service_options_once_as_it_specs_them(module_name, monkeypatch):
    module, spec = _argument_spec(module_name, monkeypatch)
    doc = yaml.safe_load(module.DOCUMENTATION)
    own = doc.get('options') or {}
    fragments = {}
    for fragment in doc.get('extends_documentation_fragment') or []:
        if fragment.startswith('jetson_llm.vllm.service'):
            section = fragment[len('jetson_llm.vllm.service.'):].upper() or 'DOCUMENTATION'
            fragments.update(_options(getattr(ModuleDocFragment, section)))
    for name in SHARED:
        assert (name in own) != (name in fragments), (module_name, name)
        _same(own.get(name) or fragments[name], spec[name], name)
