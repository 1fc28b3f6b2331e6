# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The options that name the vLLM service a module works on.

    The argument spec of each section is in plugins/module_utils/_service/options.py: service_argument_spec() for
    ``jetson_llm.vllm.service`` (with its required_if rule, COMPOSE_NEEDS_PROJECT), name_argument_spec() for
    ``jetson_llm.vllm.service.name``. The name rule is check_name() in plugins/module_utils/_safe.py.
    """

    # manager and project_src (speculative_state, speculative_overlay, vllm_health).
    DOCUMENTATION = r'''
options:
  manager:
    description: How the service is deployed.
    type: str
    choices: [systemd, compose]
    default: systemd
  project_src:
    description: The compose project directory, an absolute path (required with O(manager=compose)).
    type: path
'''

    # name, required (speculative_state, speculative_overlay, vllm_service_info).
    NAME = r'''
options:
  name:
    description:
      - The vLLM service, a systemd unit (with or without C(.service), for example C(vllm) or C(vllm@qwen3.service))
        or a compose service.
      - Letters, digits and C(:_.@-\) (1 to 250 characters), not starting with C(-) or C(.) (a name is an operand of
        commands such as C(systemctl) and C(docker)); anything else fails and nothing is read or changed.
    type: str
    required: true
'''
