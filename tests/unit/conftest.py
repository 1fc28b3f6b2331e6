"""Let plain `pytest tests/unit` import the collection as ansible_collections.jetson_llm.vllm.

Under `ansible-test units` the collection is already importable and this does nothing.
"""
import subprocess
import sys
from pathlib import Path

try:
    import ansible_collections.jetson_llm.vllm  # noqa: F401  pylint: disable=unused-import
except ImportError:
    _TOP = Path(__file__).resolve().parents[2]
    subprocess.run([str(_TOP / "tests" / "utils" / "collection.sh"), "link"], check=True,
                   stdout=subprocess.DEVNULL)
    sys.path.insert(0, str(_TOP / ".build" / "collections"))
