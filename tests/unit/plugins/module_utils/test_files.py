# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""write_atomic: whole or not at all, with the mode asked for, also over a file of another mode."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_llm.vllm.plugins.module_utils._files import parent_problem, write_atomic

from ansible_collections.jetson_llm.vllm.tests.unit.plugins.modules.utils import patch_module_args


@pytest.fixture
def module():
    with patch_module_args({}):
        yield AnsibleModule(argument_spec={})


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_a_new_file_in_a_new_directory(module, tmp_path):
    path = tmp_path / "a" / "b" / "x.conf"
    write_atomic(module, str(path), u"caf\u00e9\n", 0o644)
    assert path.read_bytes() == u"caf\u00e9\n".encode("utf-8")
    assert mode(path) == 0o644 and mode(path.parent) & 0o777 == 0o755
    assert [p.name for p in path.parent.iterdir()] == ["x.conf"], "a temporary file is left"


@pytest.mark.parametrize("old, new", [(0o644, 0o600), (0o600, 0o644), (0o640, 0o600)])
def test_the_mode_asked_for_not_the_replaced_files(module, tmp_path, old, new):
    # AnsibleModule.atomic_move gives the new file the mode of the one it replaces: a secret written over a 0644
    # file would stay world-readable without write_atomic's own chmod.
    path = tmp_path / "x.conf"
    path.write_bytes(b"old\n")
    os.chmod(str(path), old)
    write_atomic(module, str(path), b"new\n", new)
    assert path.read_bytes() == b"new\n" and mode(path) == new


def test_a_failed_write_leaves_the_old_file_and_no_temporary(module, tmp_path, monkeypatch):
    path = tmp_path / "x.conf"
    path.write_bytes(b"old\n")

    def refuse(_src, _dest, **_kwargs):
        raise OSError("no room left")

    monkeypatch.setattr(module, "atomic_move", refuse)
    with pytest.raises(OSError):
        write_atomic(module, str(path), b"new\n", 0o644)
    assert path.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.conf"]


class Failed(Exception):
    pass


@pytest.fixture
def failing(module, monkeypatch):
    """fail_json raises Failed(msg) instead of exiting."""
    def fail_json(**kwargs):
        raise Failed(kwargs["msg"])
    monkeypatch.setattr(module, "fail_json", fail_json)
    return module


def test_a_parent_that_is_a_regular_file_is_a_clear_failure_and_nothing_is_written(failing, tmp_path):
    (tmp_path / "facts.d").write_bytes(b"operator's file\n")
    path = tmp_path / "facts.d" / "sub" / "x.fact"
    assert parent_problem(str(path)) == "its parent %s is a regular file, not a directory" % (tmp_path / "facts.d")
    with pytest.raises(Failed, match="Cannot write .*x.fact: its parent .*facts.d is a regular file"):
        write_atomic(failing, str(path), b"{}\n", 0o644)
    assert (tmp_path / "facts.d").read_bytes() == b"operator's file\n"


def test_a_parent_that_is_a_fifo_is_named(tmp_path):
    os.mkfifo(str(tmp_path / "pipe"))
    assert parent_problem(str(tmp_path / "pipe" / "x")) == "its parent %s is a FIFO, not a directory" % (tmp_path / "pipe")
    assert parent_problem(str(tmp_path / "new" / "deeper" / "x")) is None


def test_a_full_file_system_is_a_clear_failure_with_no_temporary_left(failing, tmp_path, monkeypatch):
    path = tmp_path / "x.conf"
    path.write_bytes(b"old\n")
    real_fdopen = os.fdopen

    class Full(object):
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, _data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(Failed, match="Cannot write .*x.conf: No space left on device. Nothing was changed."):
        write_atomic(failing, str(path), b"new\n", 0o644)
    assert path.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.conf"]
