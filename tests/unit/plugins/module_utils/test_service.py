# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _service.gather: offline roots, and live hosts fed with captured command outputs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import info as svc
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import compose

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'services')
ROOTS = os.path.join(FIXTURES, 'roots')
CAPTURED = os.path.join(FIXTURES, 'captured')
DOCKER = os.path.join(FIXTURES, 'docker')

# Every secret written into a fixture: none may ever reach a result or a warning.
SECRETS = ('hf_unitLEAKEDvalue123', 'hf_envfileSECRETvalue', 'sk-unitLEAKEDkey', 'hf_envfileNATIVEsecret',
           'sk-envfileAPIKEY', 'sk-dockerAPIKEYleak', 'hf_composeINLINEsecret', 'hf_composeENVFILEsecret',
           'sk-composeSTRINGkey', 'sk-jsonENVFILE', 'hf_capturedSECRET', 'hf_inspectENVsecret',
           'hf_inspectHUBsecret')

SERVE_KEYS = {'model', 'served_model_name', 'host', 'port', 'gpu_memory_utilization', 'max_model_len',
              'speculative_config', 'api_key_set', 'extra_args', 'entry', 'speculators'}
SERVICE_KEYS = {'name', 'manager', 'exists', 'file', 'env_files', 'runtime', 'image', 'state', 'configured',
                'running', 'serve', 'drift', 'drift_reasons'}
STATE_KEYS = {'active', 'status', 'main_pid', 'restarts', 'since', 'need_daemon_reload', 'container_id'}


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def assert_shape(service):
    assert set(service) == SERVICE_KEYS | ({'compose'} if service['manager'] == 'compose' else set())
    if service['manager'] == 'compose':
        assert set(service['compose']) == {'project_dir', 'project', 'base_files', 'overlay', 'files'}
    assert set(service['state']) == STATE_KEYS
    assert set(service['file']) == {'path', 'exists', 'sha256', 'mode'}
    for part in (service['configured'], service['running']):
        if part is not None:
            assert set(part) == {'argv', 'serve'}
            if part['serve'] is not None:
                assert set(part['serve']) == SERVE_KEYS
    if service['serve'] is not None:
        assert set(service['serve']) == SERVE_KEYS


def assert_no_secret(*things):
    text = json.dumps(things)
    for secret in SECRETS:
        assert secret not in text


class FakeHost(object):
    """A live host: answers commands from captured outputs, keyed by a substring of the command line."""

    def __init__(self, answers, binaries=('systemctl', 'docker')):
        self.answers = answers
        self.binaries = binaries
        self.calls = []

    def run(self, argv):
        self.calls.append(list(argv))
        line = ' '.join(argv)
        for key, answer in self.answers:
            if key in line:
                return answer
        return 1, '', 'unexpected command: %s' % line

    def which(self, name):
        return '/usr/bin/' + name if name in self.binaries else None


def _never(argv):
    raise AssertionError('a command ran on an offline root: %r' % (argv,))


def _proc_root(tmp_path, pid, data):
    folder = tmp_path / 'proc' / str(pid)
    folder.mkdir(parents=True)
    (folder / 'cmdline').write_bytes(data)
    return str(tmp_path)


# --- offline roots --------------------------------------------------------------------------

OFFLINE = [
    # root, name, project_src, manager, runtime, image, model, speculative method
    ('docker-run-orin', 'vllm', None, 'systemd', 'container', 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin',
     'Qwen/Qwen3-8B', 'eagle3'),
    ('native-venv', 'vllm', None, 'systemd', 'native', None, '/srv/models/Qwen3-8B', None),
    ('api-server', 'vllm.service', None, 'systemd', 'native', None, '/models/Llama-3.2-3B-Instruct', 'ngram'),
    ('template', 'vllm@qwen3-8b', None, 'systemd', 'native', None, '/srv/models/qwen3-8b', 'ngram'),
    ('dropin', 'vllm', None, 'systemd', 'native', None, '/srv/models/target', 'draft_model'),
    ('dropin-no-reset', 'vllm', None, 'systemd', 'native', None, '/srv/models/target', None),
    ('bad-json', 'vllm', None, 'systemd', 'native', None, '/srv/models/target', None),
    ('docker-entrypoint-args', 'vllm', None, 'systemd', 'container', 'vllm/vllm-openai:v0.9.2',
     'mistralai/Mistral-7B-Instruct-v0.3', None),
    ('unknown-specifier', 'vllm', None, 'systemd', 'native', None, '/srv/models/target', None),
    ('nspawn-native', 'vllm', None, 'systemd', 'native', None, '/models/target', 'draft_model'),
    ('compose-list', 'vllm', None, 'compose', 'container', 'vllm/vllm-openai:latest', 'Qwen/Qwen3-32B', 'eagle3'),
    ('compose-string', 'llm', '/srv/llm', 'compose', 'container', 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin',
     '/models/Qwen2.5-7B-Instruct', 'ngram'),
    ('compose-entrypoint', 'vllm', None, 'compose', 'container', 'vllm/vllm-openai:v0.10.1', '/models/target', None),
    ('compose-json', 'vllm', None, 'compose', 'container', 'vllm/vllm-openai:latest', '/models/target', None),
]


