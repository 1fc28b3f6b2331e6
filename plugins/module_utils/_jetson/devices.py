# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device rules, each in one table (private to this collection).

``jetson_facts`` (``_jetson/facts.py``) and ``speculative_plan`` (``_decision/plan.py``) both read these
tables and helpers; neither keeps a copy. docs/decision-rules.md and docs/jetson_facts.md
describe them.

- ``FAMILIES``: per product line, its label, generation, benchmark ``sku`` bucket and whether
  it may speculate (``yes``, ``small``: only a draft model and only when allowed, ``no``).
- ``DEFAULT_NUM_SPECULATIVE_TOKENS``: K per generation (5 on Thor, 3 on Orin).
- ``runtime_rule(generation, l4t_major)``: the vLLM runtime path (upstream 0.20+ on Thor and
  on Orin r39+, the NVIDIA-AI-IOT image on older Orin).
- ``image_kind(ref)``: upstream / NVIDIA-AI-IOT / other, by repository (any tag or digest).
- ``is_max_performance(mode_name)``: MAXN or MAXN_*.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

UNKNOWN = 'unknown'

# --- families -------------------------------------------------------------------------------

# product line -> label, generation, benchmark sku bucket (the legacy detect_jetson.sh values that
# jetson-inference-mem-tune's recommend.py reads), speculation (yes | small | no).
FAMILIES = {
    'thor-agx': {'label': 'Jetson AGX Thor', 'generation': 'thor', 'sku': 'thor', 'speculation': 'yes'},
    'orin-agx': {'label': 'Jetson AGX Orin', 'generation': 'orin', 'sku': 'orin-agx', 'speculation': 'yes'},
    'orin-nx': {'label': 'Jetson Orin NX', 'generation': 'orin', 'sku': 'orin-nx', 'speculation': 'small'},
    'orin-nano': {'label': 'Jetson Orin Nano', 'generation': 'orin', 'sku': 'orin-nano', 'speculation': 'small'},
    'xavier-agx': {'label': 'Jetson AGX Xavier', 'generation': 'xavier', 'sku': UNKNOWN, 'speculation': 'no'},
    'xavier-nx': {'label': 'Jetson Xavier NX', 'generation': 'xavier', 'sku': UNKNOWN, 'speculation': 'no'},
}
SKU_BUCKETS = ('thor', 'orin-agx', 'orin-nx', 'orin-nano', UNKNOWN)

# num_speculative_tokens to start at, per generation (docs/decision-rules.md).
DEFAULT_NUM_SPECULATIVE_TOKENS = {'thor': 5, 'orin': 3}
# With the target's own MTP layers (method mtp): 4 on Thor (Jetson AI Lab's Qwen3.6-27B recipe), 2 on Orin (vLLM's
# Qwen recipes), where there is less compute to spare for rejected tokens.
DEFAULT_MTP_NUM_SPECULATIVE_TOKENS = {'thor': 4, 'orin': 2}


def family(product_line):
    """The FAMILIES entry for ``product_line`` (an empty dict when unknown)."""
    return FAMILIES.get(product_line, {})


def family_label(product_line, generation=None):
    label = family(product_line).get('label')
    if label is None:
        label = 'Jetson Thor' if generation == 'thor' else 'this device'
    return label


def speculation_allowed(product_line):
    """'yes', 'small' (Orin NX/Nano: draft model only, when allowed) or 'no'."""
    return family(product_line).get('speculation', 'no')


def sku_bucket(product_line, generation=None):
    """The benchmark contract's ``sku``: thor | orin-agx | orin-nx | orin-nano | unknown."""
    bucket = family(product_line).get('sku')
    if bucket is None:
        bucket = 'thor' if generation == 'thor' else UNKNOWN
    return bucket


# --- runtime --------------------------------------------------------------------------------

UPSTREAM_IMAGE = 'vllm/vllm-openai:latest'
ORIN_IMAGE = 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin'
# NVIDIA's vLLM image for Thor (speculative-decoding-rules.md; service-and-awx-facts.md).
THOR_IMAGE = 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor'
# Repositories (registry/name, lower case, without tag or digest) of each image family.
UPSTREAM_REPOSITORIES = ('vllm/vllm-openai',)
NVIDIA_AI_IOT_REPOSITORIES = ('ghcr.io/nvidia-ai-iot/vllm', 'dustynv/vllm')
UPSTREAM_MIN_VLLM = (0, 20)        # Thor, and Orin on L4T r39+
MIN_VLLM_SPECULATIVE_CONFIG = (0, 10)   # any speculation: the JSON --speculative-config form and EAGLE-3
MIN_VLLM_DRAFT_MODEL = (0, 15)          # draft_model is rejected at startup up to 0.14.x
MIN_VLLM_MTP = (0, 11)                  # method "mtp": 0.10.2 knows only deepseek_mtp/ernie_mtp/qwen3_next_mtp
MIN_VLLM_SUFFIX = (0, 12)               # method "suffix" and its suffix_decoding_* keys (absent from 0.11.0)
ORIN_UPSTREAM_L4T_MAJOR = 39       # JetPack 7.2: Orin moves to upstream vLLM


def vstr(version):
    return '.'.join(str(p) for p in version)


