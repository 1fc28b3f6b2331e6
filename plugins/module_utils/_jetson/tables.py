# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Identity and release tables for jetson_facts (private to this collection).

Module part numbers, chips, labels, memory thresholds and the L4T -> JetPack -> CUDA release
table (docs/jetson_facts.md). ``facts.py`` holds the logic that reads them; the device rules
shared with speculative_plan are in ``devices.py``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as _devices

SOC_GENERATION = {
    'tegra264': 'thor',
    'tegra234': 'orin',
    'tegra194': 'xavier',
}

# module part "pNNNN-NNNN" -> (product_line, variant or None when the part alone cannot tell)
MODULE_PARTS = {
    'p3834-0008': ('thor-agx', 'thor-t5000'),
    'p3834-0005': ('thor-agx', 'thor-t5000'),
    'p3834-0000': ('thor-agx', 'thor-t4000'),
    # The original AGX Orin developer kit module: 32GB, but later kits were re-populated;
    # the memory size decides (see _memory_variant).
    'p3701-0000': ('orin-agx', None),
    'p3701-0004': ('orin-agx', 'orin-agx-32gb'),
    'p3701-0005': ('orin-agx', 'orin-agx-64gb'),
    'p3701-0008': ('orin-agx', 'orin-agx-industrial'),
    'p3767-0000': ('orin-nx', 'orin-nx-16gb'),
    'p3767-0001': ('orin-nx', 'orin-nx-8gb'),
    'p3767-0003': ('orin-nano', 'orin-nano-8gb'),
    'p3767-0004': ('orin-nano', 'orin-nano-4gb'),
    'p3767-0005': ('orin-nano', 'orin-nano-8gb'),
    'p2888-0001': ('xavier-agx', 'xavier-agx'),
    'p2888-0004': ('xavier-agx', 'xavier-agx'),
    'p2888-0005': ('xavier-agx', 'xavier-agx'),
    'p2888-0006': ('xavier-agx', 'xavier-agx'),
    'p2888-0008': ('xavier-agx', 'xavier-agx'),
    'p3668-0000': ('xavier-nx', 'xavier-nx'),
    'p3668-0001': ('xavier-nx', 'xavier-nx'),
    'p3668-0003': ('xavier-nx', 'xavier-nx'),
}

# module family "pNNNN" -> product line, for parts with an unknown suffix (p3834-9999)
MODULE_FAMILIES = {
    'p3834': 'thor-agx',
    'p3701': 'orin-agx',
    'p2888': 'xavier-agx',
    'p3668': 'xavier-nx',
    # p3767 covers both Orin NX and Orin Nano: an unknown suffix cannot tell them apart.
}

PRODUCT_LINE_GENERATION = dict((line, entry['generation']) for line, entry in _devices.FAMILIES.items())

PRODUCT_LINE_SOC = {
    'thor': 'tegra264',
    'orin': 'tegra234',
    'xavier': 'tegra194',
}

SKU_LABELS = {
    'thor-t5000': 'Jetson AGX Thor T5000',
    'thor-t4000': 'Jetson AGX Thor T4000',
    'orin-agx-64gb': 'Jetson AGX Orin 64GB',
    'orin-agx-32gb': 'Jetson AGX Orin 32GB',
    'orin-agx-industrial': 'Jetson AGX Orin Industrial',
    'orin-nx-16gb': 'Jetson Orin NX 16GB',
    'orin-nx-8gb': 'Jetson Orin NX 8GB',
    'orin-nano-8gb': 'Jetson Orin Nano 8GB',
    'orin-nano-4gb': 'Jetson Orin Nano 4GB',
    'xavier-agx': 'Jetson AGX Xavier',
    'xavier-nx': 'Jetson Xavier NX',
}

PRODUCT_LINE_LABELS = dict((line, entry['label']) for line, entry in _devices.FAMILIES.items())

GIB_MB = 1024  # MB per GiB (MB here = MiB = kB // 1024, as /proc/meminfo counts)
THOR_T5000_MIN_MB = 96 * GIB_MB
THOR_T4000_MIN_MB = 32 * GIB_MB
ORIN_AGX_64GB_MIN_MB = 48 * GIB_MB

# L4T -> (JetPack, CUDA). Exact versions first, then (major, minor) families.
L4T_EXACT = {
    (35, 2, 1): ('5.1', '11.4'),
    (35, 3, 1): ('5.1.1', '11.4'),
    (35, 4, 1): ('5.1.2', '11.4'),
    (35, 5, 0): ('5.1.3', '11.4'),
    (35, 6, 0): ('5.1.4', '11.4'),
    (35, 6, 1): ('5.1.5', '11.4'),
    (36, 3, 0): ('6.0', '12.2'),
    (36, 4, 0): ('6.1', '12.6'),
    (36, 4, 2): ('6.1 rev1', '12.6'),
    (36, 4, 3): ('6.2', '12.6'),
    (36, 4, 4): ('6.2.1', '12.6'),
    (36, 4, 7): ('6.2.1', '12.6'),
    (36, 5, 0): ('6.2.2', '12.6'),
    (38, 4, 0): ('7.1', '13.0'),
    (39, 0, 0): ('7.2 EA', '13.2'),
    (39, 2, 0): ('7.2', '13.2'),
    (39, 2, 1): ('7.2.1', '13.2'),
}
L4T_FAMILY = {
    (38, 2): ('7.0', '13.0'),   # 38.2.x: JetPack 7.0, Thor only
}
L4T_RANGES = [
    # (lowest, highest-exclusive, jetpack, cuda): releases between the exact entries
    ((35, 2, 1), (35, 7, 0), '5.1.x', '11.4'),
]
