# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

"""The cohort filter: see cohort.yml."""

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import cohort as _cohort


def _mapping(name, value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AnsibleFilterError('cohort: %s must be a dictionary, not %s' % (name, type(value).__name__))
    return dict(value)


def cohort(jetson, software, serve, planned, verdict, workload, model_revision=None, model_config_sha256=None):
    """{key, group, label, parts} of a host: hosts with the same key would measure the same thing."""
    parts = {
        'device': _cohort.device_part(_mapping('jetson', jetson)),
        'software': _mapping('software', software),
        'service': _cohort.service_part(_mapping('serve', serve), model_revision=model_revision,
                                        model_config_sha256=model_config_sha256),
        'planned': _mapping('planned', planned),
        'verdict': _mapping('verdict', verdict),
        'workload': _mapping('workload', workload),
    }
    try:
        result = _cohort.cohort(parts)
    except _cohort.CohortError as exc:
        raise AnsibleFilterError('cohort: %s' % exc)
    result['label'] = _cohort.label(result['parts'])
    return result


class FilterModule(object):
    def filters(self):
        return {'cohort': cohort}
