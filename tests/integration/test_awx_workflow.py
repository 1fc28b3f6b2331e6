"""The AWX workflow "canary per cohort, then the rest" (awx/configure.yml), run as AWX runs it, and its configuration
checked against the awx.awx modules.

What was not run: a live AWX (it cannot run on these machines). What is run instead is what AWX does with the
workflow, read in AWX's source (devel, October 2024): every node is a job that ansible-runner runs (the library AWX
runs jobs with); a job's ``set_stats`` artifacts reach the next nodes as extra variables
(``WorkflowJobNode.get_job_kwargs``: the parents' artifacts, shallow-merged with ``dict.update``, then
``extra_vars.update(...)``); a sliced job is N jobs at once, slice k (from 1) of the inventory's hosts sorted by name
taking every N-th host from the k-th (``Inventory.get_script_data``, ``order_by('name')``, then
``get_sliced_hosts``: ``hosts[k - 1::N]``), and slices share nothing. The hosts are systemd-nspawn hosts serving the
Jetson batch SIMULATOR, with the known truths of tests/integration/test_cohorts.py (one cohort where speculation
pays with a planted twin whose draft is 15x slower, one where it loses).
"""
from __future__ import annotations

import ast
import concurrent.futures
import json
import re
import time
from pathlib import Path

import ansible_runner  # tests/requirements.txt: a missing runner fails the suite, never skips it
import pytest
import yaml

from conftest import TOP, _ansible_env
from test_cohorts import LOSES, PAYS, _events, cohort_fleet

OUT = TOP / "tests" / "output" / "awx-workflow"
CONFIGURE = TOP / "awx" / "configure.yml"
BASE_PORT = 18640
HOSTS = {
    "wf-thor-1": ("thor-t5000", PAYS),
    "wf-thor-2": ("thor-t5000", PAYS),
    "wf-thor-3": ("thor-t5000", LOSES),      # PLANTED: its speculation loses; the confirmation must catch it
    "wf-orin-1": ("orin-agx-64gb", LOSES),
    "wf-orin-2": ("orin-agx-64gb", LOSES),
}
# What one job gives on this fleet (test_cohorts.py's first test): {host: (status, cohort role)}.
ONE_JOB = {"wf-thor-1": ("enabled", "verified"), "wf-thor-2": ("enabled", "confirmed"),
           "wf-thor-3": ("reverted", "verified"), "wf-orin-1": ("reverted", "verified"),
           "wf-orin-2": ("reverted", "followed")}
SLICES = 2


# --- awx/configure.yml against the awx.awx modules' documentation ------------------------------------------------
def _awx_modules():
    import ansible_collections.awx.awx  # pylint: disable=import-outside-toplevel
    return Path(ansible_collections.awx.awx.__path__[0]) / "plugins" / "modules"


def module_options(name):
    """The options of awx.awx.<name>, from its DOCUMENTATION (with the shared fragments' auth options)."""
    tree = ast.parse((_awx_modules() / f"{name}.py").read_text())
    text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", None) == "DOCUMENTATION")
    return yaml.safe_load(text)["options"]


def _names(options):
    names = {}
    for key, spec in options.items():
        names[key] = spec
        for alias in spec.get("aliases") or []:
            names[alias] = spec
    return names


def check_args(args, options, where):
    """Every key of ``args`` is an option (or alias) of ``options``; a literal value is in the option's choices;
    nested dictionaries and lists of dictionaries are checked against their suboptions. Returns the problems."""
    problems = []
    names = _names(options)
    for key, value in args.items():
        spec = names.get(key)
        if spec is None:
            problems.append(f"{where}: {key} is not an option (allowed: {', '.join(sorted(options))})")
            continue
        templated = isinstance(value, str) and "{{" in value
        if spec.get("choices") and not templated and value not in spec["choices"]:
            problems.append(f"{where}.{key}: {value!r} is not one of {spec['choices']}")
        sub = spec.get("suboptions")
        if sub and isinstance(value, dict):
            problems += check_args(value, sub, f"{where}.{key}")
        elif sub and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    problems += check_args(item, sub, f"{where}.{key}[{index}]")
    return problems


def _play():
    return yaml.safe_load(CONFIGURE.read_text())[0]


def _render(text, play_vars):
    """The prefix the names are built from, substituted (the only template the names use)."""
    return text.replace("{{ jetson_awx_prefix }}", play_vars["jetson_awx_prefix"]) if isinstance(text, str) else text


