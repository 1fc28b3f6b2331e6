# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The outcome record through its one owner (_decision.record): read it (outcome_record) and build this run's
(outcome_summary). See their .yml documentation."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.record import NewerSchema, parse, summary

#: What the role's vars lookup gives for a variable the run did not set.
UNSET = '__unset__'


def outcome_record(text, problem=False):
    """The record, or {} when damaged or of a newer schema; with ``problem=true`` the reason instead."""
    if text is not None and not isinstance(text, (str, bytes)):
        raise AnsibleFilterError('outcome_record takes the text of a record file, not %s' % type(text).__name__)
    try:
        record, why = parse(text if text else None)
    except NewerSchema as exc:
        record, why = {}, '%s' % exc
    return (why or '') if problem else record


def outcome_summary(facts, finished):
    """This run's record, from the role's variables by name (SUMMARY_INPUTS) and the time it ends."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError('outcome_summary takes the run\'s variables by name (a dict), not %s' % type(facts).__name__)
    if not isinstance(finished, str):
        raise AnsibleFilterError('outcome_summary: finished is %s, not an ISO 8601 time' % type(finished).__name__)
    # The vars lookup's default=none means "no default": the role asks for UNSET instead.
    facts = dict((name, None if value == UNSET else value) for name, value in facts.items())
    try:
        return summary(facts, finished)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError('outcome_summary: %s: %s' % (type(exc).__name__, exc))


class FilterModule(object):
    def filters(self):
        return {'outcome_record': outcome_record, 'outcome_summary': outcome_summary}