@pytest.mark.parametrize('root, name, project_src, manager, runtime, image, model, method', OFFLINE,
                         ids=[case[0] for case in OFFLINE])
def test_offline_roots(root, name, project_src, manager, runtime, image, model, method):
    service, warnings = svc.gather(name, project_src=project_src, root=os.path.join(ROOTS, root),
                                   run_command=_never, which=lambda n: '/usr/bin/' + n)
    assert_shape(service)
    assert_no_secret(service, warnings)
    assert service['manager'] == manager
    assert service['exists'] is True and service['file']['exists'] is True
    assert len(service['file']['sha256']) == 64
    assert service['runtime'] == runtime
    assert service['image'] == image
    assert service['serve'] == service['configured']['serve']
    assert service['serve']['model'] == model
    assert (service['serve']['speculative_config'] or {}).get('method') == method
    assert service['running'] is None
    assert service['state'] == svc.unknown_state()
    assert service['drift'] is False and service['drift_reasons'] == []


def test_absolute_symlink_resolved_inside_root(tmp_path):
    """/etc/systemd/system/vllm.service -> /opt/vllm/units/vllm.service, an absolute link, read below root.

    The link is made here: an absolute symlink in the repository would point outside it.
    """
    root = tmp_path / 'root'
    shutil.copytree(os.path.join(ROOTS, 'unit-symlink'), str(root))
    (root / 'etc' / 'systemd' / 'system').mkdir(parents=True)
    os.symlink('/opt/vllm/units/vllm.service', str(root / 'etc' / 'systemd' / 'system' / 'vllm.service'))
    service, warnings = svc.gather('vllm', root=str(root))
    assert warnings == []
    assert service['manager'] == 'systemd' and service['exists'] is True
    assert service['file']['path'] == '/etc/systemd/system/vllm.service'
    assert service['configured']['argv'] == ['/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/target', '--port', '8123']
    assert service['serve']['port'] == 8123


def test_offline_sha256_is_of_the_bytes():
    import hashlib
    root = os.path.join(ROOTS, 'docker-run-orin')
    service, _warnings = svc.gather('vllm', root=root)
    with open(os.path.join(root, 'etc', 'systemd', 'system', 'vllm.service'), 'rb') as handle:
        assert service['file']['sha256'] == hashlib.sha256(handle.read()).hexdigest()
    assert service['file']['mode'] == '%04o' % (os.stat(os.path.join(root, 'etc/systemd/system/vllm.service')).st_mode & 0o7777)


def test_offline_env_files_are_paths_only():
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'native-venv'))
    assert service['env_files'] == ['/etc/default/vllm', '/etc/default/vllm-missing-is-fine']
    assert service['serve']['api_key_set'] is True
    assert service['configured']['argv'][service['configured']['argv'].index('--api-key') + 1] == '********'
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'docker-run-orin'))
    assert service['env_files'] == ['/etc/vllm/vllm.env']
    assert 'HF_TOKEN=********' in service['configured']['argv']


def test_offline_warnings():
    _service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'bad-json'))
    assert len(warnings) == 1 and 'not valid JSON' in warnings[0]
    _service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'unknown-specifier'))
    assert warnings == ['/etc/systemd/system/vllm.service: specifier %b in vllm.service is not expanded (kept as written)']
    _service, warnings = svc.gather('llm', project_src='/srv/llm', root=os.path.join(ROOTS, 'compose-string'))
    assert any('env_file /etc/vllm/secrets.env does not exist' in w for w in warnings)


