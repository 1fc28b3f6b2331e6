"""The role_setting_problems filter (plugins/filter/settings.py): its own inputs; the rules' tables are
tests/unit/plugins/module_utils/test_role_settings.py."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.settings import role_setting_problems as filter_problems

KEYS = ["concurrency", "num_prompts"]


def test_the_filter_says_what_is_wrong_with_its_own_inputs():
    found = filter_problems({"jetson_spec_tune_max_steps": 9}, "speculative_decoding", KEYS)
    assert found == ['jetson_spec_tune_max_steps is "9"; allowed: 0 (no tuning) to 4.'], found
    with pytest.raises(AnsibleFilterError, match="not a dictionary"):
        filter_problems(["jetson_spec_tune_max_steps"], "speculative_decoding", KEYS)
    with pytest.raises(AnsibleFilterError, match="benchmark_keys is str"):
        filter_problems({}, "speculative_decoding", "concurrency")
    with pytest.raises(AnsibleFilterError, match="managed_flags is str"):
        filter_problems({}, "serve", managed_flags="--port")
    with pytest.raises(AnsibleFilterError, match="role is \"vllm\"; allowed: serve, speculative_decoding"):
        filter_problems({}, "vllm")
