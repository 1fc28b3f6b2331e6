# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _overlay_compose: the speculative change as a compose override file of the collection's own."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay_compose as oc
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import info as svc
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.overlay import OverlayError
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command

P = '/opt/vllm/vllm'
SPEC = {'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 5, 'prompt_lookup_min': 5}
FLAGS = ['--gpu-memory-utilization', '0.7', '--speculative-config',
         json.dumps(SPEC, sort_keys=True, separators=(',', ':'))]

# What serve renders: a shell that sources the secrets file, then vllm serve with the arguments ($ written $$).
SERVE = {'name': 'vllm', 'services': {'vllm': {
    'image': 'vllm/vllm-openai:latest', 'restart': 'on-failure',
    'entrypoint': ['/bin/sh', '-c', 'set -a && . /run/secrets/s.env && set +a && exec "$$0" "$$@"', 'vllm', 'serve'],
    'command': ['/models/target', '--host', '127.0.0.1', '--port', '${PORT:-8000}', '--gpu-memory-utilization',
                '0.75', '--chat-template-content-format', '$$auto']}}}


def _project(tmp_path, data, override=None, env=None, name='compose.yaml'):
    project = tmp_path / P.lstrip('/')
    project.mkdir(parents=True, exist_ok=True)
    (project / name).write_text(yaml.safe_dump(data))
    if override is not None:
        (project / 'compose.override.yaml').write_text(yaml.safe_dump(override))
    if env is not None:
        (project / '.env').write_text(env)
    return str(tmp_path)


def _merged_argv(root, files):
    """The command line compose would run from ``files`` (this module's reader of them, interpolated)."""
    reads = [svc.files.read_regular(root, path) for path in files]
    data, _loader, _problems = compose.load_compose_files(reads)
    env = compose.dot_env(root, P)
    data = compose.interpolate_tree(data, env, [], [])
    return oc.service_argv(data['services']['vllm'], 'vllm')[0]


def test_paths_are_in_the_project_and_named_after_no_compose_default():
    where = oc.paths(P + '/')
    assert where == {'candidate': P + '/jetson-llm-speculative-2-candidate.yaml',
                     'committed': P + '/jetson-llm-speculative-1-kept.yaml'}
    for name in oc.NAMES:
        assert name not in compose.COMPOSE_FILE_NAMES + compose.OVERRIDE_FILE_NAMES
        assert oc.is_overlay(P + '/' + name)
    assert not oc.is_overlay(P + '/compose.yaml')
    for bad in ('relative/dir', '/a\nb', None):
        with pytest.raises(OverlayError):
            oc.paths(bad)


def test_the_candidate_is_the_baseline_command_plus_two_flags(tmp_path):
    root = _project(tmp_path, SERVE, env='PORT=8123\n')
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    assert base['problems'] == [] and base['serve']['port'] == 8123
    text, argv, secret = oc.render('vllm', base, SPEC, 0.7)
    assert not secret
    assert argv == base['argv'] + FLAGS
    # The file sets only command:, written as the project wrote it ($$ and ${...} kept) plus the two flags.
    override = yaml.safe_load(text)
    assert override == {'services': {'vllm': {'command': SERVE['services']['vllm']['command'] + FLAGS}}}
    assert text.startswith(oc.HEADER)
    # Compose (this module's reader of it) runs exactly that: the entrypoint stays the project's.
    (tmp_path / P.lstrip('/') / oc.CANDIDATE_NAME).write_text(text)
    assert _merged_argv(root, [P + '/compose.yaml', P + '/' + oc.CANDIDATE_NAME]) == argv
    serve = analyse_command(argv)[0]['serve']
    assert serve['speculative_config'] == SPEC and serve['gpu_memory_utilization'] == 0.7
    assert '--chat-template-content-format' in argv and '$auto' in argv  # $$ is a literal $, as before


def test_a_dollar_in_the_configuration_is_escaped_for_compose(tmp_path):
    root = _project(tmp_path, SERVE)
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    spec = dict(SPEC, method='draft_model', model='/models/a$HOME')
    text, argv, _secret = oc.render('vllm', base, spec, 0.7)
    assert '/models/a$$HOME' in text
    assert analyse_command(argv)[0]['serve']['speculative_config'] == spec


def test_the_kept_override_and_the_candidate_apply_in_that_order(tmp_path):
    root = _project(tmp_path, SERVE)
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    kept, _argv, _secret = oc.render('vllm', base, dict(SPEC, num_speculative_tokens=3), 0.7)
    candidate, argv, _secret = oc.render('vllm', base, dict(SPEC, num_speculative_tokens=4), 0.7)
    project = tmp_path / P.lstrip('/')
    (project / oc.COMMITTED_NAME).write_text(kept)
    (project / oc.CANDIDATE_NAME).write_text(candidate)
    present = dict((key, read.path) for key, read in oc.read_overlay(root, P).items() if read.data is not None)
    files = oc.compose_files([P + '/compose.yaml'], present)
    assert files == [P + '/compose.yaml', P + '/' + oc.COMMITTED_NAME, P + '/' + oc.CANDIDATE_NAME]
    assert _merged_argv(root, files) == argv
    # the baseline is still the project's file alone
    assert oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])['argv'] == base['argv']


