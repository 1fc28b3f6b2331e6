# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_jetson/facts.py: every parser, the classification, the rules."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import filecmp
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as J

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FIXTURES = os.path.join(TOP, 'tests', 'fixtures', 'rootfs')
ORIN_IMAGE = 'ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin'
UPSTREAM_IMAGE = 'vllm/vllm-openai:latest'


def fixture(name):
    return os.path.join(FIXTURES, name)


def write(root, rel, data):
    path = os.path.join(str(root), rel)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'wb') as handle:
        handle.write(data if isinstance(data, bytes) else data.encode('utf-8'))
    return path


# --- device tree -------------------------------------------------------------------------------

@pytest.mark.parametrize('data, expected', [
    (b'nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0nvidia,tegra23x\0',
     ['nvidia,p3737-0000+p3701-0005', 'nvidia,p3701-0005', 'nvidia,tegra234', 'nvidia,tegra23x']),
    (b'nvidia,p3767-0000\0nvidia,tegra234', ['nvidia,p3767-0000', 'nvidia,tegra234']),  # no trailing NUL
    (b'nvidia,p3767-0000\0\0nvidia,tegra234\0\0', ['nvidia,p3767-0000', 'nvidia,tegra234']),
    (b'acme,\xffboard\0nvidia,tegra234\0', [u'acme,\ufffdboard', 'nvidia,tegra234']),  # bad UTF-8
    (b' nvidia,tegra264 \n\0', ['nvidia,tegra264']),
    (b'\0', []),
    (b'', []),
    (None, []),
])
def test_parse_compatible(data, expected):
    assert J.parse_compatible(data) == expected


@pytest.mark.parametrize('data, expected', [
    (b'NVIDIA Jetson AGX Thor Developer Kit\0', 'NVIDIA Jetson AGX Thor Developer Kit'),
    (b'NVIDIA Jetson Orin Nano Developer Kit', 'NVIDIA Jetson Orin Nano Developer Kit'),
    (b'Acme \xff\xfe X1\0', u'Acme \ufffd\ufffd X1'),
    (b'\0Second\0', 'Second'),
    (b'\0', None),
    (b'', None),
    (None, None),
])
def test_parse_model(data, expected):
    assert J.parse_model(data) == expected


@pytest.mark.parametrize('compatible, expected', [
    (['nvidia,p4071-0000+p3834-0008', 'nvidia,p3834-0008', 'nvidia,tegra264'],
     ('p3834-0008', 'p4071-0000', 'tegra264', True)),
    (['nvidia,p3767-0000', 'nvidia,tegra234'], ('p3767-0000', None, 'tegra234', True)),
    (['nvidia,p3737-0000+p3701-0005-a04', 'nvidia,tegra234', 'nvidia,tegra23x'],
     ('p3701-0005', 'p3737-0000', 'tegra234', True)),
    (['NVIDIA,P3701-0004', 'NVIDIA,TEGRA234'], ('p3701-0004', None, 'tegra234', True)),
    (['nvidia,tegra23x'], (None, None, None, True)),
    (['nvidia,p3450-0000', 'nvidia,tegra210'], ('p3450-0000', None, None, True)),
    (['nvidia,gb10', 'arm,armv9'], (None, None, None, False)),
    (['acme,p3701-0005', 'nvidia,tegra234'], (None, None, 'tegra234', True)),  # only nvidia parts count
    ([], (None, None, None, False)),
])
def test_parse_parts(compatible, expected):
    assert J.parse_parts(compatible) == expected


# --- classification ----------------------------------------------------------------------------

def compat(module, carrier=None, soc='tegra234'):
    out = []
    if carrier:
        out.append('nvidia,%s+%s' % (carrier, module))
    out += ['nvidia,%s' % module, 'nvidia,%s' % soc]
    return out


THOR_BOOT_DEVKIT = 'TNSPEC 3834-500-0008-A.0-1-0-jetson-agx-thor-devkit-\nCOMPATIBLE_SPEC 3834--0008--1--jetson-agx-thor-devkit-\n'
THOR_BOOT_T4000 = 'TNSPEC 3834-500-0000-A.0-1-0-jetson-t4000-devkit-\nCOMPATIBLE_SPEC 3834--0000--1--jetson-t4000-devkit-\n'
ORIN_BOOT = 'TNSPEC 3701-500-0000-J.0-1-1-jetson-agx-orin-devkit-\nCOMPATIBLE_SPEC 3701--0000--1--jetson-agx-orin-devkit-\nTEGRA_CHIPID 0x23\n'


