# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the vLLM server inside a command line and parse its arguments (standard library only).

A command line is a list of strings as the process receives it: a native ``vllm serve MODEL ...``,
``/venv/bin/python3 /venv/bin/vllm serve ...`` (a console script as ``/proc/<pid>/cmdline`` shows
it), ``python3 -m vllm.entrypoints.openai.api_server --model X ...``, or ``docker run [options]
IMAGE [command]`` whose command is one of those, or only arguments for the image's entrypoint.

Secret values (``--api-key``, ``--hf-token``, ``-e HF_TOKEN=...``) are replaced by ``MASK`` in
every list this module returns.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import shlex

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import loads

MASK = '********'
VLLM_DEFAULT_PORT = 8000

ENTRY_SERVE = 'vllm serve'
ENTRY_API_SERVER = 'api_server'
ENTRY_UNKNOWN = 'unknown'

# Environment variable names whose values are secrets (never returned).
SECRET_ENV_NAMES = frozenset(['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HUGGINGFACE_HUB_TOKEN', 'VLLM_API_KEY'])
_SECRET_NAME = re.compile(r'(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_?KEY)', re.IGNORECASE)
# vLLM options whose value is a secret (after underscore -> dash normalisation).
_SECRET_OPTION = re.compile(r'^--[a-z0-9-]*(api-key|token|secret|password)[a-z0-9-]*$')

_API_SERVER_MODULES = ('vllm.entrypoints.openai.api_server', 'vllm.entrypoints.api_server')
_CLI_MODULES = ('vllm.entrypoints.cli.main', 'vllm')
_PYTHON = re.compile(r'^python(\d+(\.\d+)*)?$')
_CONTAINER_CLIS = ('docker', 'podman', 'nerdctl')

# docker run (and podman run) options that take a value; every other option is a flag.
DOCKER_RUN_VALUE_OPTIONS = frozenset("""
--add-host --annotation --attach --blkio-weight --blkio-weight-device --cap-add --cap-drop
--cgroup-parent --cgroupns --cidfile --cpu-count --cpu-percent --cpu-period --cpu-quota
--cpu-rt-period --cpu-rt-runtime --cpu-shares --cpus --cpuset-cpus --cpuset-mems --detach-keys
--device --device-cgroup-rule --device-read-bps --device-read-iops --device-write-bps
--device-write-iops --dns --dns-opt --dns-option --dns-search --domainname --entrypoint --env
--env-file --expose --gpus --group-add --health-cmd --health-interval --health-retries
--health-start-interval --health-start-period --health-timeout --hostname --ip --ip6 --ipc
--isolation --kernel-memory --label --label-file --link --link-local-ip --log-driver --log-opt
--mac-address --memory --memory-reservation --memory-swap --memory-swappiness --mount --name
--net --net-alias --network --network-alias --oom-score-adj --pid --pids-limit --platform
--publish --pull --restart --runtime --security-opt --shm-size --stop-signal --stop-timeout
--storage-opt --sysctl --tmpfs --ulimit --user --userns --uts --volume --volume-driver
--volumes-from --workdir
--arch --authfile --cgroup-conf --cgroups --chrootdirs --conmon-pidfile --decryption-key
--env-merge --gidmap --hostuser --init-path --log-level --os --passwd-entry --pod --pod-id-file
--preserve-fds --requires --rootfs --sdnotify --seccomp-policy --secret --subgidname --subuidname
--timeout --tls-verify --uidmap --umask --unsetenv --variant
""".split())
# Short docker run options that take a value (-e X, -eX); the others (-d -i -t -P -q) are flags.
DOCKER_RUN_VALUE_SHORT = frozenset('acehlmpuvw')
# Options of the docker CLI itself (before "run") that take a value.
DOCKER_GLOBAL_VALUE_OPTIONS = frozenset(['--config', '--context', '-c', '--host', '-H', '--log-level', '-l',
                                         '--tlscacert', '--tlscert', '--tlskey', '--root', '--runroot',
                                         '--url', '--connection', '--identity', '--storage-driver',
                                         '--cgroup-manager', '--events-backend', '--network-cmd-path',
                                         '--runtime', '--tmpdir', '--module'])


class DockerRun(object):
    """What a ``docker run`` command line says."""

    def __init__(self):
        self.image = None
        self.entrypoint = None      # list of str (from --entrypoint) or None
        self.command = []           # arguments after the image
        self.name = None
        self.env_files = []
        self.env_names = []         # names set with -e/--env (values never kept)
        self.env = {}               # values, for internal use only (api key detection); never returned
        self.options = {}           # option -> last value (non-secret options only)
        self.network = None