def test_nothing_deployed():
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'empty'))
    assert_shape(service)
    assert service['exists'] is False and service['file'] == {
        'path': '/etc/systemd/system/vllm.service', 'exists': False, 'sha256': None, 'mode': None}
    assert service['configured'] is None and service['serve'] is None and service['runtime'] == 'unknown'
    assert 'neither a systemd unit' in warnings[0]
    service, _warnings = svc.gather('vllm', manager='compose', root=os.path.join(ROOTS, 'empty'))
    assert service['manager'] == 'compose' and service['exists'] is False
    assert service['file']['path'] == '/opt/vllm/vllm/compose.yaml'


def test_compose_service_absent():
    service, warnings = svc.gather('other', manager='compose', project_src='/opt/vllm/vllm',
                                   root=os.path.join(ROOTS, 'compose-list'))
    assert service['exists'] is False and service['file']['exists'] is True
    assert service['configured'] is None
    assert any("no service 'other' (services: vllm)" in w for w in warnings)


def test_compose_unparseable_without_yaml(monkeypatch):
    monkeypatch.setattr(compose, 'yaml', None)
    with pytest.raises(svc.ServiceInfoError) as error:
        svc.gather('vllm', root=os.path.join(ROOTS, 'compose-list'))
    assert 'PyYAML is not installed' in str(error.value)
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'compose-json'))
    assert service['serve']['gpu_memory_utilization'] == 0.6


def test_fifo_where_the_unit_belongs(tmp_path):
    folder = tmp_path / 'etc' / 'systemd' / 'system'
    folder.mkdir(parents=True)
    os.mkfifo(str(folder / 'vllm.service'))
    service, warnings = svc.gather('vllm', root=str(tmp_path))
    assert service['manager'] == 'systemd' and service['exists'] is True
    assert service['file']['sha256'] is None and service['configured'] is None
    assert any('a FIFO, not a regular file' in w for w in warnings)


@pytest.mark.parametrize('kwargs, message', [
    ({'name': ''}, 'name must be'),
    ({'name': '/etc/systemd/system/vllm.service'}, "name '/etc/systemd/system/vllm.service' is not"),
    ({'name': 'vllm', 'manager': 'podman'}, "manager 'podman' is not one of systemd, compose, auto"),
    ({'name': 'vllm', 'root': '/nonexistent/root'}, 'root /nonexistent/root does not exist'),
    ({'name': 'vllm.service', 'manager': 'compose'}, 'ends with .service'),
    ({'name': 'vllm', 'project_src': 'opt/vllm'}, "project_src 'opt/vllm' is not an absolute path"),
    ({'name': 'vllm', 'unit_path': 'vllm.service'}, "unit_path 'vllm.service' is not an absolute path"),
])
def test_bad_options(kwargs, message):
    kwargs.setdefault('root', os.path.join(ROOTS, 'empty'))
    with pytest.raises(svc.ServiceInfoError) as error:
        svc.gather(**kwargs)
    assert message in str(error.value)


# --- live systemd (captured systemctl show, /proc cmdline) ----------------------------------

def test_live_systemd_edited_but_not_restarted(tmp_path):
    """The unit was edited (port 8001) and not reloaded: systemd and the running argv both say so."""
    host = FakeHost([('-- vllm.service', (0, _read(CAPTURED, 'systemctl-show-need-reload.txt'), ''))])
    with open(os.path.join(CAPTURED, 'proc-cmdline-native.bin'), 'rb') as handle:
        proc = _proc_root(tmp_path, 35, handle.read())
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'nspawn-native'), run_command=host.run,
                                   which=host.which, live=True, proc_root=proc)
    assert_shape(service)
    assert_no_secret(service, warnings)
    assert warnings == []
    # The unit is an operand after "--": a name can never be read as an option of systemctl.
    assert host.calls == [['/usr/bin/systemctl', 'show', '--no-pager', '-p',
                           'MainPID,ActiveState,SubState,NRestarts,ActiveEnterTimestamp,FragmentPath,'
                           'NeedDaemonReload,LoadState,ExecMainCode,ExecMainStatus', '--', 'vllm.service']]
    assert service['state'] == {'active': True, 'status': 'active', 'main_pid': 35, 'restarts': 0,
                                'since': 'Mon 2026-11-30 17:26:10 UTC', 'need_daemon_reload': True,
                                'container_id': None}
    assert service['configured']['serve']['port'] == 8001
    assert service['running']['serve']['port'] == 8000
    assert service['serve'] == service['running']['serve']
    assert service['running']['argv'][:3] == ['/usr/bin/python3', '/opt/vllm/venv/bin/vllm', 'serve']
    assert service['drift'] is True
    assert len(service['drift_reasons']) == 2
    assert 'NeedDaemonReload=yes' in service['drift_reasons'][0]
    assert service['drift_reasons'][1] == 'port: file 8001, running 8000'


