# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What vLLM service is deployed on a host: the file on disk, the running process, and the drift.

``gather()`` is the whole job of the ``vllm_service_info`` module. Commands (``systemctl``,
``docker``) go through an injected ``run_command(argv) -> (rc, stdout, stderr)`` and ``which(name)``
so tests feed real captured outputs; with a root other than ``/`` nothing runs at all.

Secrets never leave this module: ``--api-key`` / token values are masked in every argv, the values
of ``Environment=``, env files and ``docker inspect`` ``Env`` are only used internally (variable
expansion, "is an API key set").
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import (
    InputError, check_name, check_path, end_of_options, loads)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay_compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import serve_args
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd

MANAGERS = ('systemd', 'compose', 'auto')
LIVE_ROOT = '/'
COMMAND_TIMEOUT = 30
DEFAULT_PROJECT_PARENT = '/opt/vllm'
COMPARED_KEYS = ('model', 'served_model_name', 'host', 'port', 'gpu_memory_utilization', 'max_model_len',
                 'speculative_config', 'api_key_set', 'extra_args')


class ServiceInfoError(Exception):
    """A problem the operator must fix before the module can answer (bad option, unreadable root)."""


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------

class Runner(object):
    """Runs commands on a live root with a timeout (coreutils ``timeout`` when present)."""

    def __init__(self, run_command, which, timeout=COMMAND_TIMEOUT):
        self._run = run_command
        self._which = which or (lambda name: None)
        self.timeout = timeout
        self._paths = {}
        self._compose = None

    def which(self, name):
        if name not in self._paths:
            self._paths[name] = self._which(name)
        return self._paths[name]

    def run(self, argv):
        """(rc, stdout, stderr); rc 124 means the timeout fired."""
        wrapper = self.which('timeout')
        full = ([wrapper, '-k', '5', str(self.timeout)] if wrapper else []) + list(argv)
        rc, out, err = self._run(full)
        return rc, out or '', err or ''

    def compose_available(self):
        """True when ``docker compose`` (Compose v2 CLI plugin) answers."""
        if self._compose is None:
            docker = self.which('docker')
            if not docker:
                self._compose = False
            else:
                rc, _out, _err = self.run([docker, 'compose', 'version'])
                self._compose = rc == 0
        return self._compose


def _short(text, limit=300):
    text = ' '.join((text or '').split())
    return text if len(text) <= limit else text[:limit] + '...'


def _failed(what, rc, err):
    if rc == 124:
        return '%s timed out after %d s' % (what, COMMAND_TIMEOUT)
    return '%s failed (rc=%s): %s' % (what, rc, _short(err) or 'no error output')


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------

def unknown_state(status='unknown'):
    return {'active': False, 'status': status, 'main_pid': None, 'restarts': None, 'since': None,
            'need_daemon_reload': None, 'container_id': None}


def _command_result(info):
    if info is None:
        return None
    return {'argv': info['argv'], 'serve': info['serve']}


def _fmt(value):
    return json.dumps(value, sort_keys=True)


def compare(configured, running):
    """Reasons why the configured command differs from the running one ([] when they agree)."""
    reasons = []
    if configured is None or running is None:
        return reasons
    if configured['image'] and running['image'] and configured['image'] != running['image']:
        reasons.append('image: file %s, running %s' % (configured['image'], running['image']))
    left, right = configured['serve'], running['serve']
    if left is None or right is None:
        if (left is None) != (right is None):
            reasons.append('the file %s a vLLM server command and the running process %s'
                           % ('has' if left else 'has no', 'runs one' if right else 'does not run one'))
        return reasons
    known = (serve_args.ENTRY_SERVE, serve_args.ENTRY_API_SERVER)
    if left['entry'] in known and right['entry'] in known and left['entry'] != right['entry']:
        reasons.append('entry point: file %s, running %s' % (left['entry'], right['entry']))
    for key in COMPARED_KEYS:
        if key == 'speculative_config':
            raw_left, raw_right = configured['speculative_raw'], running['speculative_raw']
            unparsed = (left[key] is None and raw_left is not None) or (right[key] is None and raw_right is not None)
            if unparsed:
                if raw_left != raw_right:
                    reasons.append('--speculative-config: file %s, running %s' % (raw_left, raw_right))
                continue
        if left[key] != right[key]:
            if key == 'api_key_set':
                reasons.append('API key: %s in the file, %s in the running process'
                               % ('set' if left[key] else 'not set', 'set' if right[key] else 'not set'))
            else:
                reasons.append('%s: file %s, running %s' % (key, _fmt(left[key]), _fmt(right[key])))
    return reasons