def test_the_operator_override_file_is_part_of_the_baseline(tmp_path):
    override = {'services': {'vllm': {'command': SERVE['services']['vllm']['command'] + ['--max-num-seqs', '4']}}}
    root = _project(tmp_path, SERVE, override=override)
    files = compose.default_files(root, P)
    assert files == [P + '/compose.yaml', P + '/compose.override.yaml']
    base = oc.read_baseline(root, P, 'vllm', files)
    assert base['argv'][-2:] == ['--max-num-seqs', '4']
    _text, argv, _secret = oc.render('vllm', base, SPEC, 0.7)
    assert argv[-6:] == ['--max-num-seqs', '4'] + FLAGS
    alone = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    assert alone['sha256'] != base['sha256']


def test_the_baseline_digest_follows_the_files_and_the_env_file(tmp_path):
    root = _project(tmp_path, SERVE, env='PORT=1\n')
    first = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])['sha256']
    (tmp_path / P.lstrip('/') / '.env').write_text('PORT=2\n')
    second = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])['sha256']
    assert first != second
    # an override file of this collection is never part of it
    (tmp_path / P.lstrip('/') / oc.COMMITTED_NAME).write_text('{}')
    assert oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])['sha256'] == second


def test_a_string_command_is_split_and_written_as_a_list(tmp_path):
    data = {'services': {'vllm': {'image': 'nvcr.io/vllm:1', 'command': 'vllm serve /m --port 8000'}}}
    root = _project(tmp_path, data)
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    text, argv, _secret = oc.render('vllm', base, SPEC, 0.7)
    assert yaml.safe_load(text)['services']['vllm']['command'] == ['vllm', 'serve', '/m', '--port', '8000'] + FLAGS
    assert argv == ['vllm', 'serve', '/m', '--port', '8000'] + FLAGS


def test_vllm_in_the_entrypoint_gets_the_flags_as_command(tmp_path):
    data = {'services': {'vllm': {'image': 'x', 'entrypoint': ['vllm', 'serve', '/m', '--port', '8000']}}}
    root = _project(tmp_path, data)
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    text, argv, _secret = oc.render('vllm', base, SPEC, 0.7)
    assert yaml.safe_load(text)['services']['vllm']['command'] == FLAGS
    assert argv == ['vllm', 'serve', '/m', '--port', '8000'] + FLAGS


@pytest.mark.parametrize('service, message', [
    ({'image': 'x'}, 'sets neither command: nor entrypoint:'),
    ({'image': 'x', 'entrypoint': ['/bin/sh', '-c', 'vllm serve /m --port 8000']}, 'not through a shell or a script'),
    ({'image': 'x', 'entrypoint': ['/start.sh'], 'command': ['--port', '8000']}, 'not through a shell or a script'),
])
def test_a_command_flags_cannot_reach_is_a_clear_error(tmp_path, service, message):
    root = _project(tmp_path, {'services': {'vllm': service}})
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    with pytest.raises(OverlayError, match=message):
        oc.render('vllm', base, SPEC, 0.7)


def test_a_missing_service_or_file_is_a_clear_error(tmp_path):
    root = _project(tmp_path, {'services': {'web': {'image': 'x'}}})
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    assert base['raw'] is None and 'no service' in base['problems'][0]
    with pytest.raises(OverlayError, match="compose service vllm cannot be read"):
        oc.render('vllm', base, SPEC, 0.7)
    missing = oc.read_baseline(root, P, 'vllm', [P + '/gone.yaml'])
    assert missing['raw'] is None and missing['sha256'] is None


