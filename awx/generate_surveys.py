"""AWX / AAP survey specs from the roles' meta/argument_specs.yml (and awx/surveys.yml).

    python3 awx/generate_surveys.py            # writes awx/survey_<playbook>.json
    python3 awx/generate_surveys.py --check    # exit 1 when a committed survey is out of date

Types: str / path -> text (multiplechoice with choices), no_log -> password, int -> integer,
float -> float, bool -> multiplechoice "true" / "false", list with choices -> multiselect. dict, and
list without choices, have no survey type: the survey's description names them. Defaults are the
role's defaults (defaults/main.yml), which a unit test keeps equal to the argument specs. Survey
answers are extra variables: they win over the inventory for every host (so per-host options are
left to the inventory: `inventory_only` in awx/surveys.yml), and the role's argument spec checks
them at the start of the run.
Controller-side tool (PyYAML).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

TOP = Path(__file__).resolve().parents[1]
CONFIG = TOP / "awx" / "surveys.yml"
TEXT_MAX = 4096


class SurveyError(ValueError):
    """An option cannot be asked as configured."""


def _plain(text):
    """Ansible doc markup -> plain text: C(x) -> x, and so on."""
    out, i = [], 0
    while i < len(text):
        if text[i] in "CVOMEIBLU" and text[i + 1:i + 2] == "(" and (i == 0 or not text[i - 1].isalnum()):
            close = text.find(")", i + 2)
            if close > 0:
                out.append(text[i + 2:close])
                i = close + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def question(variable, option, default, override=None):
    """One survey question, or None when the option has no survey type."""
    option = dict(option, **(override or {}))
    kind = option.get("type", "str")
    choices = option.get("choices")
    description = option.get("description", "")
    if isinstance(description, list):
        description = " ".join(description)
    item = {
        "question_name": variable,
        "question_description": _plain(" ".join(str(description).split()))[:900],
        "variable": variable,
        "required": bool(option.get("required", False)),
    }
    if option.get("no_log"):
        item.update(type="password", min=0, max=TEXT_MAX, default="" if default is None else str(default))
    elif choices and kind == "list":
        item.update(type="multiselect", choices=[str(c) for c in choices],
                    default="\n".join(str(d) for d in (default or [])))
    elif choices:
        item.update(type="multiplechoice", choices=[str(c) for c in choices],
                    default=_text_default(default))
    elif kind == "bool":
        item.update(type="multiplechoice", choices=["true", "false"], default="true" if default else "false")
    elif kind == "int":
        item.update(type="integer", default=default)
    elif kind == "float":
        item.update(type="float", default=default)
    elif kind in ("str", "path", "raw"):
        item.update(type="text", min=0, max=TEXT_MAX, default="" if default is None else _text_default(default))
    else:
        return None
    return item


def _text_default(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def build(name, config, top=TOP):
    """The survey spec (a dict) for one playbook."""
    role = config["role"]
    options = _load(top / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = _load(top / "roles" / role / "defaults" / "main.yml")
    wanted = config.get("include") or list(options)
    for variable in wanted:
        if variable not in options:
            raise SurveyError("%s: %s is not an option of the %s role" % (name, variable, role))
    overrides = config.get("overrides") or {}
    spec, not_asked, inventory_only = [], [], []
    for variable in wanted:
        if variable in (config.get("exclude") or []):
            continue
        if variable in (config.get("inventory_only") or []):
            inventory_only.append(variable)
            continue
        item = question(variable, options[variable], defaults.get(variable, options[variable].get("default")),
                        overrides.get(variable))
        if item is None:
            not_asked.append(variable)
        else:
            spec.append(item)
    for variable, option in (config.get("playbook_options") or {}).items():
        item = question(variable, option, option.get("default"))
        if item is None:
            raise SurveyError("%s: playbook option %s has no survey type" % (name, variable))
        spec.append(item)
    description = " ".join(str(config.get("description", "")).split())
    if inventory_only:
        description += (" Per host, from the inventory (an answer would override every host): %s."
                        % ", ".join(inventory_only))
    if not_asked:
        description += (" Not asked (dictionaries and lists: set them in the inventory or the job template's extra "
                        "variables): %s." % ", ".join(not_asked))
    return {"name": config["name"], "description": description, "spec": spec}


def render(survey):
    return json.dumps(survey, indent=2, sort_keys=False) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    parser.add_argument("--out", default=str(TOP / "awx"), help="output directory (default: awx/)")
    args = parser.parse_args(argv)
    stale = []
    for name, config in _load(CONFIG)["surveys"].items():
        path = Path(args.out) / ("survey_%s.json" % name)
        text = render(build(name, config))
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
            print(path)
    if stale:
        print("out of date (run python3 awx/generate_surveys.py): %s" % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
