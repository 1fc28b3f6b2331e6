# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _overlay: the speculative change as a drop-in of the collection's own."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd as sd
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command

UNIT = '/etc/systemd/system/vllm.service'
SPEC = {'method': 'eagle3', 'model': '/srv/models/head 100%', 'num_speculative_tokens': 3}


def _root(tmp_path, unit_text, drop_ins=None):
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'vllm.service'
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(unit_text)
    for path, text in (drop_ins or {}).items():
        target = tmp_path / path.lstrip('/')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(tmp_path)


NATIVE = ('[Service]\nEnvironment=PORT=8000\n'
          'ExecStart=/opt/vllm/bin/vllm serve /srv/models/m --port ${PORT} \\\n  --gpu-memory-utilization 0.5\n')


def _effective(root, text):
    """The argv systemd runs with the overlay ``text`` in place (parse_unit over the unit and every drop-in)."""
    path = root + overlay.paths('vllm')['candidate']
    import os
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    return sd.parse_unit(root, 'vllm.service', UNIT)['argv']


def test_paths_sort_after_every_usual_drop_in_name():
    where = overlay.paths('vllm')
    assert where == {'candidate': '/run/systemd/system/vllm.service.d/zz-jetson-llm-speculative-2-candidate.conf',
                     'committed': '/etc/systemd/system/vllm.service.d/zz-jetson-llm-speculative-1-kept.conf'}
    names = ['override.conf', '50-limits.conf', '99-local.conf', 'local.conf', overlay.CANDIDATE_NAME,
             overlay.COMMITTED_NAME]
    # applied last, the candidate after the kept one (systemd: file-name order across /etc and /run)
    assert sorted(names)[-2:] == [overlay.COMMITTED_NAME, overlay.CANDIDATE_NAME]


def test_candidate_is_the_baseline_plus_two_flags_and_vllm_reads_them(tmp_path):
    root = _root(tmp_path, NATIVE)
    base = overlay.read_baseline(root, 'vllm', UNIT)
    text, argv, secret = overlay.render('vllm', base, SPEC, 0.45)
    assert not secret
    assert argv == base['argv'] + ['--gpu-memory-utilization', '0.45', '--speculative-config',
                                   json.dumps(SPEC, sort_keys=True, separators=(',', ':'))]
    # systemd (our parser of it) runs exactly that, and vLLM's parser model keeps the last flags
    assert _effective(root, text) == argv
    serve = analyse_command(argv)[0]['serve']
    assert serve['speculative_config'] == SPEC
    assert serve['gpu_memory_utilization'] == 0.45
    assert serve['port'] == 8000  # ${PORT} still expands: the line is the operator's, as written
    assert 'ExecStart=\nExecStart=/opt/vllm/bin/vllm serve' in text


def test_a_candidate_wins_over_the_kept_overlay_and_removing_it_goes_back(tmp_path):
    root = _root(tmp_path, NATIVE)
    base = overlay.read_baseline(root, 'vllm', UNIT)
    kept, kept_argv, _secret = overlay.render('vllm', base, dict(SPEC, num_speculative_tokens=4), 0.45)
    committed = tmp_path / overlay.paths('vllm')['committed'].lstrip('/')
    committed.parent.mkdir(parents=True)
    committed.write_text(kept)
    assert sd.parse_unit(root, 'vllm.service', UNIT)['argv'] == kept_argv
    # K + 1 as a candidate: the baseline is still the unit alone, and the candidate is what runs
    assert overlay.read_baseline(root, 'vllm', UNIT)['sha256'] == base['sha256']
    text, argv, _secret = overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT),
                                         dict(SPEC, num_speculative_tokens=5), 0.45)
    assert _effective(root, text) == argv
    (tmp_path / overlay.paths('vllm')['candidate'].lstrip('/')).unlink()
    assert sd.parse_unit(root, 'vllm.service', UNIT)['argv'] == kept_argv


def test_the_baseline_excludes_the_overlay_and_keeps_an_operator_drop_in(tmp_path):
    operator = ('[Service]\nExecStart=\nExecStart=/opt/vllm/bin/vllm serve /srv/models/m --port 8000 '
                '--max-num-seqs 4\n')
    root = _root(tmp_path, NATIVE, {'/etc/systemd/system/vllm.service.d/override.conf': operator})
    before = overlay.read_baseline(root, 'vllm', UNIT)
    assert before['argv'][-2:] == ['--max-num-seqs', '4']
    text, _argv, _secret = overlay.render('vllm', before, SPEC, 0.85)
    _effective(root, text)
    after = overlay.read_baseline(root, 'vllm', UNIT)
    assert after['argv'] == before['argv'] and after['sha256'] == before['sha256']
    # the operator's flag stays in the candidate
    assert '--max-num-seqs' in sd.parse_unit(root, 'vllm.service', UNIT)['argv']


def test_an_operator_edit_changes_the_baseline_digest(tmp_path):
    root = _root(tmp_path, NATIVE)
    first = overlay.read_baseline(root, 'vllm', UNIT)['sha256']
    _root(tmp_path, NATIVE.replace('0.5\n', '0.5 --max-num-seqs 4\n'))
    assert overlay.read_baseline(root, 'vllm', UNIT)['sha256'] != first
    _root(tmp_path, NATIVE.replace('0.5\n', '0.5 --max-num-seqs 4\n'),
          {'/etc/systemd/system/vllm.service.d/50-env.conf': '[Service]\nEnvironment=X=1\n'})
    assert overlay.read_baseline(root, 'vllm', UNIT)['sha256'] != first