def test_live_systemd_no_drift(tmp_path):
    unit = _read(ROOTS, 'nspawn-native', 'etc', 'systemd', 'system', 'vllm.service').replace('8001', '8000')
    root = tmp_path / 'root'
    shutil.copytree(os.path.join(ROOTS, 'nspawn-native'), str(root))
    (root / 'etc' / 'systemd' / 'system' / 'vllm.service').write_text(unit)
    host = FakeHost([('systemctl show', (0, _read(CAPTURED, 'systemctl-show-active.txt'), ''))])
    with open(os.path.join(CAPTURED, 'proc-cmdline-native.bin'), 'rb') as handle:
        proc = _proc_root(tmp_path, 35, handle.read())
    service, warnings = svc.gather('vllm', root=str(root), run_command=host.run, which=host.which, live=True,
                                   proc_root=proc)
    assert warnings == []
    assert service['drift'] is False and service['drift_reasons'] == []
    assert service['configured']['serve'] == service['running']['serve']


@pytest.mark.parametrize('capture, status, restarts', [
    ('systemctl-show-crashloop.txt', 'activating', 3),
    ('systemctl-show-failed.txt', 'failed', 0),
    ('systemctl-show-inactive.txt', 'inactive', 0),
])
def test_live_systemd_not_running(capture, status, restarts):
    show = _read(CAPTURED, capture)
    for captured_name in ('vllm-crash.service', 'vllm-fail.service'):  # the captured units' names
        show = show.replace(captured_name, 'vllm.service')
    host = FakeHost([('systemctl show', (0, show, ''))])
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'native-venv'), run_command=host.run,
                                   which=host.which, live=True, proc_root='/nonexistent')
    assert warnings == []
    assert service['state']['status'] == status and service['state']['active'] is False
    assert service['state']['restarts'] == restarts
    assert service['running'] is None and service['serve'] == service['configured']['serve']
    assert service['drift'] is False


def test_live_unit_on_disk_but_not_loaded():
    host = FakeHost([('systemctl show', (0, _read(CAPTURED, 'systemctl-show-not-found.txt'), ''))])
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'native-venv'), run_command=host.run,
                                    which=host.which, live=True)
    assert service['state']['status'] == 'not-found'
    assert service['drift'] is True and 'has not loaded vllm.service' in service['drift_reasons'][0]


def test_live_without_systemctl():
    host = FakeHost([], binaries=())
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'native-venv'), run_command=host.run,
                                   which=host.which, live=True)
    assert host.calls == []
    assert service['state']['status'] == 'unknown'
    assert warnings == ['systemctl is not on the PATH: the state of vllm.service is unknown']


def test_live_systemctl_timeout_uses_timeout_wrapper():
    host = FakeHost([('systemctl show', (124, '', ''))], binaries=('systemctl', 'timeout'))
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'native-venv'), run_command=host.run,
                                   which=host.which, live=True)
    assert host.calls[0][:4] == ['/usr/bin/timeout', '-k', '5', '30']
    assert service['state']['status'] == 'unknown'
    assert warnings == ['systemctl show vllm.service timed out after 30 s: the state is unknown']


def test_live_docker_run_unit(tmp_path):
    """MainPID of a docker run unit is the docker client: its argv is parsed; the container id comes from docker."""
    show = _read(CAPTURED, 'systemctl-show-active.txt').replace('MainPID=35', 'MainPID=4242')
    inspect = _read(DOCKER, 'inspect-compose-running.json')
    host = FakeHost([('systemctl show', (0, show, '')), ('docker inspect --type container -- vllm', (0, inspect, ''))])
    client = ['/usr/bin/docker', 'run', '--rm', '--runtime', 'nvidia', '--network', 'host', '--ipc', 'host',
              '--name', 'vllm', '-v', '/root/.cache/huggingface:/root/.cache/huggingface', '--env-file',
              '/etc/vllm/vllm.env', '-e', 'HF_TOKEN=hf_unitLEAKEDvalue123',
              'ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra', 'vllm', 'serve', 'Qwen/Qwen3-8B', '--host', '0.0.0.0',
              '--port', '8000', '--max-model-len', '4096', '--gpu-memory-utilization', '0.75']
    proc = _proc_root(tmp_path, 4242, b'\0'.join(item.encode() for item in client) + b'\0')
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'docker-run-orin'), run_command=host.run,
                                   which=host.which, live=True, proc_root=proc)
    assert_shape(service)
    assert_no_secret(service, warnings)
    assert warnings == []
    assert service['runtime'] == 'container'
    assert service['image'] == 'ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra'   # the running one
    assert service['state']['container_id'].startswith('3f2a9c0d1e5b')
    assert service['drift'] is True
    assert service['drift_reasons'] == [
        'image: file ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin, running ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra',
        'speculative_config: file {"method": "eagle3", "model": "RedHatAI/Qwen3-8B-speculator.eagle3", '
        '"num_speculative_tokens": 3}, running null']


