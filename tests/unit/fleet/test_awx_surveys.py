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


#: What an operator decides at launch (a rollout's shape, which hosts, whether to verify again). Everything that
#: describes a host or a family stays in the inventory: a survey answer would override it on every host.
LAUNCH_TIME = {"jetson_spec_hosts", "jetson_spec_force_verify", "jetson_spec_canary_size", "jetson_spec_batch_size",
               "jetson_spec_max_fail_percentage", "jetson_spec_max_unavailable", "jetson_spec_report_dir"}


def _surveys():
    return [(name, json.loads((TOP / "awx" / ("survey_%s.json" % name)).read_text())) for name in sorted(CONFIG)]


@pytest.mark.parametrize("name, survey", _surveys())
def test_no_question_has_a_default_so_an_unanswered_one_sends_nothing(name, survey):
    """AWX adds a question's default to the extra variables even when it is not answered (checked in its source):
    a default would override the inventory on every host."""
    for item in survey["spec"]:
        assert "default" not in item, "%s: %s has a default" % (name, item["variable"])
        assert item["required"] is False
        if item["type"] in ("text", "textarea", "password"):
            assert item["min"] >= 1, "AWX sends an empty text answer unless the minimum length is at least 1"


@pytest.mark.parametrize("name, survey", _surveys())
def test_only_launch_time_decisions_are_asked_with_human_titles(name, survey):
    asked = [item["variable"] for item in survey["spec"]]
    assert set(asked) <= LAUNCH_TIME, sorted(set(asked) - LAUNCH_TIME)
    for item in survey["spec"]:
        assert "_" not in item["question_name"] and item["question_name"][0].isupper(), item["question_name"]
        assert "Empty - " in item["question_description"], "the help does not say what applies when empty"


@pytest.mark.parametrize("name, survey", _surveys())
def test_types_and_choices_come_from_the_argument_specs(name, survey):
    options = yaml.safe_load((TOP / "roles" / CONFIG[name]["role"] / "meta" / "argument_specs.yml").read_text())
    options = options["argument_specs"]["main"]["options"]
    for item in survey["spec"]:
        option = CONFIG[name]["playbook_options"].get(item["variable"]) or options[item["variable"]]
        expected = {"bool": "multiplechoice", "int": "integer", "float": "float", "str": "text"}[option["type"]]
        assert item["type"] == expected, item
        if option["type"] == "bool":
            assert item["choices"] == ["true", "false"]


def test_the_help_text_names_the_playbooks_own_defaults():
    """What applies when a question is left empty is what the playbooks use when nothing is given."""
    text = (TOP / "playbooks" / "enable_speculation.yml").read_text()
    report = (TOP / "playbooks" / "tasks" / "fleet_report.yml").read_text()
    survey = dict(_surveys())["enable_speculation"]
    helps = {item["variable"]: item["question_description"] for item in survey["spec"]}
    assert "jetson_spec_hosts | default('jetsons')" in text and "the group jetsons" in helps["jetson_spec_hosts"]
    assert "jetson_spec_canary_size | default(1)" in text and helps["jetson_spec_canary_size"].endswith("Empty - 1.")
    assert "jetson_spec_batch_size | default('25%')" in text and helps["jetson_spec_batch_size"].endswith("Empty - 25%.")
    assert "jetson_spec_max_fail_percentage | default(20)" in text
    assert helps["jetson_spec_max_fail_percentage"].endswith("Empty - 20.")
    assert "jetson_spec_report_dir | default('reports')" in report and helps["jetson_spec_report_dir"].endswith("reports.")


def test_question_types():
    assert gen.question("secret", {"type": "str", "no_log": True}, "Secret", "Empty - none.")["type"] == "password"
    assert gen.question("d", {"type": "dict"}, "D", "h") is None
    assert gen.question("l", {"type": "list", "choices": ["a", "b"]}, "L", "h")["type"] == "multiselect"
    assert "default" not in gen.question("i", {"type": "int", "default": 3}, "I", "h")


def test_an_unknown_or_untitled_question_is_refused():
    with pytest.raises(gen.SurveyError, match="neither an option"):
        gen.build("x", {"role": "speculative_decoding", "ask": {"jetson_spec_nope": {"title": "T", "help": "h"}}})
    with pytest.raises(gen.SurveyError, match="needs a title"):
        gen.build("x", {"role": "speculative_decoding", "ask": {"jetson_spec_force_verify": {"help": "h"}}})