def _read_hostname(root):
    read = files.read_regular(root, '/etc/hostname', limit=4096)
    name = (read.text or '').strip().split('\n')[0].strip()
    return name or None


def _read_machine_id(root):
    read = files.read_regular(root, '/etc/machine-id', limit=4096)
    value = (read.text or '').strip()
    return value if len(value) == 32 else None


MAX_MODEL_CONFIG_BYTES = 4 * 1048576


def model_config_reader(root):
    """A ``read_model_config(path)`` for serve_args.analyse_command: the parsed ``config.json`` of a local model below
    ``root`` (a regular file, bounded, nested at most _safe.MAX_DEPTH), or None when it cannot be read."""
    def read(path):
        found = files.read_regular(root, path.rstrip('/') + '/config.json', limit=MAX_MODEL_CONFIG_BYTES)
        if found.data is None:
            return None
        try:
            config = loads(found.data, 'config.json', max_bytes=MAX_MODEL_CONFIG_BYTES, finite=False)
        except InputError:
            return None
        return config if isinstance(config, dict) else None
    return read


def _analyse(argv, warnings, where, image_entrypoint_args=False, env=None, root=None):
    info, problems = serve_args.analyse_command(argv, image_entrypoint_args=image_entrypoint_args, env=env,
                                                read_model_config=model_config_reader(root) if root else None)
    for problem in problems:
        warnings.append('%s: %s' % (where, problem))
    return info


def _has_api_key_env(env_list):
    for item in env_list or []:
        name, sep, value = str(item).partition('=')
        if name == 'VLLM_API_KEY' and sep and value:
            return True
    return False


# --------------------------------------------------------------------------------------------
# systemd
# --------------------------------------------------------------------------------------------

def systemctl_show(runner, unit, warnings):
    systemctl = runner.which('systemctl')
    if not systemctl:
        warnings.append('systemctl is not on the PATH: the state of %s is unknown' % unit)
        return None
    rc, out, err = runner.run(end_of_options([systemctl, 'show', '--no-pager', '-p', ','.join(systemd.SHOW_PROPERTIES)],
                                             [unit]))
    if rc != 0:
        warnings.append(_failed('systemctl show %s' % unit, rc, err) + ': the state is unknown')
        return None
    props = systemd.parse_systemctl_show(out)
    if 'ActiveState' not in props:
        warnings.append('systemctl show %s printed no ActiveState: the state is unknown' % unit)
        return None
    return props


def _container_id(runner, name, warnings):
    docker = runner.which('docker')
    if not docker or not name:
        return None
    rc, out, err = runner.run(end_of_options([docker, 'inspect', '--type', 'container'], [name]))
    if rc != 0:
        warnings.append(_failed('docker inspect %s' % name, rc, err))
        return None
    container = compose.parse_docker_inspect(out)
    return container.get('Id') if container else None


