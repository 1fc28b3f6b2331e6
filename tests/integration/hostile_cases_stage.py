"""Hostile inputs for speculative_stage (format: tests/integration/hostile.py).

Bad numbers (NaN, infinity, huge), control characters and credentials in the source, destinations that are not
directories (a FIFO, a file, the root, a relative name starting with "-"), manifests that escape the model directory,
and mirrors that lie or never end (the faulty servers of tests/utils/fake_vllm.py, asked for a manifest). Every case
fails with the bad value named, within its time bound, and leaves nothing at the destination.
"""
from __future__ import annotations

import os
import tempfile

from hostile import Hostile

MODULE = "jetson_llm.vllm.speculative_stage"
MIRROR = os.path.join(tempfile.gettempdir(), "hostile-stage-mirror-%d" % os.getuid())


def _mirror():
    """A source directory: a FIFO where a file belongs, and a manifest naming it and one that escapes."""
    os.makedirs(MIRROR, exist_ok=True)
    fifo = os.path.join(MIRROR, "model.safetensors")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    with open(os.path.join(MIRROR, "SHA256SUMS"), "w", encoding="utf-8") as handle:
        handle.write("%s  model.safetensors\n" % ("0" * 64))
    with open(os.path.join(MIRROR, "ESCAPES"), "w", encoding="utf-8") as handle:
        handle.write("%s  ../../etc/shadow\n" % ("0" * 64))
    return MIRROR


def bad(case_id, args, expect, secrets=(), max_seconds=60.0, server=None):
    base = {"source": _mirror(), "dest": "{tmp}/staged"}
    base.update(args)
    return Hostile(id="stage-" + case_id, module=MODULE, args=base, expect=tuple(expect), secrets=tuple(secrets),
                   writes="{tmp}/staged", max_seconds=max_seconds, server=server, tags=("stage",))


CASES = [
    bad("timeout-nan", {"timeout": "nan"}, ["timeout is nan", "above 0 and at most 3600"]),
    bad("timeout-inf", {"timeout": "inf"}, ["timeout is inf"]),
    bad("deadline-huge", {"deadline": 1e308}, ["deadline is 1e+308", "at most 86400"]),
    bad("min-free-negative", {"min_free_mb": -5}, ["min_free_mb is -5", "0 to 1048576"]),
    bad("max-total-huge", {"max_total_mb": 10 ** 15}, ["max_total_mb is 1000000000000000", "1 to 1048576"]),
    bad("source-crlf", {"source": "http://mirror.example/models/\r\nX-Injected: 1"}, ["is not a URL or a path"]),
    bad("source-nul", {"source": "/srv/models\u0000/draft"}, ["is not a URL or a path"]),
    bad("source-credentials", {"source": "https://admin:hunter2-stage@mirror.example/models/"},
        ["holds credentials in its URL", "token"], secrets=["hunter2-stage"]),
    bad("source-file-scheme", {"source": "file:///etc/"}, ["allowed: an http:// or https:// URL"]),
    bad("source-missing-dir", {"source": "/nonexistent/hostile/mirror"}, ["does not exist on this host"]),
    bad("dest-relative-dash", {"dest": "-rf"}, ["dest", "-rf", "not an absolute path"]),
    bad("dest-root", {"dest": "/"}, ["is the root directory"]),
    bad("dest-is-a-fifo", {"dest": os.path.join(_mirror(), "model.safetensors")}, ["is a FIFO, not a directory"]),
    bad("dest-under-a-file", {"dest": os.path.join(_mirror(), "SHA256SUMS", "draft")}, ["its parent"]),
    bad("manifest-escapes", {"manifest": "ESCAPES"}, ["../../etc/shadow", "is not inside the model directory"]),
    bad("manifest-parent", {"manifest": "../SHA256SUMS"}, ["manifest", "is not inside the model directory"]),
    bad("checksums-not-hex", {"checksums": {"model.safetensors": "z" * 64}}, ["not a SHA-256"]),
    bad("checksums-empty", {"checksums": {}}, ["checksums must be a dictionary"]),
    bad("source-fifo-file", {"min_free_mb": 0}, ["model.safetensors is a FIFO, not a regular file"], max_seconds=30),
    bad("token-not-shown", {"source": "/nonexistent/hostile/mirror", "token": "tok-stage-SECRET-77"},
        ["does not exist"], secrets=["tok-stage-SECRET-77"]),
    # Mirrors that lie or never end: a manifest asked from a faulty server.
    bad("mirror-endless-manifest", {"source": "{endpoint}/v1/", "manifest": "models", "deadline": 3, "timeout": 2},
        ["deadline (3 s)"], server="models_endless_body", max_seconds=30),
    bad("mirror-redirect-loop", {"source": "{endpoint}/v1/", "manifest": "models", "timeout": 2},
        ["GET", "answered HTTP 30"], server="redirect_loop", max_seconds=30),
    bad("mirror-huge-headers", {"source": "{endpoint}/v1/", "manifest": "models", "timeout": 2},
        ["failed"], server="models_huge_headers", max_seconds=30),
]