@pytest.mark.parametrize('kwargs, expected', [
    # part number decides
    (dict(compatible=compat('p3834-0008', 'p4071-0000', 'tegra264')), ('thor', 'thor-agx', 'thor-t5000', 'compatible-part')),
    (dict(compatible=compat('p3834-0005', None, 'tegra264')), ('thor', 'thor-agx', 'thor-t5000', 'compatible-part')),
    (dict(compatible=compat('p3834-0000', 'p4071-0000', 'tegra264')), ('thor', 'thor-agx', 'thor-t4000', 'compatible-part')),
    (dict(compatible=compat('p3701-0004', 'p3737-0000')), ('orin', 'orin-agx', 'orin-agx-32gb', 'compatible-part')),
    (dict(compatible=compat('p3701-0005', 'p3737-0000')), ('orin', 'orin-agx', 'orin-agx-64gb', 'compatible-part')),
    (dict(compatible=compat('p3701-0008', 'p3737-0000')), ('orin', 'orin-agx', 'orin-agx-industrial', 'compatible-part')),
    (dict(compatible=compat('p3767-0000', 'p3768-0000')), ('orin', 'orin-nx', 'orin-nx-16gb', 'compatible-part')),
    (dict(compatible=compat('p3767-0001', 'p3509-0000')), ('orin', 'orin-nx', 'orin-nx-8gb', 'compatible-part')),
    (dict(compatible=compat('p3767-0003', 'p3768-0000')), ('orin', 'orin-nano', 'orin-nano-8gb', 'compatible-part')),
    (dict(compatible=compat('p3767-0004', 'p3768-0000')), ('orin', 'orin-nano', 'orin-nano-4gb', 'compatible-part')),
    (dict(compatible=compat('p3767-0005', 'p3768-0000')), ('orin', 'orin-nano', 'orin-nano-8gb', 'compatible-part')),
    (dict(compatible=compat('p2888-0004', 'p2822-0000', 'tegra194')), ('xavier', 'xavier-agx', 'xavier-agx', 'compatible-part')),
    (dict(compatible=compat('p3668-0001', 'p3509-0000', 'tegra194')), ('xavier', 'xavier-nx', 'xavier-nx', 'compatible-part')),
    # nv_boot_control wins over the part number when they disagree (NVIDIA's detect_jetson.sh; with a warning)
    (dict(compatible=compat('p3834-0000', None, 'tegra264'), boot_control=THOR_BOOT_DEVKIT, mem_total_mb=125772,
          model='NVIDIA Jetson AGX Thor Developer Kit'), ('thor', 'thor-agx', 'thor-t5000', 'nv_boot_control')),
    # the part number wins over memory and model string
    (dict(compatible=compat('p3834-0000', None, 'tegra264'), mem_total_mb=125772,
          model='NVIDIA Jetson AGX Thor T5000'), ('thor', 'thor-agx', 'thor-t4000', 'compatible-part')),
    # Thor T5000/T4000 and AGX Orin Industrial from the model string when the part does not tell (before memory)
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=125772, model='NVIDIA Jetson T4000'),
     ('thor', 'thor-agx', 'thor-t4000', 'model-string')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=62650,
          model='NVIDIA Jetson AGX Thor T5000 Developer Kit'), ('thor', 'thor-agx', 'thor-t5000', 'model-string')),
    (dict(compatible=compat('p3701-9999', 'p3737-0000'), mem_total_mb=62800, model='NVIDIA Jetson AGX Orin Industrial'),
     ('orin', 'orin-agx', 'orin-agx-industrial', 'model-string')),
    (dict(compatible=compat('p3767-0000'), model='NVIDIA Jetson Orin Nano Developer Kit'),
     ('orin', 'orin-nx', 'orin-nx-16gb', 'compatible-part')),
    # Thor with an unknown suffix: nv_boot_control, then memory
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), boot_control=THOR_BOOT_DEVKIT),
     ('thor', 'thor-agx', 'thor-t5000', 'nv_boot_control')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), boot_control=THOR_BOOT_T4000, mem_total_mb=125772),
     ('thor', 'thor-agx', 'thor-t4000', 'nv_boot_control')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), boot_control=ORIN_BOOT, mem_total_mb=125772),
     ('thor', 'thor-agx', 'thor-t5000', 'memtotal')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=96 * 1024), ('thor', 'thor-agx', 'thor-t5000', 'memtotal')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=96 * 1024 - 1), ('thor', 'thor-agx', 'thor-t4000', 'memtotal')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=32 * 1024), ('thor', 'thor-agx', 'thor-t4000', 'memtotal')),
    (dict(compatible=compat('p3834-9999', None, 'tegra264'), mem_total_mb=32 * 1024 - 1), ('thor', 'thor-agx', 'unknown', None)),
    (dict(compatible=compat('p3834-9999', None, 'tegra264')), ('thor', 'thor-agx', 'unknown', None)),
    # chip only (no part): Thor from the chip, variant from memory
    (dict(compatible=['nvidia,tegra264'], mem_total_mb=125772), ('thor', 'thor-agx', 'thor-t5000', 'memtotal')),
    # AGX Orin dev kit module p3701-0000: memory decides
    (dict(compatible=compat('p3701-0000', 'p3737-0000'), mem_total_mb=62817), ('orin', 'orin-agx', 'orin-agx-64gb', 'memtotal')),
    (dict(compatible=compat('p3701-0000', 'p3737-0000'), mem_total_mb=30536), ('orin', 'orin-agx', 'orin-agx-32gb', 'memtotal')),
    (dict(compatible=compat('p3701-0000', 'p3737-0000')), ('orin', 'orin-agx', 'unknown', None)),
    # unknown part: the model string is the last resort, then memory for the size
    (dict(compatible=compat('p9999-0001'), model='NVIDIA Jetson Orin Nano Developer Kit', mem_total_mb=7620),
     ('orin', 'orin-nano', 'orin-nano-8gb', 'model-string+memtotal')),
    (dict(compatible=compat('p3767-0099'), model='Vendor Orin NX box', mem_total_mb=15643),
     ('orin', 'orin-nx', 'orin-nx-16gb', 'model-string+memtotal')),
    (dict(compatible=['nvidia,tegra234'], model='Jetson AGX Orin'), ('orin', 'orin-agx', 'unknown', None)),
    (dict(compatible=['nvidia,tegra234'], model='Acme Box'), ('orin', 'unknown', 'unknown', None)),
    # model string contradicting the chip is ignored
    (dict(compatible=['nvidia,tegra234'], model='NVIDIA Jetson AGX Thor'), ('orin', 'unknown', 'unknown', None)),
    (dict(compatible=['nvidia,tegra264'], model='NVIDIA Jetson AGX Orin'), ('thor', 'thor-agx', 'unknown', None)),
])
def test_classify_jetsons(kwargs, expected):
    result = J.classify(**kwargs)
    assert result['is_jetson'] is True
    assert (result['generation'], result['product_line'], result['variant'], result['variant_source']) == expected
    assert result['soc'] == {'thor': 'tegra264', 'orin': 'tegra234', 'xavier': 'tegra194'}[expected[0]]
    if expected[2] != 'unknown':
        assert result['sku'] == J.SKU_LABELS[expected[2]]
        assert result['reason'] is None


def test_classify_records_parts_and_labels():
    result = J.classify(compat('p3701-0005', 'p3737-0000'), model='NVIDIA Jetson AGX Orin Developer Kit')
    assert result['module_part'] == 'p3701-0005'
    assert result['carrier_part'] == 'p3737-0000'
    assert result['sku'] == 'Jetson AGX Orin 64GB'
    assert result['notes'] == []


def test_classify_unknown_module_keeps_product_line_label():
    result = J.classify(compat('p3701-0000'))
    assert result['sku'] == 'Jetson AGX Orin'
    assert any('could not be determined' in n for n in result['notes'])


def test_classify_unidentified_orin_gives_reason():
    result = J.classify(['nvidia,tegra234'], model='Acme Box')
    assert result['is_jetson'] is True
    assert 'could not be identified' in result['reason']


@pytest.mark.parametrize('compatible, fragment', [
    ([], 'no device-tree compatible'),
    (['nvidia,gb10', 'arm,armv9'], 'has no "nvidia,tegra..." entry'),
    (['nvidia,p4242-0000+p3971-0000', 'nvidia,gb10'], 'DGX Spark'),
    (['nvidia,grace', 'nvidia,gh200'], 'GH200'),
    (['raspberrypi,5-model-b', 'brcm,bcm2712'], 'not a Jetson'),
])
def test_classify_not_jetson(compatible, fragment):
    result = J.classify(compatible, model='NVIDIA DGX Spark', mem_total_mb=125772)
    assert result['is_jetson'] is False
    assert result['generation'] == 'unknown'
    assert result['variant'] == 'unknown'
    assert result['sku'] is None
    assert fragment in result['reason']


def test_classify_old_tegra_is_jetson_but_unsupported():
    result = J.classify(['nvidia,p3450-0000', 'nvidia,tegra210'], model='NVIDIA Jetson Nano Developer Kit')
    assert result['is_jetson'] is True
    assert result['generation'] == 'unknown'
    assert 'not a Thor, Orin or Xavier' in result['reason']


@pytest.mark.parametrize('text, expected', [
    (THOR_BOOT_DEVKIT, 'thor-t5000'),
    (THOR_BOOT_T4000, 'thor-t4000'),
    ('TNSPEC 3834-500-0005-A.0-1-0-jetson-t5000-\n', 'thor-t5000'),
    ('COMPATIBLE_SPEC 3834--0000--1--T4000-\n', 'thor-t4000'),
    (ORIN_BOOT, None),
    ('TEGRA_CHIPID 0x26\njetson-agx-thor-devkit\n', None),  # only TNSPEC / COMPATIBLE_SPEC count
    ('', None),
    (None, None),
])
def test_parse_boot_control(text, expected):
    assert J.parse_boot_control(text) == expected


@pytest.mark.parametrize('product_line, model, l4t, names, expected', [
    ('orin-nano', 'NVIDIA Jetson Orin Nano Developer Kit', '36.4.3', (), True),
    ('orin-nano', 'NVIDIA Jetson Orin Nano Developer Kit', '36.4.2', (), False),
    ('orin-nx', 'NVIDIA Jetson Orin NX', '36.5.0', (), True),
    ('orin-nx', 'NVIDIA Jetson Orin NX', '39.2.1', (), True),
    ('orin-nano', 'NVIDIA Jetson Orin Nano Developer Kit Super', '36.4.0', (), True),
    ('orin-nano', 'NVIDIA Jetson Orin Nano', None, ('15W', 'MAXN_SUPER'), True),
    ('orin-nano', 'NVIDIA Jetson Orin Nano', None, ('15W', '25W'), False),
    ('orin-nano', 'Superman board', '35.3.1', (), False),  # a word, not "Super"
    ('orin-agx', 'NVIDIA Jetson AGX Orin Super', '36.4.4', ('MAXN_SUPER',), False),
    ('thor-agx', 'Thor', '38.2.0', (), False),
])
def test_super_mode_available(product_line, model, l4t, names, expected):
    assert J.super_mode_available(product_line, model=model, l4t=l4t, power_mode_names=names) is expected