def is_secret_env_name(name):
    return name.upper() in SECRET_ENV_NAMES or bool(_SECRET_NAME.search(name or ''))


def normalise_option(token):
    """``--max_model_len=8`` -> ``--max-model-len=8`` (vLLM's FlexibleArgumentParser rule)."""
    if not token.startswith('--'):
        return token
    key, sep, value = token.partition('=')
    head, dot, tail = key[2:].partition('.')
    return '--' + head.replace('_', '-') + dot + tail + sep + value


def last_option_value(args, option):
    """The value of the last ``option`` (``--name``, dashes) in a vLLM argument list, or None.

    Takes ``--opt VALUE`` and ``--opt=VALUE``, with underscores or dashes in the name (normalise_option).
    Items that are not strings are skipped.
    """
    value = None
    items = list(args or [])
    for index, token in enumerate(items):
        if not isinstance(token, str):
            continue
        norm = normalise_option(token)
        if norm == option and index + 1 < len(items):
            value = str(items[index + 1])
        elif norm.startswith(option + '='):
            value = norm[len(option) + 1:]
    return value


def _mask_env_assignment(text):
    name, sep, _value = text.partition('=')
    if sep and is_secret_env_name(name):
        return name + '=' + MASK
    return text


def mask_argv(argv):
    """A copy of ``argv`` with secret values replaced by MASK (option values and NAME=value env items)."""
    masked = []
    pending = False
    for token in argv:
        if pending:
            masked.append(MASK)
            pending = False
            continue
        norm = normalise_option(token)
        key, sep, _value = norm.partition('=')
        if key.startswith('--') and _SECRET_OPTION.match(key.split('.')[0]):
            if sep:
                masked.append(token.split('=', 1)[0] + '=' + MASK)
            else:
                masked.append(token)
                pending = True
            continue
        if key in ('--env', '-e') and sep:
            masked.append(key + '=' + _mask_env_assignment(norm.split('=', 1)[1]))
            continue
        if token.startswith('-e') and not token.startswith('--') and len(token) > 2:
            masked.append('-e' + _mask_env_assignment(token[2:].lstrip('=')))  # -eNAME=value
            continue
        if re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', token):
            masked.append(_mask_env_assignment(token))
            continue
        masked.append(token)
    return masked


# --------------------------------------------------------------------------------------------
# docker run
# --------------------------------------------------------------------------------------------

def is_container_cli(argv):
    return bool(argv) and os.path.basename(argv[0]) in _CONTAINER_CLIS


def parse_docker_run(argv):
    """Parse ``docker [global options] [container] run [options] IMAGE [command...]``.

    Returns a DockerRun, or None when ``argv`` is not a docker/podman run command line.
    """
    if not is_container_cli(argv):
        return None
    index = 1
    while index < len(argv):
        token = argv[index]
        if token in ('run', 'create'):
            break
        if token == 'container':
            index += 1
            continue
        if token.startswith('-'):
            if '=' not in token and token in DOCKER_GLOBAL_VALUE_OPTIONS:
                index += 1
            index += 1
            continue
        return None  # another docker sub-command (compose, start, exec...)
    if index >= len(argv) or argv[index] not in ('run', 'create'):
        return None
    index += 1
    run = DockerRun()

    def take(option, value):
        if option in ('--entrypoint',):
            run.entrypoint = [value] if value else []
        elif option == '--name':
            run.name = value
        elif option == '--env-file':
            run.env_files.append(value)
        elif option in ('--env', '-e'):
            name, sep, val = value.partition('=')
            run.env_names.append(name)
            if sep:
                run.env[name] = val
        elif option in ('--network', '--net'):
            run.network = value
        if option not in ('--env', '-e'):
            run.options[option] = value

    while index < len(argv):
        token = argv[index]
        if token == '--':
            index += 1
            break
        if token.startswith('--'):
            option, sep, value = token.partition('=')
            if option in DOCKER_RUN_VALUE_OPTIONS:
                if not sep:
                    index += 1
                    value = argv[index] if index < len(argv) else ''
                take(option, value)
            else:
                run.options[option] = value if sep else True
            index += 1
            continue
        if token.startswith('-') and len(token) > 1:
            chars = token[1:]
            position = 0
            while position < len(chars):
                char = chars[position]
                if char in DOCKER_RUN_VALUE_SHORT:
                    value = chars[position + 1:]
                    if value.startswith('='):
                        value = value[1:]
                    if not value:
                        index += 1
                        value = argv[index] if index < len(argv) else ''
                    long_name = {'a': '--attach', 'c': '--cpu-shares', 'e': '--env', 'h': '--hostname',
                                 'l': '--label', 'm': '--memory', 'p': '--publish', 'u': '--user',
                                 'v': '--volume', 'w': '--workdir'}[char]
                    take('-e' if char == 'e' else long_name, value)
                    break
                run.options['-' + char] = True
                position += 1
            index += 1
            continue
        break
    if index < len(argv):
        run.image = argv[index]
        run.command = list(argv[index + 1:])
    return run


