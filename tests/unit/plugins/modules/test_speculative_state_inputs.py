# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""speculative_state's decision inputs: what goes into the fingerprint a record is kept in sync with."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.lifecycle import fingerprint
from ansible_collections.jetson_llm.vllm.plugins.modules.speculative_state import decision_inputs

INPUTS = {'method': 'draft_model', 'c8_tolerance': 0.02, 'c8_margin': 0.05, 'regression_rule': 'non_inferiority',
          'max_ttft_increase': None}


@pytest.mark.parametrize('rule', ['point', 'interval'])
def test_a_deprecated_rule_is_the_rule_that_decides(rule):
    """Decided as non_inferiority since issue 21: a host recorded under point (fingerprint with 'point') verifies
    once more, and an inventory that later drops the deprecated value stays in sync."""
    given = dict(INPUTS, regression_rule=rule)
    assert decision_inputs(given) == decision_inputs(INPUTS)
    assert fingerprint(decision_inputs(given)) == fingerprint(decision_inputs(INPUTS))
    assert fingerprint(decision_inputs(given)) != fingerprint(dict(decision_inputs(INPUTS), regression_rule=rule))
    assert given['regression_rule'] == rule, 'the caller\'s dict is not changed'


def test_unset_inputs_are_left_out_and_others_kept():
    assert decision_inputs(INPUTS) == {'method': 'draft_model', 'c8_tolerance': 0.02, 'c8_margin': 0.05,
                                       'regression_rule': 'non_inferiority'}
    assert decision_inputs(None) == {}
    assert decision_inputs({'regression_rule': 'sometimes'}) == {'regression_rule': 'sometimes'}
