# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jetson identification: pure parsers and classification (private to this collection).

Everything here is plain functions over bytes/text so that unit tests call them directly.
``gather_facts(root, run_command)`` reads the files below ``root`` and assembles the
``ansible_facts.jetson`` dictionary; ``benchmark_identity(facts)`` extracts the identity
fields the benchmark result records.

Only the Python standard library is used: this code runs on stock JetPack targets.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as _devices
from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import (
    MISSING, NOT_REGULAR, TOO_LARGE, UNREADABLE, read_regular_bytes)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.devices import (  # noqa: F401 (re-exported)
    ORIN_IMAGE, UPSTREAM_IMAGE, is_max_performance)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import (
    compare_versions,
    parse_version,
)

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson.tables import (  # noqa: F401 (re-exported)
    GIB_MB, L4T_EXACT, L4T_FAMILY, L4T_RANGES, MODULE_FAMILIES, MODULE_PARTS, ORIN_AGX_64GB_MIN_MB,
    PRODUCT_LINE_GENERATION, PRODUCT_LINE_LABELS, PRODUCT_LINE_SOC, SKU_LABELS, SOC_GENERATION, THOR_T4000_MIN_MB,
    THOR_T5000_MIN_MB)

UNKNOWN = 'unknown'

UPSTREAM_MIN_VLLM = _devices.vstr(_devices.UPSTREAM_MIN_VLLM)
SUPER_MODE_MIN_L4T = (36, 4, 3)  # JetPack 6.2 adds the Orin Nano/NX Super power modes

# Commands (nvpmodel) run only when the root is the running system.
LIVE_ROOT = '/'

DT_DIRS = ('/proc/device-tree', '/sys/firmware/devicetree/base')

PATHS = {
    'nv_tegra_release': '/etc/nv_tegra_release',
    'dpkg_status': '/var/lib/dpkg/status',
    'meminfo': '/proc/meminfo',
    'nv_boot_control': '/etc/nv_boot_control.conf',
    'nvpmodel_conf': '/etc/nvpmodel.conf',
    'nvpmodel_status': '/var/lib/nvpmodel/status',
    'cpu_dir': '/sys/devices/system/cpu',
    'devfreq_dir': '/sys/class/devfreq',
}


class JetsonFactsError(Exception):
    """A problem the caller must report (bad root)."""


class ReadProblem(str):
    """A file under root that exists but could not be read (not regular, too large, unreadable).

    It is a warning in the facts and also an alert the module emits: something odd sits where a
    Jetson file is expected.
    """


MAX_ROOT_CHARS = 4096  # PATH_MAX on Linux


def show_path(path, limit=1024):
    """``repr(path)`` cut to ``limit`` characters, for an error message."""
    text = repr(path)
    return text if len(text) <= limit else text[:limit] + '... (%d characters)' % len(text)


# --------------------------------------------------------------------------------------------
# File access below a root
# --------------------------------------------------------------------------------------------

def resolve_in_root(root, path, max_links=40):
    """Resolve ``path`` (absolute, as seen on the target) below ``root``.

    Symbolic links are followed INSIDE root: an absolute link target is taken relative to
    root, and ".." never climbs above root (as if root were chrooted). Returns the host path,
    or None when there are too many links (a loop).
    """
    root = os.path.abspath(root)
    pending = [p for p in path.split('/') if p and p != '.']
    resolved = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == '..':
            if resolved:
                resolved.pop()
            continue
        candidate = os.path.join(root, *(resolved + [part]))
        if os.path.islink(candidate):
            links += 1
            if links > max_links:
                return None
            target = os.readlink(candidate)
            if target.startswith('/'):
                resolved = []
            pending = [p for p in target.split('/') if p and p != '.'] + pending
            continue
        resolved.append(part)
    return os.path.join(root, *resolved) if resolved else root


# Largest file read whole, per kind (bytes). Real files are far smaller (a device-tree model is
# under 100 bytes, /proc/meminfo about 1.5 kB) except dpkg's status database, which is a few MB
# on a full JetPack install. A larger file is not read and its fact is unknown, with a warning.
MAX_FILE_BYTES = {
    'device_tree': 4096,
    'text': 65536,
    'dpkg_status': 64 * 1024 * 1024,
}
MAX_MODEL_CHARS = 256  # a device-tree model string longer than this is cut (with a warning)


def read_bytes(root, path, limit=None):
    """Return (bytes or None, error sentence or None). A missing file is (None, None).

    Only regular files are read (a FIFO or a device node would block or never end), and at
    most ``limit`` bytes (default: MAX_FILE_BYTES['text']); a larger file is an error sentence.
    """
    limit = MAX_FILE_BYTES['text'] if limit is None else limit
    real = resolve_in_root(root, path)
    if real is None:
        return None, ReadProblem('too many symbolic links while resolving %s below %s' % (path, root))
    data, _mode, problem, detail = read_regular_bytes(real, limit)
    if problem == MISSING:
        return None, None
    if problem == NOT_REGULAR:
        return None, ReadProblem('%s is not a regular file (%s): ignored' % (real, detail))
    if problem == TOO_LARGE:
        return None, ReadProblem('%s is larger than %d bytes: not read (a real file is much smaller)' % (real, limit))
    if problem == UNREADABLE:
        return None, ReadProblem('cannot read %s: %s' % (real, detail))
    return data, None


