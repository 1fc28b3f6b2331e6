# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Speculative-decoding decisions: the entry points (private to this collection).

The logic lives in four files split along its seams; this module re-exports what the modules
``speculative_plan`` and ``speculative_verdict`` and the tests use:

- ``_spec_checks``: input checks and ``SpeculativeInputError``;
- ``_spec_config``: SpeculativeConfig keys per method and vLLM version, the JSON;
- ``_plan``: ``plan(...)``, the speculative_plan rules (device rules from ``_devices``);
- ``_verdict``: ``verdict(baseline, candidate, ...)``, the speculative_verdict rules.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson_llm.vllm.plugins.module_utils._plan import (
    DEFAULT_NUM_SPECULATIVE_TOKENS, HANDOFF_ACTIONS, MAX_NUM_SPECULATIVE_TOKENS, METHODS, PLAN_DEFAULTS, plan)
from ansible_collections.jetson_llm.vllm.plugins.module_utils._spec_checks import SpeculativeInputError, _at_least, check_model_ref
from ansible_collections.jetson_llm.vllm.plugins.module_utils._spec_config import allowed_config_keys, config_json
from ansible_collections.jetson_llm.vllm.plugins.module_utils._verdict import VERDICT_DEFAULTS, verdict

__all__ = ['DEFAULT_NUM_SPECULATIVE_TOKENS', 'HANDOFF_ACTIONS', 'MAX_NUM_SPECULATIVE_TOKENS', 'METHODS',
           'PLAN_DEFAULTS', 'SpeculativeInputError', 'VERDICT_DEFAULTS', '_at_least', 'allowed_config_keys',
           'check_model_ref', 'config_json', 'plan', 'verdict']
