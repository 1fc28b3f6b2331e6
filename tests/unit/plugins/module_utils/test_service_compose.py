# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _service_compose: loading, interpolation, compose ps and docker inspect."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import compose

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'services')
ROOTS = os.path.join(FIXTURES, 'roots')
DOCKER = os.path.join(FIXTURES, 'docker')


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


@pytest.mark.parametrize('text, env, expected, missing', [
    ('${A}', {'A': 'x'}, 'x', []),
    ('$A-$B', {'A': 'x'}, 'x-', ['B']),
    ('$$A', {'A': 'x'}, '$A', []),
    ('$${A}', {}, '${A}', []),
    ('${A:-dflt}', {'A': ''}, 'dflt', []),
    ('${A-dflt}', {'A': ''}, '', []),
    ('${A-dflt}', {}, 'dflt', []),
    ('${A:+alt}', {'A': 'x'}, 'alt', []),
    ('${A:+alt}', {}, '', []),
    ('{"k": "$$v"}', {}, '{"k": "$v"}', []),
])
def test_interpolate(text, env, expected, missing):
    found, errors = [], []
    assert compose.interpolate(text, env, found, errors) == expected
    assert found == missing
    assert errors == []


def test_interpolate_required_variable():
    errors = []
    compose.interpolate('${IMAGE:?set IMAGE in .env}', {}, [], errors)
    assert errors == ['variable IMAGE is required: set IMAGE in .env']


def test_find_compose_file_order():
    assert compose.find_compose_file(os.path.join(ROOTS, 'compose-list'), '/opt/vllm/vllm') == '/opt/vllm/vllm/compose.yaml'
    assert compose.find_compose_file(os.path.join(ROOTS, 'compose-entrypoint'), '/opt/vllm/vllm') == '/opt/vllm/vllm/compose.yml'
    assert compose.find_compose_file(os.path.join(ROOTS, 'compose-string'), '/srv/llm') == '/srv/llm/docker-compose.yml'
    assert compose.find_compose_file(os.path.join(ROOTS, 'empty'), '/opt/vllm/vllm') is None


def test_project_name():
    assert compose.project_name('/opt/vllm/My.Project') == 'myproject'
    assert compose.project_name('/srv/x', {'name': 'vllm'}) == 'vllm'


def test_load_with_yaml_and_without(monkeypatch):
    text = _read(ROOTS, 'compose-list', 'opt', 'vllm', 'vllm', 'compose.yaml')
    data, loader, _problems = compose.load_compose_text(text, 'compose.yaml')
    assert loader == 'yaml' and data['services']['vllm']['network_mode'] == 'host'
    monkeypatch.setattr(compose, 'yaml', None)
    with pytest.raises(compose.ComposeError) as error:
        compose.load_compose_text(text, '/opt/vllm/vllm/compose.yaml')
    assert 'PyYAML is not installed' in str(error.value) and '/opt/vllm/vllm/compose.yaml' in str(error.value)
    json_text = _read(ROOTS, 'compose-json', 'opt', 'vllm', 'vllm', 'compose.yaml')
    data, loader, _problems = compose.load_compose_text(json_text, 'compose.yaml')
    assert loader == 'json' and data['services']['vllm']['image'] == 'vllm/vllm-openai:latest'


@pytest.mark.parametrize('text', ['services: ' + '[' * 1048576, ''.join(' ' * d + 'a:\n' for d in range(1200))])
def test_a_compose_file_nested_too_deep_is_a_clear_error_with_or_without_yaml(text, monkeypatch):
    with pytest.raises(compose.ComposeError) as error:
        compose.load_compose_text(text, '/opt/vllm/vllm/compose.yaml')
    assert str(error.value).startswith('/opt/vllm/vllm/compose.yaml nests')
    # docker compose config that prints a nested document: the files are read directly instead, with the reason
    data, problems = compose._compose_config(lambda: ('[' * 100000, None))  # pylint: disable=protected-access
    assert data is None and 'nests arrays or objects more than 64 deep' in problems[0]
    monkeypatch.setattr(compose, 'yaml', None)
    with pytest.raises(compose.ComposeError, match='compose.yaml nests arrays or objects more than 64 deep'):
        compose.load_compose_text('[' * 100000, '/opt/vllm/vllm/compose.yaml')


def test_docker_output_nested_too_deep_reads_as_nothing():
    assert compose.parse_docker_inspect('[' * 100000) is None
    assert compose.parse_compose_ps('[' * 100000) == []


def test_load_prefers_docker_compose_config():
    calls = []

    def config():
        calls.append(1)
        return '{"services": {"vllm": {"command": ["a", "b"]}}}', None
    data, loader, _problems = compose.load_compose_text('not: [yaml', 'f', config)
    assert loader == 'docker compose config' and data['services']['vllm']['command'] == ['a', 'b']
    assert calls == [1]

    def failing():
        return None, 'docker compose config failed (rc=15): env file /x not found'
    data, loader, problems = compose.load_compose_text('services: {}', 'f', failing)
    assert loader == 'yaml' and problems == ['docker compose config failed (rc=15): env file /x not found']


def test_command_forms():
    assert compose.command_list(['a', 1], 'command') == ['a', '1']
    assert compose.command_list("vllm serve M --speculative-config '{\"a\": 1}'", 'command') == [
        'vllm', 'serve', 'M', '--speculative-config', '{"a": 1}']
    assert compose.command_list(None, 'command') is None
    with pytest.raises(compose.ComposeError):
        compose.command_list({'a': 1}, 'services.vllm.command')
    with pytest.raises(compose.ComposeError):
        compose.command_list('vllm "unbalanced', 'services.vllm.command')


def test_env_file_forms():
    assert compose.env_file_paths('vllm.env', '/p') == [('/p/vllm.env', True)]
    assert compose.env_file_paths(['./a.env', '/etc/b.env', {'path': 'c.env', 'required': False}], '/p') == [
        ('/p/a.env', True), ('/etc/b.env', True), ('/p/c.env', False)]


def test_service_missing_is_reported():
    problems = []
    assert compose.service_config({'services': {'web': {}, 'db': {}}}, 'vllm', '/p', '/', problems) is None
    assert problems == ["the compose file defines no service 'vllm' (services: db, web)"]


@pytest.mark.parametrize('name', ['compose-ps.ndjson', 'compose-ps-array.json'])
def test_compose_ps_both_formats(name):
    rows = compose.parse_compose_ps(_read(DOCKER, name))
    assert [row['Service'] for row in rows] == ['proxy', 'vllm']


@pytest.mark.parametrize('name, status, active, restarts, pid', [
    ('inspect-compose-running.json', 'active', True, 2, 48211),
    ('inspect-compose-restarting.json', 'activating', False, 7, None),
    ('inspect-compose-exited.json', 'failed', False, 7, None),
])
def test_state_from_inspect(name, status, active, restarts, pid):
    container = compose.parse_docker_inspect(_read(DOCKER, name))
    state = compose.state_from_inspect(container)
    assert state['status'] == status
    assert state['active'] is active
    assert state['restarts'] == restarts
    assert state['main_pid'] == pid
    assert state['container_id'].startswith('3f2a9c0d1e5b')
    assert state['need_daemon_reload'] is None


def test_argv_from_inspect():
    container = compose.parse_docker_inspect(_read(DOCKER, 'inspect-compose-running.json'))
    argv = compose.argv_from_inspect(container)
    assert argv[:3] == ['vllm', 'serve', 'Qwen/Qwen3-32B']
    assert compose.parse_docker_inspect('[]') is None
    assert compose.parse_docker_inspect('Error: No such object') is None
