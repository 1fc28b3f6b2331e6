# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The errors whose message is a sentence for the operator (private), shared by the layers: ``_decision`` (pure
rules) never imports ``_server`` (HTTP) or ``_service`` writers, so what both raise lives here."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class OptionError(Exception):
    """A bad option value; the message is a sentence for the operator."""


class BenchmarkError(OptionError):
    """An error whose message is a sentence for the operator (used for fail_json)."""
