# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _serve_args: finding vLLM in a command line and parsing its arguments."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import serve_args as sa

CAPTURED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'services', 'captured')

JETSON_RECIPE = ('/usr/bin/docker run --rm --runtime nvidia --network host --ipc host --name vllm '
                 '-v /root/.cache/huggingface:/root/.cache/huggingface --env-file /etc/vllm/vllm.env '
                 'vllm/vllm-openai:latest vllm serve Qwen/Qwen3-8B --host 0.0.0.0 --port 8000 '
                 '--max-model-len 8192 --gpu-memory-utilization 0.75').split()


def test_jetson_recipe_docker_run():
    info, problems = sa.analyse_command(JETSON_RECIPE)
    assert problems == []
    assert info['runtime'] == 'container'
    assert info['image'] == 'vllm/vllm-openai:latest'
    assert info['container_name'] == 'vllm'
    assert info['env_files'] == ['/etc/vllm/vllm.env']
    serve = info['serve']
    assert serve == {
        'model': 'Qwen/Qwen3-8B', 'served_model_name': ['Qwen/Qwen3-8B'], 'host': '0.0.0.0', 'port': 8000,
        'gpu_memory_utilization': 0.75, 'max_model_len': 8192, 'speculative_config': None, 'api_key_set': False,
        'extra_args': [], 'entry': 'vllm serve', 'speculators': None}


@pytest.mark.parametrize('options', [
    # a value-taking option whose value looks like an image would be taken as the image if not known
    ['-v', 'vllm/vllm-openai:v0.8:/mnt'],
    ['--volume=/a:/b', '-e', 'A=1', '--shm-size', '8g'],
    ['-it', '-p', '8000:8000', '--gpus', 'all'],
    ['-dit', '-p8000:8000', '-eHF_HOME=/hf'],
    ['--mount', 'type=bind,src=/m,dst=/m', '--user', '0:0', '--workdir', '/w', '--security-opt', 'seccomp=unconfined'],
    ['--log-opt', 'max-size=10m', '--label', 'a=b', '--ulimit', 'memlock=-1', '--device', '/dev/nvhost-ctrl'],
])
def test_docker_run_value_options_do_not_hide_the_image(options):
    argv = ['docker', 'run'] + options + ['ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin', 'vllm', 'serve', 'M']
    run = sa.parse_docker_run(argv)
    assert run.image == 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin'
    assert run.command == ['vllm', 'serve', 'M']


def test_docker_global_options_and_container_run():
    run = sa.parse_docker_run(['/usr/bin/docker', '--host', 'unix:///run/docker.sock', 'container', 'run',
                               '--rm', 'img:1', '--model', 'X'])
    assert run.image == 'img:1'
    assert run.command == ['--model', 'X']
    assert sa.parse_docker_run(['/usr/bin/docker', 'compose', 'up']) is None
    assert sa.parse_docker_run(['/usr/bin/vllm', 'serve', 'M']) is None


def test_image_entrypoint_api_server_takes_args_after_the_image():
    argv = ['docker', 'run', '--rm', '--ipc=host', 'vllm/vllm-openai:v0.9.2', '--model', 'mistralai/M-7B',
            '--port', '8001']
    info, problems = sa.analyse_command(argv)
    assert problems == []
    assert info['serve']['model'] == 'mistralai/M-7B'
    assert info['serve']['port'] == 8001
    assert info['serve']['entry'] == 'unknown'


def test_docker_entrypoint_option_is_used():
    argv = ['docker', 'run', '--entrypoint', 'python3', 'img', '-m', 'vllm.entrypoints.openai.api_server',
            '--model', 'X']
    info, _problems = sa.analyse_command(argv)
    assert info['serve']['entry'] == 'api_server'
    assert info['serve']['model'] == 'X'


def test_docker_run_without_command_is_reported():
    info, problems = sa.analyse_command(['docker', 'run', '--rm', 'vllm/vllm-openai:latest'])
    assert info['image'] == 'vllm/vllm-openai:latest'
    assert info['serve']['model'] is None
    assert any('no arguments' in p for p in problems)


@pytest.mark.parametrize('argv, entry, rest', [
    (['vllm', 'serve', 'M', '--port', '1'], 'vllm serve', ['M', '--port', '1']),
    (['/opt/vllm/venv/bin/vllm', 'serve', 'M'], 'vllm serve', ['M']),
    (['/usr/bin/python3', '/opt/vllm/venv/bin/vllm', 'serve', 'M'], 'vllm serve', ['M']),
    (['python3', '-u', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'M'], 'api_server', ['--model', 'M']),
    (['/venv/bin/python3.10', '-m', 'vllm.entrypoints.cli.main', 'serve', 'M'], 'vllm serve', ['M']),
    (['/bin/sh', '-c', 'exec vllm serve M --port 9'], 'vllm serve', ['M', '--port', '9']),
    # The serve role's container entry point: source the secrets file, then exec "$0" "$@".
    (['/bin/sh', '-c', 'set -a && . /run/secrets/s.env && set +a && exec "$0" "$@"', '/venv/bin/vllm', 'serve',
      'M', '--port', '9'], 'vllm serve', ['M', '--port', '9']),
    (['/bin/false'], None, []),
    (['vllm', 'bench', 'serve'], None, []),
])
def test_locate_vllm(argv, entry, rest):
    assert sa.locate_vllm(argv) == (entry, rest)


