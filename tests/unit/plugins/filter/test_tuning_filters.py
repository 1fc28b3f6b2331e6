"""The tuning_* filters (plugins/filter/tuning.py): they call _decision.tuning (its tables: test_tuning.py) and say
what is wrong with their own inputs."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.tuning import FilterModule

F = FilterModule().filters()
CONFIG = {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 4}
RUNS = [{"concurrency": 1, "throughput_tok_s": 100.0, "spec_decode": {"acceptance_rate": 0.9}}]


def test_the_filters_run_one_whole_tuning():
    tune = F["tuning_start"](CONFIG, "0.7", RUNS)
    step = F["tuning_next"](tune, "0.6", 16)
    assert step["go"] is True and step["k"] == 5
    tune = F["tuning_step"](step["tune"], 1, "5", {"healthy": True, "failure": None}, {"keep": True, "verdict": "accept"},
                            {"runs": [dict(RUNS[0], throughput_tok_s=130.0)]}, "1")
    assert tune["best"]["k"] == 5 and tune["stopped"] == "reached jetson_spec_tune_max_steps (1)"
    outcome = F["tuning_result"]({"reasons": [], "verdict": "accept"}, tune, 1)
    assert outcome["num_speculative_tokens"] == 5 and outcome["tuning"]["kept_k"] == 5


@pytest.mark.parametrize("name, args, words", [
    ("tuning_start", ([4], 0.7, RUNS), "the speculative_config is list, not a dictionary"),
    ("tuning_start", ({"method": "ngram"}, 0.7, RUNS), "no num_speculative_tokens"),
    ("tuning_start", (CONFIG, "inf", RUNS), "gpu_memory_utilization is 'inf', not a finite number"),
    ("tuning_next", ("go", 0.6, 16), "the tuning state is str"),
    ("tuning_next", ({"state": "go"}, 0.6, 16), "KeyError"),
    ("tuning_step", ({}, 1, 5, None, {}, {}, 2), "health is NoneType"),
    ("tuning_result", ({}, [], 2), "the tuning state is list"),
])
def test_bad_inputs_are_a_filter_error_naming_the_filter(name, args, words):
    with pytest.raises(AnsibleFilterError, match=name) as info:
        F[name](*args)
    assert words in str(info.value), str(info.value)
