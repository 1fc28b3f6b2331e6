# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every way a start-up fails (private; standard library only).

One definition for the two sides: ``_server.startup`` classifies a failed start into one of them (vllm_health's
``failure``), and ``_decision.plan`` decides the next attempt from it (speculative_plan's
``previous_attempt.failure``). Here, not in either, so that ``_decision`` imports nothing of ``_server``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

FAILURE_KINDS = ('config_rejected', 'kv_cache', 'oom', 'engine_init', 'crash_loop', 'early_exit', 'timeout')