# --------------------------------------------------------------------------------------------
# Locating the vLLM server in a command line
# --------------------------------------------------------------------------------------------

def _split_shell(argv):
    """``sh -c 'vllm serve ...'`` -> the words of the script (or None).

    The script's positional parameters are the words after it (``sh -c SCRIPT NAME ARGS...``: ``$0`` is
    NAME, ``"$@"`` the ARGS), as in the serve role's container entry point, which sources the secrets
    file and then runs ``exec "$0" "$@"`` with ``vllm serve ...`` after the script.
    """
    if len(argv) >= 3 and os.path.basename(argv[0]) in ('sh', 'bash', 'dash') and argv[1] in ('-c', '-lc', '-ec'):
        try:
            words = shlex.split(argv[2])
        except ValueError:
            return None
        positional = list(argv[3:])
        expanded = []
        for word in words:
            number = re.match(r'^\$\{?([0-9])\}?$', word)
            if word in ('$@', '${@}'):
                expanded.extend(positional[1:])
            elif number:
                index = int(number.group(1))
                expanded.extend(positional[index:index + 1])
            else:
                expanded.append(word)
        return expanded
    return None


def locate_vllm(argv):
    """Return (entry, args): which vLLM entry point ``argv`` runs and the arguments it receives.

    ``entry`` is ENTRY_SERVE, ENTRY_API_SERVER or None when no vLLM entry point is found.
    """
    argv = list(argv or [])
    script = _split_shell(argv)
    if script is not None:
        return locate_vllm(script)
    for index, token in enumerate(argv):
        base = os.path.basename(token)
        if base == 'vllm' and index + 1 < len(argv) and argv[index + 1] == 'serve':
            return ENTRY_SERVE, argv[index + 2:]
        if _PYTHON.match(base):
            rest = argv[index + 1:]
            position = 0
            while position < len(rest) and rest[position].startswith('-') and rest[position] != '-m':
                position += 1  # python flags such as -u, -O
            if position + 1 < len(rest) and rest[position] == '-m':
                module = rest[position + 1]
                if module in _API_SERVER_MODULES:
                    return ENTRY_API_SERVER, rest[position + 2:]
                if module in _CLI_MODULES and position + 2 < len(rest) and rest[position + 2] == 'serve':
                    return ENTRY_SERVE, rest[position + 3:]
    return None, []


# --------------------------------------------------------------------------------------------
# vLLM arguments
# --------------------------------------------------------------------------------------------

