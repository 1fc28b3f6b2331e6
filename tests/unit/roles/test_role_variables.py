"""Every variable a role's templates read is defined somewhere a run can define it.

A misspelt name in a template (``jetson_spec_tune_min_acceptance`` renamed by an edit) fails only when that task
runs, which may be one branch of one scenario. This reads every Jinja expression of the roles and the collection's
playbooks (task arguments, ``when``/``that``/``until``/``changed_when``/``failed_when``, templates, vars and defaults)
and checks each variable it reads against what the roles and playbooks define (defaults, vars, argument specs,
``set_fact``, ``register``, ``vars:``, loop variables, ``set_stats``) and Ansible's own names.
"""
import re
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
import yaml

TOP = Path(__file__).resolve().parents[3]
ROLES = TOP / "roles"
PLAYBOOKS = TOP / "playbooks"
BARE_KEYS = ("when", "that", "until", "changed_when", "failed_when")
# Ansible's magic variables, facts and Jinja globals the roles use.
ANSIBLE_NAMES = {
    "omit", "item", "inventory_hostname", "inventory_hostname_short", "hostvars", "groups", "group_names", "role_path",
    "playbook_dir", "lookup", "query", "q", "now", "range", "dict", "lipsum", "cycler", "joiner", "namespace", "undef",
    "none", "true", "false", "True", "False", "None",
}


class _Undefined(yaml.SafeLoader):
    """YAML with Ansible's tags (!unsafe, !vault) read as plain strings."""


_Undefined.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                                 if isinstance(node, yaml.ScalarNode) else None)


def _yaml(path):
    return yaml.load(path.read_text(), Loader=_Undefined)  # noqa: S506 - SafeLoader subclass


def _files():
    files = []
    for role in sorted(p for p in ROLES.iterdir() if p.is_dir()):
        for sub in ("tasks", "handlers", "vars", "defaults"):
            files += sorted((role / sub).glob("*.yml"))
    return files + sorted(PLAYBOOKS.glob("*.yml"))


def _walk(node, key=None):
    """(key, string) for every string in a YAML tree, with the mapping key it sits under."""
    if isinstance(node, dict):
        for k, value in node.items():
            yield from _walk(value, k)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, key)
    elif isinstance(node, str):
        yield key, node


def _tasks(node):
    """Every task-like mapping (tasks, blocks, plays, handlers) in a YAML tree."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _tasks(value)


def _defined():
    names = set()
    for role in (p for p in ROLES.iterdir() if p.is_dir()):
        for sub in ("defaults", "vars"):
            for path in (role / sub).glob("*.yml"):
                names.update((_yaml(path) or {}).keys())
        spec = role / "meta" / "argument_specs.yml"
        if spec.is_file():
            for entry in (_yaml(spec)["argument_specs"] or {}).values():
                names.update((entry.get("options") or {}).keys())
    for path in _files():
        for task in _tasks(_yaml(path)):
            for key in ("ansible.builtin.set_fact", "set_fact", "vars"):
                if isinstance(task.get(key), dict):
                    names.update(task[key].keys())
            if isinstance(task.get("register"), str):
                names.add(task["register"])
            loop_control = task.get("loop_control")
            if isinstance(loop_control, dict) and loop_control.get("loop_var"):
                names.add(loop_control["loop_var"])
            stats = task.get("ansible.builtin.set_stats")
            if isinstance(stats, dict) and isinstance(stats.get("data"), dict):
                names.update(stats["data"].keys())
    return names


def _expressions():
    """(file, source) for every template string and bare conditional, as Jinja source."""
    out = []
    for path in _files():
        for key, text in _walk(_yaml(path)):
            if key in BARE_KEYS and "{{" not in text and "{%" not in text:
                out.append((path, "{{ %s }}" % text))
            elif "{{" in text or "{%" in text:
                out.append((path, text))
    for role in (p for p in ROLES.iterdir() if p.is_dir()):
        for path in sorted((role / "templates").glob("*.j2")):
            out.append((path, path.read_text()))
    return out


class _Any(dict):
    """Every filter and test name is known: only the variables are checked here."""

    def __contains__(self, _name):
        return True

    def get(self, name, default=None):
        return super().get(name, lambda *_args, **_kwargs: None)


ENV = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
ENV.filters = _Any(ENV.filters)
ENV.tests = _Any(ENV.tests)


def _optional(name, source):
    """A name read only with a default or behind ``is defined`` is an optional input (e.g. an extra var); one set in
    a branch of the same template (``{% set %}`` inside ``{% if %}``, which Jinja's analysis cannot follow) is
    defined there."""
    return bool(re.search(r"\b%s\s*\|\s*default\(|\b%s\s+is\s+(not\s+)?(un)?defined|\bset\s+%s\s*="
                          % (name, name, name), source))


DEFINED = _defined()
EXPRESSIONS = _expressions()


def test_the_scan_finds_the_roles_templates():
    assert len(EXPRESSIONS) > 500 and len(DEFINED) > 150
    assert "jetson_spec_tune_min_acceptance" in DEFINED and "_jetson_spec_action" in DEFINED


@pytest.mark.parametrize("path", sorted({p for p, _src in EXPRESSIONS}), ids=lambda p: str(p.relative_to(TOP)))
def test_every_variable_read_is_defined(path):
    unknown = {}
    for where, source in EXPRESSIONS:
        if where != path:
            continue
        for name in jinja2.meta.find_undeclared_variables(ENV.parse(source)):
            if name in DEFINED or name in ANSIBLE_NAMES or name.startswith("ansible_") or _optional(name, source):
                continue
            unknown.setdefault(name, source.strip()[:160])
    assert not unknown, "%s reads variables nothing defines: %s" % (
        path.relative_to(TOP), "; ".join("%s (in %r)" % item for item in sorted(unknown.items())))


def test_a_misspelt_name_is_found():
    source = "{{ (x | float) > (jetson_spec_tune_min_jetson_spec_tune.best.acceptance_c1 | float) }}"
    names = jinja2.meta.find_undeclared_variables(ENV.parse(source)) - DEFINED
    assert names == {"x", "jetson_spec_tune_min_jetson_spec_tune"}
