# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker Compose projects as Compose v2 reads them, and ``docker inspect`` / ``compose ps`` output.

The compose file is loaded by ``docker compose -f FILE config --format json --no-interpolate``
when Docker Compose v2 is available (live root only), else by PyYAML when importable, else as
JSON (a YAML subset). Variables (``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``,
``${VAR:?error}``, ``${VAR:+alt}``) are then interpolated by this module from the project's
``.env`` file, the same way on every path; ``$$`` is a literal ``$``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import os
import re
import shlex

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, load_yaml, loads
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files

try:
    import yaml
except ImportError:  # PyYAML is optional on the target
    yaml = None

COMPOSE_FILE_NAMES = ('compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml')
# Loaded after the compose file when no -f is given (Compose v2, the first that exists).
OVERRIDE_FILE_NAMES = ('compose.override.yaml', 'compose.override.yml', 'docker-compose.override.yaml',
                       'docker-compose.override.yml')
# The label Compose puts on every container: the files the project was created from, comma-separated.
CONFIG_FILES_LABEL = 'com.docker.compose.project.config_files'
WORKING_DIR_LABEL = 'com.docker.compose.project.working_dir'

_VARIABLE = re.compile(r'\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))')


class ComposeError(Exception):
    pass


def find_compose_file(root, project_src):
    """The compose file of ``project_src`` (Compose's name order), or None."""
    for name in COMPOSE_FILE_NAMES:
        path = project_src.rstrip('/') + '/' + name
        real = files.host_path(root, path)
        if real is not None and os.path.lexists(real):
            return path
    return None


def default_files(root, project_src):
    """The files ``docker compose`` reads in ``project_src`` without ``-f``: the compose file, then its override
    file when there is one ([] when there is no compose file)."""
    base = find_compose_file(root, project_src)
    if base is None:
        return []
    for name in OVERRIDE_FILE_NAMES:
        path = project_src.rstrip('/') + '/' + name
        real = files.host_path(root, path)
        if real is not None and os.path.lexists(real):
            return [base, path]
    return [base]


def label_files(container, project_src):
    """The compose files a container was created from (its Compose labels), when it belongs to ``project_src``;
    None when the labels do not say."""
    labels = ((container or {}).get('Config') or {}).get('Labels') or {}
    listed = labels.get(CONFIG_FILES_LABEL)
    working_dir = labels.get(WORKING_DIR_LABEL)
    if not isinstance(listed, str) or not listed or working_dir is None \
            or working_dir.rstrip('/') != project_src.rstrip('/'):
        return None
    paths = [item for item in listed.split(',') if item]
    return paths if paths and all(path.startswith('/') for path in paths) else None


def merge_compose(base, override):
    """``override`` merged into ``base`` as Compose merges ``-f`` files, for what this collection reads: mappings
    merge key by key, ``environment`` as a mapping, ``env_file`` entries append, anything else (``command``,
    ``entrypoint``, ``image``, other lists) is replaced."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    out = dict(base)
    for key, value in override.items():
        if key not in out:
            out[key] = value
        elif key == 'environment':
            merged = environment_dict(out[key])
            merged.update(environment_dict(value))
            out[key] = merged
        elif key == 'env_file':
            first = out[key] if isinstance(out[key], list) else [out[key]]
            more = value if isinstance(value, list) else [value]
            out[key] = first + [item for item in more if item not in first]
        elif key in ('command', 'entrypoint'):
            out[key] = value
        elif isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = merge_compose(out[key], value)
        else:
            out[key] = value
    return out


def load_compose_files(reads, run_compose_config=None):
    """Parse and merge the compose files of one project (``reads``: FileRead objects, in ``-f`` order); return
    (data, loader, problems). ``run_compose_config`` as in ``load_compose_text`` (for all the files at once)."""
    data, problems = _compose_config(run_compose_config)
    if data is not None:
        return data, 'docker compose config', problems
    data = None
    loader = None
    for read in reads:
        one, loader, more = load_compose_text(read.text, read.path)
        problems.extend(more)
        data = one if data is None else merge_compose(data, one)
    return data, loader, problems


def files_sha256(reads):
    """One digest of a project's files (path and bytes, in order; a missing file counts as empty)."""
    digest = hashlib.sha256()
    for read in reads:
        digest.update(read.path.encode('utf-8') + b'\0' + hashlib.sha256(read.data or b'').hexdigest().encode('ascii')
                      + b'\n')
    return digest.hexdigest()


