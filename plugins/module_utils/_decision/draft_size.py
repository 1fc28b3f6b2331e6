# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The size of a local draft model's weights (private to this collection).

``speculative_plan`` uses it when ``draft_size_mb`` is not given and the draft is a local
path: the sum of the weight files (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.gguf``) directly
in that directory, in MB rounded up. Symbolic links (the Hugging Face cache layout) are
followed; only regular files count.

It also reads a local target's ``config.json`` (``local_model_config``), from which the plan tells
whether the target carries its own multi-token-prediction (MTP) layers.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat

from ansible_collections.jetson_llm.vllm.plugins.module_utils._safe import loads

WEIGHT_SUFFIXES = ('.safetensors', '.bin', '.pt', '.gguf')
MAX_ENTRIES = 10000  # a model directory has a few dozen files; stop counting beyond this
MB = 1024 * 1024
MAX_CONFIG_BYTES = 4 * MB  # a model's config.json is a few KB; a larger file is not one


def weights_size_mb(path):
    """MB (rounded up) of the weight files directly in ``path``; None when there are none or it is unreadable."""
    total = 0
    found = False
    try:
        entries = os.scandir(path)
    except (IOError, OSError):
        return None
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_ENTRIES:
                return None
            if not entry.name.lower().endswith(WEIGHT_SUFFIXES):
                continue
            try:
                info = os.stat(entry.path)
            except (IOError, OSError):
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                found = True
    if not found:
        return None
    return (total + MB - 1) // MB


def local_model_config(path):
    """The parsed ``config.json`` of the local model directory ``path`` (a dict), or None.

    None when there is no such regular file (a FIFO, a directory, a dangling link), it is larger than
    MAX_CONFIG_BYTES, unreadable, not JSON or not a JSON object: the plan then knows nothing from it.
    """
    name = os.path.join(path, 'config.json')
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except (IOError, OSError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG_BYTES:
            return None
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
    except (IOError, OSError):
        return None
    finally:
        os.close(fd)
    try:
        config = loads(data, 'config.json', finite=False)
    except ValueError:
        return None
    return config if isinstance(config, dict) else None
