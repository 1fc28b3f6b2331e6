# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""speculative_state's exposure: who can use the model, from vLLM's parsed arguments."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.modules.speculative_state import service_exposure


@pytest.mark.parametrize('serve, exposed, where', [
    ({'host': None, 'api_key_set': False, 'port': 8000}, True, 'every address of this host (port 8000)'),
    ({'host': '0.0.0.0', 'api_key_set': False, 'port': 8000}, True, 'every address of this host'),
    ({'host': '192.168.1.20', 'api_key_set': False, 'port': 8000}, True, '192.168.1.20'),
    ({'host': '0.0.0.0', 'api_key_set': True, 'port': 8000}, False, None),
    ({'host': '127.0.0.1', 'api_key_set': False, 'port': 8000}, False, None),
    ({'host': '::1', 'api_key_set': False}, False, None),
    ({}, True, 'every address of this host'),
])
def test_service_exposure(serve, exposed, where):
    exposure = service_exposure(serve)
    assert exposure['exposed'] is exposed
    assert exposure['listen_host'] == serve.get('host') and exposure['api_key'] is bool(serve.get('api_key_set'))
    if where:
        assert where in exposure['warning'] and 'vllm_api_key' in exposure['warning']
    else:
        assert exposure['warning'] is None