def test_docker_run_recipe_gets_the_flags_after_the_image(tmp_path):
    unit = ('[Service]\nExecStart=/usr/bin/docker run --rm --runtime nvidia --name vllm '
            'dustynv/vllm:r36.4-cu128-24.04 vllm serve /models/m --port 8000\n')
    root = _root(tmp_path, unit)
    base = overlay.read_baseline(root, 'vllm', UNIT)
    _text, argv, _secret = overlay.render('vllm', base, SPEC, 0.5)
    info = analyse_command(argv)[0]
    assert info['runtime'] == 'container'
    assert info['serve']['speculative_config'] == SPEC


@pytest.mark.parametrize('exec_start', [
    '/bin/sh -c "exec /opt/vllm/bin/vllm serve /srv/models/m --port 8000"',
    '/usr/local/bin/start-vllm.sh',
])
def test_a_shell_or_script_exec_start_is_a_clear_error(tmp_path, exec_start):
    root = _root(tmp_path, '[Service]\nExecStart=%s\n' % exec_start)
    base = overlay.read_baseline(root, 'vllm', UNIT)
    with pytest.raises(overlay.OverlayError, match='would not reach vLLM'):
        overlay.render('vllm', base, SPEC, 0.5)


def test_no_exec_start_is_a_clear_error(tmp_path):
    root = _root(tmp_path, '[Service]\nType=simple\n')
    with pytest.raises(overlay.OverlayError, match='no ExecStart'):
        overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), SPEC, 0.5)


def test_dollar_and_percent_in_the_config_survive_systemd(tmp_path):
    spec = dict(SPEC, model='/srv/$HOME/100%/"q"\\x')
    root = _root(tmp_path, NATIVE)
    text, argv, _secret = overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), spec, 0.5)
    assert _effective(root, text) == argv
    assert analyse_command(argv)[0]['serve']['speculative_config'] == spec


def test_colon_prefix_keeps_dollar_literal(tmp_path):
    root = _root(tmp_path, '[Service]\nExecStart=:/opt/vllm/bin/vllm serve /srv/models/m --port 8000\n')
    spec = dict(SPEC, model='/srv/$x')
    text, argv, _secret = overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), spec, 0.5)
    assert _effective(root, text) == argv
    assert '$$' not in text.rsplit('ExecStart=', maxsplit=1)[-1]


def test_a_literal_api_key_makes_the_file_secret_and_the_diff_masks_it(tmp_path):
    root = _root(tmp_path, '[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --api-key sk-LEAK\n')
    text, _argv, secret = overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), SPEC, 0.5)
    assert secret
    assert 'sk-LEAK' in text and 'sk-LEAK' not in overlay.redact(text)


def test_utilisation_is_written_without_float_noise():
    assert overlay.format_utilisation(0.9 - 0.05) == '0.85'
    assert overlay.flags({'method': 'ngram'}, 0.8500000000000001)[1] == '0.85'


def test_a_trailing_backslash_cannot_swallow_the_flags(tmp_path):
    # A value ending in an escaped quote/backslash would change the meaning of what follows: checked, not trusted.
    base = {'exec_start_raw': '/opt/vllm/bin/vllm serve /m "--port', 'argv': ['/opt/vllm/bin/vllm', 'serve', '/m'],
            'prefixes': '', 'env': {}, 'file': type('F', (), {'path': UNIT})(), 'problems': []}
    with pytest.raises(overlay.OverlayError):
        overlay.render('vllm', base, SPEC, 0.5)


def test_a_key_from_an_environment_file_is_not_written_so_the_file_stays_0644(tmp_path):
    root = _root(tmp_path, '[Service]\nEnvironment=KEY=sk-LEAK\nExecStart=/opt/vllm/bin/vllm serve /m --api-key ${KEY}\n')
    text, argv, secret = overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), SPEC, 0.5)
    assert not secret and 'sk-LEAK' not in text and 'sk-LEAK' in argv


@pytest.mark.parametrize('name', ['../../etc/passwd', 'vllm\nExecStart=/bin/sh', '.hidden', '', 'a/b', 'x' * 300,
                                  '-Hlc@evil.service', '-.mount'])
def test_a_name_that_is_not_a_unit_name_is_refused_before_any_path_is_built(name):
    with pytest.raises(overlay.OverlayError, match='allowed: letters, digits'):
        overlay.paths(name)


@pytest.mark.parametrize('name', ['vllm', 'vllm.service', 'vllm@qwen3', 'vllm-docker-unit'])
def test_unit_names_systemd_accepts(name):
    assert overlay.paths(name)['candidate'].startswith('/run/systemd/system/vllm')


@pytest.mark.parametrize('bad', [float('nan'), float('inf'), {'nested': [float('-inf')]}])
def test_a_non_finite_number_in_the_config_is_refused_never_written(tmp_path, bad):
    """json.dumps writes NaN (not JSON) and the round-trip check would pass (Python's parser reads it back)."""
    root = _root(tmp_path, '[Service]\nExecStart=/opt/vllm/bin/vllm serve /m\n')
    with pytest.raises(overlay.OverlayError, match='speculative_config.num_speculative_tokens.* JSON cannot carry NaN'):
        overlay.render('vllm', overlay.read_baseline(root, 'vllm', UNIT), dict(SPEC, num_speculative_tokens=bad), 0.5)


def test_a_running_speculative_config_nested_too_deep_is_a_problem_not_a_crash():
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command
    info, problems = analyse_command(['vllm', 'serve', '/m', '--speculative-config', '[' * 100000])
    assert (info.get('serve') or {}).get('speculative_config') is None
    assert any('--speculative-config is not valid JSON' in problem and 'nests' in problem for problem in problems)