# --- release files -----------------------------------------------------------------------------

R35 = '# R35 (release), REVISION: 3.1, GCID: 32790763, BOARD: t186ref, EABI: aarch64, DATE: Wed Mar 15 07:54:12 UTC 2023\n'
R36 = ('# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025\n'
       '# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\nTARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n')
R38 = '# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025'


@pytest.mark.parametrize('text, expected', [
    (R35, (35, 3, 1)),
    (R36, (36, 4, 4)),
    (R38, (38, 2, 0)),
    ('\ufeff' + R36, (36, 4, 4)),
    ('#R39 (release), REVISION: 2.1, GCID: 1\n', (39, 2, 1)),
    ('# R41 (release), REVISION: 1\n', (41, 1, 0)),
    ('# KERNEL_VARIANT: oot\n' + R36, None),  # only line 1 carries the version
    ('Jetson Linux, built by hand\n', None),
    ('# R36 (release)\n', None),
    ('', None),
    ('\n\n', None),
    (None, None),
])
def test_parse_nv_tegra_release(text, expected):
    assert J.parse_nv_tegra_release(text) == expected


DPKG = (
    'Package: nvidia-jetpack\nStatus: deinstall ok config-files\nVersion: 6.1+b123\n\n'
    'Package: nvidia-l4t-core\nStatus: install ok installed\nPriority: standard\nVersion: 36.4.3-20250107174145\n'
    'Description: NVIDIA Core Package\n Version: 99.9 in a continuation line is not a field\n .\n\n'
    'Package: nvidia-l4t-cuda\nStatus: hold ok installed\nVersion: 36.4.3-20250107174145\n\n'
    'Package: nvidia-l4t-kernel\nStatus: install ok half-configured\nVersion: 5.15.148-tegra-36.4.3-20250107174145\n'
)


@pytest.mark.parametrize('text, package, expected', [
    (DPKG, 'nvidia-l4t-core', '36.4.3-20250107174145'),
    (DPKG, 'nvidia-l4t-cuda', '36.4.3-20250107174145'),  # held packages are installed
    (DPKG, 'nvidia-jetpack', None),  # config-files only
    (DPKG, 'nvidia-l4t-kernel', None),  # half-configured
    (DPKG, 'nvidia-l4t-core-dummy', None),
    (DPKG.replace('\n', '\r\n'), 'nvidia-l4t-core', '36.4.3-20250107174145'),
    ('Package: nvidia-jetpack\nStatus: install ok installed\nVersion: 6.2.1+b38\n', 'nvidia-jetpack', '6.2.1+b38'),
    ('Package: nvidia-jetpack\nStatus: install ok installed\n', 'nvidia-jetpack', None),
    ('garbage without fields', 'nvidia-l4t-core', None),
    ('', 'nvidia-l4t-core', None),
    (None, 'nvidia-l4t-core', None),
])
def test_parse_dpkg_status(text, package, expected):
    assert J.parse_dpkg_status(text, package) == expected


@pytest.mark.parametrize('version, expected', [
    ('36.4.3-20250107174145', '36.4.3'),
    ('6.2.1+b38', '6.2.1'),
    ('1:6.2+b77', '6.2'),
    ('5.1.1-b56', '5.1.1'),
    ('b38', None),
    ('', None),
    (None, None),
])
def test_debian_upstream_version(version, expected):
    assert J.debian_upstream_version(version) == expected


@pytest.mark.parametrize('version, jetpack, cuda', [
    ('35.2.1', '5.1', '11.4'),
    ('35.3.1', '5.1.1', '11.4'),
    ('35.4.1', '5.1.2', '11.4'),
    ('35.5.0', '5.1.3', '11.4'),
    ('35.6.0', '5.1.4', '11.4'),
    ('35.6.2', '5.1.x', '11.4'),
    ('36.3.0', '6.0', '12.2'),
    ('36.4.0', '6.1', '12.6'),
    ('36.4.2', '6.1 rev1', '12.6'),
    ('36.4.3', '6.2', '12.6'),
    ('36.4.4', '6.2.1', '12.6'),
    ('36.4.7', '6.2.1', '12.6'),
    ('36.5.0', '6.2.2', '12.6'),
    ('38.2.0', '7.0', '13.0'),
    ('38.2.1', '7.0', '13.0'),
    ('38.4.0', '7.1', '13.0'),
    ('39.0.0', '7.2 EA', '13.2'),
    ('39.2.0', '7.2', '13.2'),
    ('39.2.1', '7.2.1', '13.2'),
    ((36, 4, 4), '6.2.1', '12.6'),
    ('36.4', '6.1', '12.6'),  # 36.4 == 36.4.0
    # unknown: never a crash
    ('41.1.0', 'unknown', 'unknown'),
    ('36.4.5', 'unknown', 'unknown'),
    ('35.1.0', 'unknown', 'unknown'),
    ('38.3.0', 'unknown', 'unknown'),
    ('32.7.4', 'unknown', 'unknown'),
    ('garbage', 'unknown', 'unknown'),
    ('', 'unknown', 'unknown'),
    (None, 'unknown', 'unknown'),
])
def test_l4t_release_info(version, jetpack, cuda):
    assert J.l4t_release_info(version) == {'jetpack': jetpack, 'cuda': cuda}


# --- memory ------------------------------------------------------------------------------------

MEMINFO = ('MemTotal:       64325025 kB\nMemFree:        30000000 kB\nMemAvailable:   59514880 kB\n'
           'Buffers:           45232 kB\nSwapTotal:      32161792 kB\nSwapFree:       32160768 kB\n'
           'HugePages_Total:       0\nHugepagesize:       2048 kB\n')


@pytest.mark.parametrize('text, expected', [
    (MEMINFO, {'total_mb': 62817, 'available_mb': 58120, 'swap_total_mb': 31408, 'swap_free_mb': 31407}),
    ('MemTotal: 1023 kB\nMemAvailable: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n',
     {'total_mb': 0, 'available_mb': 1, 'swap_total_mb': 0, 'swap_free_mb': 0}),
    ('MemTotal:       7802896 kB\nMemFree:        1000000 kB\n',  # no MemAvailable: MemFree is NOT used
     {'total_mb': 7620, 'available_mb': None, 'swap_total_mb': None, 'swap_free_mb': None}),
    ('MemTotal: lots\n', {'total_mb': None, 'available_mb': None, 'swap_total_mb': None, 'swap_free_mb': None}),
    ('', {'total_mb': None, 'available_mb': None, 'swap_total_mb': None, 'swap_free_mb': None}),
    (None, {'total_mb': None, 'available_mb': None, 'swap_total_mb': None, 'swap_free_mb': None}),
])
def test_parse_meminfo(text, expected):
    assert J.parse_meminfo(text) == expected


# --- power -------------------------------------------------------------------------------------

@pytest.mark.parametrize('text, expected', [
    ('NV Power Mode: MAXN\n0\n', ('MAXN', 0)),
    ('NVPM WARN: power mode is not set!\nNV Power Mode: MAXN_SUPER\n2\n', ('MAXN_SUPER', 2)),
    ('NVPM WARN: fan mode is not set!\n\nNV Power Mode: MODE_30W\n\n2\n', ('MODE_30W', 2)),
    ('NV Power Mode: 120W\n', ('120W', None)),
    ('NV Power Mode: 15W\nnot a number\n', ('15W', None)),
    ('nvpmodel: command failed\n', (None, None)),
    ('', (None, None)),
    (None, (None, None)),
])
def test_parse_nvpmodel_query(text, expected):
    assert J.parse_nvpmodel_query(text) == expected


CONF = ('# nvpmodel conf\n< PARAM TYPE=FILE NAME=CPU_ONLINE >\nCORE_0 /sys/devices/system/cpu/cpu0/online\n'
        '< POWER_MODEL ID=0 NAME=15W >\nCPU_ONLINE CORE_0 1\n< POWER_MODEL ID=1 NAME=25W >\n'
        '<POWER_MODEL ID=2 NAME=MAXN_SUPER>\n# < POWER_MODEL ID=9 NAME=COMMENTED >\n'
        '< power_model id=3 name=7W >\n< PM_CONFIG DEFAULT=2 >\n')