def gather_systemd(name, root, unit_path, runner, warnings, proc_root=LIVE_ROOT):
    unit = systemd.unit_name(name)
    live = runner is not None
    props = systemctl_show(runner, unit, warnings) if live else None
    fragment = (props or {}).get('FragmentPath') or None
    path = unit_path or fragment or systemd.find_unit_file(root, unit) or '/etc/systemd/system/' + unit
    read = files.read_regular(root, path)
    parsed = systemd.parse_unit(root, unit, path, hostname=_read_hostname(root),
                                machine_id=_read_machine_id(root), read=read)
    for problem in parsed['problems']:
        warnings.append('%s: %s' % (path, problem) if not problem.startswith(path) else problem)
    configured = None
    if parsed['argv'] is not None:
        configured = _analyse(parsed['argv'], warnings, path, env=parsed['env'], root=root)
    state = systemd.state_from_show(props) if props else unknown_state()
    running = None
    main_pid = state['main_pid']
    if live and main_pid:
        proc = files.read_regular(proc_root, '/proc/%s/cmdline' % main_pid, proc=True)
        argv = systemd.parse_proc_cmdline(proc.data)
        if argv:
            running = _analyse(argv, warnings, 'process %s' % main_pid, env=parsed['env'], root=root)
        else:
            warnings.append('the command line of process %s (MainPID of %s) cannot be read%s'
                            % (main_pid, unit, ': %s' % proc.error if proc.error else ''))
    if running is not None and running['runtime'] == 'container' and running['container_name']:
        state['container_id'] = _container_id(runner, running['container_name'], warnings)
    reasons = []
    if state['need_daemon_reload']:
        reasons.append('systemd reports NeedDaemonReload=yes: %s changed on disk since systemd loaded it '
                       '(run systemctl daemon-reload, then restart the service)' % path)
    if props and props.get('LoadState') == 'not-found' and read.exists:
        reasons.append('%s exists but systemd has not loaded %s (run systemctl daemon-reload)' % (path, unit))
    if running is not None and not read.exists:
        reasons.append('%s is running but its unit file %s does not exist any more' % (unit, path))
    env_files = list(parsed['env_files'])
    for info in (configured, running):
        if info:
            env_files.extend(p for p in info['env_files'] if p not in env_files)
    return {
        'name': systemd.unit_base(unit),
        'manager': 'systemd',
        'exists': read.exists,
        'file': read.info(),
        'env_files': env_files,
        'state': state,
    }, configured, running, reasons


# --------------------------------------------------------------------------------------------
# Docker Compose
# --------------------------------------------------------------------------------------------

def compose_config_runner(runner, project_src, paths):
    """A callable for ``_service_compose.load_compose_files``: ``docker compose config`` of ``paths`` as JSON,
    variables not interpolated (None when Compose v2 is not available)."""
    if runner is None or not runner.compose_available():
        return None

    def run_config():
        argv = [runner.which('docker'), 'compose', '--project-directory', project_src]
        for path in paths:
            argv.extend(['-f', path])
        rc, out, err = runner.run(argv + ['config', '--format', 'json', '--no-interpolate'])
        if rc != 0:
            return None, _failed('docker compose config', rc, err) + '; reading the files directly instead'
        return out, None
    return run_config


def find_container(runner, project_src, paths, project, service, warnings):
    """The container id of the service, via compose ps (or docker ps labels); (id, found_state). ``project``: the
    project name (None: Compose derives it from the files; the labels fall back to the directory's name)."""
    docker = runner.which('docker')
    if not docker:
        warnings.append('docker is not on the PATH: the state of compose service %s is unknown' % service)
        return None, False
    if runner.compose_available() and paths:
        argv = [docker, 'compose', '--project-directory', project_src]
        for path in paths:
            argv.extend(['-f', path])
        rc, out, err = runner.run(argv + (['-p', project] if project else []) + ['ps', '--all', '--format', 'json'])
        if rc != 0:
            warnings.append(_failed('docker compose ps', rc, err) + ': the state is unknown')
            return None, False
        rows = [row for row in compose.parse_compose_ps(out) if row.get('Service') == service]
        return (rows[0].get('ID') if rows else None), True
    rc, out, err = runner.run([docker, 'ps', '--all', '--no-trunc', '--format', '{{.ID}}',
                               '--filter', 'label=com.docker.compose.project=%s'
                               % (project or compose.project_name(project_src)),
                               '--filter', 'label=com.docker.compose.service=%s' % service])
    if rc != 0:
        warnings.append(_failed('docker ps', rc, err) + ': the state is unknown')
        return None, False
    ids = [line.strip() for line in out.splitlines() if line.strip()]
    return (ids[0] if ids else None), True


def _read_compose(root, project_src, paths, runner, problems):
    """The merged, interpolated compose data of ``paths`` (or None), and the reads."""
    reads = [files.read_regular(root, path) for path in paths]
    for read in reads:
        if read.error:
            problems.append(read.error)
    readable = [read for read in reads if read.data is not None]
    if not readable or len(readable) != len(reads):
        return None, reads
    try:
        data, _loader, more = compose.load_compose_files(readable, compose_config_runner(runner, project_src, paths))
    except compose.ComposeError as exc:
        raise ServiceInfoError(str(exc))
    problems.extend(more)
    missing, errors = [], []
    data = compose.interpolate_tree(data, compose.dot_env(root, project_src), missing, errors)
    problems.extend(errors)
    for variable in missing:
        problems.append('variable %s is not set in %s/.env (compose may take it from the shell that runs '
                        'it); read as empty' % (variable, project_src))
    return data, reads


