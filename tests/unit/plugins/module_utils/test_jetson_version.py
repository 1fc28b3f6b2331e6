# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_version.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._version import (
    compare_versions,
    parse_version,
    version_at_least,
)


@pytest.mark.parametrize('value, expected', [
    ('0.20.1rc1+cpu', (0, 20, 1)),
    ('0.20', (0, 20)),
    ('0.10.1.dev123+g1a2b3c', (0, 10, 1)),
    ('v1.2', (1, 2)),
    (' 36.4.3-20250107174145', (36, 4, 3)),
    ('1:2.3', (2, 3)),
    ('6.2.1+b38', (6, 2, 1)),
    ('7.2 EA', (7, 2)),
    ('12', (12,)),
    (12, (12,)),
    ((0, 20, 1), (0, 20, 1)),
    ([36, 4], (36, 4)),
    ('rc1', None),
    ('main', None),
    ('unknown', None),
    ('', None),
    (None, None),
    (True, None),
    (-1, None),
    ((1, 'x'), None),
    ((), None),
    (1.5, None),
])
def test_parse_version(value, expected):
    assert parse_version(value) == expected


@pytest.mark.parametrize('left, right, expected', [
    ('0.20', '0.20.0', 0),
    ('0.20.1', '0.20', 1),
    ('0.19.9', '0.20', -1),
    ('0.9', '0.20', -1),  # numeric, not lexical
    ('1.0', '0.99.99', 1),
    ((36, 4, 3), '36.4.3', 0),
])
def test_compare_versions(left, right, expected):
    assert compare_versions(left, right) == expected


def test_compare_versions_rejects_garbage():
    with pytest.raises(ValueError) as exc:
        compare_versions('main', '0.20')
    assert "'main'" in str(exc.value)


@pytest.mark.parametrize('version, minimum, expected', [
    ('0.20.1rc1+cpu', '0.20', True),
    ('0.20', '0.20', True),
    ('0.19.1', '0.20', False),
    ('0.33.0', '0.20', True),
    (None, '0.20', False),
    ('unknown', '0.20', False),
    ('0.1', None, True),
    (None, None, True),
])
def test_version_at_least(version, minimum, expected):
    assert version_at_least(version, minimum) is expected


def test_version_at_least_rejects_bad_minimum():
    with pytest.raises(ValueError):
        version_at_least('0.20', 'latest')