def test_a_literal_secret_makes_the_file_secret_and_diffs_mask_it(tmp_path):
    data = {'services': {'vllm': {'image': 'x', 'command': ['vllm', 'serve', '/m', '--api-key', 'sk-literal123']}}}
    root = _project(tmp_path, data)
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'])
    text, _argv, secret = oc.render('vllm', base, SPEC, 0.7)
    assert secret and 'sk-literal123' in text
    shown = oc.redact(text)
    assert 'sk-literal123' not in shown and '--speculative-config' in shown


def test_compose_config_output_is_used_when_compose_answers(tmp_path):
    root = _project(tmp_path, SERVE)
    calls = []

    def config():
        calls.append(1)
        return json.dumps(SERVE), None
    base = oc.read_baseline(root, P, 'vllm', [P + '/compose.yaml'], config)
    assert calls and base['raw']['command'] == SERVE['services']['vllm']['command']


def test_merge_compose_follows_composes_rules_for_what_is_read():
    base = {'services': {'vllm': {'image': 'a', 'command': ['x', 'y'], 'environment': ['A=1', 'B=2'],
                                  'env_file': ['one.env'], 'volumes': ['/a:/a']}}}
    over = {'services': {'vllm': {'command': ['z'], 'environment': {'B': '3'}, 'env_file': 'two.env'},
                         'db': {'image': 'pg'}}}
    merged = compose.merge_compose(base, over)
    vllm = merged['services']['vllm']
    assert vllm['command'] == ['z'] and vllm['image'] == 'a'
    assert vllm['environment'] == {'A': '1', 'B': '3'}
    assert vllm['env_file'] == ['one.env', 'two.env']
    assert merged['services']['db'] == {'image': 'pg'}


def test_label_files_belong_to_the_project_directory():
    container = {'Config': {'Labels': {compose.CONFIG_FILES_LABEL: P + '/compose.yaml,' + P + '/' + oc.CANDIDATE_NAME,
                                       compose.WORKING_DIR_LABEL: P}}}
    assert compose.label_files(container, P + '/') == [P + '/compose.yaml', P + '/' + oc.CANDIDATE_NAME]
    other = {'Config': {'Labels': {compose.CONFIG_FILES_LABEL: '/srv/x/compose.yaml', compose.WORKING_DIR_LABEL: '/srv/x'}}}
    assert compose.label_files(other, P) is None
    assert compose.label_files({'Config': {'Labels': {}}}, P) is None
    relative = {'Config': {'Labels': {compose.CONFIG_FILES_LABEL: 'compose.yaml', compose.WORKING_DIR_LABEL: P}}}
    assert compose.label_files(relative, P) is None


def test_the_project_files_are_the_labelled_ones_without_the_overlay(tmp_path):
    root = _project(tmp_path, SERVE)
    extra = tmp_path / P.lstrip('/') / 'gpu.yaml'
    extra.write_text('services: {}\n')
    labels = {compose.CONFIG_FILES_LABEL: ','.join([P + '/compose.yaml', P + '/gpu.yaml', P + '/' + oc.COMMITTED_NAME]),
              compose.WORKING_DIR_LABEL: P}
    files, problem = svc.compose_project_files(root, P, {'Config': {'Labels': labels}})
    assert files == [P + '/compose.yaml', P + '/gpu.yaml'] and problem is None
    extra.unlink()  # a labelled file that is gone: what compose finds now, and why
    files, problem = svc.compose_project_files(root, P, {'Config': {'Labels': labels}})
    assert files == [P + '/compose.yaml'] and 'do not all exist any more' in problem
    assert svc.compose_project_files(root, P, None) == ([P + '/compose.yaml'], None)
    # run with the defaults, then an override file added: Compose reads it on the next up, so it is part of the project
    (tmp_path / P.lstrip('/') / 'compose.override.yaml').write_text('services: {}\n')
    plain = {compose.CONFIG_FILES_LABEL: P + '/compose.yaml', compose.WORKING_DIR_LABEL: P}
    assert svc.compose_project_files(root, P, {'Config': {'Labels': plain}}) == \
        ([P + '/compose.yaml', P + '/compose.override.yaml'], None)