def compose_project_files(root, project_src, container=None):
    """The project's own compose files; and a warning, or None.

    What ``docker compose`` finds without ``-f`` (the compose file, then its override file), unless the running
    container was created from other files (its Compose labels name a file that is not among them: the project is run
    with ``-f``): then those, when they still exist. An override file added since the container was created is part of
    the project (Compose reads it on the next ``up``). This collection's override files are never among them.
    """
    found = compose.default_files(root, project_src)
    labelled = compose.label_files(container, project_src)
    if labelled is None:
        return found, None
    labelled = [path for path in labelled if not overlay_compose.is_overlay(path)]
    if set(labelled) <= set(found):
        return found, None
    exist = all(files.read_regular(root, path).data is not None for path in labelled)
    if labelled and exist:
        return labelled, None
    return found, ('the running container was created from %s, which %s: reading %s'
                   % (', '.join(labelled) or 'no file', 'do not all exist any more' if labelled else 'is nothing',
                      ', '.join(found) or 'nothing'))


def gather_compose(name, root, project_src, runner, warnings):
    project_src = (project_src or DEFAULT_PROJECT_PARENT + '/' + name).rstrip('/') or '/'
    base_files = compose.default_files(root, project_src)
    problems = []
    data, reads = _read_compose(root, project_src, base_files, runner, problems) if base_files else (None, [])
    project = compose.project_name(project_src, data)
    container = None
    state = unknown_state()
    present = {}
    if runner is not None:
        # Only files that read as regular files go to docker compose (a FIFO would hold it until its timeout).
        readable = [read.path for read in reads if read.data is not None]
        container_id, answered = find_container(runner, project_src, readable if readable == base_files else [],
                                                project, name, warnings)
        if answered and container_id is None:
            state = unknown_state('inactive' if base_files else 'not-found')
        elif container_id:
            rc, out, err = runner.run(end_of_options([runner.which('docker'), 'inspect', '--type', 'container'],
                                                     [container_id]))
            container = compose.parse_docker_inspect(out) if rc == 0 else None
            if container is None:
                warnings.append(_failed('docker inspect %s' % container_id, rc, err) + ': the state is unknown')
            else:
                state = compose.state_from_inspect(container)
        labelled, problem = compose_project_files(root, project_src, container)
        if problem:
            warnings.append(problem)
        if labelled != base_files:
            base_files = labelled
            data, reads = _read_compose(root, project_src, base_files, runner, problems)
    # This collection's override files (the speculative change) are part of what Compose runs when they exist.
    present = dict((key, read.path) for key, read in overlay_compose.read_overlay(root, project_src).items()
                   if read.data is not None)
    paths = overlay_compose.compose_files(base_files, present)
    if paths != base_files and data is not None:
        data, reads = _read_compose(root, project_src, paths, runner, problems)
    service = compose.service_config(data, name, project_src, root, problems) if data is not None else None
    main = reads[0] if reads else files.read_regular(root, project_src + '/compose.yaml')
    for problem in problems:
        warnings.append('%s: %s' % (main.path, problem) if not problem.startswith('/') else problem)
    configured = None
    if service is not None:
        if service['entrypoint'] is not None:
            argv = service['entrypoint'] + (service['command'] or [])
            configured = _analyse(argv, warnings, main.path, env=service['env'])
        else:
            configured = _analyse(service['command'] or [], warnings, main.path, image_entrypoint_args=True,
                                  env=service['env'])
        configured['runtime'] = 'container'
        configured['image'] = service['image']
    running = None
    if container is not None and state['status'] in ('active', 'activating'):
        # the container's own environment says whether it got an API key (only that is read)
        env = {'VLLM_API_KEY': 'set'} if _has_api_key_env((container.get('Config') or {}).get('Env')) else {}
        running = _analyse(compose.argv_from_inspect(container), warnings,
                           'container %s' % (state['container_id'] or '?')[:12], env=env)
        running['runtime'] = 'container'
        running['image'] = (container.get('Config') or {}).get('Image')
    exists = service is not None
    return {
        'name': name,
        'manager': 'compose',
        'exists': exists,
        'file': main.info(),
        'env_files': list(service['env_files']) if service else [],
        'state': state,
        'compose': {'project_dir': project_src, 'project': project, 'base_files': base_files,
                    'overlay': present, 'files': paths},
    }, configured, running, []