@pytest.mark.parametrize('text, expected', [
    (CONF, {'modes': {0: '15W', 1: '25W', 2: 'MAXN_SUPER', 3: '7W'}, 'default': 2}),
    ('< POWER_MODEL ID=x NAME=BAD >\n< POWER_MODEL NAME=NOID >\n', {'modes': {}, 'default': None}),
    ('', {'modes': {}, 'default': None}),
    (None, {'modes': {}, 'default': None}),
])
def test_parse_nvpmodel_conf(text, expected):
    assert J.parse_nvpmodel_conf(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('pmode:0002 fmode:quiet\n', 2),
    ('pmode:0000 fmode:cool', 0),
    ('pmode:12', 12),
    ('fmode:quiet', None),
    ('', None),
    (None, None),
])
def test_parse_nvpmodel_status(text, expected):
    assert J.parse_nvpmodel_status(text) == expected


@pytest.mark.parametrize('name, expected', [
    ('MAXN', True), ('MAXN_SUPER', True), ('maxn', True), ('MAXN_ANYTHING', True),
    ('MAXNX', False), ('MODE_30W', False), ('120W', False), ('15W', False),
    ('', None), (None, None),
])
def test_is_max_performance(name, expected):
    assert J.is_max_performance(name) is expected


# --- runtime and speculation rules -------------------------------------------------------------

@pytest.mark.parametrize('generation, major, is_jetson, path, image, minimum, forbidden', [
    ('thor', 38, True, 'upstream', UPSTREAM_IMAGE, '0.20', [ORIN_IMAGE]),
    ('thor', None, True, 'upstream', UPSTREAM_IMAGE, '0.20', [ORIN_IMAGE]),
    ('orin', 39, True, 'upstream', UPSTREAM_IMAGE, '0.20', []),
    ('orin', 41, True, 'upstream', UPSTREAM_IMAGE, '0.20', []),
    ('orin', 38, True, 'nvidia-ai-iot', ORIN_IMAGE, None, []),
    ('orin', 36, True, 'nvidia-ai-iot', ORIN_IMAGE, None, []),
    ('orin', 35, True, 'nvidia-ai-iot', ORIN_IMAGE, None, []),
    ('orin', None, True, 'nvidia-ai-iot', ORIN_IMAGE, None, []),
    ('xavier', 35, True, 'unsupported', None, None, []),
    ('unknown', 36, True, 'unsupported', None, None, []),
    ('unknown', None, False, 'unsupported', None, None, []),
    ('thor', 38, False, 'unsupported', None, None, []),
])
def test_runtime_requirements(generation, major, is_jetson, path, image, minimum, forbidden):
    out = J.runtime_requirements(generation, major, is_jetson=is_jetson)
    assert (out['path'], out['image'], out['min_vllm_version'], out['forbidden_images']) == (path, image, minimum, forbidden)
    assert out['notes'] and all(isinstance(n, str) and n for n in out['notes'])
    assert (out['warning'] is not None) == (generation == 'orin' and major is None)


def test_runtime_thor_mentions_native():
    notes = ' '.join(J.runtime_requirements('thor', 38)['notes'])
    assert 'native vLLM 0.20+' in notes
    assert ORIN_IMAGE in notes


@pytest.mark.parametrize('generation, line, is_jetson, eagle3, draft, tokens, fragment', [
    ('thor', 'thor-agx', True, True, True, 5, 'Thor'),
    ('orin', 'orin-agx', True, True, True, 3, 'AGX Orin'),
    ('orin', 'orin-nx', True, False, False, None, 'memory'),
    ('orin', 'orin-nano', True, False, False, None, 'allow_small_devices'),
    ('xavier', 'xavier-agx', True, False, False, None, 'Xavier'),
    ('orin', 'unknown', True, False, False, None, 'could not be identified'),
    ('unknown', 'unknown', False, False, False, None, 'Not a Jetson'),
])
def test_speculation_support(generation, line, is_jetson, eagle3, draft, tokens, fragment):
    out = J.speculation_support(generation, line, is_jetson=is_jetson)
    assert out['eagle3_supported'] is eagle3
    assert out['draft_model_supported'] is draft
    assert out['default_num_speculative_tokens'] == tokens
    assert fragment in ' '.join(out['reasons'])


# --- files below a root ------------------------------------------------------------------------

def test_resolve_in_root_follows_absolute_links_inside_root(tmp_path):
    write(tmp_path, 'etc/nvpmodel/nvpmodel_p3701_0005.conf', '< POWER_MODEL ID=0 NAME=MAXN >\n')
    os.symlink('/etc/nvpmodel/nvpmodel_p3701_0005.conf', str(tmp_path / 'etc' / 'nvpmodel.conf'))
    resolved = J.resolve_in_root(str(tmp_path), '/etc/nvpmodel.conf')
    assert resolved == str(tmp_path / 'etc' / 'nvpmodel' / 'nvpmodel_p3701_0005.conf')


def test_resolve_in_root_directory_link_and_dotdot_stay_inside(tmp_path):
    write(tmp_path, 'sys/firmware/devicetree/base/model', b'NVIDIA Jetson AGX Orin Developer Kit\0')
    (tmp_path / 'proc').mkdir()
    os.symlink('/sys/firmware/devicetree/base', str(tmp_path / 'proc' / 'device-tree'))
    os.symlink('../../../../../../../../etc/passwd', str(tmp_path / 'proc' / 'escape'))
    assert J.read_bytes(str(tmp_path), '/proc/device-tree/model')[0] == b'NVIDIA Jetson AGX Orin Developer Kit\0'
    assert J.resolve_in_root(str(tmp_path), '/proc/escape') == str(tmp_path / 'etc' / 'passwd')
    assert J.read_bytes(str(tmp_path), '/proc/escape') == (None, None)  # not the host's /etc/passwd


def test_resolve_in_root_loop(tmp_path):
    os.symlink('b', str(tmp_path / 'a'))
    os.symlink('a', str(tmp_path / 'b'))
    assert J.resolve_in_root(str(tmp_path), '/a') is None
    data, error = J.read_bytes(str(tmp_path), '/a')
    assert data is None and 'too many symbolic links' in error


def test_read_bytes_reports_unreadable_paths(tmp_path):
    (tmp_path / 'proc' / 'meminfo').mkdir(parents=True)  # a directory where a file should be
    data, error = J.read_bytes(str(tmp_path), '/proc/meminfo')
    assert data is None
    assert 'is not a regular file (a directory)' in error and 'meminfo' in error


# --- gather over the committed fixtures --------------------------------------------------------

