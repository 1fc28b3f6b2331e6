"""What an operator reads: markup ansible-doc renders whole, and no internal issue numbers.

Every module's DOCUMENTATION and RETURN, every filter's documentation, the roles' argument specs and doc fragments
are read as ansible-doc reads them: ``C(...)``, ``I(...)``, ``B(...)``, ``M(...)``, ``U(...)`` end at the first ``)``
(ansible-core's classic markup has no escape), so a ``(`` inside one renders broken ("C(B // (K + 1))" shows
"`B // (K + 1'"); the semantic ``O()``, ``V()``, ``E()``, ``RV()`` take ``\\)`` for a literal ``)``.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

TOP = Path(__file__).resolve().parents[3]
_CLASSIC = re.compile(r"\b([CIBMU])\(([^)]*)\)")
_SEMANTIC = re.compile(r"\b(O|V|E|RV)\(((?:[^\\)]|\\.)*)\)")


def _module_docs(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "RETURN", "EXAMPLES"):
                    yield "%s %s" % (path.relative_to(TOP), target.id), node.value.value


def _fragment_docs(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    yield "%s %s" % (path.relative_to(TOP), target.id), node.value.value


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def documents():
    docs = []
    for path in sorted((TOP / "plugins" / "modules").glob("*.py")):
        docs.extend(_module_docs(path))
    for path in sorted((TOP / "plugins" / "doc_fragments").glob("*.py")):
        docs.extend(_fragment_docs(path))
    for path in sorted((TOP / "plugins" / "filter").glob("*.yml")):
        docs.append((str(path.relative_to(TOP)), path.read_text()))
    for path in sorted((TOP / "roles").glob("*/meta/argument_specs.yml")):
        docs.append((str(path.relative_to(TOP)), path.read_text()))
    return docs


DOCS = documents()


def _strings(text):
    """The strings of a YAML document (a doc string that is not YAML is taken whole)."""
    try:
        return list(_texts(yaml.safe_load(text)))
    except yaml.YAMLError:
        return [text]


@pytest.mark.parametrize("where, text", DOCS, ids=[where for where, _text in DOCS])
def test_markup_renders_whole(where, text):
    broken = []
    for string in _strings(text):
        for match in _CLASSIC.finditer(string):
            if "(" in match.group(2):
                broken.append(match.group(0))
        for match in _SEMANTIC.finditer(string):
            content = re.sub(r"\\.", "", match.group(2))
            if content.count("(") != content.count(")"):
                broken.append(match.group(0))
    assert not broken, "%s: markup ansible-doc cuts at the first ')': %s" % (where, broken)


def test_the_markup_check_finds_what_ansible_doc_breaks():
    assert _CLASSIC.search("at most C(B // (K + 1)) requests").group(2) == "B // (K + 1"
    assert _SEMANTIC.search(r"V(B // (K + 1\))").group(2) == r"B // (K + 1\)"


# "issue 21", "Issues #10", and a bare "#37" (this project's numbers have one or two digits; vLLM's, vllm#41838, more)
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? #?\d+\b|(?<![\w/&])#\d{1,2}\b")


def user_texts():
    paths = [TOP / "README.md"] + sorted((TOP / "docs").glob("*.md")) + sorted((TOP / "roles").glob("*/README.md"))
    paths += sorted((TOP / "awx").glob("*.json")) + sorted((TOP / "roles").glob("*/meta/argument_specs.yml"))
    paths += sorted((TOP / "playbooks").rglob("*.yml")) + sorted((TOP / "roles").glob("*/tasks/*.yml"))
    paths += sorted((TOP / "plugins").rglob("*.py")) + sorted((TOP / "plugins" / "filter").glob("*.yml"))
    paths += sorted((TOP / "awx").glob("*.yml")) + sorted((TOP / "awx").glob("*.py"))
    for part in ("defaults", "vars", "handlers", "templates"):
        paths += sorted(path for path in (TOP / "roles").glob("*/%s/*" % part) if path.is_file())
    paths += sorted(path for path in (TOP / "inventories").rglob("*") if path.is_file())
    paths += sorted((TOP / "changelogs" / "fragments").glob("*.yml")) + [TOP / "galaxy.yml"]
    return paths


def test_the_issue_number_pattern_finds_internal_numbers_and_leaves_vllms():
    for internal in ("issue 21", "(Issues #10)", "see #37 for the rest", "#7."):
        assert ISSUE_NUMBER.search(internal), internal
    for reference in ("vllm#41838", "vLLM PR #41838", "color: #333;", "&#39;", "docs/fleet.md#cohorts", "# 1 comment"):
        assert not ISSUE_NUMBER.search(reference), reference


@pytest.mark.parametrize("path", user_texts(), ids=lambda path: str(path.relative_to(TOP)))
def test_no_internal_issue_number_in_what_users_read(path):
    """This project's own issue numbers mean nothing to an operator (vLLM's, written vllm#N, are references)."""
    found = [line.strip()[:120] for line in path.read_text().splitlines() if ISSUE_NUMBER.search(line)]
    assert not found, "%s names an internal issue: %s" % (path.relative_to(TOP), found)