def read_text(root, path, limit=None):
    data, error = read_bytes(root, path, limit=limit)
    if data is None:
        return None, error
    return data.decode('utf-8', 'replace'), None


# --------------------------------------------------------------------------------------------
# Device tree
# --------------------------------------------------------------------------------------------

def _decode(raw):
    return raw.decode('utf-8', 'replace').strip()


def parse_compatible(data):
    """Device-tree ``compatible`` bytes -> list of non-empty strings.

    NUL-separated and NUL-terminated on the device; a missing trailing NUL, stray whitespace
    and invalid UTF-8 (replaced by U+FFFD) are tolerated. None -> [].
    """
    if not data:
        return []
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    return [s for s in (_decode(part) for part in data.split(b'\0')) if s]


def parse_model(data):
    """Device-tree ``model`` bytes -> string (first NUL-terminated entry) or None."""
    if not data:
        return None
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    for part in data.split(b'\0'):
        text = _decode(part)
        if text:
            return text
    return None


_PART = re.compile(r'p(\d{4})-(\d{4})', re.IGNORECASE)
_SOC = re.compile(r'^nvidia,(tegra\d+[a-z0-9]*)$', re.IGNORECASE)


def parse_parts(compatible):
    """Find (module_part, carrier_part, soc, has_tegra) in a compatible list.

    "nvidia,p4071-0000+p3834-0008" names carrier + module; "nvidia,p3834-0008" the module
    alone; suffixes after the part number ("p3701-0005-a04") are ignored. The first
    module part found wins.
    """
    module_part = carrier_part = soc = None
    has_tegra = False
    for entry in compatible:
        low = entry.strip().lower()
        match = _SOC.match(low)
        if match:
            has_tegra = True
            chip = match.group(1)
            if chip in SOC_GENERATION and soc is None:
                soc = chip
            continue
        if not low.startswith('nvidia,'):
            continue
        body = low[len('nvidia,'):]
        pieces = body.split('+')
        parts = []
        for piece in pieces:
            found = _PART.match(piece.strip())
            if found:
                parts.append('p%s-%s' % (found.group(1), found.group(2)))
        if not parts:
            continue
        if len(parts) >= 2:
            if carrier_part is None:
                carrier_part = parts[0]
            if module_part is None:
                module_part = parts[-1]
        elif module_part is None:
            module_part = parts[0]
    return module_part, carrier_part, soc, has_tegra


# --------------------------------------------------------------------------------------------
# Release files
# --------------------------------------------------------------------------------------------

_RELEASE = re.compile(r'^#\s*R(\d+)\s*\([^)]*\)\s*,\s*REVISION:\s*(\d+)(?:\.(\d+))?', re.IGNORECASE)


def parse_nv_tegra_release(text):
    """First line of /etc/nv_tegra_release -> (major, minor, patch) or None.

    "# R36 (release), REVISION: 4.4, ..." -> (36, 4, 4); "REVISION: 2.0" on R38 -> (38, 2, 0).
    Only line 1 carries the version (R36+ append KERNEL_VARIANT / TARGET_USERSPACE lines).
    """
    if not text:
        return None
    first = text.lstrip('\ufeff').splitlines()[0] if text.strip() else ''
    match = _RELEASE.match(first.strip())
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def parse_dpkg_status(text, package):
    """Return the Version of ``package`` when dpkg status says it is installed, else None.

    Stanzas are separated by blank lines; continuation lines start with whitespace. Only
    "Status: install ok installed" (or "hold ok installed") counts.
    """
    if not text:
        return None
    for stanza in re.split(r'\n\s*\n', text.replace('\r\n', '\n')):
        fields = {}
        key = None
        for line in stanza.split('\n'):
            if not line.strip():
                continue
            if line[0] in ' \t':
                continue  # continuation of the previous field (Description...)
            if ':' not in line:
                key = None
                continue
            key, value = line.split(':', 1)
            fields[key.strip().lower()] = value.strip()
        if fields.get('package') != package:
            continue
        status = fields.get('status', '').split()
        if len(status) == 3 and status[0] in ('install', 'hold') and status[2] == 'installed':
            return fields.get('version') or None
    return None


def debian_upstream_version(version):
    """'36.4.3-20250107174145' -> '36.4.3'; '1:6.2.1+b38' -> '6.2.1'; None when not numeric."""
    if not version:
        return None
    text = version.strip()
    if re.match(r'^\d+:', text):
        text = text.split(':', 1)[1]
    match = re.match(r'^(\d+(?:\.\d+)*)', text)
    return match.group(1) if match else None


def l4t_release_info(version):
    """L4T version ("36.4.4" or a tuple) -> {'jetpack': str, 'cuda': str}; 'unknown' when not known."""
    parsed = parse_version(version)
    if parsed is None:
        return {'jetpack': UNKNOWN, 'cuda': UNKNOWN}
    key = (tuple(parsed) + (0, 0, 0))[:3]
    if key in L4T_EXACT:
        jetpack, cuda = L4T_EXACT[key]
        return {'jetpack': jetpack, 'cuda': cuda}
    if key[:2] in L4T_FAMILY:
        jetpack, cuda = L4T_FAMILY[key[:2]]
        return {'jetpack': jetpack, 'cuda': cuda}
    for low, high, jetpack, cuda in L4T_RANGES:
        if low <= key < high:
            return {'jetpack': jetpack, 'cuda': cuda}
    return {'jetpack': UNKNOWN, 'cuda': UNKNOWN}


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------

