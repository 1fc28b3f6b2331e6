# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """How modules of this collection reach a vLLM OpenAI-compatible server.

    The argument spec of these options is endpoint_argument_spec() in plugins/module_utils/_server/endpoint.py.
    Modules using them are in the C(jetson_llm.vllm.vllm) action group (meta/runtime.yml), so a play can
    set them once with C(module_defaults).
    """

    DOCUMENTATION = r'''
options:
  endpoint:
    description:
      - Root URL of the vLLM OpenAI-compatible server, as seen from the target (the module runs on the target).
      - C(http) or C(https), a host and an optional port; no path (the module adds C(/v1/...), C(/metrics)...), no query,
        no credentials (give the key in O(api_key)); printable ASCII, at most 2048 characters.
      - HTTPS certificates are verified against the target's system CA store. Redirects are not followed.
      - A password written into the URL is refused and masked in every message.
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description:
      - "The server's API key (C(vllm serve --api-key) or E(VLLM_API_KEY)), sent as C(Authorization: Bearer <key>)."
      - Printable ASCII without leading or trailing spaces, at most 4096 characters. A key with a line break (a YAML C(|) block
        adds a trailing newline), a control or a non-ASCII character is refused before any request, with a message saying
        which character and where, never the key.
      - Never logged and never shown in any message.
      - Leave unset for a server started without an API key.
    type: str
  request_timeout:
    description:
      - Seconds to wait for the server on each network operation of a request (connecting, the answer, each next chunk of a stream).
      - A request that stays silent longer fails with a message naming this timeout.
      - A finite number greater than 0 and at most 3600.
    type: float
    default: 300
  request_deadline:
    description:
      - "Seconds one whole HTTP exchange may take (one streamed completion, one C(/tokenize), C(/metrics) or C(/v1/models) call),
        however the server trickles bytes. A server that keeps a stream open with SSE comments (C(: keep-alive)) or sends an endless
        body fails the request when this deadline passes, so the module always returns."
      - Unlike O(request_timeout), it is not reset by received bytes. Set it above the longest request you expect (the output length in
        tokens at the slowest TPOT, plus TTFT under load).
      - A finite number greater than 0 and at most 86400.
      - "Unset: M(jetson_llm.vllm.vllm_benchmark) derives it from its workload, 120 s + 1 s per output token + 0.02 s per
        input token (289 s for the specification's 2048 in / 128 out; a Jetson decodes several tokens a second per request
        even at concurrency 8), so a server that stalls holds a run for minutes, not half an hour; the other modules use
        120 s (their exchanges are short)."
    type: float
'''