# name: (is_jetson, generation, product_line, variant, variant_source, l4t, l4t_source, jetpack, cuda,
#        total_mb, available_mb, power mode, power id, max_performance, runtime path, eagle3, draft, tokens, super)
EXPECTED = {
    'thor-t5000': (True, 'thor', 'thor-agx', 'thor-t5000', 'compatible-part', '38.2.0', 'nv_tegra_release', '7.0', '13.0',
                   125772, 117940, 'MAXN', 0, True, 'upstream', True, True, 5, False),
    'thor-t4000': (True, 'thor', 'thor-agx', 'thor-t4000', 'compatible-part', '38.4.0', 'nv_tegra_release', '7.1', '13.0',
                   62650, 58011, 'MAXN', 0, True, 'upstream', True, True, 5, False),
    'thor-boot-control': (True, 'thor', 'thor-agx', 'thor-t5000', 'nv_boot_control', '38.2.0', 'nv_tegra_release', '7.0',
                          '13.0', 125772, 120300, 'MAXN', 0, True, 'upstream', True, True, 5, False),
    'thor-t4000-model': (True, 'thor', 'thor-agx', 'thor-t4000', 'model-string', '38.4.0', 'nv_tegra_release', '7.1',
                         '13.0', 62650, 57800, 'MAXN', 0, True, 'upstream', True, True, 5, False),
    'thor-boot-control-conflict': (True, 'thor', 'thor-agx', 'thor-t4000', 'nv_boot_control', '38.4.0',
                                   'nv_tegra_release', '7.1', '13.0', 62650, 58011, 'MAXN', 0, True, 'upstream', True,
                                   True, 5, False),
    'orin-agx-industrial-model': (True, 'orin', 'orin-agx', 'orin-agx-industrial', 'model-string', '36.4.4',
                                  'nv_tegra_release', '6.2.1', '12.6', 62802, 57990, 'MAXN', 0, True, 'nvidia-ai-iot',
                                  True, True, 3, False),
    'thor-memory': (True, 'thor', 'thor-agx', 'thor-t5000', 'memtotal', '38.4.0', 'nv_tegra_release', '7.1', '13.0',
                    125772, 121000, '120W', 1, False, 'upstream', True, True, 5, False),
    'orin-agx-64gb': (True, 'orin', 'orin-agx', 'orin-agx-64gb', 'compatible-part', '36.4.4', 'nv_tegra_release', '6.2.1',
                      '12.6', 62817, 58120, 'MAXN', 0, True, 'nvidia-ai-iot', True, True, 3, False),
    'orin-agx-32gb': (True, 'orin', 'orin-agx', 'orin-agx-32gb', 'compatible-part', '35.3.1', 'nv_tegra_release', '5.1.1',
                      '11.4', 30536, 26880, 'MODE_30W', 2, False, 'nvidia-ai-iot', True, True, 3, False),
    'orin-agx-r39': (True, 'orin', 'orin-agx', 'orin-agx-64gb', 'compatible-part', '39.2.1', 'nv_tegra_release', '7.2.1',
                     '13.2', 62790, 59002, 'MAXN', 0, True, 'upstream', True, True, 3, False),
    'orin-nx-16gb': (True, 'orin', 'orin-nx', 'orin-nx-16gb', 'compatible-part', '36.4.4', 'nv_tegra_release', '6.2.1',
                     '12.6', 15643, 12214, 'MAXN', 0, True, 'nvidia-ai-iot', False, False, None, True),
    'orin-nx-8gb': (True, 'orin', 'orin-nx', 'orin-nx-8gb', 'compatible-part', '36.4.0', 'nv_tegra_release', '6.1',
                    '12.6', 7623, 5510, 'MAXN', 0, True, 'nvidia-ai-iot', False, False, None, False),
    'orin-nano-8gb-super': (True, 'orin', 'orin-nano', 'orin-nano-8gb', 'compatible-part', '36.4.3', 'nv_tegra_release',
                            '6.2', '12.6', 7620, 6120, 'MAXN_SUPER', 2, True, 'nvidia-ai-iot', False, False, None, True),
    'orin-nano-4gb': (True, 'orin', 'orin-nano', 'orin-nano-4gb', 'compatible-part', '36.5.0', 'nv_tegra_release', '6.2.2',
                      '12.6', 3546, 2410, '25W', 1, False, 'nvidia-ai-iot', False, False, None, True),
    'xavier-agx': (True, 'xavier', 'xavier-agx', 'xavier-agx', 'compatible-part', '35.6.0', 'nv_tegra_release', '5.1.4',
                   '11.4', 31785, 29002, 'MAXN', 0, True, 'unsupported', False, False, None, False),
    'future-l4t': (True, 'orin', 'orin-agx', 'orin-agx-64gb', 'compatible-part', '41.1.0', 'nv_tegra_release', 'unknown',
                   'unknown', 62790, 60011, 'MAXN', 0, True, 'upstream', True, True, 3, False),
    'bad-release': (True, 'orin', 'orin-agx', 'orin-agx-64gb', 'compatible-part', None, None, 'unknown', 'unknown',
                    62817, 57001, 'MAXN', 0, True, 'nvidia-ai-iot', True, True, 3, False),
    'dpkg-only': (True, 'orin', 'orin-nx', 'orin-nx-16gb', 'compatible-part', '36.4.3', 'dpkg', '6.2', '12.6',
                  15643, 13002, 'MAXN', 0, True, 'nvidia-ai-iot', False, False, None, True),
    'custom-carrier': (True, 'orin', 'orin-nx', 'orin-nx-16gb', 'compatible-part', '36.4.4', 'nv_tegra_release', '6.2.1',
                       '12.6', 15643, 11020, 'MAXN', 0, True, 'nvidia-ai-iot', False, False, None, True),
    'non-jetson-x86': (False, 'unknown', 'unknown', 'unknown', None, None, None, 'unknown', 'unknown',
                       32766, 28411, None, None, None, 'unsupported', False, False, None, False),
    'dgx-spark-like': (False, 'unknown', 'unknown', 'unknown', None, None, None, 'unknown', 'unknown',
                       122572, 118200, None, None, None, 'unsupported', False, False, None, False),
}


def test_every_fixture_has_expectations():
    assert sorted(os.listdir(FIXTURES)) == sorted(EXPECTED)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_gather_fixture(name):
    facts = J.gather_facts(fixture(name))
    got = (facts['is_jetson'], facts['generation'], facts['product_line'], facts['variant'], facts['variant_source'],
           facts['l4t']['version'], facts['l4t']['source'], facts['jetpack'], facts['cuda'],
           facts['memory']['total_mb'], facts['memory']['available_mb'],
           facts['power']['mode_name'], facts['power']['mode_id'], facts['power']['max_performance'],
           facts['vllm_runtime']['path'], facts['speculation']['eagle3_supported'],
           facts['speculation']['draft_model_supported'], facts['speculation']['default_num_speculative_tokens'],
           facts['super_mode'])
    assert got == EXPECTED[name]
    assert (facts['reason'] is None) == facts['is_jetson']
    if facts['is_jetson']:
        assert facts['power']['source'] == 'nvpmodel-status'
        assert facts['l4t']['major'] == (int(facts['l4t']['version'].split('.')[0]) if facts['l4t']['version'] else None)


def test_gather_schema_keys():
    facts = J.gather_facts(fixture('orin-agx-64gb'))
    assert sorted(facts) == sorted([
        'is_jetson', 'reason', 'generation', 'product_line', 'variant', 'variant_source', 'module_part', 'carrier_part',
        'soc', 'super_mode', 'model', 'compatible', 'sku', 'sku_bucket', 'l4t', 'jetpack', 'cuda', 'memory', 'power',
        'clocks', 'vllm_runtime', 'speculation', 'warnings'])
    assert sorted(facts['l4t']) == ['major', 'minor', 'patch', 'source', 'version']
    assert sorted(facts['memory']) == ['available_mb', 'swap_free_mb', 'swap_total_mb', 'total_mb']
    assert sorted(facts['power']) == ['max_performance', 'mode_id', 'mode_name', 'source']
    assert sorted(facts['vllm_runtime']) == ['forbidden_images', 'image', 'min_vllm_version', 'notes', 'path']
    assert sorted(facts['speculation']) == ['default_num_speculative_tokens', 'draft_model_supported', 'eagle3_supported',
                                            'reasons']
    assert facts['module_part'] == 'p3701-0005' and facts['carrier_part'] == 'p3737-0000'
    assert facts['compatible'] == ['nvidia,p3737-0000+p3701-0005', 'nvidia,p3701-0005', 'nvidia,tegra234', 'nvidia,tegra23x']
    assert facts['model'] == 'NVIDIA Jetson AGX Orin Developer Kit'
    assert facts['sku'] == 'Jetson AGX Orin 64GB'
    assert facts['l4t'] == {'version': '36.4.4', 'major': 36, 'minor': 4, 'patch': 4, 'source': 'nv_tegra_release'}
    assert facts['memory']['swap_total_mb'] == 31408
    assert facts['warnings'] == []