_MEMINFO = re.compile(r'^([A-Za-z0-9_()]+):\s+(\d+)(?:\s*kB)?\s*$')


def parse_meminfo(text):
    """/proc/meminfo -> {'total_mb', 'available_mb', 'swap_total_mb', 'swap_free_mb'}.

    MB = kB // 1024. MemAvailable (not MemFree) is the free memory that matters. A missing
    field is None.
    """
    values = {}
    for line in (text or '').splitlines():
        match = _MEMINFO.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2))

    def mb(key):
        return values[key] // 1024 if key in values else None

    return {
        'total_mb': mb('MemTotal'),
        'available_mb': mb('MemAvailable'),
        'swap_total_mb': mb('SwapTotal'),
        'swap_free_mb': mb('SwapFree'),
    }


# --------------------------------------------------------------------------------------------
# Power mode (nvpmodel)
# --------------------------------------------------------------------------------------------

def parse_nvpmodel_query(text):
    """`nvpmodel -q` output -> (mode_name, mode_id); either may be None.

    "NV Power Mode: MAXN" is followed by the id on the next non-empty line; "NVPM WARN:"
    lines may come before.
    """
    lines = [line.strip() for line in (text or '').splitlines()]
    for index, line in enumerate(lines):
        match = re.match(r'^NV Power Mode\s*:\s*(\S.*)$', line, re.IGNORECASE)
        if not match:
            continue
        name = match.group(1).strip()
        mode_id = None
        for follower in lines[index + 1:]:
            if not follower:
                continue
            if re.match(r'^\d+$', follower):
                mode_id = int(follower)
            break
        return name, mode_id
    return None, None


_POWER_MODEL = re.compile(r'<\s*POWER_MODEL\s+([^>]*)>', re.IGNORECASE)
_ATTR = re.compile(r'([A-Za-z_]+)\s*=\s*(\S+)')


def parse_nvpmodel_conf(text):
    """nvpmodel.conf -> {'modes': {id: name}, 'default': id or None}.

    Reads "< POWER_MODEL ID=2 NAME=MAXN_SUPER >" and "< PM_CONFIG DEFAULT=2 >" lines;
    comments (#) are ignored.
    """
    modes = {}
    default = None
    for raw in (text or '').splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        match = _POWER_MODEL.search(line)
        if match:
            attrs = dict((k.upper(), v) for k, v in _ATTR.findall(match.group(1)))
            if attrs.get('ID', '').isdigit() and attrs.get('NAME'):
                modes[int(attrs['ID'])] = attrs['NAME']
            continue
        match = re.search(r'<\s*PM_CONFIG\s+DEFAULT\s*=\s*(\d+)\s*>', line, re.IGNORECASE)
        if match:
            default = int(match.group(1))
    return {'modes': modes, 'default': default}


def parse_nvpmodel_status(text):
    """/var/lib/nvpmodel/status ("pmode:0002 fmode:quiet") -> mode id (int) or None."""
    match = re.search(r'\bpmode\s*:\s*(\d+)', text or '', re.IGNORECASE)
    return int(match.group(1)) if match else None


# --------------------------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------------------------

def parse_boot_control(text):
    """nv_boot_control.conf -> Thor variant from TNSPEC / COMPATIBLE_SPEC, or None.

    "t4000" -> thor-t4000; "t5000" or "jetson-agx-thor-devkit" -> thor-t5000.
    """
    specs = []
    for line in (text or '').splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0].upper() in ('TNSPEC', 'COMPATIBLE_SPEC'):
            specs.append(parts[1].lower())
    blob = ' '.join(specs)
    if 't4000' in blob:
        return 'thor-t4000'
    if 't5000' in blob or 'jetson-agx-thor-devkit' in blob:
        return 'thor-t5000'
    return None


def _product_line_from_model(model):
    low = (model or '').lower()
    if 'thor' in low:
        return 'thor-agx'
    if 'orin' in low:
        if 'nano' in low:
            return 'orin-nano'
        if 'nx' in low:
            return 'orin-nx'
        if 'agx' in low:
            return 'orin-agx'
        return None
    if 'xavier' in low:
        if 'nx' in low:
            return 'xavier-nx'
        if 'agx' in low:
            return 'xavier-agx'
    return None


def _variant_from_model(product_line, model):
    """Variant named by the model string, as NVIDIA's detect_jetson.sh reads it (T5000/T4000, Industrial)."""
    low = (model or '').lower()
    if product_line == 'thor-agx':
        if re.search(r'\bt5000\b', low):
            return 'thor-t5000'
        if re.search(r'\bt4000\b', low):
            return 'thor-t4000'
    if product_line == 'orin-agx' and re.search(r'\bindustrial\b', low):
        return 'orin-agx-industrial'
    return None


