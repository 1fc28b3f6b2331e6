# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/decision-rules.md stays true: every test it cites exists, every default it names is the code's."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import plan as P
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import CATALOGUE

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
DOC = os.path.join(TOP, 'docs', 'decision-rules.md')
README = os.path.join(TOP, 'README.md')
UNIT_DIR = 'tests/unit/plugins/module_utils/'


def _doc(path=DOC):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _rows(path=DOC):
    return [line for line in _doc(path).splitlines() if line.startswith('| ') and '::test_' in line]


def _cited_tests(path=DOC):
    cited = []
    for row in _rows(path):
        path = None
        for ref in re.findall(r'`([^`]*::test_\w+)`', row):
            file_part, name = ref.split('::')
            if file_part:
                path = file_part if file_part.startswith('tests/') else UNIT_DIR + file_part
            assert path, 'a test reference without a file: %s' % ref
            cited.append((path, name))
    return cited


def test_every_cited_test_exists():
    cited = _cited_tests()
    assert len(cited) > 50
    for path, name in cited:
        with open(os.path.join(TOP, path), encoding='utf-8') as handle:
            assert re.search(r'^def %s\(' % re.escape(name), handle.read(), re.M), '%s::%s does not exist' % (path, name)


def test_readme_decision_rules_table_cites_existing_tests():
    cited = _cited_tests(README)
    assert len(cited) >= 15
    for path, name in cited:
        with open(os.path.join(TOP, path), encoding='utf-8') as handle:
            assert re.search(r'^def %s\(' % re.escape(name), handle.read(), re.M), 'README cites %s::%s, which does not exist' % (path, name)


def _default_cells(option):
    """The Default cells of the rows whose Option cell names ``option``."""
    cells = []
    for row in _rows():
        parts = [c.strip() for c in row.strip().strip('|').split('|')]
        if '`%s`' % option in parts[2]:
            cells.append(parts[1])
    return cells


def test_every_option_default_is_in_the_table():
    """Each default in the code appears (as a number) in the Default cell of a row naming its option."""
    for option, default in list(P.PLAN_DEFAULTS.items()) + list(V.VERDICT_DEFAULTS.items()):
        cells = _default_cells(option)
        assert cells, 'no row names the option %s' % option
        if default is None:
            assert any('off' in cell for cell in cells), '%s: off by default, but its Default cells say %s' % (option, cells)
            continue
        numbers = [float(n) for cell in cells for n in re.findall(r'\d+(?:\.\d+)?', cell)]
        assert float(default) in numbers, '%s: default %s not in %s' % (option, default, cells)
    k_cells = _default_cells('num_speculative_tokens')
    assert any('%d / %d' % (P.DEFAULT_NUM_SPECULATIVE_TOKENS['thor'], P.DEFAULT_NUM_SPECULATIVE_TOKENS['orin']) in c
               for c in k_cells)
    assert any(c == str(P.MAX_NUM_SPECULATIVE_TOKENS) for c in k_cells)


def test_catalogue_table_matches_the_catalogue():
    doc = _doc()
    for target, entry in CATALOGUE.items():
        if target == 'meta-llama/meta-llama-3.1-8b-instruct':
            continue  # alias of the Llama 3.1 8B row
        rows = [line for line in doc.splitlines() if line.lower().startswith('| %s |' % target)]
        assert len(rows) == 1, target
        cells = [c.strip() for c in rows[0].strip('|').split('|')]
        assert cells[1] == (entry['eagle3_head'] or '')
        assert cells[2] == ', '.join(entry['alternatives'])
        assert cells[3] == (entry['draft_model'] or '')