def test_captured_proc_cmdline_of_console_script():
    """/proc/<pid>/cmdline of `vllm serve` started by systemd: the interpreter comes first."""
    with open(os.path.join(CAPTURED, 'proc-cmdline-native.bin'), 'rb') as handle:
        argv = [part.decode() for part in handle.read().split(b'\0')[:-1]]
    info, problems = sa.analyse_command(argv)
    assert problems == []
    assert info['runtime'] == 'native'
    assert info['serve']['model'] == '/models/target'
    assert info['serve']['speculative_config'] == {'method': 'draft_model', 'model': '/models/draft',
                                                   'num_speculative_tokens': 4}


@pytest.mark.parametrize('args, key, value', [
    (['M', '--port=8001'], 'port', 8001),
    (['M', '--gpu_memory_utilization', '0.7'], 'gpu_memory_utilization', 0.7),
    (['M', '--gpu-memory-utilization=0.65'], 'gpu_memory_utilization', 0.65),
    (['M', '--max-model-len', '8k'], 'max_model_len', 8000),
    (['M', '--max-model-len', '8K'], 'max_model_len', 8192),
    (['M', '--max-model-len', '25.6k'], 'max_model_len', 25600),
    (['M', '--max_model_len=4096'], 'max_model_len', 4096),
    (['M', '--max-model-len', 'auto'], 'max_model_len', -1),
    (['M', '--served-model-name', 'a', 'b', '--port', '1'], 'served_model_name', ['a', 'b']),
    (['M', '--served-model-name=a'], 'served_model_name', ['a']),
    (['M'], 'served_model_name', ['M']),
    (['M'], 'port', 8000),
    (['M'], 'gpu_memory_utilization', None),
    (['--model', 'X', '--host', '::'], 'host', '::'),
    (['M', '--speculative-config.method', 'ngram', '--speculative-config.num_speculative_tokens', '5'],
     'speculative_config', {'method': 'ngram', 'num_speculative_tokens': 5}),
    (['M', '--speculative_config={"method": "mtp", "num_speculative_tokens": 1}'],
     'speculative_config', {'method': 'mtp', 'num_speculative_tokens': 1}),
    (['M', '--enable-prefix-caching', '--max-num-seqs', '8'], 'extra_args',
     ['--enable-prefix-caching', '--max-num-seqs', '8']),
    (['--max-num-seqs', '8', '--model', 'M'], 'model', 'M'),
    (['--max-num-seqs', '8'], 'model', None),   # 8 is the option's value, not a model
])
def test_serve_options(args, key, value):
    serve, problems, _raw = sa.parse_serve_args(args, 'vllm serve')
    assert problems == []
    assert serve[key] == value


def test_bad_speculative_json_is_a_problem_not_a_crash():
    serve, problems, raw = sa.parse_serve_args(['M', '--speculative-config', '{"method": ngram}'], 'vllm serve')
    assert serve['speculative_config'] is None
    assert raw == '{"method": ngram}'
    assert len(problems) == 1 and 'not valid JSON' in problems[0]
    serve, problems, _raw = sa.parse_serve_args(['M', '--speculative-config', '[1, 2]'], 'vllm serve')
    assert serve['speculative_config'] is None and 'not an object' in problems[0]


@pytest.mark.parametrize('args, problem', [
    (['M', '--port', 'eighty'], "--port 'eighty'"),
    (['M', '--gpu-memory-utilization', 'lots'], "--gpu-memory-utilization 'lots'"),
    (['M', '--max-model-len', '8x'], "--max-model-len '8x'"),
    (['M', '--port'], 'option --port has no value'),
])
def test_bad_numbers_are_problems(args, problem):
    _serve, problems, _raw = sa.parse_serve_args(args, 'vllm serve')
    assert any(problem in p for p in problems), problems


SECRET = 'sk-DO-NOT-LEAK-42'


