# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""speculative_state's decision inputs: what goes into the fingerprint a record is kept in sync with."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.lifecycle import fingerprint
from ansible_collections.jetson_llm.vllm.plugins.modules.speculative_state import decision_inputs

INPUTS = {'method': 'draft_model', 'c8_tolerance': 0.02, 'c8_margin': 0.05, 'max_ttft_increase': None}


def test_unset_inputs_are_left_out_and_others_kept():
    given = dict(INPUTS)
    assert decision_inputs(given) == {'method': 'draft_model', 'c8_tolerance': 0.02, 'c8_margin': 0.05}
    assert given == INPUTS, "the caller's dict is not changed"
    assert decision_inputs(None) == {}


def test_an_unset_option_keeps_the_fingerprint_of_a_record_made_without_it():
    without = {key: value for key, value in INPUTS.items() if key != 'max_ttft_increase'}
    assert fingerprint(decision_inputs(INPUTS)) == fingerprint(decision_inputs(without))
    assert fingerprint(decision_inputs(dict(INPUTS, max_ttft_increase=0.25))) != fingerprint(decision_inputs(INPUTS))
