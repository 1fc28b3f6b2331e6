# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""Read an outcome record (the fact file's text) through its one owner: see outcome_record.yml."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import parse


def outcome_record(text, problem=False):
    """The record (schema 2, migrated), or {} when damaged; with ``problem=true`` the reason instead."""
    if text is not None and not isinstance(text, (str, bytes)):
        raise AnsibleFilterError('outcome_record takes the text of a record file, not %s' % type(text).__name__)
    record, why = parse(text if text else None)
    return (why or '') if problem else record


class FilterModule(object):
    def filters(self):
        return {'outcome_record': outcome_record}