def project_name(project_src, data=None):
    """Compose's project name: top-level ``name:`` or the directory name, normalised."""
    if isinstance(data, dict) and isinstance(data.get('name'), str) and data['name'] and '$' not in data['name']:
        return data['name']
    base = project_src.rstrip('/').rsplit('/', 1)[-1].lower()
    return re.sub(r'[^a-z0-9_-]', '', base) or 'default'


def _compose_config(run_compose_config, what=''):
    """(data, problems) from ``run_compose_config`` (None, or a callable giving (JSON text, None) or (None, error));
    data is None when it is not given, failed or printed no JSON."""
    if run_compose_config is None:
        return None, []
    output, error = run_compose_config()
    if output is None:
        return None, [error] if error else []
    try:
        return loads(output, 'the output of docker compose config', finite=False), []
    except InputError as exc:
        return None, ['docker compose config %sdid not print JSON that can be read (%s)' % (what, exc)]


def load_compose_text(text, path, run_compose_config=None):
    """Parse a compose file; return (data, loader, problems).

    ``run_compose_config``: a callable returning the JSON text of ``docker compose config`` for
    the file, or None when Compose is not available (then PyYAML, then JSON).
    """
    data, problems = _compose_config(run_compose_config, 'for %s ' % path)
    if data is not None:
        return data, 'docker compose config', problems
    if yaml is not None:
        try:
            return load_yaml(yaml, text, path), 'yaml', problems
        except InputError as exc:
            raise ComposeError('%s' % exc)
    try:
        return loads(text, path, finite=False), 'json', problems
    except InputError as exc:
        if exc.limit:
            raise ComposeError('%s' % exc)
        raise ComposeError('cannot parse %s: Docker Compose v2 is not available (or root is not /), PyYAML is '
                           'not installed and the file is not JSON; install python3-yaml or the Docker Compose '
                           'v2 plugin on the target' % path)


def interpolate(value, env, missing, errors):
    """Compose interpolation of one string."""
    def replace(match):
        text = match.group(0)
        if text == '$$':
            return '$'
        name = match.group(1) or match.group(4)
        operator, argument = match.group(2), match.group(3)
        current = env.get(name)
        if operator is None:
            if current is None:
                if name not in missing:
                    missing.append(name)
                return ''
            return current
        empty_counts = operator.startswith(':')
        unset = current is None or (empty_counts and current == '')
        kind = operator[-1]
        if kind == '-':
            return argument if unset else current
        if kind == '+':
            return '' if unset else argument
        if unset:  # '?'
            errors.append('variable %s is required: %s' % (name, argument or 'not set'))
            return ''
        return current
    return _VARIABLE.sub(replace, value)


def interpolate_tree(node, env, missing, errors):
    if isinstance(node, str):
        return interpolate(node, env, missing, errors)
    if isinstance(node, list):
        return [interpolate_tree(item, env, missing, errors) for item in node]
    if isinstance(node, dict):
        return dict((key, interpolate_tree(item, env, missing, errors)) for key, item in node.items())
    return node


def command_list(value, field):
    """``command:`` / ``entrypoint:`` as a list (a string is split like a shell would), or None."""
    if value is None:
        return None
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ComposeError('%s %r cannot be split into words: %s' % (field, value, exc))
    raise ComposeError('%s must be a list or a string, not %s' % (field, type(value).__name__))