def test_gather_thor_forbids_orin_image():
    facts = J.gather_facts(fixture('thor-t5000'))
    assert facts['vllm_runtime']['forbidden_images'] == [ORIN_IMAGE]
    assert facts['vllm_runtime']['image'] == UPSTREAM_IMAGE
    assert facts['vllm_runtime']['min_vllm_version'] == '0.20'
    assert facts['soc'] == 'tegra264'


def test_gather_custom_carrier_tolerates_bad_bytes():
    facts = J.gather_facts(fixture('custom-carrier'))
    assert facts['model'] == u'Acme RoboBrain X1 \ufffd\ufffd rev B'
    assert facts['compatible'] == ['acme,robobrain-x1', 'nvidia,p3767-0000', 'nvidia,tegra234']
    assert facts['carrier_part'] is None


def test_gather_not_at_maxn_is_an_alert():
    facts, alerts = J.gather(fixture('orin-agx-32gb'))
    assert len(alerts) == 1
    assert 'MODE_30W' in alerts[0] and 'not MAXN' in alerts[0]
    assert alerts[0] in facts['warnings']


def test_gather_bad_release_warns_and_alerts():
    facts, alerts = J.gather(fixture('bad-release'))
    assert facts['l4t']['version'] is None
    assert any('unexpected content' in a and 'Jetson Linux, built by hand' in a for a in alerts)
    assert any('unknown L4T release' in w and 'nvidia-ai-iot' in w for w in facts['warnings'])
    assert any('L4T release unknown' in n for n in facts['vllm_runtime']['notes'])


def test_gather_future_release_reports_version():
    facts, alerts = J.gather(fixture('future-l4t'))
    assert facts['l4t'] == {'version': '41.1.0', 'major': 41, 'minor': 1, 'patch': 0, 'source': 'nv_tegra_release'}
    assert alerts == []
    assert any('41.1.0 is not in the release table' in w for w in facts['warnings'])


def test_gather_unknown_thor_part_notes_family():
    facts = J.gather_facts(fixture('thor-boot-control'))
    assert facts['module_part'] == 'p3834-9999'
    assert any('p3834-9999 is not in the part table' in w for w in facts['warnings'])


def test_gather_non_jetson_has_memory_but_no_power():
    facts, alerts = J.gather(fixture('non-jetson-x86'))
    assert facts['memory'] == {'total_mb': 32766, 'available_mb': 28411, 'swap_total_mb': 2047, 'swap_free_mb': 2047}
    assert facts['power'] == {'mode_name': None, 'mode_id': None, 'source': None, 'max_performance': None}
    assert facts['compatible'] == [] and facts['model'] is None
    assert alerts == [] and facts['warnings'] == []


def test_gather_dgx_spark_is_not_a_thor():
    facts = J.gather_facts(fixture('dgx-spark-like'))
    assert facts['is_jetson'] is False
    assert facts['variant'] == 'unknown'
    assert 'DGX Spark' in facts['reason']


def test_gather_empty_root_is_not_jetson(tmp_path):
    facts = J.gather_facts(str(tmp_path))
    assert facts['is_jetson'] is False
    assert facts['memory'] == {'total_mb': None, 'available_mb': None, 'swap_total_mb': None, 'swap_free_mb': None}
    assert any('/proc/meminfo not found' in w for w in facts['warnings'])


def test_gather_meminfo_without_total(tmp_path):
    write(tmp_path, 'proc/meminfo', 'MemFree: 100 kB\n')
    facts = J.gather_facts(str(tmp_path))
    assert any('no MemTotal' in w for w in facts['warnings'])


@pytest.mark.parametrize('make, fragment', [
    (lambda p: str(p / 'missing'), 'does not exist'),
    (lambda p: write(p, 'file', 'x'), 'is not a directory'),
    (lambda p: '', 'must be a directory path'),
    (lambda p: None, 'must be a directory path'),
])
def test_gather_bad_root(tmp_path, make, fragment):
    root = make(tmp_path)
    with pytest.raises(J.JetsonFactsError) as exc:
        J.gather(root)
    assert fragment in str(exc.value)


def make_orin_root(tmp_path, release=None, packages=None, status='pmode:0002 fmode:quiet\n', conf=None):
    write(tmp_path, 'sys/firmware/devicetree/base/model', b'NVIDIA Jetson AGX Orin Developer Kit\0')
    write(tmp_path, 'sys/firmware/devicetree/base/compatible',
          b'nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0')
    (tmp_path / 'proc').mkdir()
    os.symlink('/sys/firmware/devicetree/base', str(tmp_path / 'proc' / 'device-tree'))  # as on a real Jetson
    write(tmp_path, 'proc/meminfo', MEMINFO)
    if release is not None:
        write(tmp_path, 'etc/nv_tegra_release', release)
    if packages is not None:
        write(tmp_path, 'var/lib/dpkg/status', packages)
    if status is not None:
        write(tmp_path, 'var/lib/nvpmodel/status', status)
    if conf is not None:
        write(tmp_path, 'etc/nvpmodel/nvpmodel_p3701_0005.conf', conf)
        os.symlink('/etc/nvpmodel/nvpmodel_p3701_0005.conf', str(tmp_path / 'etc' / 'nvpmodel.conf'))
    return str(tmp_path)


AGX_CONF = ('< POWER_MODEL ID=0 NAME=MAXN >\n< POWER_MODEL ID=1 NAME=MODE_15W >\n'
            '< POWER_MODEL ID=2 NAME=MODE_30W >\n< POWER_MODEL ID=3 NAME=MODE_50W >\n< PM_CONFIG DEFAULT=3 >\n')


def test_gather_absolute_symlinks_resolved_in_root(tmp_path):
    root = make_orin_root(tmp_path, release=R36, conf=AGX_CONF)
    facts, alerts = J.gather(root)
    assert facts['variant'] == 'orin-agx-64gb'
    assert facts['power'] == {'mode_name': 'MODE_30W', 'mode_id': 2, 'source': 'nvpmodel-status', 'max_performance': False}
    assert any('MODE_30W' in a for a in alerts)


def test_gather_status_without_conf_keeps_id(tmp_path):
    root = make_orin_root(tmp_path, release=R36)
    facts = J.gather_facts(root)
    assert facts['power'] == {'mode_name': None, 'mode_id': 2, 'source': 'nvpmodel-status', 'max_performance': None}
    assert any('not named in /etc/nvpmodel.conf' in w for w in facts['warnings'])


def test_gather_no_power_information(tmp_path):
    root = make_orin_root(tmp_path, release=R36, status=None)
    facts = J.gather_facts(root)
    assert facts['power']['source'] is None and facts['power']['max_performance'] is None
    assert any('power mode unknown' in w for w in facts['warnings'])


def test_gather_garbled_status(tmp_path):
    root = make_orin_root(tmp_path, release=R36, status='broken\n', conf=AGX_CONF)
    facts = J.gather_facts(root)
    assert facts['power']['mode_id'] is None
    assert any('unexpected content' in w and 'nvpmodel/status' in w for w in facts['warnings'])


