# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """How modules of this collection reach a vLLM OpenAI-compatible server."""

    DOCUMENTATION = r'''
options:
  endpoint:
    description:
      - Root URL of the vLLM OpenAI-compatible server, as seen from the target (the module runs on the target).
      - C(http) or C(https), a host and an optional port; no path (the module adds C(/v1/...), C(/metrics)...).
      - HTTPS certificates are verified against the target's system CA store.
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description:
      - "The server's API key (C(vllm serve --api-key) or E(VLLM_API_KEY)), sent as C(Authorization: Bearer <key>)."
      - Never logged and removed from error messages.
      - Leave unset for a server started without an API key.
    type: str
  request_timeout:
    description:
      - Seconds to wait for the server on each network operation of a request (connecting, the answer, each next chunk of a stream).
      - A request that stays silent longer fails with a message naming this timeout.
    type: float
    default: 300
'''