def test_bad_json_on_both_sides_compared_as_written(tmp_path):
    show = _read(CAPTURED, 'systemctl-show-active.txt')
    host = FakeHost([('systemctl show', (0, show, ''))])
    running = ['/opt/vllm/venv/bin/vllm', 'serve', '/srv/models/target', '--speculative-config',
               '{"method": "ngram", "num_speculative_tokens": 5,}']
    proc = _proc_root(tmp_path, 35, b'\0'.join(item.encode() for item in running))
    service, warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'bad-json'), run_command=host.run,
                                   which=host.which, live=True, proc_root=proc)
    assert service['drift'] is False
    assert len(warnings) == 2 and all('not valid JSON' in w for w in warnings)
    running[-1] = '{"method": "ngram", "num_speculative_tokens": 4}'
    proc = _proc_root(tmp_path / 'b', 35, b'\0'.join(item.encode() for item in running))
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'bad-json'), run_command=host.run,
                                    which=host.which, live=True, proc_root=proc)
    assert service['drift'] is True and service['drift_reasons'][0].startswith('--speculative-config: file {')


# --- live compose (docker outputs) ----------------------------------------------------------

def _compose_config_json(root, path):
    import yaml
    with open(os.path.join(root, path.lstrip('/'))) as handle:
        return json.dumps(yaml.safe_load(handle))


def test_live_compose_changed_but_not_recreated():
    root = os.path.join(ROOTS, 'compose-list')
    host = FakeHost([
        ('docker compose version', (0, 'Docker Compose version v2.26.1', '')),
        ('compose --project-directory /opt/vllm/vllm -f /opt/vllm/vllm/compose.yaml config --format json '
         '--no-interpolate', (0, _compose_config_json(root, '/opt/vllm/vllm/compose.yaml'), '')),
        ('compose --project-directory /opt/vllm/vllm -f /opt/vllm/vllm/compose.yaml -p vllm ps --all --format json',
         (0, _read(DOCKER, 'compose-ps.ndjson'), '')),
        ('docker inspect --type container -- 3f2a9c0d1e5b', (0, _read(DOCKER, 'inspect-compose-running.json'), '')),
    ])
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert_shape(service)
    assert_no_secret(service, warnings)
    assert warnings == []
    assert service['manager'] == 'compose'
    assert service['state'] == {'active': True, 'status': 'active', 'main_pid': 48211, 'restarts': 2,
                                'since': '2026-11-30T15:02:12.018734551Z', 'need_daemon_reload': None,
                                'container_id': '3f2a9c0d1e5b7a8c6d4e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c'}
    assert service['running']['argv'][:3] == ['vllm', 'serve', 'Qwen/Qwen3-32B']
    assert service['running']['serve']['entry'] == 'vllm serve'
    assert service['configured']['serve']['entry'] == 'unknown'
    assert service['serve'] == service['running']['serve']
    assert service['drift_reasons'] == [
        'gpu_memory_utilization: file 0.8, running 0.85',
        'speculative_config: file {"method": "eagle3", "model": "RedHatAI/Qwen3-32B-speculator.eagle3", '
        '"num_speculative_tokens": 5}, running null']
    assert service['env_files'] == ['/opt/vllm/vllm/vllm.env', '/opt/vllm/vllm/optional.env']


def test_live_compose_without_compose_plugin_uses_labels():
    root = os.path.join(ROOTS, 'compose-list')
    host = FakeHost([
        ('docker compose version', (1, '', "docker: 'compose' is not a docker command.")),
        ('docker ps --all --no-trunc', (0, '3f2a9c0d1e5b7a8c6d4e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c\n', '')),
        ('docker inspect --type container -- 3f2a', (0, _read(DOCKER, 'inspect-compose-restarting.json'), '')),
    ])
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert warnings == []
    assert any('label=com.docker.compose.project=vllm' in ' '.join(call) for call in host.calls)
    assert service['state']['status'] == 'activating' and service['state']['restarts'] == 7
    assert service['running'] is not None


