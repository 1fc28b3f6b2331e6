# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative change as a systemd drop-in of the collection's own (the overlay).

The operator's unit and drop-ins are never written. The candidate is the service as systemd resolves it
without the overlay (the baseline), with exactly two flags appended to its effective ExecStart=:
``--gpu-memory-utilization`` (lowered) and ``--speculative-config``. vLLM's argument parser keeps the last
value of a flag, so both win over the same flags earlier on the line.

Where it lives:
  - the candidate, unverified: /run/systemd/system/UNIT.d/CANDIDATE_NAME (volatile: a reboot mid-change
    comes back without it, on the baseline);
  - once the verdict keeps it: /etc/systemd/system/UNIT.d/COMMITTED_NAME.
systemd applies drop-ins in file-name order across /etc, /run and /usr/lib (of two files with the same name,
the one in /etc wins, so the two files have different names). Both names sort after every usual drop-in name
(``override.conf`` of ``systemctl edit``, ``50-*.conf``), and the candidate's after the committed one's, so
the candidate's ExecStart= reset is applied last: K tuning tries K + 1 as a candidate while the best so far
stays committed, and removing the candidate goes back to it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, check_name, dumps
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import files
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import systemd
from ansible_collections.jetson_llm.vllm.plugins.module_utils._service.serve_args import analyse_command, mask_argv

COMMITTED_NAME = 'zz-jetson-llm-speculative-1-kept.conf'
CANDIDATE_NAME = 'zz-jetson-llm-speculative-2-candidate.conf'
NAMES = (COMMITTED_NAME, CANDIDATE_NAME)
CANDIDATE_DIR = '/run/systemd/system'
COMMITTED_DIR = '/etc/systemd/system'
HEADER = '# Managed by jetson_llm.vllm.speculative_decoding: '


class OverlayError(Exception):
    """The overlay cannot be built for this unit (the message says why and what to do)."""


def checked_unit(name):
    """``name`` as a service unit name ('vllm' -> 'vllm.service'); OverlayError for anything the collection's name
    rule refuses (a slash, a control character, a leading dot: the overlay's path is built from it; a leading dash:
    the name is an operand of systemctl)."""
    try:
        check_name(name, 'name', 'a systemd service name')
    except InputError as exc:
        raise OverlayError('%s' % exc)
    return systemd.unit_name(name)


def paths(unit):
    """{'candidate': path under /run, 'committed': path under /etc} of ``unit``'s overlay."""
    unit = checked_unit(unit)
    return {'candidate': '%s/%s.d/%s' % (CANDIDATE_DIR, unit, CANDIDATE_NAME),
            'committed': '%s/%s.d/%s' % (COMMITTED_DIR, unit, COMMITTED_NAME)}


def exec_quote(word, expand_variables=True):
    """``word`` as one ExecStart= word: double-quoted, with \\, ", % (and $ when variables expand) escaped."""
    escaped = word.replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%')
    if expand_variables:
        escaped = escaped.replace('$', '$$')
    return '"%s"' % escaped


def format_utilisation(value):
    """0.85 as '0.85' (never 0.8500000000000001)."""
    return repr(round(float(value), 4))


def flags(speculative_config, gpu_memory_utilization):
    """The two flags the overlay appends."""
    try:
        config = dumps(speculative_config, 'speculative_config', sort_keys=True, separators=(',', ':'))
    except InputError as exc:
        raise OverlayError('%s' % exc)
    return ['--gpu-memory-utilization', format_utilisation(gpu_memory_utilization), '--speculative-config', config]


def baseline_sha256(sources):
    """One digest of the baseline: every file systemd reads for it (path and bytes), in order."""
    digest = hashlib.sha256()
    for path, data in sources:
        digest.update(path.encode('utf-8') + b'\0' + hashlib.sha256(data or b'').hexdigest().encode('ascii') + b'\n')
    return digest.hexdigest()


def read_baseline(root, unit, path, hostname=None, machine_id=None):
    """The unit and its drop-ins without the overlay (parse_unit's dict, plus 'sha256')."""
    parsed = systemd.parse_unit(root, systemd.unit_name(unit), path, hostname=hostname, machine_id=machine_id,
                                exclude=NAMES)
    parsed['sha256'] = baseline_sha256(parsed['sources']) if parsed['file'].data is not None else None
    return parsed


_VARIABLE_ONLY = re.compile(r'^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)\Z')


def has_secret(words):
    """Whether ``words`` (as written, before $VAR expansion) hold a secret value; a $VAR reference is none."""
    for word, masked in zip(words, mask_argv(words)):
        if word != masked and not _VARIABLE_ONLY.match(word.split('=', 1)[-1]):
            return True
    return False


