# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared plumbing for the module unit tests: run a module's main() and catch its result."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import contextlib
import json

import pytest

from ansible.module_utils import basic

try:  # ansible-core >= 2.19
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core 2.18
    from unittest import mock

    @contextlib.contextmanager
    def patch_module_args(args=None):
        data = json.dumps({'ANSIBLE_MODULE_ARGS': args or {}}).encode()
        with mock.patch.object(basic, '_ANSIBLE_ARGS', data):
            yield


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def capture_module(monkeypatch, warnings):
    """Make exit_json/fail_json raise ExitJson/FailJson and collect warn() texts in `warnings`."""

    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    def fail_json(self, **kwargs):
        raise FailJson(kwargs)

    def warn(self, msg):
        warnings.append(msg)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', warn)


def run_main(main, args):
    """Run a module's main() with `args`; return (ExitJson or FailJson, the result dict)."""
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as exc:
            main()
    return exc.type, exc.value.args[0]
