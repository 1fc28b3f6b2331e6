"""The AWX surveys leave the inventory in charge: a job launched from them, as AWX launches it, sees the group_vars
and host_vars, not the survey's.

AWX builds a job's extra variables from the job template's, then every survey question's default that passes the
question's validation (answered or not), then the answers (``SurveyJobTemplateMixin._update_unified_job_kwargs``,
read in AWX's source; docs/fleet.md). ``awx_extra_vars`` does the same here, and ansible-runner (the library AWX runs
jobs with) runs a playbook with them against an inventory whose group_vars and host_vars set the same variables.
Every surveys' question is left unanswered, then one is answered: the unanswered ones must not reach the hosts.
A survey with the defaults the generator used to write (a control) shows what went wrong: it overrode the inventory.
"""
from __future__ import annotations

import json

import ansible_runner
import pytest

from conftest import TOP, _ansible_env

PLAYBOOK = TOP / "tests" / "integration" / "playbooks" / "awx" / "survey_vars.yml"
SURVEYS = ("enable_speculation", "disable_speculation")


def _valid(item, value):
    """AWX's _survey_element_validation for one value (the checks that decide whether a default is used)."""
    kind = item["type"]
    if kind in ("text", "textarea", "password"):
        return isinstance(value, str) and (item.get("min") in ("", None) or len(value) >= int(item["min"]))
    if kind == "integer":
        return type(value) is int  # noqa: E721  pylint: disable=unidiomatic-typecheck
    if kind == "float":
        return type(value) in (float, int)  # noqa: E721  pylint: disable=unidiomatic-typecheck
    if kind == "multiplechoice":
        return value in item["choices"]
    return isinstance(value, list) and all(v in item["choices"] for v in value)


def awx_extra_vars(survey, answers, template_extra_vars=None):
    """A job's extra variables as AWX makes them: the template's, every valid default, then the answers."""
    extra = dict(template_extra_vars or {})
    for item in survey["spec"]:
        if item.get("default") is not None and _valid(item, item["default"]):
            extra[item["variable"]] = item["default"]
    extra.update(answers)
    return extra


def run_job(tmp_path, extra_vars):
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    (inventory / "hosts.yml").write_text(
        "jetsons:\n  hosts:\n    orin-1:\n    orin-2:\n  vars:\n    ansible_connection: local\n"
        "    ansible_python_interpreter: /usr/bin/python3\n")
    # the per-family advice of inventories/example: a group var, and a host var on one host
    (inventory / "group_vars" / "jetsons.yml").write_text(
        "jetson_spec_c8_margin: 0.08\njetson_spec_force_verify: true\njetson_spec_method: draft_model\n")
    (inventory / "host_vars" / "orin-2.yml").write_text("jetson_spec_expected_concurrency: 8\n")
    out = tmp_path / "seen"
    out.mkdir()
    (tmp_path / "runner").mkdir()
    env = _ansible_env()
    result = ansible_runner.run(
        private_data_dir=str(tmp_path / "runner"), playbook=str(PLAYBOOK), inventory=str(inventory),
        extravars=dict(extra_vars, out_dir=str(out)), quiet=True,
        envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_PYTHON_INTERPRETER", "PATH")})
    assert result.status == "successful", result.stdout.read()[-3000:]
    return {host: json.loads((out / ("%s.json" % host)).read_text()) for host in ("orin-1", "orin-2")}


@pytest.mark.parametrize("name", SURVEYS)
def test_an_unanswered_survey_leaves_group_and_host_vars_in_charge(name, tmp_path):
    survey = json.loads((TOP / "awx" / ("survey_%s.json" % name)).read_text())
    extra = awx_extra_vars(survey, {})
    assert extra == {}, "an unanswered survey sends %s" % extra
    seen = run_job(tmp_path, extra)
    assert seen["orin-1"]["c8_margin"] == 0.08 and seen["orin-2"]["c8_margin"] == 0.08      # group var
    assert seen["orin-1"]["force_verify"] is True                                             # group var
    assert seen["orin-1"]["expected_concurrency"] is None and seen["orin-2"]["expected_concurrency"] == 8  # host var
    assert seen["orin-1"]["method"] == "draft_model"


def test_an_answer_is_what_the_operator_decided_and_nothing_else(tmp_path):
    survey = json.loads((TOP / "awx" / "survey_enable_speculation.json").read_text())
    extra = awx_extra_vars(survey, {"jetson_spec_force_verify": "false", "jetson_spec_report_dir": "/srv/reports"})
    assert extra == {"jetson_spec_force_verify": "false", "jetson_spec_report_dir": "/srv/reports"}
    seen = run_job(tmp_path, extra)
    assert seen["orin-1"]["force_verify"] == "false" and seen["orin-1"]["report_dir"] == "/srv/reports"
    assert seen["orin-2"]["c8_margin"] == 0.08 and seen["orin-2"]["expected_concurrency"] == 8


def test_control_a_survey_with_defaults_overrides_the_inventory_on_every_host(tmp_path):
    """What the generated surveys did before: every default reached every host, answered or not."""
    survey = {"spec": [
        {"variable": "jetson_spec_c8_margin", "type": "float", "default": 0.05, "required": False},
        {"variable": "jetson_spec_expected_concurrency", "type": "integer", "default": 1, "required": False},
        {"variable": "jetson_spec_method", "type": "multiplechoice", "default": "auto", "required": False,
         "choices": ["auto", "eagle3", "draft_model"]},
    ]}
    seen = run_job(tmp_path, awx_extra_vars(survey, {}))
    assert seen["orin-1"]["c8_margin"] == 0.05 and seen["orin-2"]["expected_concurrency"] == 1
    assert seen["orin-2"]["method"] == "auto"
