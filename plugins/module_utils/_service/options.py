# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options that name the vLLM service a module works on (private to this collection).

Documented once in the ``jetson_llm.vllm.service`` doc fragment (plugins/doc_fragments/service.py), one function per
section of it, so a module takes exactly the options it documents from there:

- ``service_argument_spec()``: ``manager`` (systemd or compose) and ``project_src``, with ``COMPOSE_NEEDS_PROJECT``
  for ``required_if`` (the fragment's default section, ``jetson_llm.vllm.service``);
- ``name_argument_spec()``: ``name``, required (its ``name`` section, ``jetson_llm.vllm.service.name``).

The name rule itself is ``check_name()`` in plugins/module_utils/_safe.py (``NAME_ALLOWED``); the modules apply it.
A module whose option differs (vllm_service_info's ``manager`` has ``auto``, vllm_health's ``name`` may be empty)
documents and specs that option itself.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

#: The required_if rule that goes with service_argument_spec(): a compose service is found through its project.
COMPOSE_NEEDS_PROJECT = ('manager', 'compose', ('project_src',))


def service_argument_spec():
    """The argument spec of ``manager`` and ``project_src`` (the ``jetson_llm.vllm.service`` doc fragment)."""
    return dict(
        manager=dict(type='str', default='systemd', choices=['systemd', 'compose']),
        project_src=dict(type='path'),
    )


def name_argument_spec():
    """The argument spec of ``name``, required (the ``jetson_llm.vllm.service.name`` doc fragment)."""
    return dict(
        name=dict(type='str', required=True),
    )
