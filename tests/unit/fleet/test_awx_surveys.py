"""AWX survey specs generated from the roles' argument specs: up to date, valid, role defaults."""
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

TOP = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("generate_surveys", TOP / "awx" / "generate_surveys.py")
gen = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gen)

CONFIG = yaml.safe_load((TOP / "awx" / "surveys.yml").read_text())["surveys"]
TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")


def validate(survey):
    """The checks AWX's API applies to a survey spec (POST .../survey_spec/); a list of errors."""
    errors = []
    for key in ("name", "description", "spec"):
        if key not in survey:
            errors.append("missing %s" % key)
    if not isinstance(survey.get("spec"), list) or not survey.get("spec"):
        return errors + ["spec must be a non-empty list"]
    seen = set()
    for index, item in enumerate(survey["spec"]):
        where = "spec[%d]" % index
        if not isinstance(item, dict):
            errors.append("%s is not an object" % where)
            continue
        for key in ("type", "question_name", "variable", "required"):
            if key not in item:
                errors.append("%s: missing %s" % (where, key))
        if item.get("type") not in TYPES:
            errors.append("%s: type %r" % (where, item.get("type")))
        if item.get("variable") in seen:
            errors.append("%s: duplicate variable %s" % (where, item.get("variable")))
        seen.add(item.get("variable"))
        if not isinstance(item.get("required"), bool):
            errors.append("%s: required must be a boolean" % where)
        default = item.get("default")
        kind = item.get("type")
        if kind in ("multiplechoice", "multiselect"):
            choices = item.get("choices")
            if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
                errors.append("%s: choices must be a non-empty list of strings" % where)
            elif kind == "multiplechoice" and default not in ("", None) and default not in choices:
                errors.append("%s: default %r not in choices" % (where, default))
            elif kind == "multiselect" and default not in ("", None):
                bad = [d for d in str(default).split("\n") if d not in choices]
                if bad:
                    errors.append("%s: defaults %r not in choices" % (where, bad))
        if kind == "integer" and default not in ("", None) and (isinstance(default, bool) or not isinstance(default, int)):
            errors.append("%s: integer default %r" % (where, default))
        if kind == "float" and default not in ("", None) and (isinstance(default, bool) or not isinstance(default, (int, float))):
            errors.append("%s: float default %r" % (where, default))
        if kind in ("text", "textarea", "password") and default not in (None,):
            if not isinstance(default, str):
                errors.append("%s: text default %r is not a string" % (where, default))
            elif "min" in item and isinstance(item["min"], int) and len(default) < item["min"]:
                errors.append("%s: default shorter than min" % where)
            elif "max" in item and isinstance(item["max"], int) and len(default) > item["max"]:
                errors.append("%s: default longer than max" % where)
    return errors


@pytest.mark.parametrize("name", sorted(CONFIG))
def test_committed_survey_is_what_the_generator_writes(name):
    committed = (TOP / "awx" / ("survey_%s.json" % name)).read_text()
    assert committed == gen.render(gen.build(name, CONFIG[name])), \
        "awx/survey_%s.json is out of date: run python3 awx/generate_surveys.py" % name


@pytest.mark.parametrize("name", sorted(CONFIG))
def test_survey_validates(name):
    survey = json.loads((TOP / "awx" / ("survey_%s.json" % name)).read_text())
    assert validate(survey) == []


def test_validator_rejects_what_awx_rejects():
    bad = {"name": "x", "description": "", "spec": [
        {"type": "multiplechoice", "question_name": "a", "variable": "a", "required": False, "choices": ["x"], "default": "y"},
        {"type": "integer", "question_name": "b", "variable": "b", "required": "no", "default": "3"},
        {"type": "boolean", "question_name": "a", "variable": "a", "required": False},
    ]}
    errors = validate(bad)
    assert any("not in choices" in e for e in errors) and any("integer default" in e for e in errors)
    assert any("type 'boolean'" in e for e in errors) and any("duplicate" in e for e in errors)
    assert any("required must be a boolean" in e for e in errors)


def _answer(item):
    """The value the role receives for the question's default (AWX passes multiplechoice as text)."""
    if item["type"] == "multiplechoice" and item["choices"] == ["true", "false"]:
        return item["default"] == "true"
    return item["default"]


@pytest.mark.parametrize("name", sorted(CONFIG))
def test_defaults_equal_the_role_defaults_and_every_option_is_accounted_for(name):
    config = CONFIG[name]
    role = TOP / "roles" / config["role"]
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    survey = json.loads((TOP / "awx" / ("survey_%s.json" % name)).read_text())
    asked = {item["variable"]: item for item in survey["spec"]}
    role_questions = [v for v in asked if v in options]
    assert role_questions, "no role option asked"
    for variable in role_questions:
        item = asked[variable]
        expected = defaults[variable]
        value = _answer(item)
        if isinstance(expected, bool) or item["type"] in ("integer", "float"):
            assert value == expected and type(value) is type(expected), (variable, value, expected)
        else:
            assert value == str(expected), (variable, value, expected)
        if options[variable].get("no_log"):
            assert item["type"] == "password"
        if options[variable].get("choices"):
            assert item["choices"] == [str(c) for c in options[variable]["choices"]]
        assert item["required"] is bool(options[variable].get("required", False))
    wanted = config.get("include") or list(options)
    for variable in wanted:
        accounted = (variable in asked or variable in (config.get("exclude") or [])
                     or variable in survey["description"])
        assert accounted, "%s is neither asked nor named in the survey description" % variable
    for variable, option in (config.get("playbook_options") or {}).items():
        assert asked[variable]["default"] == option["default"]


def test_playbook_option_defaults_match_the_playbooks():
    """The survey's rollout defaults are the ones the playbooks use when nothing is given."""
    text = (TOP / "playbooks" / "enable_speculation.yml").read_text()
    options = CONFIG["enable_speculation"]["playbook_options"]
    assert "jetson_spec_hosts | default('%s')" % options["jetson_spec_hosts"]["default"] in text
    assert "jetson_spec_canary_size | default(%s)" % options["jetson_spec_canary_size"]["default"] in text
    assert "jetson_spec_batch_size | default('%s')" % options["jetson_spec_batch_size"]["default"] in text
    assert "jetson_spec_max_fail_percentage | default(%d)" % options["jetson_spec_max_fail_percentage"]["default"] in text
    report = (TOP / "playbooks" / "tasks" / "fleet_report.yml").read_text()
    assert "jetson_spec_report_dir | default('%s')" % options["jetson_spec_report_dir"]["default"] in report


def test_no_log_becomes_password():
    item = gen.question("secret", {"type": "str", "no_log": True, "description": "x"}, "")
    assert item["type"] == "password"
    assert gen.question("d", {"type": "dict"}, {}) is None
    assert gen.question("l", {"type": "list", "choices": ["a", "b"]}, ["a"])["type"] == "multiselect"
