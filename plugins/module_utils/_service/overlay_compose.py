# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative change of a Docker Compose service as an override file of the collection's own.

The project's compose files are never written. The candidate is the service as Compose reads it from those files
(the baseline), with exactly two flags appended to its ``command:``: ``--gpu-memory-utilization`` (lowered) and
``--speculative-config``. Compose replaces ``command:`` when a later ``-f`` file sets it, and vLLM's argument
parser keeps the last value of a flag, so the override is the baseline's command plus the two flags.

Where it lives: two files in the project directory, named after no Compose default (so ``docker compose`` only
reads them when they are named with ``-f``):
  - the candidate, unverified: CANDIDATE_NAME. A container keeps the configuration it was created with across a
    reboot (restart policies), so a boot-time guard of the role drops an unverified candidate and recreates the
    service without it;
  - once the verdict keeps it: COMMITTED_NAME.
Every ``docker compose`` call of the collection names the project's own files, then the kept override, then the
candidate (which wins: K tuning tries K + 1 as a candidate while the best so far stays kept).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_path, loads
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import compose
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.overlay import (
    OverlayError, flags, has_secret, vllm_reads)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command, mask_argv

COMMITTED_NAME = 'jetson-llm-speculative-1-kept.yaml'
CANDIDATE_NAME = 'jetson-llm-speculative-2-candidate.yaml'
NAMES = (COMMITTED_NAME, CANDIDATE_NAME)
HEADER = '# Managed by jetson_llm.vllm.speculative_decoding: '


def paths(project_src):
    """{'candidate': path, 'committed': path} of the overlay of the project in ``project_src``."""
    project_src = checked_project(project_src)
    return {'candidate': '%s/%s' % (project_src, CANDIDATE_NAME),
            'committed': '%s/%s' % (project_src, COMMITTED_NAME)}


def checked_project(project_src):
    """``project_src`` without a trailing slash; OverlayError when it is not a plain absolute path."""
    try:
        check_path(project_src, 'project_src')
    except InputError as exc:
        raise OverlayError('%s' % exc)
    return project_src.rstrip('/') or '/'


def is_overlay(path):
    """Whether ``path`` is one of this collection's override files."""
    return os.path.basename(path or '') in NAMES


def escape(word):
    """``word`` as a compose value that interpolates to itself (``$`` is written ``$$``)."""
    return word.replace('$', '$$')


def service_argv(spec, name):
    """The command line a compose service runs ([entrypoint] + command), and whether it is only the arguments of
    the image's own entry point; (argv, image_entrypoint_args). ComposeError for a bad command/entrypoint."""
    entrypoint = compose.command_list(spec.get('entrypoint'), 'services.%s.entrypoint' % name)
    command = compose.command_list(spec.get('command'), 'services.%s.command' % name) or []
    if entrypoint is not None:
        return entrypoint + command, False
    return command, True


def read_baseline(root, project_src, name, base_files, run_compose_config=None):
    """The service as Compose reads it from the project's own files (never this collection's override).

    ``base_files``: the project's compose files, in ``-f`` order. ``run_compose_config``: a callable returning
    ``docker compose ... config --format json --no-interpolate`` for them (None: PyYAML or JSON). Returns a dict:
    files (FileRead list), raw (the service as written, variables not interpolated), env (the project's .env),
    argv and serve (as vLLM reads the interpolated command line), image_entrypoint_args, sha256 (the files and
    .env), problems. ``raw`` is None when the service cannot be read (``problems`` says why).
    """
    project_src = checked_project(project_src)
    reads = [files.read_regular(root, path) for path in base_files]
    env_read = files.read_regular(root, project_src + '/.env')
    out = {'files': reads, 'raw': None, 'env': {}, 'argv': None, 'serve': None, 'image_entrypoint_args': False,
           'sha256': None, 'problems': []}
    if not reads or any(read.data is None for read in reads):
        missing = [read.error or '%s does not exist' % read.path for read in reads if read.data is None]
        out['problems'].append('; '.join(missing) if missing else 'no compose file in %s' % project_src)
        return out
    out['sha256'] = compose.files_sha256(reads + ([env_read] if env_read.data is not None else []))
    env = dict(files.parse_env_file(env_read.text)) if env_read.data is not None else {}
    out['env'] = env
    try:
        data, _loader, problems = compose.load_compose_files(reads, run_compose_config)
    except compose.ComposeError as exc:
        out['problems'].append(str(exc))
        return out
    out['problems'].extend(problems)
    services = data.get('services') if isinstance(data, dict) else None
    raw = services.get(name) if isinstance(services, dict) else None
    if not isinstance(raw, dict):
        out['problems'].append('the compose files define no service %r' % name)
        return out
    out['raw'] = raw
    missing, errors = [], []
    spec = compose.interpolate_tree(raw, env, missing, errors)
    out['problems'].extend(errors)
    service = compose.service_config({'services': {name: spec}}, name, project_src, root, out['problems'])
    try:
        argv, image_args = service_argv(spec, name)
    except compose.ComposeError as exc:
        out['problems'].append(str(exc))
        return out
    info, problems = analyse_command(argv, image_entrypoint_args=image_args,
                                     env=dict(env, **((service or {}).get('env') or {})))
    out['problems'].extend(problems)
    out.update(argv=argv, serve=info.get('serve'), image_entrypoint_args=image_args)
    return out