def _memory_variant(product_line, total_mb):
    """Variant from MemTotal for lines where the size is the only difference."""
    if total_mb is None:
        return None
    if product_line == 'thor-agx':
        if total_mb >= THOR_T5000_MIN_MB:
            return 'thor-t5000'
        if total_mb >= THOR_T4000_MIN_MB:
            return 'thor-t4000'
        return None
    if product_line == 'orin-agx':
        return 'orin-agx-64gb' if total_mb >= ORIN_AGX_64GB_MIN_MB else 'orin-agx-32gb'
    if product_line == 'orin-nx':
        return 'orin-nx-16gb' if total_mb >= 12 * GIB_MB else 'orin-nx-8gb'
    if product_line == 'orin-nano':
        return 'orin-nano-8gb' if total_mb >= 6 * GIB_MB else 'orin-nano-4gb'
    if product_line in ('xavier-agx', 'xavier-nx'):
        return product_line
    return None


def super_mode_available(product_line, model=None, l4t=None, power_mode_names=()):
    """Orin Nano / Orin NX only: the JetPack 6.2 "Super" power modes are available when

    the model string says "Super", or nvpmodel knows a MAXN_SUPER mode (current or listed in
    nvpmodel.conf), or L4T >= 36.4.3 (JetPack 6.2, which adds them). Always False elsewhere.
    """
    if product_line not in ('orin-nano', 'orin-nx'):
        return False
    if re.search(r'\bsuper\b', model or '', re.IGNORECASE):
        return True
    if any((name or '').upper().startswith('MAXN_SUPER') for name in power_mode_names):
        return True
    parsed = parse_version(l4t)
    if parsed is not None and compare_versions(parsed, SUPER_MODE_MIN_L4T) >= 0:
        return True
    return False


def classify(compatible, model=None, boot_control=None, mem_total_mb=None):
    """Classify a device from its compatible list (primary), then boot control, memory, model.

    Returns a dict with is_jetson, reason, generation, product_line, variant, variant_source,
    module_part, carrier_part, soc, sku, notes (list of sentences explaining fallbacks).
    """
    compatible = list(compatible or [])
    module_part, carrier_part, soc, has_tegra = parse_parts(compatible)
    result = {
        'is_jetson': False, 'reason': None, 'generation': UNKNOWN, 'product_line': UNKNOWN,
        'variant': UNKNOWN, 'variant_source': None, 'module_part': module_part,
        'carrier_part': carrier_part, 'soc': soc, 'sku': None, 'notes': [], 'conflict': False,
    }
    if not compatible:
        result['reason'] = ('no device-tree compatible file (proc/device-tree or sys/firmware/devicetree/base): '
                            'not a Jetson')
        return result
    if not has_tegra:
        result['reason'] = ('device-tree compatible %s has no "nvidia,tegra..." entry: not a Jetson '
                            '(an NVIDIA aarch64 server such as DGX Spark or GH200 is not a Jetson either)'
                            % ', '.join(compatible))
        return result

    result['is_jetson'] = True
    product_line = variant = None
    source = None
    if module_part in MODULE_PARTS:
        product_line, variant = MODULE_PARTS[module_part]
        source = 'compatible-part' if variant else None
    elif module_part and module_part.split('-')[0] in MODULE_FAMILIES:
        product_line = MODULE_FAMILIES[module_part.split('-')[0]]
        result['notes'].append('module part %s is not in the part table; product line %s from its family'
                               % (module_part, product_line))

    generation = SOC_GENERATION.get(soc) if soc else None
    if product_line is None and generation == 'thor':
        product_line = 'thor-agx'
    if product_line is None and generation in ('orin', 'xavier'):
        from_model = _product_line_from_model(model)
        if from_model and PRODUCT_LINE_GENERATION[from_model] == generation:
            product_line = from_model
            source = 'model-string'
            result['notes'].append('product line %s taken from the model string "%s" (module part %s unknown)'
                                   % (from_model, model, module_part))
    if product_line is None and soc is None:
        from_model = _product_line_from_model(model)
        if from_model:
            product_line = from_model
            source = 'model-string'
            result['notes'].append('chip unknown (compatible %s); product line %s taken from the model string "%s"'
                                   % (', '.join(compatible), from_model, model))

    if product_line == 'thor-agx':
        # nv_boot_control.conf wins over the module part number (NVIDIA's detect_jetson.sh reads it first):
        # it names the board the device was flashed as.
        from_boot = parse_boot_control(boot_control)
        if from_boot and variant and from_boot != variant:
            result['notes'].append('module part %s says %s but %s says %s: %s is used (nv_boot_control.conf wins, '
                                   'as in NVIDIA\'s detect_jetson.sh); check which module is fitted'
                                   % (module_part, variant, '/etc/nv_boot_control.conf', from_boot, from_boot))
            result['conflict'] = True
        if from_boot and from_boot != variant:
            variant, source = from_boot, 'nv_boot_control'
    if product_line is not None and variant is None:
        from_model = _variant_from_model(product_line, model)
        if from_model:
            variant = from_model
            source = 'model-string' if source is None else source + '+model-string'
            result['notes'].append('%s taken from the model string "%s" (module part %s does not tell)'
                                   % (from_model, model, module_part))
        if variant is None:
            variant = _memory_variant(product_line, mem_total_mb)
            if variant:
                source = 'memtotal' if source is None or source == 'compatible-part' else source + '+memtotal'

    if product_line is not None:
        result['product_line'] = product_line
        result['generation'] = PRODUCT_LINE_GENERATION[product_line]
        if result['soc'] is None:
            result['soc'] = PRODUCT_LINE_SOC[result['generation']]
    elif generation:
        result['generation'] = generation
    if variant:
        result['variant'] = variant
        result['variant_source'] = source
        result['sku'] = SKU_LABELS.get(variant)
    elif product_line:
        result['sku'] = PRODUCT_LINE_LABELS.get(product_line)
        result['notes'].append('%s: the exact module (memory size) could not be determined' % product_line)
    if result['generation'] == UNKNOWN:
        result['reason'] = ('Tegra device (compatible %s) that is not a Thor, Orin or Xavier module: '
                            'not supported by this collection' % ', '.join(compatible))
    elif result['product_line'] == UNKNOWN:
        result['reason'] = ('%s chip %s but the module could not be identified (module part %s, model %r)'
                            % (result['generation'], result['soc'], module_part, model))
    return result


