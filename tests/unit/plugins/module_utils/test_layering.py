"""The private packages of module_utils import one another without a cycle: _decision (what to do) imports
nothing of _server (talking to vLLM), which may import it. A cycle would make a decision depend on I/O code and
its tests on the server's."""
from __future__ import annotations

import ast
from pathlib import Path

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PACKAGES = sorted(p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and (p / "__init__.py").exists())
PREFIX = "ansible_collections.jetson_llm.vllm.plugins.module_utils."


def _imported_packages(package):
    found = set()
    for path in (MODULE_UTILS / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith(PREFIX):
                    other = name[len(PREFIX):].split(".")[0]
                    if other in PACKAGES and other != package:
                        found.add(other)
    return found


def test_the_packages_import_one_another_without_a_cycle():
    edges = {package: _imported_packages(package) for package in PACKAGES}
    assert {"_decision", "_server", "_service", "_jetson"} <= set(edges), edges
    assert "_server" not in edges["_decision"], "_decision imports _server"

    def reaches(start, goal, seen=()):
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen + (nxt,))) for nxt in edges[start])

    cycles = [package for package in PACKAGES if reaches(package, package)]
    assert not cycles, f"import cycles through {cycles}: {edges}"
