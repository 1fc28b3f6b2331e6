# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM versions known to speculate badly with a method (private to this collection).

Each entry was checked in vLLM's source at the versions it names (the sdists on PyPI) and in the issue and pull
request it cites; docs/decision-rules.md's "Known-bad vLLM versions" table is tested against KNOWN_BAD
(tests/unit/plugins/module_utils/test_known_bad.py): change both together. ``speculative_plan`` warns with the
entry's text when the planned method and the vLLM version fall in a range (or the version is unknown); the benchmark
then decides as for any candidate, so a server that crashes or loses its acceptance is reverted.

Entry keys: ``id``; ``methods`` (speculative_config methods it concerns); ``fixed_in`` (the first release with the
fix, as a version tuple; every earlier release that has the method is affected); ``issue`` and ``fix`` (vLLM issue
and pull request); ``checked`` (where it was verified); ``text`` (the warning, with ``%(lead)s``, which names the version, and
``%(detail)s``). ``DRAFT_MAX_POSITIONS`` gives the ``max_position_embeddings`` of catalogued heads whose value is
published (vLLM's own test of the fix names it).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

KNOWN_BAD = (
    {
        'id': 'eagle_draft_positions',
        'methods': ('eagle', 'eagle3'),
        'fixed_in': (0, 27, 0),
        'issue': 'vllm#48894',
        'fix': 'vllm#49343',
        'checked': ('0.26.0 sdist: vllm/config/speculative.py has no override; 0.27.0 sdist: '
                    'SpeculativeConfig._maybe_override_draft_max_position_embeddings and '
                    'tests/config/test_speculative_draft_max_position_embeddings.py; reported on 0.24.0'),
        'text': ('%(lead)s the fix of vllm#48894 (vllm#49343, in 0.27.0): an EAGLE draft sizes its '
                 'rotary cache from its own max_position_embeddings%(detail)s, so positions beyond it crash the server '
                 'under torch.compile (device-side assert "index out of bounds") or read garbage in eager mode '
                 '(acceptance lost); the specification\'s 2048-in/128-out workload reaches position 2176. Upgrade '
                 'vLLM to 0.27.0+, or expect this candidate to be reverted.'),
    },
)

# Head repo id, lower-cased -> its config.json's max_position_embeddings (published values only).
DRAFT_MAX_POSITIONS = {
    'yuhuili/eagle3-llama3.1-instruct-8b': 2048,  # vLLM 0.27.0's test_speculative_draft_max_position_embeddings.py
}


def draft_max_positions(model, config=None):
    """(max_position_embeddings, where) of a draft: from its parsed config.json when given, else the table above;
    (None, None) when neither says."""
    if isinstance(config, dict):
        value = config.get('max_position_embeddings')
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, 'config.json'
    if model and not model.startswith('/'):
        value = DRAFT_MAX_POSITIONS.get(model.lower())
        if value is not None:
            return value, 'published'
    return None, None


def known_bad(method, version):
    """The KNOWN_BAD entries that concern ``method`` at ``version`` (a version tuple, or None when unknown: then
    every entry of the method, since nothing rules it out)."""
    found = []
    for entry in KNOWN_BAD:
        if method not in entry['methods']:
            continue
        if version is None or tuple(version[:3]) < entry['fixed_in']:
            found.append(entry)
    return found


def lead_text(version):
    """The warning's opening words for ``version``."""
    if version is None:
        return 'The vLLM version is unknown, so it may predate'
    return 'vLLM %s predates' % '.'.join(str(part) for part in version[:3])


def warnings_for(method, version, model=None, model_config=None):
    """The plan's warnings for ``method`` with draft ``model`` at vLLM ``version``."""
    texts = []
    for entry in known_bad(method, version):
        detail = ''
        if entry['id'] == 'eagle_draft_positions':
            positions, where = draft_max_positions(model, model_config)
            if positions is not None:
                detail = ' (%s: %d, %s)' % (model, positions, where)
        texts.append(entry['text'] % {'lead': lead_text(version), 'detail': detail})
    return texts