def human_readable_int(text):
    """vLLM's rule: '8192', '8k' (x1000), '8K' (x1024), '25.6k'. Raises ValueError."""
    text = text.strip()
    match = re.match(r'^(\d+(?:\.\d+)?)([kKmMgGtT])$', text)
    if match:
        number, suffix = match.groups()
        decimal = {'k': 10 ** 3, 'm': 10 ** 6, 'g': 10 ** 9, 't': 10 ** 12}
        binary = {'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30, 'T': 2 ** 40}
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        return int(number) * binary[suffix]
    return int(text)


def _json_value(text):
    try:
        return loads(text, 'the value', finite=False)
    except ValueError:
        return text


def empty_serve(entry=ENTRY_UNKNOWN):
    return {
        'model': None,
        'served_model_name': [],
        'host': None,
        'port': VLLM_DEFAULT_PORT,
        'gpu_memory_utilization': None,
        'max_model_len': None,
        'speculative_config': None,
        'api_key_set': False,
        'extra_args': [],
        'entry': entry,
        'speculators': None,
    }


def parse_serve_args(args, entry=ENTRY_UNKNOWN, env=None):
    """Parse the arguments a vLLM server receives into SERVE.

    Returns (serve, problems, speculative_raw): ``problems`` are sentences (bad JSON, bad numbers),
    ``speculative_raw`` the --speculative-config text as written (for comparisons), or None.
    ``env`` (a dict; values only used here) tells whether VLLM_API_KEY is set.
    """
    serve = empty_serve(entry)
    problems = []
    extra = []
    speculative_raw = None
    speculative_dotted = {}
    served = None
    args = list(args or [])
    index = 0
    positional_model = entry != ENTRY_API_SERVER

    def value_at(position):
        return args[position] if position < len(args) else None

    while index < len(args):
        token = args[index]
        norm = normalise_option(token)
        if not norm.startswith('--'):
            # vLLM takes the model as the first argument of `vllm serve` (after it, a bare word is an
            # option's value: --max-num-seqs 8)
            if positional_model and index == 0 and not token.startswith('-'):
                serve['model'] = token
                positional_model = False
            else:
                extra.append(token)
            index += 1
            continue
        key, sep, inline = norm.partition('=')
        if sep:
            value, consumed = inline, 1
        else:
            value, consumed = value_at(index + 1), 2
        if key == '--served-model-name':
            names = []
            if sep:
                names.append(inline)
                index += 1
            else:
                index += 1
                while index < len(args) and not args[index].startswith('-'):
                    names.append(args[index])
                    index += 1
            served = names
            continue
        known = key in ('--model', '--host', '--port', '--gpu-memory-utilization', '--max-model-len',
                        '--speculative-config', '--api-key')
        if known and value is None:
            problems.append('option %s has no value' % key)
            index += 1
            continue
        if key == '--model':
            serve['model'] = value
        elif key == '--host':
            serve['host'] = value
        elif key == '--port':
            try:
                serve['port'] = int(value)
            except ValueError:
                problems.append('--port %r is not an integer' % value)
        elif key == '--gpu-memory-utilization':
            try:
                serve['gpu_memory_utilization'] = float(value)
            except ValueError:
                problems.append('--gpu-memory-utilization %r is not a number' % value)
        elif key == '--max-model-len':
            try:
                serve['max_model_len'] = human_readable_int(value)
            except ValueError:
                if value.strip().lower() in ('auto', '-1'):
                    serve['max_model_len'] = -1
                else:
                    problems.append('--max-model-len %r is not an integer' % value)
        elif key == '--speculative-config':
            speculative_raw = value
            try:
                parsed = loads(value, 'the value', finite=False)
            except ValueError as exc:
                problems.append('--speculative-config is not valid JSON (%s): %s' % (exc, value[:200]))
            else:
                if isinstance(parsed, dict):
                    serve['speculative_config'] = parsed
                else:
                    problems.append('--speculative-config is JSON but not an object: %s' % value[:200])
        elif key.startswith('--speculative-config.'):
            if value is None:
                problems.append('option %s has no value' % key)
                index += 1
                continue
            speculative_dotted[key.split('.', 1)[1]] = _json_value(value)
        elif _SECRET_OPTION.match(key):
            if key == '--api-key':
                serve['api_key_set'] = bool(value)
            extra.append(token.split('=', 1)[0] + ('=' + MASK if sep else ''))
            if not sep:
                if value is not None:
                    extra.append(MASK)
                else:
                    consumed = 1
            index += consumed
            continue
        else:
            # An option vLLM knows and we do not model: keep it with its values, in order.
            extra.append(token)
            index += 1
            continue
        index += consumed
    if speculative_dotted:
        merged = dict(serve['speculative_config'] or {})
        for dotted, val in speculative_dotted.items():
            target = merged
            parts = dotted.split('.')
            for part in parts[:-1]:
                target = target.setdefault(part, {})
                if not isinstance(target, dict):
                    break
            else:
                target[parts[-1]] = val
        serve['speculative_config'] = merged
        if speculative_raw is None:
            speculative_raw = json.dumps(merged, sort_keys=True)
    if env and env.get('VLLM_API_KEY'):
        serve['api_key_set'] = True
    if served:
        serve['served_model_name'] = served
    elif serve['model'] is not None:
        serve['served_model_name'] = [serve['model']]
    serve['extra_args'] = extra
    return serve, problems, speculative_raw


# RedHatAI's speculators checkpoints: '<owner>/<target>-speculator.<method>' (RedHatAI/Qwen3-8B-speculator.eagle3).
_SPECULATOR_REPO = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+-speculator\.([A-Za-z0-9_]+)\Z')


def speculators_config(config):
    """What a speculators-format ``config.json`` (a dict) makes vLLM run, or None when it is not one.

    vLLM (0.10.1+, vllm/transformers_utils/config.py, maybe_override_with_speculators) serves the checkpoint's
    ``speculators_config.verifier.name_or_path`` as the target and drafts with the checkpoint itself:
    ``{"method": speculators_model_type, "num_speculative_tokens": proposal_methods[0].speculative_tokens}``.
    """
    if not isinstance(config, dict) or not isinstance(config.get('speculators_config'), dict):
        return None
    spec = config['speculators_config']
    methods = spec.get('proposal_methods')
    first = methods[0] if isinstance(methods, list) and methods and isinstance(methods[0], dict) else {}
    tokens = first.get('speculative_tokens')
    verifier = spec.get('verifier') if isinstance(spec.get('verifier'), dict) else {}
    method = config.get('speculators_model_type')
    return {
        'method': method if isinstance(method, str) and method else None,
        'num_speculative_tokens': tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
        else None,
        'verifier': verifier.get('name_or_path') if isinstance(verifier.get('name_or_path'), str) else None,
        'source': 'config.json',
    }


def speculators_checkpoint(model, read_model_config=None):
    """The speculators checkpoint ``model`` is (speculators_config's dict), or None.

    A local path is read (``read_model_config(path) -> dict or None``: its config.json); a hub id is recognised by
    RedHatAI's naming, ``<owner>/<target>-speculator.<method>`` (its config.json is not on this host).
    """
    if not isinstance(model, str) or not model:
        return None
    if model.startswith('/'):
        return speculators_config(read_model_config(model)) if read_model_config is not None else None
    match = _SPECULATOR_REPO.match(model)
    if not match:
        return None
    return {'method': match.group(1).lower(), 'num_speculative_tokens': None, 'verifier': None, 'source': 'name'}


def _apply_speculators(serve, read_model_config):
    """A server started from a speculators checkpoint speculates without --speculative-config: say so."""
    if not serve or serve.get('speculative_config') is not None:
        return
    found = speculators_checkpoint(serve.get('model'), read_model_config)
    if found is None:
        return
    serve['speculators'] = found
    serve['speculative_config'] = dict(
        (key, value) for key, value in (('method', found['method']), ('model', serve['model']),
                                        ('num_speculative_tokens', found['num_speculative_tokens']))
        if value is not None)


def analyse_command(argv, image_entrypoint_args=False, env=None, read_model_config=None):
    """Everything about one command line: (info dict, problems).

    ``image_entrypoint_args``: ``argv`` only holds what follows an image (a compose ``command:``
    without ``entrypoint:``, or ``docker run IMAGE ARGS``), so a leading option list is taken as
    arguments to the image's vLLM entry point.

    info: argv (masked), runtime (container|native|unknown), image, container_name, env_files,
    serve (SERVE or None), speculative_raw.

    ``read_model_config(path) -> dict or None`` reads a local model's config.json: a server started from a
    speculators-format checkpoint speculates without ``--speculative-config``, and its ``serve`` says so
    (``speculative_config`` as vLLM builds it, ``speculators`` the checkpoint's own). A hub id is recognised by name.
    """
    env = dict(env or {})
    info = {'argv': mask_argv(argv), 'runtime': 'unknown', 'image': None, 'container_name': None,
            'env_files': [], 'serve': None, 'speculative_raw': None}
    problems = []
    inner = list(argv)
    run = parse_docker_run(argv)
    if run is not None:
        info['runtime'] = 'container'
        info['image'] = run.image
        info['container_name'] = run.name
        info['env_files'] = list(run.env_files)
        env.update(run.env)
        if run.image is None:
            problems.append('the docker run command line names no image')
            return info, problems
        inner = (run.entrypoint or []) + run.command if run.entrypoint is not None else run.command
        image_entrypoint_args = run.entrypoint is None
    entry, args = locate_vllm(inner)
    if entry is None:
        if image_entrypoint_args:
            # Arguments for an image whose entry point runs vLLM (api_server or vllm serve): the entry
            # point itself is not on this command line.
            serve, more, raw = parse_serve_args(inner, ENTRY_UNKNOWN, env)
            if serve['model'] is None and not inner:
                problems.append('the command line passes no arguments to the image; its default command runs')
            _apply_speculators(serve, None)   # the path is inside the image: only a hub id is recognised
            info['serve'], info['speculative_raw'] = serve, raw
            problems.extend(more)
            return info, problems
        problems.append('no vLLM server (vllm serve, python -m vllm.entrypoints.openai.api_server) '
                        'found in the command line')
        return info, problems
    if run is None:
        info['runtime'] = 'native'
    serve, more, raw = parse_serve_args(args, entry, env)
    # A container's model path is inside the container: only a hub id is recognised there.
    _apply_speculators(serve, read_model_config if run is None else None)
    info['serve'], info['speculative_raw'] = serve, raw
    problems.extend(more)
    return info, problems
