"""The hostile-input suite's case format (tests/integration/test_hostile_inputs.py runs them).

Each area of the collection lists its cases in ``tests/integration/hostile_cases_<area>.py`` as a
module-level ``CASES`` list of :class:`Hostile`. The runner collects every such file, runs each case
through the real ``ansible-playbook`` on localhost (one task of a generated playbook), and asserts, for every case:

* the outcome is the expected one (``failed`` with a clear message, or ``ok`` for a documented
  fallback such as approximate prompt lengths with a warning);
* every ``expect`` substring is in the message (case-insensitive): the bad value, what is allowed;
* no traceback text anywhere in the output;
* no ``secrets`` substring anywhere in the output (stdout and stderr, every field);
* ``writes`` (a path) does not exist afterwards: nothing was written;
* the run ends within ``max_seconds``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Hostile:
    id: str                         # unique, e.g. "benchmark-api-key-crlf"
    module: str                     # FQCN, e.g. "jetson_llm.vllm.vllm_benchmark"
    args: dict                      # module arguments ("{endpoint}" in a string is the case's server URL)
    expect: tuple = ()              # substrings that must be in msg (outcome failed) or in the warnings (ok)
    outcome: str = "failed"         # "failed" or "ok"
    secrets: tuple = ()             # must appear nowhere in the output
    server: Optional[str] = None    # a faulty-server behaviour of tests/utils/fake_vllm.py, or None
    writes: Optional[str] = None    # a path that must not exist after the run
    max_seconds: float = 60.0       # bounded run time
    tags: tuple = field(default_factory=tuple)