def runtime_rule(generation, l4t_major=None):
    """The runtime path of a device: {path, image, min_vllm_version (tuple or None), assumed}.

    path is upstream | nvidia-ai-iot | unsupported. ``assumed`` is True when the L4T release of
    an Orin is unknown: the pre-r39 NVIDIA-AI-IOT path is assumed (what JetPack 5/6 fleets run),
    and both jetson_facts and speculative_plan say so in a warning.
    """
    if generation == 'thor':
        return {'path': 'upstream', 'image': UPSTREAM_IMAGE, 'min_vllm_version': UPSTREAM_MIN_VLLM, 'assumed': False}
    if generation == 'orin':
        if l4t_major is not None and l4t_major >= ORIN_UPSTREAM_L4T_MAJOR:
            return {'path': 'upstream', 'image': UPSTREAM_IMAGE, 'min_vllm_version': UPSTREAM_MIN_VLLM,
                    'assumed': False}
        return {'path': 'nvidia-ai-iot', 'image': ORIN_IMAGE, 'min_vllm_version': None,
                'assumed': l4t_major is None}
    return {'path': 'unsupported', 'image': None, 'min_vllm_version': None, 'assumed': False}


UNKNOWN_L4T_ON_ORIN = ('Orin with an unknown L4T release: runtime path nvidia-ai-iot assumed (JetPack 5/6); '
                       'check /etc/nv_tegra_release (r39+ needs upstream vLLM %s+)' % vstr(UPSTREAM_MIN_VLLM))


def split_image(ref):
    """'ghcr.io/nvidia-ai-iot/vllm:r36@sha256:ab..' -> ('ghcr.io/nvidia-ai-iot/vllm', 'r36', 'sha256:ab..').

    The repository is lower-cased, with Docker Hub's implicit prefixes removed.
    """
    ref = ref.strip().lower()
    digest = None
    if '@' in ref:
        ref, digest = ref.split('@', 1)
    tag = None
    if ':' in ref.rsplit('/', 1)[-1]:
        ref, tag = ref.rsplit(':', 1)
    for prefix in ('docker.io/', 'index.docker.io/', 'registry-1.docker.io/'):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
    if ref.startswith('library/'):
        ref = ref[len('library/'):]
    return ref, tag, digest


def image_kind(ref):
    """'upstream', 'nvidia-ai-iot' or 'other', by the image's repository (never by its tag)."""
    repository = split_image(ref)[0]
    if repository in UPSTREAM_REPOSITORIES:
        return 'upstream'
    if repository in NVIDIA_AI_IOT_REPOSITORIES:
        return 'nvidia-ai-iot'
    return 'other'


_TAG_VERSION = re.compile(r'^v?(\d+)\.(\d+)(?:\.(\d+))?')
_TAG_L4T = re.compile(r'(?:^|[^a-z0-9])r(\d+)(?:\.|$|[^0-9])')
# Upstream's plain tags are CUDA 13 builds; the -cu12x tags (-cu129...) have no sm_110 kernels (vllm PR #39233).
_TAG_CUDA12 = re.compile(r'(?:^|[^a-z0-9])cu12\d*(?:$|[^0-9])')


def nvidia_image_device(ref):
    """Which Jetson an NVIDIA-AI-IOT image's tag says it is built for: 'thor', 'orin' or None (no tag says).

    'latest-jetson-thor', 'r38.2-cu130' (L4T r38 is JetPack 7.0/7.1, Thor only) -> 'thor';
    'latest-jetson-orin', 'r36.4-tegra' (L4T r35/r36: JetPack 5/6, Orin) -> 'orin'; 'latest', a digest
    only, r39+ (JetPack 7.2, both) -> None.
    """
    tag = split_image(ref)[1]
    if not tag:
        return None
    if 'thor' in tag:
        return 'thor'
    if 'orin' in tag:
        return 'orin'
    match = _TAG_L4T.search(tag)
    if match:
        major = int(match.group(1))
        if major == 38:
            return 'thor'
        if major < 38:
            return 'orin'
    return None


def upstream_cuda12_tag(ref):
    """True when an upstream image's tag names a CUDA 12 build (e.g. v0.20.0-cu129), which cannot run on Thor."""
    if image_kind(ref) != 'upstream':
        return False
    return bool(_TAG_CUDA12.search(split_image(ref)[1] or ''))


def image_tag_version(ref):
    """The vLLM version a tag names ('v0.10.0' -> (0, 10, 0); 'latest', 'r36.4-cu126' -> None).

    Only upstream tags name the vLLM version; NVIDIA-AI-IOT tags name the JetPack/L4T release.
    """
    if image_kind(ref) != 'upstream':
        return None
    tag = split_image(ref)[1]
    match = _TAG_VERSION.match(tag or '')
    if not match:
        return None
    return tuple(int(p) for p in match.groups() if p is not None)


# --- power ----------------------------------------------------------------------------------

def is_max_performance(mode_name):
    """MAXN or MAXN_* (MAXN_SUPER) is maximum performance, in any case; None when the name is unknown."""
    if not mode_name:
        return None
    name = mode_name.strip().upper()
    return name == 'MAXN' or name.startswith('MAXN_')