def vllm_reads(argv, speculative_config, gpu_memory_utilization, **analyse):
    """Whether vLLM's argument parser (our model of it) reads exactly these two values from ``argv``: the check that
    flags appended to a command line reach vLLM (not a shell or a script in front of it)."""
    info, _problems = analyse_command(argv, **analyse)
    serve = info.get('serve') or {}
    return serve.get('speculative_config') == speculative_config and serve.get('gpu_memory_utilization') is not None \
        and round(float(serve['gpu_memory_utilization']), 4) == round(float(gpu_memory_utilization), 4)


def render(unit, parsed, speculative_config, gpu_memory_utilization, hostname=None, machine_id=None):
    """The overlay's text for the baseline ``parsed`` (read_baseline). Raises OverlayError.

    Returns (text, argv, secret): argv is the command line systemd will run, checked here to be the
    baseline's with the two flags at its end and read by vLLM's parser model as the wanted configuration;
    secret says whether it holds a secret value (the file is then root-only).
    """
    unit = systemd.unit_name(unit)
    raw = parsed.get('exec_start_raw')
    if parsed.get('argv') is None or raw is None:
        raise OverlayError('%s has no ExecStart= that can be read (%s): the speculative overlay needs one'
                           % (unit, '; '.join(parsed.get('problems') or []) or 'no unit file'))
    prefixes = parsed.get('prefixes') or ''
    added = flags(speculative_config, gpu_memory_utilization)
    line = raw.rstrip(' \t') + ' ' + ' '.join(exec_quote(word, ':' not in prefixes) for word in added)
    table = systemd.specifier_table(unit, fragment_path=parsed['file'].path, hostname=hostname,
                                    machine_id=machine_id)
    try:
        argv, _prefixes, _missing = systemd.exec_words(line, table, parsed.get('env') or {}, [])
    except systemd.UnitSyntaxError as exc:  # pragma: no cover - the baseline line parsed, the flags are quoted
        raise OverlayError('the speculative ExecStart= of %s cannot be parsed: %s' % (unit, exc))
    if argv != list(parsed['argv']) + added:
        raise OverlayError('appending the two flags to the ExecStart= of %s does not give its command line plus '
                           'the two flags (a trailing backslash or an open quote?): not changed' % unit)
    if not vllm_reads(argv, speculative_config, gpu_memory_utilization, env=parsed.get('env') or {}):
        raise OverlayError(
            'the ExecStart= of %s does not end with the vLLM server\'s own arguments (%s), so flags appended to it '
            'would not reach vLLM: the speculative overlay cannot be built. Run vllm serve (or docker run IMAGE '
            'vllm serve ...) directly in ExecStart=, not through a shell or a script.'
            % (unit, ' '.join(mask_argv(parsed['argv']))[:300]))
    # A secret written literally on the line (not one that $VAR brings in from a root-only EnvironmentFile=).
    try:
        secret = has_secret(systemd.split_words(line))
    except systemd.UnitSyntaxError:  # pragma: no cover - parsed above
        secret = True
    lines = [
        HEADER + 'the speculative change of %s.' % unit,
        '# Its ExecStart= is the service\'s own (the unit and its other drop-ins) plus two flags:',
        '#   %s %s (lowered) and %s (vLLM keeps the last value of a flag).' % tuple(added[0:2] + added[2:3]),
        '# Under %s it is a candidate (a reboot drops it); under %s it is kept.' % (CANDIDATE_DIR, COMMITTED_DIR),
        '# Remove this file, run systemctl daemon-reload and restart %s to go back to the baseline;' % unit,
        '# after an edit of the unit, the next run of the role re-verifies on the new baseline.',
        '# Until then this file resets ExecStart=: an edit of the unit or another drop-in does not run; remove',
        '# this file (and daemon-reload, restart) to run it at once (docs/troubleshooting.md).',
        '[Service]',
        'ExecStart=',
        'ExecStart=' + line,
        '',
    ]
    return '\n'.join(lines), argv, secret


def redact(text):
    """The overlay's text with secret option values masked (for diffs and messages)."""
    out = []
    for line in text.split('\n'):
        if line.startswith('ExecStart=') and len(line) > len('ExecStart='):
            try:
                words = systemd.split_words(line[len('ExecStart='):])
            except systemd.UnitSyntaxError:
                out.append('ExecStart=<not shown>')
                continue
            masked = mask_argv(words)
            out.append(line if masked == words else 'ExecStart=' + ' '.join(masked))
        else:
            out.append(line)
    return '\n'.join(out)


def read_overlay(root, unit):
    """{'candidate': FileRead, 'committed': FileRead} of ``unit``'s overlay."""
    where = paths(unit)
    return dict((key, files.read_regular(root, path)) for key, path in where.items())