def render(name, baseline, speculative_config, gpu_memory_utilization):
    """The override's text for the service ``name`` of ``baseline`` (read_baseline). Raises OverlayError.

    Returns (text, argv, secret): argv is the command line Compose will run, checked here to be the baseline's
    with the two flags at its end and read by vLLM's parser model as the wanted configuration; secret says
    whether the file holds a secret value (it is then root-only).
    """
    raw = baseline.get('raw')
    if raw is None or baseline.get('argv') is None:
        raise OverlayError('compose service %s cannot be read (%s): the speculative override needs it'
                           % (name, '; '.join(baseline.get('problems') or []) or 'no compose file'))
    try:
        raw_command = compose.command_list(raw.get('command'), 'services.%s.command' % name)
        raw_entrypoint = compose.command_list(raw.get('entrypoint'), 'services.%s.entrypoint' % name)
    except compose.ComposeError as exc:  # pragma: no cover - read_baseline parsed it
        raise OverlayError(str(exc))
    if raw_command is None and raw_entrypoint is None:
        raise OverlayError(
            'compose service %s sets neither command: nor entrypoint:, so it runs the image\'s own default command, '
            'which no compose file shows: the speculative override cannot append to it. Write the vLLM arguments '
            'in its command: (a list), then run again.' % name)
    added = flags(speculative_config, gpu_memory_utilization)
    command = (raw_command or []) + [escape(word) for word in added]
    spec = dict(raw, command=command)
    missing, errors = [], []
    interpolated = compose.interpolate_tree(spec, baseline.get('env') or {}, missing, errors)
    argv, image_args = service_argv(interpolated, name)
    if argv != list(baseline['argv']) + added:
        raise OverlayError('appending the two flags to the command of compose service %s does not give its command '
                           'line plus the two flags: not changed' % name)
    if not vllm_reads(argv, speculative_config, gpu_memory_utilization, image_entrypoint_args=image_args,
                      env=baseline.get('env') or {}):
        raise OverlayError(
            'the command of compose service %s does not end with the vLLM server\'s own arguments (%s), so flags '
            'appended to it would not reach vLLM: the speculative override cannot be built. Run vllm serve (or the '
            'image\'s vLLM entry point) directly, not through a shell or a script.'
            % (name, ' '.join(mask_argv(baseline['argv']))[:300]))
    secret = has_secret((raw_entrypoint or []) + (raw_command or []))
    body = json.dumps({'services': {name: {'command': command}}}, indent=2, sort_keys=True)
    lines = [
        HEADER + 'the speculative change of compose service %s.' % name,
        '# Its command is the service\'s own (the project\'s compose files) plus two flags:',
        '#   %s %s (lowered) and %s (vLLM keeps the last value of a flag).' % tuple(added[0:2] + added[2:3]),
        '# %s is a candidate (dropped at boot until kept); %s is kept.' % (CANDIDATE_NAME, COMMITTED_NAME),
        '# Compose reads it only when named: docker compose -f <the project\'s files> -f THIS_FILE up -d.',
        '# Remove it and recreate the service without it to go back to the baseline.',
        body,
        '',
    ]
    return '\n'.join(lines), argv, secret


def redact(text):
    """The override's text with secret option values masked (for diffs and messages)."""
    start = text.find('{')
    if start < 0:
        return text
    try:
        data = loads(text[start:], 'the override', finite=False)
        for spec in (data.get('services') or {}).values():
            if isinstance(spec.get('command'), list):
                spec['command'] = mask_argv([str(word) for word in spec['command']])
        return text[:start] + json.dumps(data, indent=2, sort_keys=True) + '\n'
    except (ValueError, AttributeError, TypeError):
        return text[:start] + '<not shown>\n'


def read_overlay(root, project_src):
    """{'candidate': FileRead, 'committed': FileRead} of the project's overlay."""
    where = paths(project_src)
    return dict((key, files.read_regular(root, path)) for key, path in where.items())


def compose_files(base_files, present):
    """The ``-f`` list: the project's files, then the kept override, then the candidate (those that exist)."""
    return list(base_files) + [present[key] for key in ('committed', 'candidate') if present.get(key)]
