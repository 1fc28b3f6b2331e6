# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""speculative_state's drain marker: a host an interrupted run left out of service."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.jetson_llm.vllm.plugins.modules.speculative_state import StateReader


class _Module(object):
    def __init__(self, marker):
        self.params = {'drain_marker': marker}


def _drained(marker):
    reader = StateReader(_Module(marker))
    reader.read_drain_marker()
    return reader.drained


@pytest.mark.parametrize('kind, drained', [
    (None, False), ('file', True), ('empty', True), ('fifo', True), ('directory', True), ('dangling', False),
])
def test_any_file_at_the_marker_says_the_host_is_still_out_of_service(tmp_path, kind, drained):
    marker = tmp_path / 'vllm.drained.json'
    if kind == 'file':
        marker.write_text('{"drained": "2026-12-07T10:00:00Z"}\n')
    elif kind == 'empty':
        marker.write_text('')
    elif kind == 'fifo':
        os.mkfifo(str(marker))
    elif kind == 'directory':
        marker.mkdir()
    elif kind == 'dangling':
        marker.symlink_to(tmp_path / 'gone')
    assert _drained(str(marker)) is drained


def test_no_marker_option_is_never_drained():
    assert _drained(None) is False