def env_file_paths(value, project_src):
    """``env_file:`` (str, list of str, list of {path, required}) -> [(path, required)]."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        required = True
        if isinstance(item, dict):
            required = bool(item.get('required', True))
            item = item.get('path')
        if not isinstance(item, str) or not item:
            continue
        path = item if item.startswith('/') else project_src.rstrip('/') + '/' + (item[2:] if item.startswith('./') else item)
        out.append((path, required))
    return out


def environment_dict(value):
    """``environment:`` (mapping or list of NAME=value) -> dict (values internal only)."""
    out = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out[str(key)] = '' if item is None else str(item)
    elif isinstance(value, list):
        for item in value:
            name, sep, val = str(item).partition('=')
            if sep:
                out[name] = val
    return out


def service_config(data, service, project_src, root, problems):
    """The parts of ``services.<service>`` this module reads, or None when the service is absent."""
    services = data.get('services') if isinstance(data, dict) else None
    if not isinstance(services, dict) or service not in services:
        names = sorted(services) if isinstance(services, dict) else []
        problems.append('the compose file defines no service %r (services: %s)' % (service, ', '.join(names) or 'none'))
        return None
    spec = services[service] or {}
    if not isinstance(spec, dict):
        problems.append('services.%s is not a mapping' % service)
        return None
    env_files = env_file_paths(spec.get('env_file'), project_src)
    env = {}
    for path, required in env_files:
        read = files.read_regular(root, path)
        if read.data is None:
            if read.error:
                problems.append('env_file %s: %s' % (path, read.error))
            elif required:
                problems.append('env_file %s does not exist (docker compose refuses to start the service)' % path)
            continue
        env.update(dict(files.parse_env_file(read.text)))
    env.update(environment_dict(spec.get('environment')))
    return {
        'image': spec.get('image') if isinstance(spec.get('image'), str) else None,
        'command': command_list(spec.get('command'), 'services.%s.command' % service),
        'entrypoint': command_list(spec.get('entrypoint'), 'services.%s.entrypoint' % service),
        'env_files': [path for path, _required in env_files],
        'env': env,
        'network_mode': spec.get('network_mode'),
        'container_name': spec.get('container_name'),
    }


def dot_env(root, project_src):
    read = files.read_regular(root, project_src.rstrip('/') + '/.env')
    return dict(files.parse_env_file(read.text)) if read.data is not None else {}


# --------------------------------------------------------------------------------------------
# docker compose ps / docker inspect
# --------------------------------------------------------------------------------------------

def parse_compose_ps(text):
    """``docker compose ps --format json``: a JSON array (older v2) or one object per line (v2.21+)."""
    text = (text or '').strip()
    if not text:
        return []
    try:
        data = loads(text, 'docker compose ps', finite=False)
        return data if isinstance(data, list) else [data]
    except ValueError:
        pass
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(loads(line, 'docker compose ps', finite=False))
            except ValueError:
                continue
    return rows


def parse_docker_inspect(text):
    """``docker inspect ID`` output -> the first object, or None."""
    try:
        data = loads(text or '', 'docker inspect', finite=False)
    except ValueError:
        return None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return data[0]
    return None


def _timestamp(value):
    if not value or value.startswith('0001-01-01'):
        return None
    return value


def state_from_inspect(container):
    """The module's state dict from one ``docker inspect`` object (Env is never read)."""
    state = container.get('State') or {}
    status = state.get('Status')
    exit_code = state.get('ExitCode')
    if status == 'running':
        mapped = 'active'
    elif status == 'restarting':
        mapped = 'activating'
    elif status == 'dead' or (status == 'exited' and exit_code not in (0, None)):
        mapped = 'failed'
    elif status in ('exited', 'created', 'paused', 'removing'):
        mapped = 'inactive'
    else:
        mapped = 'unknown'
    pid = state.get('Pid')
    return {
        'active': mapped == 'active',
        'status': mapped,
        'main_pid': pid if isinstance(pid, int) and pid > 0 else None,
        'restarts': container.get('RestartCount') if isinstance(container.get('RestartCount'), int) else None,
        'since': _timestamp(state.get('StartedAt')),
        'need_daemon_reload': None,
        'container_id': container.get('Id'),
    }


def argv_from_inspect(container):
    """Config.Entrypoint + Config.Cmd: the container's command line."""
    config = container.get('Config') or {}
    entrypoint = config.get('Entrypoint') or []
    command = config.get('Cmd') or []
    if isinstance(entrypoint, str):
        entrypoint = [entrypoint]
    if isinstance(command, str):
        command = [command]
    return [str(item) for item in entrypoint] + [str(item) for item in command]