def test_the_awx_configuration_uses_only_what_the_awx_awx_modules_document():
    play = _play()
    problems, used = [], set()
    for task in play["tasks"]:
        module = next(key for key in task if key.startswith("awx.awx."))
        name = module.split(".")[-1]
        used.add(name)
        args = task[module]
        if isinstance(args, str):   # the credential type: its file's keys are the module's arguments
            assert "credential_type.yml" in args, args
            args = yaml.safe_load((TOP / "awx" / "credential_type.yml").read_text())
        args = {**(play.get("module_defaults") or {}).get(module, {}), **args}
        problems += check_args(args, module_options(name), f"{task['name']} ({module})")
    nodes = {key: value for key, value in play["vars"].items() if key.startswith("_jetson_awx_node_")}
    wf_options = _names(module_options("workflow_job_template"))["workflow_nodes"]["suboptions"]
    for key, node in nodes.items():
        problems += check_args(node, wf_options, key)
    assert not problems, "\n".join(problems)
    assert used == {"credential_type", "job_template", "workflow_job_template", "schedule"}


def test_the_workflow_is_canaries_then_an_approval_then_the_sliced_rollout_then_the_report():
    play = _play()
    play_vars = play["vars"]
    templates = {}
    for task in play["tasks"]:
        if "awx.awx.job_template" in task:
            args = task["awx.awx.job_template"]
            templates[_render(args["name"], play_vars)] = args
    prefix = play_vars["jetson_awx_prefix"]
    canaries, rollout, report = (templates[f"{prefix}: {what}"] for what in ("canaries", "rollout", "report"))
    # the parts of the rollout each job runs, as extra variables of its template (the report job: reads only)
    assert "'jetson_spec_rollout_part': 'canaries'" in canaries["extra_vars"] and canaries["playbook"] == "enable.yml"
    assert "'jetson_spec_rollout_part': 'others'" in rollout["extra_vars"] and rollout["playbook"] == "enable.yml"
    assert rollout["job_slice_count"] == "{{ jetson_awx_slices }}" and play_vars["jetson_awx_slices"] > 1
    assert canaries.get("job_slice_count") is None, "the canary job must not be sliced (each slice would pick canaries)"
    assert report["playbook"] == "report.yml"
    # the nodes: every edge names a node, every job node names a template defined here
    nodes = {value["identifier"]: value for key, value in play_vars.items() if key.startswith("_jetson_awx_node_")}
    assert set(nodes) == {"canaries", "approve", "rollout", "report"}
    edges = {}
    for ident, node in nodes.items():
        for kind, targets in (node.get("related") or {}).items():
            for target in targets:
                edges.setdefault(ident, []).append((kind, target["identifier"]))
        ujt = node["unified_job_template"]
        if ujt["type"] == "job_template":
            assert _render(ujt["name"], play_vars) in templates, ujt["name"]
    assert edges["canaries"] == [("always_nodes", "{{ 'approve' if jetson_awx_approval | bool else 'rollout' }}")]
    assert edges["approve"] == [("success_nodes", "rollout"), ("failure_nodes", "report")]
    assert edges["rollout"] == [("always_nodes", "report")] and "report" not in edges
    assert nodes["approve"]["unified_job_template"]["type"] == "workflow_approval"
    # the schedule runs the workflow
    schedule = next(task["awx.awx.schedule"] for task in play["tasks"] if "awx.awx.schedule" in task)
    workflow = next(task["awx.awx.workflow_job_template"] for task in play["tasks"]
                    if "awx.awx.workflow_job_template" in task)
    assert schedule["unified_job_template"] == workflow["name"]
    assert re.match(r"DTSTART;TZID=UTC:\d{8}T\d{6} RRULE:FREQ=DAILY;INTERVAL=1\Z", play_vars["jetson_awx_schedule_rrule"])


def test_the_check_above_fails_on_an_option_the_module_does_not_have():
    """The checker itself: a misspelt option, a bad choice and a bad node key are found."""
    options = module_options("job_template")
    assert check_args({"job_slice_count": 2, "slices": 2}, options, "jt") == [
        "jt: slices is not an option (allowed: " + ", ".join(sorted(options)) + ")"]
    assert check_args({"job_type": "deploy"}, options, "jt") == ["jt.job_type: 'deploy' is not one of ['run', 'check']"]
    wf = _names(module_options("workflow_job_template"))["workflow_nodes"]["suboptions"]
    assert check_args({"identifier": "x", "related": {"on_success": []}}, wf, "n")[0].startswith(
        "n.related: on_success is not an option")