# --------------------------------------------------------------------------------------------
# Runtime and speculation rules (the tables are in _jetson/devices.py; docs/decision-rules.md)
# --------------------------------------------------------------------------------------------

def runtime_requirements(generation, l4t_major=None, is_jetson=True):
    """The vLLM runtime path a device must use (the rule is ``_devices.runtime_rule``).

    Thor -> upstream vLLM 0.20+ (vllm/vllm-openai:latest; a validated native 0.20+ is also fine).
    Orin on L4T r39+ (JetPack 7.2) -> upstream 0.20+. Older Orin -> the NVIDIA-AI-IOT image.
    Orin with an unknown L4T -> the NVIDIA-AI-IOT image (what JetPack 5/6 fleets run) plus a
    warning: verify the release; speculative_plan assumes the same. Xavier, unknown and
    non-Jetson hosts -> unsupported.
    Returns {path, image, min_vllm_version, forbidden_images, notes, warning (str or None)}.
    """
    out = {'path': 'unsupported', 'image': None, 'min_vllm_version': None, 'forbidden_images': [],
           'notes': [], 'warning': None}
    if not is_jetson:
        out['notes'].append('not a Jetson: this collection manages vLLM on Jetson Thor and Orin only')
        return out
    rule = _devices.runtime_rule(generation, l4t_major)
    minimum = _devices.vstr(rule['min_vllm_version']) if rule['min_vllm_version'] else None
    out.update(path=rule['path'], image=rule['image'], min_vllm_version=minimum)
    if generation == 'thor':
        out['forbidden_images'] = [ORIN_IMAGE]
        out['notes'] += ['Thor runs upstream vLLM %s+ (%s, a CUDA 13 build: never a -cu129 tag), NVIDIA\'s Thor '
                         'image (%s) or a validated native vLLM %s+ install'
                         % (minimum, UPSTREAM_IMAGE, _devices.THOR_IMAGE, minimum),
                         'never use the NVIDIA-AI-IOT Orin image (%s) on Thor' % ORIN_IMAGE]
    elif generation == 'orin' and rule['path'] == 'upstream':
        out['notes'].append('Orin on L4T r%s (JetPack 7.2+) runs upstream vLLM %s+ (%s)'
                            % (l4t_major, minimum, UPSTREAM_IMAGE))
    elif generation == 'orin' and rule['assumed']:
        out['notes'].append('L4T release unknown: assuming a pre-r39 Orin (JetPack 5/6) and the NVIDIA-AI-IOT '
                            'image; on L4T r39+ (JetPack 7.2) use upstream vLLM %s+ instead' % UPSTREAM_MIN_VLLM)
        out['warning'] = _devices.UNKNOWN_L4T_ON_ORIN
    elif generation == 'orin':
        out['notes'].append('Orin on L4T r%s (before r39) runs the NVIDIA-AI-IOT vLLM image matching its '
                            'JetPack; older runtimes may lack EAGLE-3 or the current --speculative-config form'
                            % l4t_major)
    elif generation == 'xavier':
        out['notes'].append('Xavier (tegra194) has no supported vLLM runtime path in this collection')
    else:
        out['notes'].append('unidentified Jetson: no supported vLLM runtime path')
    return out


def speculation_support(generation, product_line, is_jetson=True):
    """Which speculative-decoding methods the family may use, with plain-sentence reasons."""
    out = {'eagle3_supported': False, 'draft_model_supported': False,
           'default_num_speculative_tokens': None, 'reasons': []}
    if not is_jetson:
        out['reasons'].append('Not a Jetson: speculative decoding is only planned for Jetson Thor and AGX Orin.')
        return out
    allowed = _devices.speculation_allowed(product_line)
    if allowed == 'yes':
        k = _devices.DEFAULT_NUM_SPECULATIVE_TOKENS[_devices.family(product_line)['generation']]
        out.update(eagle3_supported=True, draft_model_supported=True, default_num_speculative_tokens=k)
        out['reasons'].append('%s has the memory for a target plus an EAGLE-3 head or a draft model; '
                              'start at %d speculative tokens.'
                              % ({'thor-agx': 'Thor'}.get(product_line, 'AGX Orin'), k))
    elif allowed == 'small':
        label = PRODUCT_LINE_LABELS[product_line]
        out['reasons'] += [
            'Never EAGLE-3 on %s: there is rarely room in its shared memory for target plus head, '
            'and the server runs out of memory at startup.' % label,
            'Draft-model speculation is normally out of reach on %s for lack of memory; the planner '
            'allows it only when small devices are explicitly allowed (allow_small_devices).' % label,
        ]
    elif generation == 'xavier':
        out['reasons'].append('Xavier has no supported vLLM runtime path, so no speculative decoding.')
    else:
        out['reasons'].append('The Jetson module could not be identified, so speculative decoding is not planned.')
    return out


