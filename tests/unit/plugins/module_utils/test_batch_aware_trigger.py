"""When the role tries batch-size-aware speculation (_decision.spec_config.batch_aware_trigger; tasks/verify.yml)."""
from __future__ import annotations

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_config import batch_aware_trigger

C8_ONLY = {"keep": False, "verdict": "reject", "c8_regression_only": True}
CONFIG = {"method": "draft_model", "model": "/m/draft", "num_speculative_tokens": 4}

# (verdict, N, levels, vLLM, config) -> (try, why starts with)
CASES = [
    (C8_ONLY, 4, [1, 8], "0.32.0", CONFIG, True, None),
    (C8_ONLY, "4", ["1", "8"], "0.24.0", CONFIG, True, None),
    (C8_ONLY, 4, [1, 8], "0.32.0+cpu", CONFIG, True, None),
    (dict(C8_ONLY, keep=True), 4, [1, 8], "0.32.0", CONFIG, False, "the planned configuration was kept"),
    (dict(C8_ONLY, c8_regression_only=False), 4, [1, 8], "0.32.0", CONFIG, False, "the planned configuration did not"),
    ({"keep": False}, 4, [1, 8], "0.32.0", CONFIG, False, "the planned configuration did not"),
    (C8_ONLY, 0, [1, 8], "0.32.0", CONFIG, False, "jetson_spec_batch_aware_max_batch is 0 (off)"),
    (C8_ONLY, 8, [1, 8], "0.32.0", CONFIG, False, "jetson_spec_batch_aware_max_batch 8 is not below"),
    (C8_ONLY, 4, [1], "0.32.0", CONFIG, False, "jetson_spec_batch_aware_max_batch 4 is not below"),
    (C8_ONLY, 4, [], "0.32.0", CONFIG, False, "jetson_spec_batch_aware_max_batch 4 is not below"),
    (C8_ONLY, 4, [1, 8], "0.23.1", CONFIG, False, "the server's vLLM 0.23.1 is not known to have"),
    (C8_ONLY, 4, [1, 8], "", CONFIG, False, "the server's vLLM version (unknown) is not known"),
    (C8_ONLY, 4, [1, 8], None, CONFIG, False, "the server's vLLM version (unknown)"),
    (C8_ONLY, 4, [1, 8], "main", CONFIG, False, "the server's vLLM main is not known"),
    (C8_ONLY, 4, [1, 8], "0.32.0", {"method": "ngram"}, False, "the configuration drafts no tokens"),
    (C8_ONLY, 4, [1, 8], "0.32.0", dict(CONFIG, num_speculative_tokens_per_batch_size=[[1, 4, 4]]), False,
     "the configuration is batch-size-aware already"),
    (C8_ONLY, 4, [1, 8], "0.32.0", {"method": "dflash", "model": "/m/dflash", "num_speculative_tokens": 4}, False,
     "method dflash takes no num_speculative_tokens_per_batch_size"),
    (C8_ONLY, 4, [1, 8], "0.32.0", {"method": "suffix", "num_speculative_tokens": 4}, False,
     "method suffix takes no num_speculative_tokens_per_batch_size"),
]


@pytest.mark.parametrize("verdict, n, levels, version, config, tried, why", CASES)
def test_tried_only_after_a_regression_at_the_highest_level_alone_on_a_vllm_that_has_it(
        verdict, n, levels, version, config, tried, why):
    attempt, reason = batch_aware_trigger(verdict, n, levels, version, config)
    assert attempt is tried
    if why is None:
        assert reason is None
    else:
        assert reason.startswith(why), reason


def test_bad_numbers_are_errors():
    with pytest.raises(ValueError):
        batch_aware_trigger(C8_ONLY, "four", [1, 8], "0.32.0", CONFIG)
