"""AWX / AAP survey specs from awx/surveys.yml and the roles' meta/argument_specs.yml.

    python3 awx/generate_surveys.py            # writes awx/survey_<playbook>.json
    python3 awx/generate_surveys.py --check    # exit 1 when a committed survey is out of date

A survey asks only what awx/surveys.yml lists under ``ask`` (what an operator decides at launch), each with a human
title and help text; the type and choices come from the role's argument spec or the playbook's own settings. No
question has a default: AWX applies a default even to an unanswered question, and a survey answer is an extra
variable that wins over the inventory for every host, so an unanswered question must send nothing.
Types: str / path -> text (multiplechoice with choices), no_log -> password, int -> integer, float -> float,
bool -> multiplechoice "true" / "false", list with choices -> multiselect.
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


def question(variable, option, title, help_text):
    """One survey question, with no default (an unanswered question sends nothing), or None when the option has no
    survey type."""
    kind = option.get("type", "str")
    choices = option.get("choices")
    item = {
        "question_name": title,
        "question_description": _plain(" ".join(str(help_text).split()))[:900],
        "variable": variable,
        "required": False,
    }
    if option.get("no_log"):
        item.update(type="password", min=0, max=TEXT_MAX)
    elif choices and kind == "list":
        item.update(type="multiselect", choices=[str(c) for c in choices])
    elif choices:
        item.update(type="multiplechoice", choices=[str(c) for c in choices])
    elif kind == "bool":
        item.update(type="multiplechoice", choices=["true", "false"])
    elif kind == "int":
        item.update(type="integer")
    elif kind == "float":
        item.update(type="float")
    elif kind in ("str", "path", "raw"):
        # min 1: AWX drops an empty text answer only when the question's minimum length is at least 1
        item.update(type="text", min=1, max=TEXT_MAX)
    else:
        return None
    return item


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def build(name, config, top=TOP):
    """The survey spec (a dict) for one playbook."""
    role = config["role"]
    options = _load(top / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    playbook = config.get("playbook_options") or {}
    spec = []
    for variable, asked in (config.get("ask") or {}).items():
        option = playbook.get(variable) or options.get(variable)
        if option is None:
            raise SurveyError("%s: %s is neither an option of the %s role nor a playbook option" % (name, variable, role))
        if not asked or not asked.get("title") or not asked.get("help"):
            raise SurveyError("%s: %s needs a title and a help text" % (name, variable))
        item = question(variable, option, asked["title"], asked["help"])
        if item is None:
            raise SurveyError("%s: %s has no survey type (a dictionary or a list without choices)" % (name, variable))
        spec.append(item)
    description = " ".join(str(config.get("description", "")).split())
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