# --------------------------------------------------------------------------------------------
# Gathering
# --------------------------------------------------------------------------------------------

def _empty_l4t():
    return {'version': None, 'major': None, 'minor': None, 'patch': None, 'source': None}


def _read_device_tree(root, name, warnings):
    for base in DT_DIRS:
        data, error = read_bytes(root, base + '/' + name, limit=MAX_FILE_BYTES['device_tree'])
        if error:
            warnings.append(error)
        if data is not None:
            return data
    return None


def _gather_l4t(root, warnings, alerts):
    l4t = _empty_l4t()
    text, error = read_text(root, PATHS['nv_tegra_release'])
    if error:
        warnings.append(error)
    parsed = None
    if text is not None:
        parsed = parse_nv_tegra_release(text)
        if parsed is not None:
            l4t['source'] = 'nv_tegra_release'
        else:
            first = text.splitlines()[0][:120] if text.strip() else '(empty file)'
            msg = ('%s has unexpected content (first line %r; expected "# R36 (release), REVISION: 4.4, ..."); '
                   'L4T version unknown unless dpkg knows nvidia-l4t-core' % (PATHS['nv_tegra_release'], first))
            warnings.append(msg)
            alerts.append(msg)
    status, error = read_text(root, PATHS['dpkg_status'], limit=MAX_FILE_BYTES['dpkg_status'])
    if error:
        warnings.append(error)
    if parsed is None and status is not None:
        core = debian_upstream_version(parse_dpkg_status(status, 'nvidia-l4t-core'))
        core_parsed = parse_version(core)
        if core_parsed is not None:
            parsed = (tuple(core_parsed) + (0, 0, 0))[:3]
            l4t['source'] = 'dpkg'
    if parsed is not None:
        l4t.update(version='%d.%d.%d' % parsed, major=parsed[0], minor=parsed[1], patch=parsed[2])
    jetpack_pkg = debian_upstream_version(parse_dpkg_status(status, 'nvidia-jetpack')) if status else None
    return l4t, jetpack_pkg


# What jetson_clocks does, as `jetson_clocks --show` reads it back: every online CPU's scaling_min_freq raised to its
# scaling_max_freq, and the GPU's devfreq min_freq raised to its max_freq (EMC's override needs debugfs, root only:
# not read). "Locked" here is exactly that: min == max for every online CPU and, where the GPU has a devfreq
# device (Orin; names such as 17000000.ga10b or 17000000.gpu), for the GPU too.
MAX_CPUS = 512
_CPU_ENTRY = re.compile(r'^cpu([0-9]{1,4})$')
_GPU_DEVFREQ = re.compile(r'(gpu|ga10b|gv11b|gp10b|gb10b)', re.I)


def _read_khz(root, path, warnings):
    text, error = read_text(root, path, limit=64)
    if error:
        warnings.append(error)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        warnings.append('%s is not a frequency (%r): clock state unknown' % (path, text.strip()[:40]))
        return None


def _listdir(root, path):
    real = resolve_in_root(root, path)
    try:
        return sorted(os.listdir(real)) if real and os.path.isdir(real) else []
    except OSError:
        return []


def parse_clock_state(cpus, gpu):
    """{'locked', 'cpu_locked', 'gpu_locked'} from [(min, max) per online CPU] and (min, max) of the GPU or None.

    A CPU or GPU whose frequencies are unknown (None) makes its part unknown; no CPU at all: everything unknown.
    """
    known = [pair for pair in cpus if None not in pair]
    cpu_locked = None if not cpus or len(known) != len(cpus) else all(low == high for low, high in known)
    gpu_locked = None if gpu is None or None in gpu else gpu[0] == gpu[1]
    if cpu_locked is None:
        locked = None
    else:
        locked = cpu_locked and gpu_locked is not False
    return {'locked': locked, 'cpu_locked': cpu_locked, 'gpu_locked': gpu_locked}


def _gather_clocks(root, warnings):
    cpus = []
    for name in _listdir(root, PATHS['cpu_dir'])[:MAX_CPUS]:
        if not _CPU_ENTRY.match(name):
            continue
        base = '%s/%s' % (PATHS['cpu_dir'], name)
        online, _error = read_text(root, base + '/online', limit=16)
        if online is not None and online.strip() == '0':
            continue
        if not _listdir(root, base + '/cpufreq'):
            continue
        cpus.append((_read_khz(root, base + '/cpufreq/scaling_min_freq', warnings),
                     _read_khz(root, base + '/cpufreq/scaling_max_freq', warnings)))
    gpu = None
    for name in _listdir(root, PATHS['devfreq_dir']):
        if _GPU_DEVFREQ.search(name):
            base = '%s/%s' % (PATHS['devfreq_dir'], name)
            gpu = (_read_khz(root, base + '/min_freq', warnings), _read_khz(root, base + '/max_freq', warnings))
            break
    state = parse_clock_state(cpus, gpu)
    state['source'] = 'sysfs' if cpus else None
    return state


