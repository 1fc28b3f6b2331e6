"""REAL vLLM's own start-up refusals, read as the role reads them (the CPU build of the test bed).

A speculative configuration vLLM refuses at start-up must be classified ``config_rejected`` (not
retried: the role reverts at once, test_roles_lifecycle.py's bad-vocabulary scenario runs that path end to end
on a real systemd host). Here the refusals are vLLM's own texts, from real ``vllm serve`` processes
launched together, given to the classifier the role's start-up check uses
(``_server/startup.classify_log``, which ``vllm_health`` runs on the service's journal):

* a draft whose vocabulary differs from the target's (``draft-badvocab``);
* ``method: suffix`` without the arctic-inference package (the CPU test bed cannot have it: its only
  release is an sdist that builds CUDA ops).

The plan side of suffix decoding (no draft: the utilisation is not lowered; the arctic-inference
warning) is a unit test of ``speculative_plan`` (tests/unit/plugins/module_utils/test_speculative_plan.py).
"""
from __future__ import annotations

import sys

from conftest import COLLECTIONS, _ansible_env
# pytest fixture, used by name as a test argument
from vllm_testbed import refusal_logs, testbed  # noqa: F401  pylint: disable=unused-import

_ansible_env()  # links the collection under .build/collections
sys.path.insert(0, str(COLLECTIONS))
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import startup  # noqa: E402  pylint: disable=wrong-import-position

EXPECTED = {
    "dead": "Target and draft model should have the same vocabulary size",
    "dead_suffix": "Arctic Inference is required for suffix decoding",
}


def test_real_vllm_refusals_at_start_up_are_classified_config_rejected(testbed):  # noqa: F811
    logs = refusal_logs(testbed, sorted(EXPECTED))
    for key, sentence in EXPECTED.items():
        assert sentence in logs[key], f"vLLM {key!r} did not refuse with {sentence!r}:\n{logs[key][-3000:]}"
        kind, evidence = startup.classify_log(logs[key])
        assert kind == "config_rejected", (key, kind, evidence)
        assert sentence in evidence, (key, evidence)
