# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' settings that their argument specs cannot express (private, standard library only).

Each role's ``meta/argument_specs.yml`` checks types; these are the ranges, the patterns and the allowed keys (RULES:
``serve``'s and ``speculative_decoding``'s). Each role checks them first (its ``preflight.yml``, the
``role_setting_problems`` filter) and fails, changing nothing, with one sentence per bad setting naming its value and
what is allowed.

Values come from inventories, ``-e`` and AWX surveys, so a number may arrive as a string (``"8"``); it is read as
the number it spells. Anything else that is not a finite number of the right kind is a problem: ``"nan"``,
``"inf"``, ``"1e9"`` for a count, ``True`` for a count, a string that spells no number.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re

_PATH = re.compile(r'/[A-Za-z0-9._/-]+\Z')
_FACT = re.compile(r'/[A-Za-z0-9._/-]+\.fact\Z')
_PROM = re.compile(r'/[A-Za-z0-9._/-]+\.prom\Z')
_DIGITS = re.compile(r'[0-9]{1,10}\Z')
ECHO = 80

#: jetson_spec_stage's keys: the model settings whose directory is staged before the change (speculative_stage).
STAGED_MODELS = ('draft_model', 'smaller_draft_model', 'eagle3_head')
#: The settings stage_problems reads (role_setting_problems checks them with the RULES).
STAGE_SETTINGS = ('jetson_spec_stage',) + tuple('jetson_spec_' + key for key in STAGED_MODELS)
_STAGE_SOURCE = re.compile(r'(https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/+-]*)?|/[A-Za-z0-9._/+-]+)\Z')
_STAGE_DEST = re.compile(r'/[A-Za-z0-9._/+-]+\Z')
#: The task files run around a change (jetson_spec_drain_tasks before it, jetson_spec_undrain_tasks after it): both
#: or neither; each empty or the absolute path of a task file on the controller.
HOOK_SETTINGS = ('jetson_spec_drain_tasks', 'jetson_spec_undrain_tasks')
_HOOK = re.compile(r'/[A-Za-z0-9._/+-]+\.ya?ml\Z')
#: The benchmark settings (jetson_spec_benchmark, _confirm_benchmark, _revert_benchmark) whose keys are checked.
BENCHMARK_SETTINGS = ('jetson_spec_benchmark', 'jetson_spec_confirm_benchmark', 'jetson_spec_revert_benchmark')