@pytest.mark.parametrize('release, packages, version, source, jetpack, warn', [
    # the table is preferred over the nvidia-jetpack package
    (R36, 'Package: nvidia-jetpack\nStatus: install ok installed\nVersion: 9.9+b1\n', '36.4.4', 'nv_tegra_release',
     '6.2.1', None),
    # a release the table does not know: JetPack from the package
    ('# R36 (release), REVISION: 4.9, GCID: 1\n', 'Package: nvidia-jetpack\nStatus: install ok installed\nVersion: 6.2.3+b5\n',
     '36.4.9', 'nv_tegra_release', '6.2.3', 'taken from the nvidia-jetpack package'),
    ('# R36 (release), REVISION: 4.9, GCID: 1\n', None, '36.4.9', 'nv_tegra_release', 'unknown', 'JetPack and CUDA unknown'),
    # no release file: dpkg nvidia-l4t-core
    (None, 'Package: nvidia-l4t-core\nStatus: install ok installed\nVersion: 36.4.7-20250918154033\n', '36.4.7', 'dpkg',
     '6.2.1', None),
    # unparseable release file: dpkg still answers
    ('garbage\n', 'Package: nvidia-l4t-core\nStatus: install ok installed\nVersion: 38.2.1-20250910\n', '38.2.1', 'dpkg',
     '7.0', 'unexpected content'),
    # nothing at all
    (None, None, None, None, 'unknown', 'L4T version unknown'),
    # only the jetpack package
    (None, 'Package: nvidia-jetpack\nStatus: install ok installed\nVersion: 6.2.1+b38\n', None, None, '6.2.1',
     'L4T version unknown'),
])
def test_gather_l4t_precedence(tmp_path, release, packages, version, source, jetpack, warn):
    root = make_orin_root(tmp_path, release=release, packages=packages, conf=AGX_CONF, status='pmode:0000\n')
    facts = J.gather_facts(root)
    assert facts['l4t']['version'] == version
    assert facts['l4t']['source'] == source
    assert facts['jetpack'] == jetpack
    if warn:
        assert any(warn in w for w in facts['warnings']), facts['warnings']
    else:
        assert facts['warnings'] == []


# --- nvpmodel through run_command (only when root is the live system) -------------------------

class FakeRun(object):
    def __init__(self, rc=0, out='', err=''):
        self.result = (rc, out, err)
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return self.result


def test_nvpmodel_not_run_for_offline_roots():
    run = FakeRun(0, 'NV Power Mode: MODE_15W\n1\n')
    facts = J.gather_facts(fixture('orin-agx-64gb'), run_command=run, which=lambda name: '/usr/sbin/nvpmodel')
    assert run.calls == []
    assert facts['power']['source'] == 'nvpmodel-status'


@pytest.mark.parametrize('result, which, expected, calls, warn', [
    ((0, 'NVPM WARN: fan mode is not set!\nNV Power Mode: MODE_15W\n1\n', ''), '/usr/sbin/nvpmodel',
     {'mode_name': 'MODE_15W', 'mode_id': 1, 'source': 'nvpmodel', 'max_performance': False}, 1, 'not MAXN'),
    ((0, 'NV Power Mode: MAXN\n', ''), '/usr/sbin/nvpmodel',  # id looked up in nvpmodel.conf
     {'mode_name': 'MAXN', 'mode_id': 0, 'source': 'nvpmodel', 'max_performance': True}, 1, None),
    ((255, '', 'NVPM ERROR: failed to read PARAM'), '/usr/sbin/nvpmodel',  # falls back to the status file
     {'mode_name': 'MAXN', 'mode_id': 0, 'source': 'nvpmodel-status', 'max_performance': True}, 1, 'nvpmodel -q failed'),
    ((0, 'NV Power Mode: MAXN\n0\n', ''), None,  # not on PATH
     {'mode_name': 'MAXN', 'mode_id': 0, 'source': 'nvpmodel-status', 'max_performance': True}, 0, None),
])
def test_nvpmodel_live(monkeypatch, result, which, expected, calls, warn):
    root = fixture('orin-agx-64gb')
    monkeypatch.setattr(J, 'LIVE_ROOT', os.path.abspath(root))
    run = FakeRun(*result)
    facts = J.gather_facts(root, run_command=run, which=lambda name: which)
    assert facts['power'] == expected
    assert len(run.calls) == calls
    if calls:
        assert run.calls[0] == ['/usr/sbin/nvpmodel', '-q']
    if warn:
        assert any(warn in w for w in facts['warnings'])


def test_nvpmodel_live_disabled(monkeypatch):
    root = fixture('orin-agx-64gb')
    monkeypatch.setattr(J, 'LIVE_ROOT', os.path.abspath(root))
    run = FakeRun(0, 'NV Power Mode: MODE_15W\n1\n')
    facts = J.gather_facts(root, run_command=run, run_nvpmodel=False, which=lambda name: '/usr/sbin/nvpmodel')
    assert run.calls == []
    assert facts['power']['source'] == 'nvpmodel-status'


# --- benchmark identity ------------------------------------------------------------------------

def test_benchmark_identity_jetson():
    facts = J.gather_facts(fixture('orin-nano-8gb-super'))
    assert J.benchmark_identity(facts) == {
        'sku': 'orin-nano', 'sku_label': 'Jetson Orin Nano 8GB', 'generation': 'orin', 'product_line': 'orin-nano',
        'variant': 'orin-nano-8gb', 'l4t': '36.4.3', 'jetpack': '6.2', 'power_mode': 'MAXN_SUPER',
        'max_performance': True,
    }


@pytest.mark.parametrize('name, bucket', [
    ('thor-t5000', 'thor'), ('thor-t4000', 'thor'), ('thor-memory', 'thor'), ('orin-agx-64gb', 'orin-agx'),
    ('orin-agx-r39', 'orin-agx'), ('orin-nx-8gb', 'orin-nx'), ('custom-carrier', 'orin-nx'),
    ('orin-nano-4gb', 'orin-nano'), ('xavier-agx', 'unknown'), ('non-jetson-x86', 'unknown'),
])
def test_benchmark_identity_sku_is_the_contract_bucket(name, bucket):
    """The benchmark contract's sku: thor | orin-agx | orin-nx | orin-nano | unknown (recommend.py reads it)."""
    facts = J.gather_facts(fixture(name))
    identity = J.benchmark_identity(facts)
    assert identity['sku'] == bucket == facts['sku_bucket']
    assert identity['sku'] in J._devices.SKU_BUCKETS
    assert identity['sku_label'] == (facts['sku'] if facts['is_jetson'] else None)


def test_benchmark_identity_not_at_maxn():
    identity = J.benchmark_identity(J.gather_facts(fixture('thor-memory')))
    assert identity['power_mode'] == '120W' and identity['max_performance'] is False
    assert identity['variant'] == 'thor-t5000' and identity['l4t'] == '38.4.0'


@pytest.mark.parametrize('source', [None, {}, 'non-jetson-x86', 'dgx-spark-like'])
def test_benchmark_identity_off_jetson(source):
    facts = J.gather_facts(fixture(source)) if isinstance(source, str) else source
    identity = J.benchmark_identity(facts)
    assert sorted(identity) == ['generation', 'jetpack', 'l4t', 'max_performance', 'power_mode', 'product_line', 'sku',
                                'sku_label', 'variant']
    assert identity.pop('sku') == 'unknown'
    assert set(identity.values()) == {None}


# --- the committed fixtures are what the generator writes --------------------------------------

def _tree(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ('link', os.readlink(path))
            elif os.path.isfile(path):
                out[rel] = ('file', path)
            else:
                out[rel] = ('dir', None)
    return out


def test_fixtures_match_generator(tmp_path):
    script = os.path.join(TOP, 'tests', 'fixtures', 'make_rootfs.py')
    subprocess.run([sys.executable, script, str(tmp_path)], check=True)
    committed, generated = _tree(FIXTURES), _tree(str(tmp_path))
    assert sorted(committed) == sorted(generated)
    for rel, (kind, value) in committed.items():
        assert generated[rel][0] == kind, rel
        if kind == 'link':
            assert generated[rel][1] == value, rel
        elif kind == 'file':
            assert filecmp.cmp(value, generated[rel][1], shallow=False), rel


# --- hostile files under root (issue 9) ----------------------------------------------------------

def _orin_root(root):
    write(root, 'proc/device-tree/compatible', b'nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0')
    write(root, 'proc/device-tree/model', b'NVIDIA Jetson AGX Orin Developer Kit\0')
    write(root, 'proc/meminfo', 'MemTotal:       64322512 kB\nMemAvailable:   59515780 kB\n')


@pytest.mark.parametrize('rel', ['etc/nv_tegra_release', 'proc/device-tree/model', 'proc/meminfo',
                                 'var/lib/dpkg/status', 'etc/nv_boot_control.conf'])
def test_fifo_under_root_is_skipped_not_read(tmp_path, rel):
    _orin_root(tmp_path)
    path = os.path.join(str(tmp_path), rel)
    if os.path.exists(path):
        os.remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkfifo(path)
    code = ('import sys; sys.path[:0] = %r\n'
            'from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as J\n'
            'facts = J.gather_facts(%r, run_nvpmodel=False)\n'
            'print("\\n".join(facts["warnings"]))\n' % (sys.path, str(tmp_path)))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=10, check=False)
    assert proc.returncode == 0, proc.stderr
    assert 'is not a regular file (a FIFO)' in proc.stdout and rel in proc.stdout