def _gather_power(root, run_command, run_nvpmodel, which, warnings):
    power = {'mode_name': None, 'mode_id': None, 'source': None, 'max_performance': None}
    conf_text, error = read_text(root, PATHS['nvpmodel_conf'])
    if error:
        warnings.append(error)
    conf = parse_nvpmodel_conf(conf_text)
    live = os.path.abspath(root) == LIVE_ROOT and run_nvpmodel and run_command is not None
    binary = (which or shutil.which)('nvpmodel') if live else None
    if binary:
        rc, out, err = run_command([binary, '-q'])
        name, mode_id = parse_nvpmodel_query(out)
        if rc == 0 and name:
            power.update(mode_name=name, mode_id=mode_id, source='nvpmodel')
            if mode_id is None:
                for known_id, known_name in conf['modes'].items():
                    if known_name == name:
                        power['mode_id'] = known_id
        else:
            warnings.append('nvpmodel -q failed (rc=%s): %s; reading %s instead'
                            % (rc, (err or out or '').strip()[:200], PATHS['nvpmodel_status']))
    if power['source'] is None:
        status_text, error = read_text(root, PATHS['nvpmodel_status'])
        if error:
            warnings.append(error)
        mode_id = parse_nvpmodel_status(status_text)
        if mode_id is not None:
            power.update(mode_id=mode_id, source='nvpmodel-status', mode_name=conf['modes'].get(mode_id))
            if power['mode_name'] is None:
                warnings.append('power mode id %d from %s is not named in %s: power mode name unknown'
                                % (mode_id, PATHS['nvpmodel_status'], PATHS['nvpmodel_conf']))
        elif status_text is not None:
            warnings.append('%s has unexpected content (expected "pmode:0000 fmode:..."): power mode unknown'
                            % PATHS['nvpmodel_status'])
        else:
            warnings.append('power mode unknown: no nvpmodel on PATH and no %s' % PATHS['nvpmodel_status'])
    power['max_performance'] = is_max_performance(power['mode_name'])
    return power, sorted(conf['modes'].values())