def _int(value):
    """The integer ``value`` spells (an int, or a string of decimal digits with an optional sign), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'[+-]?[0-9]{1,20}\Z', value.strip()):
        return int(value.strip())
    return None


def _float(value):
    """The finite number ``value`` spells (an int, a float or a numeric string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 40:
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _int_in(low, high=None):
    def check(value):
        number = _int(value)
        return number is not None and number >= low and (high is None or number <= high)
    return check


def _float_in(low, high):
    def check(value):
        number = _float(value)
        return number is not None and low <= number <= high
    return check


def _optional(check):
    return lambda value: value is None or check(value)


def _matches(pattern, empty_ok=False):
    return lambda value: isinstance(value, str) and ((empty_ok and value == '') or bool(pattern.match(value)))


def _baseline_max_age(value):
    return _int(value) is not None and bool(_DIGITS.match(str(_int(value))))


def _progress_interval(value):
    number = _int(value)
    return number is not None and (number == 0 or 1 <= number <= 3600) and str(value).strip().isdigit()


def _drop_caches(value):
    if isinstance(value, bool):
        return True
    return isinstance(value, str) and value.strip().lower() in ('auto', 'true', 'false', 'yes', 'no')


def _positive_share(value):
    number = _float(value)
    return number is not None and 0.0 < number <= 1.0


def _native_command(value):
    return (isinstance(value, list) and len(value) >= 1 and isinstance(value[0], str)
            and bool(re.match(r'/[^\s]+\Z', value[0])))


def _environment(value):
    return isinstance(value, dict) and all(isinstance(key, str) and re.match(r'[A-Za-z_][A-Za-z0-9_]{0,127}\Z', key)
                                           for key in value)


def managed_flags_in(args, managed_flags):
    """The flags of ``args`` (vllm_extra_args) that the roles set themselves (``--x=1`` and ``--x_y`` included)."""
    found = []
    for arg in args if isinstance(args, list) else []:
        flag = re.sub(r'=.*\Z', '', '%s' % arg, flags=re.S).replace('_', '-')
        if flag in managed_flags:
            found.append(flag)
    return found


def _phase_shift(value):
    return (isinstance(value, dict) and all(key in ('c1', 'c8') for key in value)
            and all(_float_in(0.0, 0.5)(share) for share in value.values()))


_SERVE_PATH = re.compile(r'/[A-Za-z0-9._/-]{0,200}\Z')

#: serve's settings: (setting, check, what is allowed), in the order the problems are said. vllm_extra_args is
#: checked against the managed flags (role_setting_problems).
SERVE_RULES = (
    ('vllm_model', _matches(re.compile(r'(/[A-Za-z0-9._+/-]+|[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?)\Z')),
     'a Hugging Face id (owner/name) or an absolute path, of letters, digits and ._+/-'),
    ('vllm_served_model_name', _matches(re.compile(r'[A-Za-z0-9._/:-]{0,200}\Z')),
     'letters, digits and ._/:- (or empty for the model)'),
    ('vllm_service_name', _matches(re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z')),
     'letters, digits and ._- (a unit and project name)'),
    ('vllm_compose_dir', _matches(_SERVE_PATH),
     'an absolute path of letters, digits and ._/- (the project directory and its override files are named after it)'),
    ('vllm_definition_backup_dir', _matches(_SERVE_PATH),
     'an absolute path of letters, digits and ._/- (where copies of a replaced unit or compose file are kept)'),
    ('vllm_definition_backups_keep', _int_in(1, 100), '1 to 100 copies of each replaced file'),
    ('vllm_host', _matches(re.compile(r'[A-Za-z0-9.:-]{1,253}\Z')), 'an IP address or host name'),
    ('vllm_port', _int_in(1, 65535), '1 to 65535'),
    ('vllm_gpu_memory_utilization', _positive_share,
     'a number above 0 and at most 1 (Jetson recipes use 0.75 to 0.85)'),
    ('vllm_max_model_len', _int_in(16, 10485760), '16 to 10485760 tokens'),
    ('vllm_startup_timeout', _int_in(30, 86400), '30 to 86400 seconds'),
    ('vllm_max_restarts', _int_in(0, 100), '0 to 100'),
    ('vllm_native_command', _native_command, 'a list whose first item is the executable\'s absolute path'),
    ('vllm_environment', _environment, 'shell-style variable names (secrets go in vllm_hf_token / vllm_api_key)'),
)

#: speculative_decoding's settings: (setting, check, what is allowed), in the order the problems are said.
RULES = (
    ('jetson_spec_expected_concurrency', _int_in(1, 100000), '1 to 100000'),
    ('jetson_spec_num_speculative_tokens', _int_in(0), '0 (the family default) or more (speculative_plan caps it)'),
    ('jetson_spec_max_startup_attempts', _int_in(1, 5), '1 to 5'),
    ('jetson_spec_guard_timeout', _int_in(60, 604800),
     '60 to 604800 seconds (more than a start-up plus the verification benchmark)'),
    ('jetson_spec_revert_min_ratio', _float_in(0.0, 1.0), '0 to 1'),
    ('jetson_spec_c8_tolerance', _float_in(0.0, 0.1),
     '0 to 0.1 (the loss at concurrency 8 tolerated before it counts as a regression; a loss of 10 % or more always '
     'reverts)'),
    ('jetson_spec_c8_margin', _float_in(0.0, 0.1),
     '0 to 0.1 (the loss at concurrency 8 the interval must rule out; a loss of 10 % or more always reverts)'),
    ('jetson_spec_max_ttft_increase', _optional(_float_in(0.0, 10.0)),
     'null (off) or 0 to 10 (the largest rise of the concurrency-1 TTFT p50, as a share)'),
    ('jetson_spec_baseline_max_age', _baseline_max_age, '0 (always measure the baseline again) to 9999999999 seconds'),
    ('jetson_spec_tune_max_steps', _int_in(0, 4), '0 (no tuning) to 4'),
    ('jetson_spec_tune_min_acceptance', _float_in(0.0, 1.0), '0 to 1'),
    ('jetson_spec_batch_aware_max_batch', _int_in(0, 1024), '0 (off) to 1024 requests at a time'),
    ('jetson_spec_benchmark_throttle', _int_in(0), '0 (no limit) or more'),
    ('jetson_spec_progress_interval', _progress_interval, '0 (in the foreground) or 1 to 3600 seconds'),
    ('jetson_spec_drop_caches', _drop_caches, 'auto, true or false'),
    ('jetson_spec_state_dir', _matches(_PATH), 'an absolute path of letters, digits and ._/-'),
    ('jetson_spec_fact_file', _matches(_FACT), 'an absolute path ending in .fact'),
    ('jetson_spec_metrics_file', _matches(_PROM, empty_ok=True), 'empty (no metrics) or an absolute path ending in .prom'),
    ('jetson_spec_phase_shift', _phase_shift,
     'a dictionary with c1 and c8, each a number from 0 to 0.5 (the relative SD of the host\'s shift between phases)'),
    ('jetson_spec_cohort_spread', _float_in(0.0, 0.5), '0 to 0.5 (a relative SD)'),
)


def _echo(value):
    """A setting's value for a message: JSON-quoted text, cut to ECHO characters (never a secret: no secret here)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > ECHO:
        text = text[:ECHO - 3] + '...'
    escaped = text.replace('\\', '\\\\').replace('"', '\\"')
    return '"%s"' % ''.join(char if 32 <= ord(char) != 127 else '\\u%04x' % ord(char) for char in escaped)


def role_setting_problems(settings, role, benchmark_keys=(), managed_flags=(), is_file=None):
    """One sentence per bad setting of ``settings`` (the ``role``'s variables by name), empty when all are good.

    ``role``: ``serve`` (SERVE_RULES, and ``vllm_extra_args`` must hold none of ``managed_flags``) or
    ``speculative_decoding`` (RULES, and each of BENCHMARK_SETTINGS must be a dictionary whose keys are among
    ``benchmark_keys``, the vllm_benchmark options the role passes on). Only the names ``settings`` holds are checked
    (the roles pass them all: ``_vllm_checked_settings``, ``_jetson_spec_checked_settings``). ``is_file``: a
    callable that says whether a path is a regular file on the controller (the drain and undrain task files), or
    None not to look.
    """
    if role not in ('serve', 'speculative_decoding'):
        raise ValueError('role is %s; allowed: serve, speculative_decoding' % _echo(role))
    if not isinstance(settings, dict):
        raise TypeError('the settings are %s, not a dictionary of the role\'s variables' % type(settings).__name__)
    problems = []
    for name, check, allowed in SERVE_RULES if role == 'serve' else RULES:
        if name in settings and not check(settings[name]):
            shown = settings[name]
            if name == 'vllm_environment' and isinstance(shown, dict):
                shown = list(shown)  # the names only: a value may be secret
            problems.append('%s is %s; allowed: %s.' % (name, _echo(shown), allowed))
    if role == 'serve':
        flags = [str(flag) for flag in managed_flags]
        if 'vllm_extra_args' in settings and managed_flags_in(settings['vllm_extra_args'], flags):
            problems.append('vllm_extra_args is %s; allowed: arguments other than the ones this collection sets (%s): '
                            'use their own variables (vllm_gpu_memory_utilization, vllm_port, ...; --speculative-config '
                            'is jetson_llm.vllm.speculative_decoding\'s).'
                            % (_echo(managed_flags_in(settings['vllm_extra_args'], flags)), ', '.join(flags)))
        return problems
    problems.extend(stage_problems(settings))
    problems.extend(hook_problems(settings, is_file))
    allowed_keys = [str(key) for key in benchmark_keys]
    for name in BENCHMARK_SETTINGS:
        if name not in settings:
            continue
        value = settings[name]
        keys = sorted(str(key) for key in value) if isinstance(value, dict) else None
        if keys is None or any(key not in allowed_keys for key in keys):
            problems.append('%s is %s; allowed: vllm_benchmark options %s.'
                            % (name, _echo(keys if keys is not None else value), ', '.join(allowed_keys)))
    return problems


def stage_problems(settings):
    """jetson_spec_stage: {model setting: source}. Each key is one of STAGED_MODELS, each source an http(s) URL
    without credentials or an absolute path, and the model setting it names is the absolute path staged into."""
    if 'jetson_spec_stage' not in settings:
        return []
    stage = settings['jetson_spec_stage']
    if not isinstance(stage, dict):
        return ['jetson_spec_stage is %s; allowed: a dictionary of %s -> source (an http:// or https:// URL of a '
                'mirror directory, or an absolute path on the host).' % (_echo(stage), ', '.join(STAGED_MODELS))]
    problems = []
    for key in sorted(stage, key=str):
        source = stage[key]
        if key not in STAGED_MODELS:
            problems.append('jetson_spec_stage has the key %s; allowed: %s.' % (_echo(key), ', '.join(STAGED_MODELS)))
            continue
        if not isinstance(source, str) or not _STAGE_SOURCE.match(source):
            shown = source
            if isinstance(source, str) and '@' in source:
                shown = '(a URL with credentials, not shown)'
            problems.append('jetson_spec_stage.%s is %s; allowed: an http:// or https:// URL of a mirror directory '
                            '(no credentials, no query: the token goes in jetson_spec_stage_token) or an absolute path '
                            'on the host, of letters, digits and ._~%%/+-.' % (key, _echo(shown)))
        dest = settings.get('jetson_spec_' + key)
        if 'jetson_spec_' + key in settings and not (isinstance(dest, str) and _STAGE_DEST.match(dest)):
            problems.append('jetson_spec_stage.%s stages into jetson_spec_%s, which is %s; allowed: the absolute path '
                            'the model is staged into and served from, of letters, digits and ._/+-.'
                            % (key, key, _echo(dest)))
    return problems


def hook_problems(settings, is_file=None):
    """jetson_spec_drain_tasks and jetson_spec_undrain_tasks: each empty or the absolute path of a task file (.yml,
    .yaml) that ``is_file`` finds on the controller; set together (a host taken out of service is put back)."""
    problems, given = [], {}
    for name in HOOK_SETTINGS:
        if name not in settings:
            continue
        value = settings[name]
        if value is None or value == '':
            given[name] = ''
        elif not isinstance(value, str) or not _HOOK.match(value) or '/../' in value + '/':
            problems.append('%s is %s; allowed: empty (no hook) or the absolute path of a task file on the controller '
                            '(.yml or .yaml), of letters, digits and ._/+-.' % (name, _echo(value)))
        elif is_file is not None and not is_file(value):
            problems.append('%s is %s; allowed: a task file that exists on the controller (no regular file is there).'
                            % (name, _echo(value)))
        else:
            given[name] = value
    if len(given) == len(HOOK_SETTINGS) and bool(given[HOOK_SETTINGS[0]]) != bool(given[HOOK_SETTINGS[1]]):
        problems.append('jetson_spec_drain_tasks is %s and jetson_spec_undrain_tasks is %s; allowed: both set or both '
                        'empty (a host taken out of service must be put back).'
                        % (_echo(given[HOOK_SETTINGS[0]]), _echo(given[HOOK_SETTINGS[1]])))
    return problems
