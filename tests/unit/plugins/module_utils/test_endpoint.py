# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the shared endpoint options (_endpoint): URL, api_key, timeouts, echoed values."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import endpoint as ep
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server.http import Endpoint


@pytest.mark.parametrize('url, expected', [
    ('http://127.0.0.1:8000', 'http://127.0.0.1:8000'),
    ('http://localhost:8000/', 'http://localhost:8000'),
    ('https://jetson.lan', 'https://jetson.lan'),
    ('HTTP://Jetson:9000', 'http://jetson:9000'),
    ('http://[::1]:8000', 'http://[::1]:8000'),
    (' http://jetson-01.lan:8000 ', 'http://jetson-01.lan:8000'),
])
def test_endpoint_normalised(url, expected):
    assert ep.normalise_endpoint(url) == expected


@pytest.mark.parametrize('url, text', [
    ('127.0.0.1:8000', "endpoint '127.0.0.1:8000' must start with http"),
    ('ftp://host', "endpoint 'ftp://host' must start with http"),
    ('http://', 'has no host'),
    ('http://host:8000/v1', "must be the server root without a path"),
    ('http://host:8000/?x=1', 'without a path'),
    ('http://host:99999', 'is not a valid URL'),
    ('http://host:0', 'has port 0'),
    ('http://ho st:8000', 'contains spaces, control or non-ASCII characters'),
    ('http://host\r\nX-Injected: 1', 'contains spaces, control or non-ASCII characters'),
    ('http://hôst:8000', 'contains spaces, control or non-ASCII characters'),
    ('http://ho$t:8000', "has an invalid host 'ho$t'"),
    ('http://user@host', "endpoint 'http://user@host' must not carry credentials"),
])
def test_endpoint_rejected(url, text):
    with pytest.raises(ep.OptionError) as exc:
        ep.normalise_endpoint(url)
    assert text in str(exc.value)


def test_endpoint_with_a_password_is_refused_with_the_password_masked():
    for url in ('http://admin:s3cret-pw@10.0.0.5:8000', 'http://admin:s3cret-pw@10.0.0.5:8000/v1?x=1',
                'http://admin:s3cret-pw@host:99999'):
        with pytest.raises(ep.OptionError) as exc:
            ep.normalise_endpoint(url)
        assert 's3cret-pw' not in str(exc.value)
        assert 'admin:********@' in str(exc.value)
    assert ep.url_password('http://admin:s3cret-pw@10.0.0.5:8000') == 's3cret-pw'
    assert ep.url_password('http://10.0.0.5:8000') is None


def test_a_long_endpoint_is_echoed_truncated():
    url = 'http://' + 'a' * 10000 + '.lan:8000'
    with pytest.raises(ep.OptionError) as exc:
        ep.normalise_endpoint(url)
    assert len(str(exc.value)) < 400 and '(10016 characters)' in str(exc.value)


def test_echo_and_cut():
    assert ep.echo('short') == "'short'"
    assert ep.echo(5) == '5'
    long_text = ep.echo('x' * 1000)
    assert long_text.startswith("'" + 'x' * 120 + "'... (1000 characters)") and len(long_text) < 160
    assert ep.echo(list(range(1000))).endswith('characters)')
    assert ep.cut('y' * 500, 10) == 'yyyyyyyyyy... (500 characters)'
    assert ep.mask_url('see http://u:pw@h:1 and https://v@h') == 'see http://u:********@h:1 and https://v@h'


@pytest.mark.parametrize('key, text', [
    ('sk-abc\n', 'a line feed at character 7 of 7'),
    ('sk-abc\r\n', 'a carriage return at character 7 of 8'),
    ('sk-\x00abc', 'a NUL byte at character 4'),
    ('sk-abc\u00e9', 'a non-ASCII character at character 7'),
    ('sk-\u2603', 'a non-ASCII character'),
    ('sk-\tabc', 'a tab'),
    (' sk-abc', 'starts or ends with a space'),
    ('k' * 5000, 'is 5000 characters long; at most 4096'),
])
def test_api_key_that_cannot_be_a_header_is_refused_without_echoing_it(key, text):
    with pytest.raises(ep.OptionError) as exc:
        ep.check_api_key(key)
    message = str(exc.value)
    assert text in message
    assert 'sk-' not in message and 'abc' not in message and 'kkkk' not in message
    if '\n' in key:
        assert 'YAML' in message


def test_api_key_accepted():
    assert ep.check_api_key('sk-Abc_123.~+/=') == 'sk-Abc_123.~+/='
    assert ep.check_api_key('') is None and ep.check_api_key(None) is None


@pytest.mark.parametrize('name, value, text', [
    ('request_timeout', float('inf'), 'request_timeout must be a finite number > 0 and <= 3600.0 (seconds); got inf'),
    ('request_timeout', 1e10, 'got 10000000000.0'),
    ('request_timeout', -1.0, 'got -1.0'),
    ('request_deadline', float('-inf'), 'request_deadline must be a finite number > 0 and <= 86400.0 (seconds); got -inf'),
    ('request_deadline', 1e6, 'got 1000000.0'),
])
def test_timeouts_are_bounded(name, value, text):
    params = dict(endpoint='http://127.0.0.1:8000', request_timeout=300.0, request_deadline=1800.0)
    params[name] = value
    with pytest.raises(ep.OptionError) as exc:
        ep.check_endpoint_options(params)
    assert text in str(exc.value)


def test_argument_spec_matches_the_doc_fragment():
    import yaml  # the test environment has PyYAML (ansible-core needs it)
    from ansible_collections.jetson_llm.vllm.plugins.doc_fragments.endpoint import ModuleDocFragment
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options']
    spec = ep.endpoint_argument_spec()
    assert sorted(options) == sorted(spec)
    for name, entry in spec.items():
        assert options[name]['type'] == entry['type'], name
        assert options[name].get('default') == entry.get('default'), name
        assert bool(options[name].get('no_log')) is False  # no_log is an argspec key, not a doc key
    assert spec['api_key']['no_log'] is True
    for bound in (ep.REQUEST_TIMEOUT_MAX, ep.REQUEST_DEADLINE_MAX):
        assert ('%g' % bound) in ModuleDocFragment.DOCUMENTATION


def test_scrub_masks_the_key_and_url_passwords():
    endpoint = Endpoint('http://127.0.0.1:8000', 'sk-123', 5, 10)
    assert endpoint.scrub('bad key sk-123 at http://u:pw@h') == 'bad key ******** at http://u:********@h'
    assert Endpoint('http://127.0.0.1:8000').scrub('nothing') == 'nothing'


@pytest.mark.parametrize('host', ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]',
                                  '0:0:0:0:0:0:0:1'])
def test_loopback_listeners_are_not_exposed(host):
    assert ep.exposure_warning(host, None) is None


@pytest.mark.parametrize('host, where', [('0.0.0.0', 'every address of this host'), ('::', 'every address of this host'),
                                         ('192.168.1.20', '192.168.1.20'), ('jetson-01.lan', 'jetson-01.lan')])
def test_a_listener_beyond_the_host_without_a_key_is_a_warning_naming_the_fix(host, where):
    text = ep.exposure_warning(host, None, port=8000)
    assert text.startswith('vLLM listens on %s (port 8000) without an API key' % where)
    assert 'vllm_api_key' in text and 'vllm_host: 127.0.0.1' in text
    assert ep.exposure_warning(host, 'sk-secret') is None  # a key: no warning
