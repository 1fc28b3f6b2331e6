# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_jetson/devices.py: one table per device rule, read by facts and planner."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import devices as D
from ansible_collections.jetson_llm.vllm.plugins.module_utils._jetson import facts as J
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import plan as P


@pytest.mark.parametrize('ref, kind', [
    ('vllm/vllm-openai:latest', 'upstream'),
    ('docker.io/vllm/vllm-openai:v0.20.1', 'upstream'),
    ('index.docker.io/vllm/vllm-openai@sha256:' + 'a' * 64, 'upstream'),
    ('ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin', 'nvidia-ai-iot'),
    ('ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04', 'nvidia-ai-iot'),
    ('GHCR.IO/NVIDIA-AI-IOT/vllm@sha256:' + 'b' * 64, 'nvidia-ai-iot'),
    ('dustynv/vllm:0.8.6-r36.4-cu128-24.04', 'nvidia-ai-iot'),
    ('docker.io/dustynv/vllm:latest', 'nvidia-ai-iot'),
    ('acme/vllm-orin:latest', 'other'),          # "orin" in the name is not the repository
    ('ghcr.io/nvidia-ai-iot/vllm-fork:latest', 'other'),
    ('localhost:5000/vllm/vllm-openai:latest', 'other'),
])
def test_image_kind_by_repository(ref, kind):
    assert D.image_kind(ref) == kind


@pytest.mark.parametrize('ref, version', [
    ('vllm/vllm-openai:v0.20.1', (0, 20, 1)), ('vllm/vllm-openai:0.19', (0, 19)), ('vllm/vllm-openai:latest', None),
    ('vllm/vllm-openai@sha256:' + 'c' * 64, None), ('dustynv/vllm:0.8.6-r36.4', None),
])
def test_image_tag_version_only_for_upstream_tags(ref, version):
    assert D.image_tag_version(ref) == version


@pytest.mark.parametrize('generation, l4t, path, minimum, assumed', [
    ('thor', 38, 'upstream', (0, 20), False), ('thor', None, 'upstream', (0, 20), False),
    ('orin', 39, 'upstream', (0, 20), False), ('orin', 36, 'nvidia-ai-iot', None, False),
    ('orin', None, 'nvidia-ai-iot', None, True), ('xavier', 35, 'unsupported', None, False),
])
def test_runtime_rule(generation, l4t, path, minimum, assumed):
    rule = D.runtime_rule(generation, l4t)
    assert (rule['path'], rule['min_vllm_version'], rule['assumed']) == (path, minimum, assumed)


@pytest.mark.parametrize('name, expected', [('MAXN', True), ('maxn', True), ('MAXN_SUPER', True), ('maxn_super', True),
                                            (' MAXN ', True), ('MODE_30W', False), ('15W', False), (None, None), ('', None)])
def test_max_performance_check_is_case_insensitive(name, expected):
    assert D.is_max_performance(name) is expected
    assert J.is_max_performance is D.is_max_performance


def test_facts_and_planner_read_the_same_tables():
    for line, entry in D.FAMILIES.items():
        assert J.PRODUCT_LINE_GENERATION[line] == entry['generation']
        assert J.PRODUCT_LINE_LABELS[line] == entry['label']
        support = J.speculation_support(entry['generation'], line)
        assert support['default_num_speculative_tokens'] == (
            D.DEFAULT_NUM_SPECULATIVE_TOKENS[entry['generation']] if entry['speculation'] == 'yes' else None)
    assert P.DEFAULT_NUM_SPECULATIVE_TOKENS is D.DEFAULT_NUM_SPECULATIVE_TOKENS
    assert (J.ORIN_IMAGE, J.UPSTREAM_IMAGE) == (D.ORIN_IMAGE, D.UPSTREAM_IMAGE) == (P.ORIN_IMAGE, P.UPSTREAM_IMAGE)
    assert J.UPSTREAM_MIN_VLLM == D.vstr(D.UPSTREAM_MIN_VLLM) and P.MIN_VLLM_UPSTREAM_JETSON == D.UPSTREAM_MIN_VLLM
    for generation, l4t in (('thor', 38), ('orin', 39), ('orin', 36), ('orin', None), ('xavier', 35)):
        facts_path = J.runtime_requirements(generation, l4t)['path']
        assert facts_path == D.runtime_rule(generation, l4t)['path']


def test_sku_buckets():
    assert sorted(set(e['sku'] for e in D.FAMILIES.values())) == sorted(D.SKU_BUCKETS)
    assert D.sku_bucket('unknown') == 'unknown' and D.sku_bucket('unknown', 'thor') == 'thor'