def test_live_compose_no_container_and_no_docker():
    root = os.path.join(ROOTS, 'compose-entrypoint')
    host = FakeHost([
        ('docker compose version', (0, 'v2', '')),
        ('config --format json', (1, '', 'permission denied')),
        (' ps --all --format json', (0, '', '')),
    ])
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert service['state']['status'] == 'inactive' and service['running'] is None
    assert service['serve']['entry'] == 'api_server'
    assert any('docker compose config failed (rc=1): permission denied' in w for w in warnings)
    host = FakeHost([], binaries=('systemctl',))
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert service['state']['status'] == 'unknown'
    assert warnings == ['docker is not on the PATH: the state of compose service vllm is unknown']


def test_auto_asks_systemctl_when_no_file_is_found():
    show = 'LoadState=loaded\nFragmentPath=/usr/lib/systemd/system/vllm.service\n'
    host = FakeHost([('-p LoadState,FragmentPath', (0, show, '')),
                     ('systemctl show', (0, _read(CAPTURED, 'systemctl-show-inactive.txt'), ''))])
    service, _warnings = svc.gather('vllm', root=os.path.join(ROOTS, 'empty'), run_command=host.run,
                                    which=host.which, live=True)
    assert service['manager'] == 'systemd'
    assert len(host.calls) == 2


def test_live_compose_api_key_from_the_container_environment():
    """The env file sets VLLM_API_KEY; the running container's Env does not: that is drift, and no value leaks."""
    root = os.path.join(ROOTS, 'compose-json')
    inspect = json.loads(_read(DOCKER, 'inspect-compose-running.json'))
    host = FakeHost([
        ('docker compose version', (1, '', 'no compose')),
        ('docker ps --all --no-trunc', (0, 'abc\n', '')),
        ('docker inspect --type container -- abc', (0, json.dumps(inspect), '')),
    ])
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert_no_secret(service, warnings)
    assert service['configured']['serve']['api_key_set'] is True
    assert service['running']['serve']['api_key_set'] is False
    assert 'API key: set in the file, not set in the running process' in service['drift_reasons']
    inspect[0]['Config']['Env'].append('VLLM_API_KEY=sk-jsonENVFILE')
    host.answers[-1] = ('docker inspect --type container -- abc', (0, json.dumps(inspect), ''))
    service, warnings = svc.gather('vllm', root=root, run_command=host.run, which=host.which, live=True)
    assert_no_secret(service, warnings)
    assert service['running']['serve']['api_key_set'] is True
    assert not any(reason.startswith('API key') for reason in service['drift_reasons'])


def _speculators_root(tmp_path, config):
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'vllm.service'
    unit.parent.mkdir(parents=True)
    unit.write_text('[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/qwen3-8b-speculator --port 8000\n')
    model = tmp_path / 'models' / 'qwen3-8b-speculator'
    model.mkdir(parents=True)
    (model / 'config.json').write_text(config)
    return str(tmp_path)


def test_a_unit_serving_a_speculators_checkpoint_is_read_as_speculating(tmp_path):
    config = json.dumps({'speculators_model_type': 'eagle3', 'speculators_config': {
        'proposal_methods': [{'proposal_type': 'greedy', 'speculative_tokens': 3}],
        'verifier': {'name_or_path': 'Qwen/Qwen3-8B'}}})
    service, _warnings = svc.gather('vllm', root=_speculators_root(tmp_path, config), run_command=_never,
                                    which=lambda n: '/usr/bin/' + n)
    assert service['serve']['speculative_config'] == {'method': 'eagle3', 'model': '/models/qwen3-8b-speculator',
                                                      'num_speculative_tokens': 3}
    assert service['serve']['speculators']['verifier'] == 'Qwen/Qwen3-8B'


@pytest.mark.parametrize('config', ['[' * 100000, '{"speculators_config": 5}', 'not json'])
def test_a_damaged_model_config_is_not_a_speculators_checkpoint_and_no_crash(tmp_path, config):
    service, _warnings = svc.gather('vllm', root=_speculators_root(tmp_path, config), run_command=_never,
                                    which=lambda n: '/usr/bin/' + n)
    assert service['serve']['speculative_config'] is None and service['serve']['speculators'] is None