# --------------------------------------------------------------------------------------------
# The module's job
# --------------------------------------------------------------------------------------------

def choose_manager(name, manager, root, project_src, unit_path, runner, warnings):
    if manager != 'auto':
        return manager
    if unit_path or name.endswith('.service'):
        return 'systemd'
    unit = systemd.unit_name(name)
    if systemd.find_unit_file(root, unit):
        return 'systemd'
    if compose.find_compose_file(root, project_src or DEFAULT_PROJECT_PARENT + '/' + name):
        return 'compose'
    if runner is not None and runner.which('systemctl'):
        rc, out, _err = runner.run(end_of_options([runner.which('systemctl'), 'show', '--no-pager', '-p',
                                                   'LoadState,FragmentPath'], [unit]))
        props = systemd.parse_systemctl_show(out) if rc == 0 else {}
        if props.get('LoadState') not in (None, '', 'not-found'):
            return 'systemd'
    warnings.append('neither a systemd unit %s nor a compose file in %s was found: reporting it as a systemd unit '
                    'that does not exist' % (unit, project_src or DEFAULT_PROJECT_PARENT + '/' + name))
    return 'systemd'


def validate(name, manager, root, project_src=None, unit_path=None):
    if not isinstance(name, str) or not name.strip():
        raise ServiceInfoError('name must be a systemd unit name (vllm or vllm.service) or a compose service name, '
                               'not %r' % (name,))
    if '/' in name or '\0' in name or name.strip() != name:
        raise ServiceInfoError('name %r is not a unit or compose service name: give the name only (for example '
                               'vllm), and the path with unit_path or project_src' % (name,))
    try:
        check_name(name, 'name', 'a unit or compose service name')
    except InputError as exc:
        raise ServiceInfoError('%s' % exc)
    for option, value in (('project_src', project_src), ('unit_path', unit_path)):
        if value is not None and not value.startswith('/'):
            raise ServiceInfoError('%s %r is not an absolute path: give the path as the target sees it (for example '
                                   '%s)' % (option, value, '/opt/vllm/vllm' if option == 'project_src'
                                            else '/etc/systemd/system/vllm.service'))
        try:
            check_path(value, option, allow_none=True)
        except InputError as exc:
            raise ServiceInfoError('%s' % exc)
    if manager not in MANAGERS:
        raise ServiceInfoError('manager %r is not one of %s' % (manager, ', '.join(MANAGERS)))
    if not os.path.isdir(root):
        raise ServiceInfoError('root %s %s: give / for this host, or the directory holding an offline root '
                               'filesystem' % (root, 'is not a directory' if os.path.exists(root) else 'does not exist'))


def gather(name, manager='auto', project_src=None, unit_path=None, root=LIVE_ROOT, run_command=None, which=None,
           timeout=COMMAND_TIMEOUT, live=None, proc_root=LIVE_ROOT):
    """Return (service, warnings). Raises ServiceInfoError for bad options.

    Commands run (through ``run_command``) only on a live host: ``root`` is ``/``. ``live`` and
    ``proc_root`` exist for tests, which read fixture files with captured command outputs.
    """
    validate(name, manager, root, project_src, unit_path)
    if live is None:
        live = os.path.realpath(root).rstrip('/') == ''
    runner = Runner(run_command, which, timeout) if live and run_command is not None else None
    warnings = []
    chosen = choose_manager(name, manager, root, project_src, unit_path, runner, warnings)
    if chosen == 'systemd':
        service, configured, running, reasons = gather_systemd(name, root, unit_path, runner, warnings, proc_root)
    else:
        if name.endswith('.service'):
            raise ServiceInfoError('name %r ends with .service, which is a systemd unit; a compose service name '
                                   'has no suffix' % name)
        service, configured, running, reasons = gather_compose(name, root, project_src, runner, warnings)
    reasons = reasons + compare(configured, running)
    source = running if running is not None else configured
    service.update({
        'runtime': (source or {}).get('runtime') or 'unknown',
        'image': (running or {}).get('image') or (configured or {}).get('image'),
        'configured': _command_result(configured),
        'running': _command_result(running),
        'serve': source['serve'] if source else None,
        'drift': bool(reasons),
        'drift_reasons': reasons,
    })
    return service, warnings
