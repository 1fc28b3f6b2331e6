# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The sequential_problems filter: see sequential_problems.yml."""

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.sequential import role_settings_problems


def sequential_problems(settings, concurrency):
    """What is wrong with the role's jetson_spec_sequential for the workload's concurrency levels (a list of sentences)."""
    if not isinstance(concurrency, (list, tuple)):
        return ['The benchmark workload\'s concurrency is %s, not a list of levels such as [1, 8].'
                % type(concurrency).__name__]
    return role_settings_problems(settings, list(concurrency))


class FilterModule(object):
    def filters(self):
        return {'sequential_problems': sequential_problems}