# --- the workflow, run as AWX runs it ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workflow_fleet():
    yield from cohort_fleet(HOSTS, "awx-workflow", OUT, BASE_PORT)


def awx_slice(hosts, number, count):
    """The hosts AWX gives slice ``number`` (1-based) of ``count``: sorted by name, every count-th from the
    number-th (Inventory.get_script_data, get_sliced_hosts)."""
    return sorted(hosts)[number - 1::count]


def test_awx_slices_are_every_nth_host_by_name():
    assert awx_slice(["c", "a", "e", "b", "d"], 1, 2) == ["a", "c", "e"]
    assert awx_slice(["c", "a", "e", "b", "d"], 2, 2) == ["b", "d"]
    assert awx_slice(["a"], 2, 2) == []


def run_job(private, ident, playbook, inventory, extravars):
    """One AWX job: ansible-runner, as AWX runs it. Returns (status, stdout, the job's set_stats artifacts)."""
    (private / "project").mkdir(parents=True, exist_ok=True)
    env = _ansible_env()
    result = ansible_runner.run(
        private_data_dir=str(private), playbook=playbook, inventory=str(inventory), ident=ident, quiet=True,
        extravars=extravars, envvars={key: env[key] for key in ("ANSIBLE_COLLECTIONS_PATH", "PATH", "ANSIBLE_NOCOLOR")})
    artifacts = private / "artifacts" / ident
    stdout = (artifacts / "stdout").read_text(errors="replace")
    (OUT / f"job-{ident}.log").write_text(stdout)
    stats = [event for event in _events(artifacts) if event["event"] == "playbook_on_stats"]
    return result.status, stdout, (stats[-1]["event_data"].get("artifact_data") or {}) if stats else {}


