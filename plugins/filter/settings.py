# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The role_setting_problems filter: see role_setting_problems.yml."""

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.settings import role_setting_problems as _problems


def role_setting_problems(settings, role, benchmark_keys=None, managed_flags=None):
    """One sentence per bad setting of the role ``role`` (empty: all good)."""
    for name, value in (('benchmark_keys', benchmark_keys), ('managed_flags', managed_flags)):
        if value is not None and not isinstance(value, (list, tuple)):
            raise AnsibleFilterError('role_setting_problems: %s is %s, not a list' % (name, type(value).__name__))
    try:
        return _problems(settings, role, benchmark_keys or (), managed_flags or (), is_file=os.path.isfile)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('role_setting_problems: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'role_setting_problems': role_setting_problems}
