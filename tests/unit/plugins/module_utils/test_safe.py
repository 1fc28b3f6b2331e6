# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own rules for names, paths, documents read and JSON written (module_utils/_safe.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import time

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.module_utils import _safe as S


@pytest.mark.parametrize("name", ["vllm", "vllm.service", "vllm@qwen3", "vllm-docker-unit", "jetson-spec-guard-vllm",
                                  "a:b", "x" * 250, "_private", "v\\x2dllm"])
def test_names_the_rule_accepts(name):
    assert S.check_name(name) == name


@pytest.mark.parametrize("name, words", [
    ("-Hlc@evil.service", 'starts with "-"'),     # systemctl would read it as -H (host) lc@evil.service: ssh
    ("-.mount", 'starts with "-"'),               # systemd's own rules allow it; the collection's do not
    ("--help", 'starts with "-"'),
    ("vllm\r\nExecStart=/bin/sh", "a carriage return"),
    ("vllm\nx", "a line feed"),
    ("vllm\x00", "a NUL byte"),
    ("vllm\x7f", "control character"),
    (".hidden", "is not a unit or service name"),
    ("a/b", "is not a unit or service name"),
    ("../etc", "is not a unit or service name"),
    ("a b", "is not a unit or service name"),
    ("", "is not a unit or service name"),
    (None, "is not a unit or service name"),
    (5, "is not a unit or service name"),
    ("x" * 251, "is not a unit or service name"),
])
def test_names_the_rule_refuses_with_the_value_and_what_is_allowed(name, words):
    with pytest.raises(S.InputError) as err:
        S.check_name(name, "guard_unit")
    message = str(err.value)
    assert message.startswith("guard_unit ") and words in message
    assert "allowed: letters, digits and :_.@-" in message and 'not "-" or "."' in message
    assert "\n" not in message and "\r" not in message and "\x00" not in message


def test_a_long_name_is_shown_cut():
    with pytest.raises(S.InputError) as err:
        S.check_name("-" + "x" * 5000)
    assert len(str(err.value)) < 400 and "(5001 characters)" in str(err.value)


@pytest.mark.parametrize("path, words", [
    ("facts/x.fact", "not an absolute path"),
    ("/etc/ansible/facts.d/x\x00.fact", "a NUL byte"),
    ("/etc/x\r\n/y", "a carriage return"),
    ("", "is not a path"),
    (None, "is not a path"),
    (["/etc"], "is not a path"),
])
def test_paths_the_rule_refuses(path, words):
    with pytest.raises(S.InputError) as err:
        S.check_path(path, "fact_file")
    assert str(err.value).startswith("fact_file ") and words in str(err.value)
    assert "absolute path" in str(err.value)


def test_paths_the_rule_accepts():
    assert S.check_path("/etc/ansible/facts.d/jetson_vllm_speculative.fact") == \
        "/etc/ansible/facts.d/jetson_vllm_speculative.fact"
    assert S.check_path(None, "boot_guard", allow_none=True) is None


def test_operands_come_after_end_of_options():
    assert S.end_of_options(["systemctl", "show", "-p", "X"], ["-Hx.service"]) == \
        ["systemctl", "show", "-p", "X", "--", "-Hx.service"]


# --- reading ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, words", [
    ("[" * 1048576, "nests arrays or objects more than 64 deep"),
    ('{"a": ' * 65 + "1" + "}" * 65, "nests arrays or objects more than 64 deep"),
    ('{"baseline_gpu_memory_utilization": 1e999}', "1e999 (infinite as a float"),
    ('{"x": -1e400}', "-1e400 (infinite as a float"),
    ('{"x": NaN}', "NaN (not a number JSON can carry"),
    ('{"x": Infinity}', "Infinity (not a number JSON can carry"),
    ('{"x": -Infinity}', "-Infinity (not a number JSON can carry"),
    ("{not json", "is not JSON"),
    (b"\xff\xfe", "is not UTF-8"),
    (" " * (S.MAX_BYTES + 1), "larger than"),
    (5, "is not text"),
])
def test_documents_that_are_refused_say_why(text, words):
    start = time.monotonic()
    with pytest.raises(S.InputError) as err:
        S.loads(text, "the record")
    assert str(err.value).startswith("the record ") and words in str(err.value)
    assert time.monotonic() - start < 5


def test_a_refused_document_is_a_value_error_so_existing_handlers_catch_it():
    with pytest.raises(ValueError):
        S.loads("[" * 100000)


def test_nesting_at_the_limit_and_brackets_inside_strings_are_fine():
    assert S.loads("[" * 64 + "]" * 64) is not None
    assert S.loads('{"a": "' + "[" * 10000 + '"}') == {"a": "[" * 10000}
    assert S.loads('{"a": "\\"[[[[", "b": [1.5, 2]}') == {"a": '"[[[[', "b": [1.5, 2]}


def test_server_answers_may_carry_nan_when_asked():
    assert math.isnan(S.loads('{"x": NaN}', finite=False)["x"])
    with pytest.raises(S.InputError, match="nests"):
        S.loads("[" * 100000, finite=False)


@pytest.mark.parametrize("text, words", [
    ("[" * 1048576, "more than 64 deep"),
    ("services:\n  vllm: " + "[" * 100 + "]" * 100 + "\n", "more than 64 deep"),
    ("".join(" " * depth + "a:\n" for depth in range(1200)), "too deep"),   # block mappings: Python's own limit
    ("services: [\n", "is not valid YAML"),
])
def test_yaml_that_is_refused_says_why(text, words):
    with pytest.raises(S.InputError) as err:
        S.load_yaml(yaml, text, "/opt/vllm/vllm/compose.yaml")
    assert str(err.value).startswith("/opt/vllm/vllm/compose.yaml ") and words in str(err.value)


def test_yaml_that_is_fine():
    assert S.load_yaml(yaml, "services:\n  vllm:\n    command: [vllm, serve, /m]\n") == \
        {"services": {"vllm": {"command": ["vllm", "serve", "/m"]}}}


# --- writing ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, where", [
    ({"method": "ngram", "num_speculative_tokens": float("nan")}, "speculative_config.num_speculative_tokens is nan"),
    ({"a": {"b": [1, float("inf")]}}, "speculative_config.a.b[1] is inf"),
    ([float("-inf")], "speculative_config[0] is -inf"),
    (float("nan"), "speculative_config is nan"),
])
def test_json_written_never_holds_nan_or_infinity(value, where):
    with pytest.raises(S.InputError) as err:
        S.dumps(value, "speculative_config")
    assert where in str(err.value) and "JSON cannot carry NaN or infinity; allowed: finite numbers" in str(err.value)


def test_json_written_otherwise_is_json_dumps():
    value = {"b": 1, "a": [0.5, "x"]}
    assert S.dumps(value, sort_keys=True, separators=(",", ":")) == '{"a":[0.5,"x"],"b":1}'