def test_read_bytes_refuses_devices_and_directories(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), 'etc', 'nv_tegra_release'))
    data, error = J.read_bytes(str(tmp_path), '/etc/nv_tegra_release')
    assert data is None and 'is not a regular file (a directory)' in error
    os.symlink('/dev/zero', os.path.join(str(tmp_path), 'zero'))  # resolved inside root: missing
    assert J.read_bytes(str(tmp_path), '/zero') == (None, None)


def test_oversized_files_are_not_read_whole(tmp_path):
    _orin_root(tmp_path)
    write(tmp_path, 'proc/device-tree/model', b'NVIDIA Jetson AGX Orin ' + b'A' * 200000 + b'\0')
    facts = J.gather_facts(str(tmp_path), run_nvpmodel=False)
    assert facts['model'] is None
    assert any('/proc/device-tree/model' in w and 'larger than %d bytes' % J.MAX_FILE_BYTES['device_tree'] in w
               for w in facts['warnings'])
    assert facts['product_line'] == 'orin-agx'  # the compatible string still classifies it


def test_model_string_is_truncated(tmp_path):
    _orin_root(tmp_path)
    write(tmp_path, 'proc/device-tree/model', b'NVIDIA Jetson AGX Orin ' + b'B' * 3000 + b'\0')
    facts = J.gather_facts(str(tmp_path), run_nvpmodel=False)
    assert len(facts['model']) == J.MAX_MODEL_CHARS


def test_boot_control_part_number_conflict_is_an_alert():
    facts, alerts = J.gather(fixture('thor-boot-control-conflict'), run_nvpmodel=False)
    assert facts['variant'] == 'thor-t4000' and facts['sku'] == 'Jetson AGX Thor T4000'
    conflict = [w for w in facts['warnings'] if 'p3834-0008 says thor-t5000' in w]
    assert len(conflict) == 1 and 'nv_boot_control.conf wins' in conflict[0] and conflict[0] in alerts


@pytest.mark.parametrize('root, words', [('/' + 'x' * 10000, 'longer than 4096 characters'),
                                         ('/tmp/a\0b', 'a NUL character')])
def test_unusable_root_fails_with_a_short_message(root, words):
    with pytest.raises(J.JetsonFactsError) as err:
        J.gather(root)
    assert words in str(err.value) and len(str(err.value)) < 1300


# --- clock state (jetson_clocks) ------------------------------------------------------------------------
@pytest.mark.parametrize('cpus, gpu, expected', [
    ([], None, (None, None, None)),                                               # no cpufreq: unknown
    ([(729600, 2201600)] * 4, (306000000, 1300500000), (False, False, False)),    # AGX Orin after boot
    ([(1479000, 1479000)] * 4, (921600000, 921600000), (True, True, True)),       # after sudo jetson_clocks
    ([(1479000, 1479000)] * 4, None, (True, True, None)),                         # no GPU devfreq (Thor)
    ([(1479000, 1479000)] * 4, (76800000, 921600000), (False, True, False)),      # CPUs pinned by hand only
    ([(1479000, 1479000), (None, 1479000)], None, (None, None, None)),            # one CPU unreadable
    ([(1479000, 1479000)], (None, 921600000), (True, True, None)),
])
def test_parse_clock_state(cpus, gpu, expected):
    state = J.parse_clock_state(cpus, gpu)
    assert (state['locked'], state['cpu_locked'], state['gpu_locked']) == expected


def _cpufreq(root, cpu, low, high, online=None):
    write(root, 'sys/devices/system/cpu/cpu%d/cpufreq/scaling_min_freq' % cpu, '%d\n' % low)
    write(root, 'sys/devices/system/cpu/cpu%d/cpufreq/scaling_max_freq' % cpu, '%d\n' % high)
    if online is not None:
        write(root, 'sys/devices/system/cpu/cpu%d/online' % cpu, online)


def _gpu_devfreq(root, low, high):
    # As on an Orin: /sys/class/devfreq/<name> is an absolute link to the device's devfreq directory.
    device = 'sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu'
    write(root, device + '/min_freq', '%d\n' % low)
    write(root, device + '/max_freq', '%d\n' % high)
    os.makedirs(str(root / 'sys' / 'class' / 'devfreq'))
    os.symlink('/' + device, str(root / 'sys' / 'class' / 'devfreq' / '17000000.gpu'))


def test_gather_clocks_reads_sysfs_as_jetson_clocks_show_does(tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(fixture('orin-agx-64gb'), str(root), symlinks=True)
    for cpu in range(4):
        _cpufreq(root, cpu, 729600, 2201600)
    _cpufreq(root, 4, 729600, 729600, online='0\n')   # offline: not counted
    write(root, 'sys/devices/system/cpu/cpufreq/policy0/scaling_governor', 'schedutil\n')  # not a cpuN entry
    _gpu_devfreq(root, 306000000, 1300500000)
    facts = J.gather_facts(str(root), run_nvpmodel=False)
    assert facts['clocks'] == {'locked': False, 'cpu_locked': False, 'gpu_locked': False, 'source': 'sysfs'}
    for cpu in range(4):
        _cpufreq(root, cpu, 2201600, 2201600)
    write(root, 'sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/min_freq', '1300500000\n')
    facts = J.gather_facts(str(root), run_nvpmodel=False)
    assert facts['clocks'] == {'locked': True, 'cpu_locked': True, 'gpu_locked': True, 'source': 'sysfs'}


def test_gather_clocks_unknown_without_cpufreq_and_on_hostile_values(tmp_path):
    facts = J.gather_facts(fixture('thor-t5000'), run_nvpmodel=False)
    assert facts['clocks'] == {'locked': None, 'cpu_locked': None, 'gpu_locked': None, 'source': None}
    root = tmp_path / 'root'
    shutil.copytree(fixture('thor-t5000'), str(root), symlinks=True)
    _cpufreq(root, 0, 1000, 1000)
    write(root, 'sys/devices/system/cpu/cpu1/cpufreq/scaling_min_freq', 'nan\n')
    write(root, 'sys/devices/system/cpu/cpu1/cpufreq/scaling_max_freq', '1000\n')
    facts = J.gather_facts(str(root), run_nvpmodel=False)
    assert facts['clocks']['locked'] is None and facts['clocks']['cpu_locked'] is None
    assert any('scaling_min_freq is not a frequency' in w for w in facts['warnings']), facts['warnings']
    os.unlink(str(root / 'sys/devices/system/cpu/cpu1/cpufreq/scaling_min_freq'))
    os.mkfifo(str(root / 'sys/devices/system/cpu/cpu1/cpufreq/scaling_min_freq'))   # never blocks
    facts = J.gather_facts(str(root), run_nvpmodel=False)
    assert facts['clocks']['locked'] is None
    assert any('not a regular file' in w for w in facts['warnings']), facts['warnings']


def test_non_jetson_has_no_clock_state():
    facts = J.gather_facts(fixture('non-jetson-x86'), run_nvpmodel=False)
    assert facts['clocks']['source'] is None and facts['clocks']['locked'] is None