def gather(root='/', run_command=None, run_nvpmodel=True, which=None):
    """Collect the Jetson facts below ``root``.

    Returns (facts, alerts): ``facts`` is the ``ansible_facts.jetson`` dict; ``alerts`` the
    subset of facts['warnings'] an operator must see (the module emits them as warnings).
    ``run_command(argv) -> (rc, out, err)`` runs commands; commands run only when root is "/".
    Raises JetsonFactsError when root does not exist or is not a directory.
    """
    if not isinstance(root, str) or not root:
        raise JetsonFactsError('root must be a directory path, got %s' % show_path(root))
    if '\0' in root or len(root) > MAX_ROOT_CHARS:
        raise JetsonFactsError('root %s is not a usable path (a NUL character, or longer than %d characters): give '
                               'the directory holding the target filesystem ("/" for the running system)'
                               % (show_path(root), MAX_ROOT_CHARS))
    if not os.path.exists(root):
        raise JetsonFactsError('root %s does not exist: give the directory holding the target filesystem '
                               '("/" for the running system)' % show_path(root))
    if not os.path.isdir(root):
        raise JetsonFactsError('root %s is not a directory: give the directory holding the target filesystem '
                               '("/" for the running system)' % show_path(root))
    warnings = []
    alerts = []

    compatible = parse_compatible(_read_device_tree(root, 'compatible', warnings))
    model = parse_model(_read_device_tree(root, 'model', warnings))
    if model is not None and len(model) > MAX_MODEL_CHARS:
        warnings.append('the device-tree model string is %d characters long: cut to %d'
                        % (len(model), MAX_MODEL_CHARS))
        model = model[:MAX_MODEL_CHARS]

    meminfo_text, error = read_text(root, PATHS['meminfo'])
    if error:
        warnings.append(error)
    memory = parse_meminfo(meminfo_text)
    if meminfo_text is None:
        warnings.append('%s not found: memory unknown' % PATHS['meminfo'])
    elif memory['total_mb'] is None:
        warnings.append('%s has no MemTotal line: memory unknown' % PATHS['meminfo'])
    elif memory['available_mb'] is None:
        warnings.append('%s has no MemAvailable line: available memory unknown' % PATHS['meminfo'])

    boot_control, error = read_text(root, PATHS['nv_boot_control'])
    if error:
        warnings.append(error)
    ident = classify(compatible, model=model, boot_control=boot_control, mem_total_mb=memory['total_mb'])
    l4t, jetpack_pkg = _gather_l4t(root, warnings, alerts)

    facts = {
        'is_jetson': ident['is_jetson'],
        'reason': ident['reason'],
        'generation': ident['generation'],
        'product_line': ident['product_line'],
        'variant': ident['variant'],
        'variant_source': ident['variant_source'],
        'module_part': ident['module_part'],
        'carrier_part': ident['carrier_part'],
        'soc': ident['soc'],
        'super_mode': False,
        'model': model,
        'compatible': compatible,
        'sku': ident['sku'],
        'sku_bucket': _devices.sku_bucket(ident['product_line'], ident['generation']) if ident['is_jetson']
        else UNKNOWN,
        'l4t': l4t,
        'jetpack': UNKNOWN,
        'cuda': UNKNOWN,
        'memory': memory,
        'power': {'mode_name': None, 'mode_id': None, 'source': None, 'max_performance': None},
        'clocks': {'locked': None, 'cpu_locked': None, 'gpu_locked': None, 'source': None},
        'vllm_runtime': None,
        'speculation': None,
        'warnings': warnings,
    }
    warnings.extend(ident['notes'])
    if ident['conflict']:
        alerts.append(ident['notes'][-1] if ident['notes'] else 'identity sources disagree')

    info = l4t_release_info(l4t['version'])
    facts['jetpack'], facts['cuda'] = info['jetpack'], info['cuda']
    if l4t['version'] and facts['jetpack'] == UNKNOWN:
        if jetpack_pkg:
            facts['jetpack'] = jetpack_pkg
            warnings.append('L4T %s is not in the release table: JetPack %s taken from the nvidia-jetpack package, '
                            'CUDA unknown' % (l4t['version'], jetpack_pkg))
        else:
            warnings.append('L4T %s is not in the release table: JetPack and CUDA unknown' % l4t['version'])
    elif l4t['version'] is None and jetpack_pkg:
        facts['jetpack'] = jetpack_pkg

    if ident['is_jetson']:
        if l4t['version'] is None and not any(w.startswith(PATHS['nv_tegra_release']) for w in warnings):
            warnings.append('L4T version unknown: neither %s nor an installed nvidia-l4t-core package in %s'
                            % (PATHS['nv_tegra_release'], PATHS['dpkg_status']))
        power, conf_mode_names = _gather_power(root, run_command, run_nvpmodel, which, warnings)
        facts['power'] = power
        facts['clocks'] = _gather_clocks(root, warnings)
        if power['max_performance'] is False:
            msg = ('power mode %s (id %s) is not MAXN: benchmarks not at MAXN are not comparable; '
                   'set the maximum mode (sudo nvpmodel -m <id of MAXN or MAXN_*>) before benchmarking'
                   % (power['mode_name'], power['mode_id']))
            warnings.append(msg)
            alerts.append(msg)
        names = list(conf_mode_names) + ([power['mode_name']] if power['mode_name'] else [])
        facts['super_mode'] = super_mode_available(ident['product_line'], model=model, l4t=l4t['version'],
                                                   power_mode_names=names)

    runtime = runtime_requirements(ident['generation'], l4t['major'], is_jetson=ident['is_jetson'])
    runtime_warning = runtime.pop('warning')
    if runtime_warning:
        warnings.append(runtime_warning)
    facts['vllm_runtime'] = runtime
    facts['speculation'] = speculation_support(ident['generation'], ident['product_line'],
                                               is_jetson=ident['is_jetson'])
    for problem in warnings:
        if isinstance(problem, ReadProblem) and problem not in alerts:
            alerts.append(str(problem))
    facts['warnings'] = [str(w) for w in warnings]
    return facts, alerts


def gather_facts(root='/', run_command=None, run_nvpmodel=True, which=None):
    """The ``ansible_facts.jetson`` dictionary for the system below ``root`` (see ``gather``)."""
    return gather(root=root, run_command=run_command, run_nvpmodel=run_nvpmodel, which=which)[0]


BENCHMARK_IDENTITY_KEYS = ('sku', 'sku_label', 'generation', 'product_line', 'variant', 'l4t', 'jetpack', 'power_mode',
                           'max_performance')


def benchmark_identity(facts):
    """Identity fields for a benchmark result (the benchmark JSON contract).

    {sku, sku_label, generation, product_line, variant, l4t (version string or None), jetpack,
    power_mode (name or None), max_performance}. ``sku`` is the contract's bucket (thor,
    orin-agx, orin-nx, orin-nano, unknown) that jetson-inference-mem-tune's recommend.py reads;
    ``sku_label`` the marketing label ("Jetson AGX Thor T5000"). Off-Jetson (or with no facts)
    ``sku`` is "unknown" and every other field is None.
    """
    if not facts or not facts.get('is_jetson'):
        out = dict((key, None) for key in BENCHMARK_IDENTITY_KEYS)
        out['sku'] = UNKNOWN
        return out
    power = facts.get('power') or {}
    l4t = facts.get('l4t') or {}
    return {
        'sku': _devices.sku_bucket(facts.get('product_line'), facts.get('generation')),
        'sku_label': facts.get('sku'),
        'generation': facts.get('generation'),
        'product_line': facts.get('product_line'),
        'variant': facts.get('variant'),
        'l4t': l4t.get('version') if isinstance(l4t, dict) else l4t,
        'jetpack': facts.get('jetpack'),
        'power_mode': power.get('mode_name'),
        'max_performance': power.get('max_performance'),
    }
