# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the sequential_problems filter (the role's check of jetson_spec_sequential)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.filter.sequential import FilterModule

sequential_problems = FilterModule().filters()['sequential_problems']


def test_good_settings_have_no_problem():
    assert sequential_problems({'baseline_prompts': 24, 'warmup_prompts': 2, 'round_prompts': {1: 8, 8: 16},
                                'max_prompts': 48}, [1, 8]) == []


def test_bad_settings_are_named():
    problems = sequential_problems({'baseline_prompts': 8, 'max_prompts': 48}, [1, 8])
    assert len(problems) == 1 and 'baseline_prompts must be an integer from 16 to 10000' in problems[0]


def test_a_concurrency_that_is_not_a_list_is_a_problem_not_a_crash():
    assert sequential_problems({}, 8) == ["The benchmark workload's concurrency is int, not a list of levels such as [1, 8]."]