def slice_inventory(inventory, hosts, path):
    """The inventory a slice's job gets: the same groups and variables, its hosts only."""
    data = json.loads(Path(inventory).read_text())
    group = data["all"]["children"]["jetsons"]
    group["hosts"] = {name: hvars for name, hvars in group["hosts"].items() if name in hosts}
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def test_the_canary_job_then_the_sliced_rollout_then_the_report_end_as_one_job_does(
        workflow_fleet, tmp_path, monkeypatch):  # pylint: disable=redefined-outer-name
    fleet = workflow_fleet
    monkeypatch.setenv("PATH", _ansible_env()["PATH"])
    # The job templates' own extra variables (awx/configure.yml), the report directory shared by the jobs.
    template_vars = {"jetson_spec_report_dir": str(fleet.report_dir), "jetson_spec_canary_size": 2,
                     "jetson_spec_batch_size": 3}
    pids = {name: fleet.fleet.main_pid(name) for name in HOSTS}
    started = time.time() - 1

    # 1. The canary job: one canary per cohort verifies in full; nothing else restarts.
    # (AWX gives every job its id: the canary job's has fewer digits than the slices', as job 9 before job 701)
    status, out, artifacts = run_job(tmp_path / "canaries", "canaries", "jetson_llm.vllm.enable_speculation",
                                     fleet.inventory, {**template_vars, "jetson_spec_rollout_part": "canaries",
                                                       "awx_job_id": 9, "tower_job_id": 9})
    assert status == "successful", out[-6000:]
    assert "wf-thor-1: CANARY of cohort" in out and "wf-orin-1: CANARY of cohort" in out
    assert out.count("CANARY of cohort") == 2
    for name in ("wf-thor-2", "wf-thor-3", "wf-orin-2"):
        assert fleet.starts_since(name, started) == 0 and fleet.fact(name) is None, name
    verdicts = artifacts["jetson_spec_cohort_verdicts"]
    assert sorted((value["canary"], value["status"]) for value in verdicts.values()) == [
        ("wf-orin-1", "reverted"), ("wf-thor-1", "enabled")], verdicts
    assert sorted(artifacts["jetson_spec_results_job_9"]) == ["wf-orin-1", "wf-thor-1"]
    # Its summary leaves the other hosts to the rollout job (not "not attempted": nothing went wrong there); only the
    # reverted canary needs attention.
    summary = artifacts["jetson_spec_fleet"]
    assert sorted(summary["hosts_by_status"]["left_to_rollout"]) == ["wf-orin-2", "wf-thor-2", "wf-thor-3"], summary
    assert "not_attempted" not in summary["hosts_by_status"] and summary["attention"] == ["wf-orin-1"], summary
    canary_artifacts = artifacts

    # 2. The rollout job, sliced: AWX gives each slice the canary job's artifacts as extra variables, over the
    #    template's; the slices run at once and share nothing. No slice picks a canary.
    extra = {**template_vars, "jetson_spec_rollout_part": "others"}
    extra.update(artifacts)
    slices = {number: awx_slice(HOSTS, number, SLICES) for number in range(1, SLICES + 1)}
    assert slices == {1: ["wf-orin-1", "wf-thor-1", "wf-thor-3"], 2: ["wf-orin-2", "wf-thor-2"]}
    rollout_started = time.time() - 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=SLICES) as pool:
        # AWX gives every job, each slice included, its own awx_job_id (and tower_job_id).
        jobs = {number: pool.submit(run_job, tmp_path / f"slice{number}", f"slice{number}",
                                    "jetson_llm.vllm.enable_speculation",
                                    slice_inventory(fleet.inventory, hosts, tmp_path / f"slice{number}.json"),
                                    {**extra, "awx_job_id": 700 + number, "tower_job_id": 700 + number})
                for number, hosts in slices.items()}
        results = {number: job.result() for number, job in jobs.items()}
    for number, (status, out, _artifacts) in results.items():
        assert status == "successful", f"slice {number}:\n{out[-6000:]}"
        assert "CANARY" not in out, f"slice {number} picked a canary"
    for name in ("wf-thor-1", "wf-orin-1"):   # the canaries, in sync: not restarted by their slice
        assert fleet.starts_since(name, rollout_started) == 0, name
    assert fleet.starts_since("wf-thor-2", rollout_started) == 1, "a confirmation is one restart"
    assert fleet.fleet.main_pid("wf-orin-2") == pids["wf-orin-2"], "a twin of a reverted canary is never restarted"

    # The same outcomes as one job: every host's status and its role in its cohort.
    facts = {name: fleet.fact(name) for name in HOSTS}
    assert {name: (fact["status"], fact["cohort"]["role"]) for name, fact in facts.items()} == ONE_JOB, \
        {name: fact["reasons"] for name, fact in facts.items()}
    assert facts["wf-thor-2"]["cohort"]["canary"] == "wf-thor-1" and facts["wf-orin-2"]["cohort"]["canary"] == "wf-orin-1"
    assert facts["wf-thor-3"]["cohort"]["confirmation"]["confirmed"] is False

    # What AWX hands the next node: its ancestors' artifacts (the canary job's, then the slices' in the order they
    # finished) shallow-merged, so one slice's jetson_spec_results replaces the other's (the key is the same); each
    # job's own key keeps its hosts.
    merged = dict(canary_artifacts)
    for _status, _out, slice_artifacts in results.values():
        merged.update(slice_artifacts)
    assert set(merged["jetson_spec_results"]) < set(HOSTS)
    assert {key: sorted(value) for key, value in merged.items() if key.startswith("jetson_spec_results_job_")} == {
        "jetson_spec_results_job_9": ["wf-orin-1", "wf-thor-1"],
        **{f"jetson_spec_results_job_{700 + number}": sorted(hosts) for number, hosts in slices.items()}}

    # 3. The report job: one report of the whole fleet, from every host's record.
    status, out, artifacts = run_job(tmp_path / "report", "report", "jetson_llm.vllm.report", fleet.inventory,
                                     {**template_vars, **merged})
    assert status == "successful", out[-6000:]
    report = json.loads((fleet.report_dir / "fleet-report.json").read_text())
    assert {row["host"]: row["status"] for row in report["hosts"]} == {name: ONE_JOB[name][0] for name in HOSTS}
    summary = artifacts["jetson_spec_fleet"]
    assert int(summary["total"]) == len(HOSTS) and summary["by_status"]["enabled"] == 2
    assert summary["by_status"]["reverted"] == 3
    # ... and every host's result from the workflow, the jobs' merged back into one artifact in job order: the
    # canaries as their slice last reported them (in sync, changed nothing), not as the canary job did.
    results = artifacts["jetson_spec_results"]
    assert {name: (result["status"], result["cohort"]["role"]) for name, result in results.items()} == ONE_JOB
    assert results["wf-thor-1"]["changed_this_run"] is False and results["wf-thor-2"]["changed_this_run"] is True
