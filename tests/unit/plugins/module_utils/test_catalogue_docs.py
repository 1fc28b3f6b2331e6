# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The catalogue has one source, plugins/module_utils/_decision/catalogue.py: the docs are tested against it.

docs/decision-rules.md's catalogue table must list exactly the catalogue's entries, and every EAGLE-3
head the docs, the README and the example inventory name for a catalogued target must be the head
the catalogue gives that target (an alternative named as "the" head is how the two drifted apart).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.catalogue import CATALOGUE

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
HEADER = '| Target | EAGLE-3 head | Also published | Same-family draft | MTP layers |'


def read(path):
    with open(os.path.join(TOP, path)) as handle:
        return handle.read()


def docs_table():
    text = read('docs/decision-rules.md')
    assert HEADER in text, 'docs/decision-rules.md has no catalogue table with the header %s' % HEADER
    rows = {}
    for line in text[text.index(HEADER):].splitlines()[2:]:
        if not line.startswith('|'):
            break
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        target, head, also, draft, mtp = cells
        assert target.lower() not in rows, 'the docs list %s twice' % target
        rows[target.lower()] = {
            'eagle3_head': head or None,
            'alternatives': [a.strip() for a in also.split(',') if a.strip()],
            'draft_model': draft or None,
            'mtp': mtp == 'yes',
        }
    return rows


def test_the_docs_table_is_the_catalogue():
    assert docs_table() == CATALOGUE


def test_every_entry_has_exactly_the_documented_keys():
    for target, entry in CATALOGUE.items():
        assert set(entry) == {'eagle3_head', 'draft_model', 'alternatives', 'mtp'}, target
        assert target == target.lower()
        assert isinstance(entry['mtp'], bool)


def _doc_files():
    paths = ['README.md'] + ['docs/%s' % n for n in sorted(os.listdir(os.path.join(TOP, 'docs'))) if n.endswith('.md')]
    for root, _dirs, files in os.walk(os.path.join(TOP, 'inventories')):
        paths += [os.path.relpath(os.path.join(root, n), TOP) for n in sorted(files) if n.endswith(('.yml', '.yaml'))]
    return paths


def test_a_head_named_for_a_catalogued_target_is_the_catalogue_head():
    """A sentence or an inventory that names a head for a target must name the catalogue's (an alternative is
    fine only as an alternative, e.g. 'set jetson_spec_eagle3_head to use another one')."""
    alternatives = {}
    for target, entry in CATALOGUE.items():
        for alternative in entry['alternatives']:
            alternatives[alternative] = (target, entry['eagle3_head'])
    wrong = []
    for path in _doc_files():
        if path == 'docs/decision-rules.md':
            continue  # the table itself, checked above
        for number, line in enumerate(read(path).splitlines(), 1):
            if line.lstrip().startswith('#'):
                continue  # a YAML comment may name the alternatives
            for alternative, (target, head) in alternatives.items():
                if re.search(re.escape(alternative), line) and 'another' not in line and 'also published' not in line:
                    wrong.append('%s:%s names %s, an alternative; the catalogue head for %s is %s'
                                 % (path, number, alternative, target, head))
    assert not wrong, '\n'.join(wrong)
