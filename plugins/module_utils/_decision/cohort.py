# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cohorts: hosts whose verification would measure the same thing (private, standard library only).

A fleet of identical Jetsons (the same module, JetPack, image and model in a factory or a store chain) needs one
verification, not one per host. ``cohort()`` is the one definition of "identical": two hosts share a cohort exactly
when every part below is equal, so a verdict measured on one of them (its canary) says what it would say on the
others, up to the host-to-host spread a confirmation measures.

The parts, each a dictionary (a null value counts as absent: a host that cannot read a value and one whose facts
do not carry it are alike):

``device``
    the Jetson module (``variant``), its memory in GiB (rounded: kernels reserve a little differently), the
    nvpmodel power mode and whether ``jetson_clocks`` locked the clocks;
``software``
    L4T, JetPack, the vLLM version, the runtime and the image (its digest when pinned) or native command;
``service``
    what vLLM is asked to serve, from its parsed command line (``serve_args``): the model (and its revision or the
    digest of its local ``config.json`` when known), ``--max-model-len``, ``--gpu-memory-utilization``, the entry
    point and every other argument, **minus the host-specific ones** (``HOST_SPECIFIC``: the port, the bind
    address, the API key, the served name, TLS files, a Unix socket, a root path), which change where a server
    answers, not what it measures;
``planned``
    the speculative configuration the plan would try (method, draft or head, K, ...);
``verdict``
    every setting the verdict depends on (thresholds, margins, expected concurrency, the measurement mode, the
    declared phase shift, ``keep_marginal``, ``decide_undetermined``...): a canary judged under one setting must
    not gate a twin set to another;
``workload``
    the benchmark workload (levels, prompts, lengths, dataset, temperature...).

The key is the first 12 hex digits of the sha256 of the canonical JSON of the parts (floats rounded to 6 digits,
keys sorted): stable across runs, controllers and ansible-core versions, and usable as a group name
(``cohort_<key>``, for ``--limit``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import InputError, dumps

PARTS = ('device', 'software', 'service', 'planned', 'verdict', 'workload')
KEY_LENGTH = 12
GROUP_PREFIX = 'cohort_'

#: vLLM options that change where a server answers, not what a benchmark of it measures (options with a value).
HOST_SPECIFIC = frozenset([
    '--host', '--port', '--api-key', '--served-model-name', '--uds', '--root-path',
    '--ssl-keyfile', '--ssl-certfile', '--ssl-ca-certs', '--ssl-cert-reqs',
])
#: The parsed service (serve_args.SERVE) keys that are host-specific or judged elsewhere (the speculative
#: configuration is the ``planned`` part; what runs now is the host's, not the cohort's).
_SERVE_LEFT_OUT = frozenset(['host', 'port', 'served_model_name', 'api_key_set', 'speculative_config'])


class CohortError(ValueError):
    """The parts cannot define a cohort (a value JSON cannot carry, an unknown part); the message says which."""


def _canonical(value):
    """``value`` with floats rounded to 6 digits, whole floats as ints, nulls dropped from dictionaries."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        rounded = round(value, 6)
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, dict):
        return dict((str(key), _canonical(item)) for key, item in value.items() if item is not None)
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    return value


def _option_name(token):
    """'--served_model_name=x' -> '--served-model-name' (vLLM's own spelling rule); None for a value."""
    if not isinstance(token, str) or not token.startswith('--'):
        return None
    name = token.split('=', 1)[0]
    return '--' + name[2:].replace('_', '-')


def shared_arguments(args):
    """``args`` (vLLM's arguments) without the host-specific options and their values (HOST_SPECIFIC)."""
    out = []
    skip_value = False
    for token in args or []:
        if skip_value:
            skip_value = False
            if not (isinstance(token, str) and token.startswith('--')):
                continue
        name = _option_name(token)
        if name in HOST_SPECIFIC:
            skip_value = '=' not in token
            continue
        out.append(token)
    return out


def service_part(serve, model_revision=None, model_config_sha256=None):
    """The ``service`` part from a parsed vLLM command line (serve_args.SERVE): what the server measures."""
    serve = dict(serve or {})
    part = dict((key, value) for key, value in serve.items() if key not in _SERVE_LEFT_OUT)
    part['extra_args'] = shared_arguments(serve.get('extra_args'))
    part['model_revision'] = model_revision
    part['model_config_sha256'] = model_config_sha256
    return part


def device_part(jetson, power_mode=None, clocks_locked=None):
    """The ``device`` part from jetson_facts' result: module, memory (GiB), power mode, clock lock."""
    jetson = jetson or {}
    total_mb = (jetson.get('memory') or {}).get('total_mb')
    return {
        'variant': jetson.get('variant'),
        'memory_gib': int(round(total_mb / 1024.0)) if isinstance(total_mb, (int, float)) and total_mb > 0 else None,
        'power_mode': power_mode if power_mode is not None else (jetson.get('power') or {}).get('mode_name'),
        'clocks_locked': clocks_locked if clocks_locked is not None else (jetson.get('clocks') or {}).get('locked'),
    }


def cohort(parts):
    """{key, group, parts} of a host from its ``parts`` (a dictionary of PARTS, each a dictionary).

    Raises CohortError for an unknown part, a part that is not a dictionary, or a value JSON cannot carry.
    """
    if not isinstance(parts, dict):
        raise CohortError('the cohort parts must be a dictionary of %s, not %s' % (', '.join(PARTS),
                                                                                   type(parts).__name__))
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise CohortError('unknown cohort part(s) %s; allowed: %s' % (', '.join(unknown), ', '.join(PARTS)))
    canonical = {}
    for name in PARTS:
        value = parts.get(name) or {}
        if not isinstance(value, dict):
            raise CohortError('the cohort part %s must be a dictionary, not %s' % (name, type(value).__name__))
        canonical[name] = _canonical(value)
    try:
        text = dumps(canonical, 'the cohort part', sort_keys=True, separators=(',', ':'))
    except InputError as exc:
        raise CohortError('%s' % exc)
    key = hashlib.sha256(text.encode('utf-8')).hexdigest()[:KEY_LENGTH]
    return {'key': key, 'group': GROUP_PREFIX + key, 'parts': canonical}


def label(parts):
    """A short human name of a cohort: 'orin-agx-64gb MAXN L4T 36.4.3 vLLM 0.32.0 Qwen3-8B eagle3 K=3'."""
    parts = parts or {}
    device, software = parts.get('device') or {}, parts.get('software') or {}
    service, planned = parts.get('service') or {}, parts.get('planned') or {}
    # the plan's speculative configuration, or the planned part itself when it is one
    planned = planned.get('speculative_config') if isinstance(planned.get('speculative_config'), dict) else planned
    model = service.get('model')
    words = [device.get('variant') or '?', device.get('power_mode'),
             'L4T %s' % software['l4t'] if software.get('l4t') else None,
             'vLLM %s' % software['vllm_version'] if software.get('vllm_version') else None,
             model.rstrip('/').rsplit('/', 1)[-1] if isinstance(model, str) and model else None,
             planned.get('method'),
             'K=%s' % planned['num_speculative_tokens'] if planned.get('num_speculative_tokens') is not None else None]
    return ' '.join('%s' % word for word in words if word)