@pytest.mark.parametrize('argv', [
    ['vllm', 'serve', 'M', '--api-key', SECRET],
    ['vllm', 'serve', 'M', '--api-key=' + SECRET],
    ['vllm', 'serve', 'M', '--api_key', SECRET],
    ['vllm', 'serve', 'M', '--hf-token', SECRET],
    ['docker', 'run', '-e', 'HF_TOKEN=' + SECRET, 'img', 'vllm', 'serve', 'M'],
    ['docker', 'run', '--env=VLLM_API_KEY=' + SECRET, 'img', 'vllm', 'serve', 'M'],
    ['docker', 'run', '-eHF_TOKEN=' + SECRET, 'img', 'vllm', 'serve', 'M'],
    ['docker', 'run', '-e', 'MY_SERVICE_PASSWORD=' + SECRET, 'img', 'vllm', 'serve', 'M'],
    ['docker', 'run', '--env', 'HUGGING_FACE_HUB_TOKEN=' + SECRET, 'img', 'M'],
    ['/usr/bin/env', 'HF_TOKEN=' + SECRET, 'vllm', 'serve', 'M'],
])
def test_secrets_never_appear(argv):
    info, _problems = sa.analyse_command(argv)
    text = json.dumps(info)
    assert SECRET not in text
    assert sa.MASK in text


def test_api_key_detection():
    serve, _p, _r = sa.parse_serve_args(['M', '--api-key', 'x'], 'vllm serve')
    assert serve['api_key_set'] is True
    assert serve['extra_args'] == ['--api-key', sa.MASK]
    serve, _p, _r = sa.parse_serve_args(['M'], 'vllm serve', env={'VLLM_API_KEY': 'x'})
    assert serve['api_key_set'] is True
    serve, _p, _r = sa.parse_serve_args(['M'], 'vllm serve', env={'VLLM_API_KEY': ''})
    assert serve['api_key_set'] is False


# --- speculators-format checkpoints: vLLM speculates without --speculative-config (0.10.1+) -----------------------
SPECULATORS_CONFIG = {
    "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
    "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                           "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                           "verifier": {"name_or_path": "Qwen/Qwen3-8B", "architectures": ["Qwen3ForCausalLM"]}},
    "transformer_layer_config": {"model_type": "llama", "hidden_size": 4096},
}


def test_a_local_speculators_checkpoint_served_directly_speculates():
    argv = ['/opt/vllm/bin/vllm', 'serve', '/models/qwen3-8b-speculator', '--port', '8000']
    reads = []

    def read(path):
        reads.append(path)
        return SPECULATORS_CONFIG if path == '/models/qwen3-8b-speculator' else None
    serve = sa.analyse_command(argv, read_model_config=read)[0]['serve']
    assert serve['speculative_config'] == {'method': 'eagle3', 'model': '/models/qwen3-8b-speculator',
                                           'num_speculative_tokens': 3}
    assert serve['speculators'] == {'method': 'eagle3', 'num_speculative_tokens': 3, 'verifier': 'Qwen/Qwen3-8B',
                                    'source': 'config.json'}
    assert reads == ['/models/qwen3-8b-speculator']


def test_a_hub_speculators_checkpoint_is_recognised_by_name_even_in_a_container():
    argv = JETSON_RECIPE[:JETSON_RECIPE.index('Qwen/Qwen3-8B')] + ['RedHatAI/Qwen3-8B-speculator.eagle3']
    serve = sa.analyse_command(argv)[0]['serve']
    assert serve['speculative_config'] == {'method': 'eagle3', 'model': 'RedHatAI/Qwen3-8B-speculator.eagle3'}
    assert serve['speculators']['source'] == 'name'


@pytest.mark.parametrize('argv, config', [
    # an ordinary model: not a speculators checkpoint
    (['vllm', 'serve', '/models/target'], {'model_type': 'qwen3'}),
    # an explicit --speculative-config wins (the collection's overlay, or the operator's own)
    (['vllm', 'serve', '/models/spec', '--speculative-config', '{"method": "ngram", "num_speculative_tokens": 2}'],
     SPECULATORS_CONFIG),
    # a container's model path is inside the container: never read from the host
    (JETSON_RECIPE[:JETSON_RECIPE.index('Qwen/Qwen3-8B')] + ['/models/spec'], SPECULATORS_CONFIG),
    # names that only look alike
    (['vllm', 'serve', 'acme/speculator'], None),
    (['vllm', 'serve', 'Qwen/Qwen3-8B'], None),
])
def test_what_is_not_a_speculators_checkpoint(argv, config):
    serve = sa.analyse_command(argv, read_model_config=lambda path: config)[0]['serve']
    assert serve['speculators'] is None
    assert serve['speculative_config'] in (None, {'method': 'ngram', 'num_speculative_tokens': 2})


@pytest.mark.parametrize('config', [None, [], {'speculators_config': 'eagle3'}, {'model_type': 'llama'}])
def test_damaged_or_plain_configs_are_not_speculators(config):
    assert sa.speculators_config(config) is None


def test_a_speculators_config_with_odd_fields_keeps_what_it_can():
    found = sa.speculators_config({'speculators_config': {'proposal_methods': [{'speculative_tokens': True}],
                                                          'verifier': 'x'}})
    assert found == {'method': None, 'num_speculative_tokens': None, 'verifier': None, 'source': 'config.json'}
