"""The roles on real systemd hosts serving a real vLLM: the outcomes that rest on measured speed.

thor-accept (real vLLM: accept with K tuning, re-runs, re-verification, the batch-size-aware try) and thor-batch (the
Jetson batch SIMULATOR: the batch-size-aware configuration kept; a failed revert). This file runs in the integration's
timed part, alone on the machine; the hosts, the workload and the helpers are tests/integration/roles_fleet.py's, and
test_roles_lifecycle.py has the other two hosts' scenarios.
"""
from __future__ import annotations

import json
import re
import shutil
import time

import pytest

from conftest import TOP, recap
# pytest fixture, used by name:
from vllm_testbed import testbed  # noqa: F401  pylint: disable=unused-import
from roles_fleet import (
    BATCH_SIMULATOR_PROFILE, CANDIDATE, DRAIN_MARKER, HOOK_VARS, HOSTS, METRICS, MODELS, OVERLAY, UNIT, WORKLOAD,
    assert_record_is_reality, check_baseline_deployed, fleet_of, get, healthy, nspawn, restart_by_hand,
    wait_healthy,
)


@pytest.fixture(scope="module")
def fleet(testbed):  # noqa: ARG001  (the test bed must be installed)
    yield from fleet_of(("thor-accept", "thor-batch"), "timed")


# --- the serve role ---------------------------------------------------------------------------------
def test_serve_role_deploys_a_healthy_baseline_with_secrets_in_a_root_only_file(fleet):
    check_baseline_deployed(fleet)


# A unit or compose file serve did not write (no `(jetson_llm.vllm.serve)` in its header) is copied before it is
# replaced (issue 36). On thor-batch: its simulator starts in about 2 s, and its first speculative run comes later.
BACKUP_DIR = "/var/lib/jetson_llm/serve-backups"


COPY_KEPT = re.compile(rf"a copy is kept at ({re.escape(BACKUP_DIR)}/vllm\.service\.[0-9]{{8}}T[0-9]{{6}}Z) ")


def hand_written(unit, note):
    """``unit`` as an operator who wrote it by hand has it: without the collection's header, with a note of theirs
    and their own Description= (what serve renders is otherwise the same, so the host serves the same either way)."""
    lines = unit.decode().splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    body = "".join(lines).replace("Description=vLLM OpenAI-compatible server", "Description=vLLM, set up by hand", 1)
    return f"# {note}\n{body}".encode()


def kept_copies(fleet, name):
    directory = fleet.hosts[name].path(BACKUP_DIR)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_serve_role_keeps_a_copy_of_a_hand_written_unit_before_it_replaces_it(fleet):
    name, serve_only = "thor-batch", {"test_run_speculative": False}
    unit = fleet.hosts[name].path(UNIT)
    unit_before = unit.read_bytes()
    assert b"(jetson_llm.vllm.serve)" in unit_before and kept_copies(fleet, name) == []
    operator = hand_written(unit_before, "vLLM on this Jetson, written by hand (ops ticket 4711)")
    assert b"jetson_llm.vllm.serve" not in operator and b"Description=vLLM, set up by hand" in operator
    unit.write_bytes(operator)
    try:
        # Check mode says where the copy would go, and copies and changes nothing.
        _rc, out = fleet.play(name, extra=serve_only, check=True)
        assert (f"{UNIT} was not written by jetson_llm.vllm.serve: it would be replaced, and a copy kept at "
                f"{BACKUP_DIR}/vllm.service.<UTC time of the run>") in out, out[-4000:]
        assert not fleet.hosts[name].path(BACKUP_DIR).exists() and unit.read_bytes() == operator

        # The run copies the operator's bytes (root only) before the template replaces them, and says where.
        _rc, out = fleet.play(name, extra=serve_only)
        found = COPY_KEPT.findall(out)
        assert len(found) == 1 and f"{UNIT} was not written by jetson_llm.vllm.serve" in out, out[-4000:]
        copy = fleet.hosts[name].path(found[0])
        assert kept_copies(fleet, name) == [copy.name]
        assert copy.read_bytes() == operator
        assert copy.stat().st_mode & 0o7777 == 0o600 and copy.stat().st_uid == 0
        assert fleet.hosts[name].path(BACKUP_DIR).stat().st_mode & 0o7777 == 0o700
        assert unit.read_bytes() == unit_before, "the unit is not the collection's again"
        assert healthy(name)

        # The unit is the collection's now: the next run copies nothing, changes nothing, restarts nothing.
        pid = fleet.main_pid(name)
        _rc, out = fleet.play(name, extra=serve_only)
        assert recap(out, name)["changed"] == 0 and "was not written by" not in out, out[-4000:]
        assert kept_copies(fleet, name) == [copy.name] and fleet.main_pid(name) == pid

        # Another hand-written version with one copy kept: only the newest copy remains.
        second = hand_written(unit_before, "vLLM on this Jetson, edited by hand again (ops ticket 4712)")
        unit.write_bytes(second)
        _rc, out = fleet.play(name, extra={**serve_only, "vllm_definition_backups_keep": 1})
        found = COPY_KEPT.findall(out)
        assert len(found) == 1 and "(root only; the last 1 copy is kept)" in out, out[-4000:]
        newest = fleet.hosts[name].path(found[0])
        assert newest.name > copy.name and kept_copies(fleet, name) == [newest.name]
        assert newest.read_bytes() == second
        assert unit.read_bytes() == unit_before and healthy(name)
    finally:
        # The host as the later tests expect it: the collection's unit, running, no copies.
        if unit.read_bytes() != unit_before:
            unit.write_bytes(unit_before)
            fleet.hosts[name].nsenter(["systemctl", "daemon-reload"])
            fleet.hosts[name].nsenter(["systemctl", "restart", "vllm.service"])
            wait_healthy(fleet, name)
        shutil.rmtree(fleet.hosts[name].path(BACKUP_DIR), ignore_errors=True)


# --- accept ------------------------------------------------------------------------------------------
# The accept host's draft agrees with its target (acceptance ~100 %): K tuning tries K + 1. One step here
# (the short version; the role's default is 2).
ACCEPT_VARS = {"jetson_spec_draft_model": str(MODELS / "draft-deep-1layer"), "jetson_spec_tune_max_steps": 1}


def test_accept_enables_speculation_tunes_k_and_records_it(fleet):
    baseline_unit = fleet.read("thor-accept", UNIT)
    pid_before, calls = fleet.main_pid("thor-accept"), fleet.lb_calls("thor-accept")
    # With the newest ansible-core this collection supports (the oldest runs the reject, the batch simulator's keep
    # and a refusal): its enable path on a real systemd host with real vLLM.
    _rc, out = fleet.play("thor-accept", extra={**ACCEPT_VARS, **HOOK_VARS}, core="2.21")
    fact = fleet.fact("thor-accept")
    assert fact["status"] == "enabled", fact["reasons"]
    assert fact["verdict"] == "accept"
    assert fact["deltas"]["throughput_gain_c1"] >= 0.30 and fact["deltas"]["tpot_reduction_c1"] >= 0.20
    # TTFT reported next to TPOT (not credited to speculation), at both levels.
    assert fact["deltas"]["ttft_change_c1"] is not None and fact["deltas"]["ttft_change_c8"] is not None, fact["deltas"]
    assert any(r.startswith("TTFT p50 changed ") for r in fact["reasons"]), fact["reasons"]
    assert fact["speculative_config"]["model"] == str(MODELS / "draft-deep-1layer")
    assert fact["candidate_gpu_memory_utilization"] == pytest.approx(0.70)
    # The unit is the operator's (here: serve's), untouched; the change is the collection's committed drop-in.
    assert fleet.read("thor-accept", UNIT) == baseline_unit
    assert fleet.inside("thor-accept", CANDIDATE) is None, "the kept change is still only a candidate under /run"
    unit = fleet.inside("thor-accept", OVERLAY)
    assert unit is not None, "no committed overlay"
    assert 'ExecStart=\n' in unit and '"--gpu-memory-utilization" "0.7" "--speculative-config"' in unit, unit
    assert fleet.hosts["thor-accept"].path(OVERLAY).stat().st_mode & 0o777 == 0o644
    assert "speculative-config" in fleet.cmdline("thor-accept")
    # K tuning: K = 4 verified first, then one step, K = 5, verified the same way; the better one is kept and
    # the unit, the running process and the record agree on it.
    tuning = fact["tuning"]
    assert tuning["from_k"] == 4 and tuning["max_steps"] == 1
    assert [step["k"] for step in tuning["tried"]] == [5], tuning
    step = tuning["tried"][0]
    assert step["healthy"] is True and step["verdict"] in ("accept", "reject", "marginal", "undetermined"), step
    assert step["acceptance_c1"] is not None and step["throughput_c1"] > 0
    kept = tuning["kept_k"]
    assert kept == (5 if step["kept"] else 4)
    assert tuning["stopped"] == ("reached jetson_spec_tune_max_steps (1)" if step["kept"] else "num_speculative_tokens 5 was not better")
    assert fact["num_speculative_tokens"] == kept and fact["speculative_config"]["num_speculative_tokens"] == kept
    assert f'\\"num_speculative_tokens\\":{kept}' in unit, unit
    assert f'"num_speculative_tokens":{kept}' in fleet.cmdline("thor-accept")
    assert any(r.startswith("Tuning step 1, num_speculative_tokens 5: ") for r in fact["reasons"]), fact["reasons"]
    assert fact["service_sha256"] == fleet.baseline_sha("thor-accept")
    assert fact["overlay"] == OVERLAY
    # Written with the record: the outcome as Prometheus metrics (node_exporter's textfile collector), world-readable.
    prom = fleet.read("thor-accept", METRICS).decode()
    assert 'jetson_llm_vllm_speculative_status{service="vllm",status="enabled"} 1\n' in prom, prom
    assert 'jetson_llm_vllm_speculative_status{service="vllm",status="reverted"} 0\n' in prom, prom
    assert ('jetson_llm_vllm_speculative_throughput_change{service="vllm",concurrency="1"} %r\n'
            % float(fact["deltas"]["throughput_gain_c1"])) in prom, prom
    assert 'jetson_llm_vllm_speculative_num_speculative_tokens{service="vllm"} %d\n' % kept in prom, prom
    assert "jetson_llm_vllm_speculative_last_verification_timestamp_seconds" in prom
    assert fleet.hosts["thor-accept"].path(METRICS).stat().st_mode & 0o777 == 0o644
    assert healthy("thor-accept")
    # The guard was confirmed (disarmed): nothing will restore the old unit behind the operator's back.
    state = fleet.hosts["thor-accept"].nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() != "active"
    assert "ENABLED" in out
    # Out of its load balancer before the baseline benchmark, back once the tuned change was kept.
    fleet.assert_drained_around_the_change("thor-accept", pid_before, calls)


def test_the_troubleshooting_guide_commands_work_on_a_host_with_a_kept_change(fleet):
    """docs/troubleshooting.md's commands marked for a systemd host, run as written on thor-accept (a kept change)."""
    text = (TOP / "docs" / "troubleshooting.md").read_text()
    blocks = re.findall(r"<!-- systemd host -->\n```sh\n(.*?)```", text, re.S)
    commands = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert len(commands) >= 4, commands
    for command in commands:
        proc = fleet.hosts["thor-accept"].nsenter(["sh", "-c", command], check=False)
        assert proc.returncode == 0 and proc.stdout.strip(), (command, proc.stdout[-500:], proc.stderr[-500:])
    # what the guide says they show: the record's status, the kept overlay last in the unit, and its header
    record = fleet.hosts["thor-accept"].nsenter(["sh", "-c", commands[0]]).stdout
    assert '"status": "enabled"' in record
    shown = fleet.hosts["thor-accept"].nsenter(["systemctl", "cat", "vllm.service"]).stdout
    assert shown.rstrip().split("\n# /")[-1].startswith("etc/systemd/system/vllm.service.d/zz-jetson-llm-speculative-1-kept.conf")
    assert "Until then this file resets ExecStart=" in shown


def test_idempotent_second_run_restarts_nothing_and_sends_no_request(fleet):
    fleet.assert_second_run_changes_nothing("thor-accept", {**ACCEPT_VARS, **HOOK_VARS})


# The runs that follow the first (AWX schedules, re-runs): an AWX survey sends every value as a string.
SURVEY_STRINGS = {"jetson_spec_keep_marginal": "false", "jetson_spec_force_verify": "no",
                  "jetson_spec_allow_small_devices": "False", "jetson_spec_expected_concurrency": "1",
                  "jetson_spec_num_speculative_tokens": "4", "jetson_spec_min_throughput_gain": "0.3",
                  "jetson_spec_c8_tolerance": "0.02", "jetson_spec_tune_max_steps": "1", "vllm_max_model_len": "1024",
                  "vllm_port": str(HOSTS["thor-accept"]["port"])}


def test_awx_survey_strings_are_the_same_run_nothing_restarts(fleet):
    fleet.assert_second_run_changes_nothing("thor-accept", {**ACCEPT_VARS, **SURVEY_STRINGS})
    assert "in_sync" in fleet.play("thor-accept", extra={**ACCEPT_VARS, **SURVEY_STRINGS}, check=True)[1]


# The operator, not serve, owns the unit from here on (test_run_serve: false), as on a fleet whose units are
# hand-made or NVIDIA's: serve would otherwise render its own unit again.
OPERATOR_VARS = {**ACCEPT_VARS, "test_run_serve": False, "jetson_spec_tune_max_steps": 0}


def test_an_operator_edit_and_a_jetpack_upgrade_after_a_kept_change_re_verify_and_keep_the_operator_flag(fleet):
    """Between two runs of a kept change, what a fleet sees: JetPack upgraded (7.0 -> 7.2.1, L4T R38 -> R39) and
    an operator's flag added to the unit. The next run names both changes, re-measures the baseline and verifies
    again (in one pass: each trigger alone is a row of the decision table, tests/unit/test_lifecycle.py)."""
    name = "thor-accept"
    before = fleet.fact(name)
    assert before["status"] == "enabled" and fleet.inside(name, OVERLAY) is not None
    release = fleet.hosts[name].path(nspawn.IDENTITY_DIR + "/etc/nv_tegra_release")
    assert release.read_text().startswith("# R38 ")
    release.write_bytes((nspawn.FIXTURES / "orin-agx-r39" / "etc" / "nv_tegra_release").read_bytes())
    unit = fleet.read(name, UNIT).decode()
    assert '"--enforce-eager"' in unit and "--max-num-seqs" not in unit
    edited = unit.replace('"--enforce-eager"', '"--enforce-eager" --max-num-seqs 4', 1)
    fleet.hosts[name].path(UNIT).write_text(edited)
    restart_by_hand(fleet, name)
    # Until the next run the committed overlay's ExecStart (the old command line plus the two flags) is what runs.
    assert "--max-num-seqs" not in fleet.cmdline(name) and "speculative-config" in fleet.cmdline(name)
    _rc, out = fleet.play(name, extra=OPERATOR_VARS)
    # (the debug message is printed as JSON: its quotes are escaped)
    changed = re.search(r"changed since the recorded outcome: .*", out)
    assert changed, out[-3000:]
    for part in ('baseline.jetpack \\"7.0\\" -> \\"7.2.1\\"', 'baseline.l4t \\"38.2.0\\" -> \\"39.2.1\\"',
                 "baseline.service (the unit, a drop-in or a compose file other than the overlay"):
        assert part in changed.group(0), (part, changed.group(0))
    fact = assert_record_is_reality(fleet, name)
    assert fact["baseline_reused"] is False, "the stored baseline was measured without the operator's flag"
    assert (before["jetson"]["l4t"], fact["jetson"]["l4t"]) == ("38.2.0", "39.2.1")
    assert (before["jetson"]["jetpack"], fact["jetson"]["jetpack"]) == ("7.0", "7.2.1")
    assert fact["fingerprint"] != before["fingerprint"] and fact["started"] != before["started"]
    # The operator's edit is kept, in the file and in what runs, whatever the verdict.
    assert fleet.read(name, UNIT).decode() == edited
    assert "--max-num-seqs 4" in fleet.cmdline(name), fleet.cmdline(name)
    assert fact["service_sha256"] == fleet.baseline_sha(name)
    if fact["status"] == "enabled":
        overlay_text = fleet.inside(name, OVERLAY)
        assert "--max-num-seqs 4" in overlay_text and "speculative-config" in fleet.cmdline(name)
    else:
        fleet.assert_no_overlay(name)
    # The same run again: in sync.
    _rc, out = fleet.play(name, extra=OPERATOR_VARS)
    assert recap(out, name)["changed"] == 0, out[-3000:]


def test_re_runs_after_a_kept_change_refuse_disable_and_enable_again_with_record_equal_to_reality(fleet):
    assert fleet.fact("thor-accept")["status"] == "enabled" and "speculative-config" in fleet.cmdline("thor-accept")
    # Concurrency 8 now: the plan refuses, and the speculation that runs is removed before `refused` is recorded.
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_expected_concurrency": 8})
    fact = assert_record_is_reality(fleet, "thor-accept")
    assert fact["status"] == "refused" and any("concurrency" in r for r in fact["reasons"]), fact["reasons"]
    assert any(r.startswith("Speculation was removed") for r in fact["reasons"]), fact["reasons"]
    fleet.assert_no_overlay("thor-accept")
    assert healthy("thor-accept") and "REFUSED" in out
    # The same run again: nothing to do.
    pid = fleet.main_pid("thor-accept")
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_expected_concurrency": "8"})
    assert recap(out, "thor-accept")["changed"] == 0, out[-3000:]
    assert fleet.main_pid("thor-accept") == pid
    # Disabled on purpose: nothing speculative runs, so nothing changes and the refusal stays recorded.
    _rc, out = fleet.play("thor-accept", extra={**OPERATOR_VARS, "jetson_spec_state": "disabled"})
    fact = assert_record_is_reality(fleet, "thor-accept")
    assert fact["status"] == "refused" and "in_sync" in out, fact["reasons"]
    assert recap(out, "thor-accept")["changed"] == 0, out[-3000:]
    assert fleet.main_pid("thor-accept") == pid
    # A run with other inputs then verifies again, not taken from the old record: the next test's run (one
    # verification for both).


# A token budget per step that fits the baseline's batch of 8 (8 tokens) but not the speculative one
# (8 x (K + 1) = 40): vLLM then schedules fewer sequences per step, and concurrency 8 loses while
# concurrency 1 (5 tokens) still gains. A Jetson with a small --max-num-batched-tokens (memory) behaves
# the same way. vLLM picks each step's K from the requests it scheduled, and only 16 // 5 = 3 fit a
# speculative step, so the role lowers N from 4 to 2 (with N = 4 the batch never grows past 3 while
# speculating and K never drops to 0: measured -13.7 % at c=8, the same as without the setting).
# The serve role deploys the new baseline first (its variables changed); measured sequentially (the
# role's other measurement mode), with 32 output tokens to keep it short. The queueing makes c=8
# noisy, so this host tolerates a measured c=8 loss of 5 % (c8_tolerance).
# Measured with the modules on this test bed (eager, 16 prompts per level), baseline / planned K=4 /
# batch-size-aware N=2, tok/s: output 32: c=1 26.1 / 41.8 / 45.7, c=8 79.2 / 57.6 / 61.3;
# output 128: c=1 28.7 / 61.0 / 67.0, c=8 115.1 / 106.2 / 92.3. Speculation is off at c=8 with N=2, yet
# c=8 still loses, with a draft 4 times smaller too (draft-deep-tiny, tests/benchmarks/tuning.py: -19 %
# at c=8 with TPOT at the baseline's), most likely because the waves' prefills, when few requests run
# and speculation is on, compete with it for the 16-token budget. So the kept branch is not expected on
# this CPU test bed (docs/performance.md); the test asserts whichever branch the verdict takes, and the
# kept branch is asserted on the simulated host (test_simulated_jetson_keeps_batch_size_aware_speculation_...).
BATCH_AWARE_VARS = {**ACCEPT_VARS, "jetson_spec_benchmark": dict(WORKLOAD, output_len=32),
                    "vllm_extra_args": ["--dtype", "float32", "--enforce-eager", "--max-num-batched-tokens", "16",
                                        "--max-num-seqs", "8"],
                    "jetson_spec_measurement": "sequential", "jetson_spec_tune_max_steps": 0,
                    # the smallest sequential baseline (two whole waves at c=8; the role's default is 24)
                    "jetson_spec_sequential": {"baseline_prompts": 16},
                    "jetson_spec_c8_tolerance": 0.05}


def test_after_a_refusal_a_c8_regression_tries_batch_size_aware_speculation_measured_sequentially(fleet):
    """Also the last step of the re-runs above: the host's record says ``refused`` (concurrency 8), and a run
    with other inputs verifies again, with the record equal to what runs at the end."""
    assert fleet.fact("thor-accept")["status"] == "refused"
    _rc, out = fleet.play("thor-accept", extra=BATCH_AWARE_VARS)
    assert_record_is_reality(fleet, "thor-accept")
    lkg = fleet.read("thor-accept", UNIT)
    assert b"--max-num-batched-tokens" in lkg and b"speculative-config" not in lkg
    fact = fleet.fact("thor-accept")
    assert "Benchmark the running service (candidate)" in out, "the changed serve variables did not re-verify the host"
    assert fact["measurement"]["mode"] == "sequential" and fact["measurement"]["requests"] is not None
    batch = fact["batch_aware"]
    assert batch is not None, f"the planned configuration did not pass at c=1 and regress at c=8: {fact['reasons']}"
    # Shown beyond the tolerance, or (c=8 is noisy on this CPU: 96.63 % interval -47 % to +75 % in a CI run) an open
    # regression that decide_undetermined=point_estimate settles as one: either way reverted because of concurrency 8.
    assert any("regresses at concurrency 8" in r or "settles an open regression as a regression" in r
               for r in fact["reasons"]), fact["reasons"]
    # N lowered for the token budget, and said why.
    assert batch["max_batch"] == 2, batch
    assert "--max-num-batched-tokens 16 fits only 3 request(s) with 4 draft tokens" in batch["limit_reason"], batch
    assert batch["tried"] is True and batch["healthy"] is True, batch
    assert batch["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 65536, 0]]
    # The verdict read the server's own counters above 2 requests at a time. vLLM 0.32's CPU build runs the V1 model
    # runner (Model Runner V2 needs Triton: "using the V1 model runner instead"), which honours K = 0: at c=8 next to
    # nothing was drafted, so nothing is discounted (the other branch, vllm#51510, is test_speculative_verdict.py's).
    drafting = batch["drafting"]
    assert drafting["off_above"] == 2 and drafting["ignored"] is False, drafting
    assert drafting["levels"]["8"]["share"] is not None and drafting["levels"]["8"]["share"] < 0.5, drafting
    assert any(r.startswith("The planned configuration passed at concurrency 1 but regressed at concurrency 8")
               and "tried speculating only up to 2 requests" in r for r in fact["reasons"]), fact["reasons"]
    unit = (fleet.inside("thor-accept", OVERLAY) or "").encode()
    if batch["kept"]:
        # Both rules pass with speculation off above 2 requests at a time: kept, and the record says so.
        assert fact["status"] == "enabled" and fact["verdict"] == "accept", fact["reasons"]
        assert fact["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 65536, 0]]
        assert b"num_speculative_tokens_per_batch_size" in unit
        assert "num_speculative_tokens_per_batch_size" in fleet.cmdline("thor-accept")
        assert fact["tuning"] is None, "K tuning does not run on a batch-size-aware configuration"
    else:
        # Not kept (what this CPU test bed measures, above): back to the baseline, byte for byte.
        assert fact["status"] == "reverted", fact["reasons"]
        assert batch["verdict"] in ("reject", "marginal", "undetermined") and batch["deltas"], batch
        assert batch["deltas"] != fact["deltas"], "the batch-size-aware attempt has its own measurement"
        fleet.assert_no_overlay("thor-accept")
    assert fleet.read("thor-accept", UNIT) == lkg
    assert fact["service_sha256"] == fleet.baseline_sha("thor-accept")
    assert healthy("thor-accept")


# This verdict's 5 % tolerance at c=8, like every verdict of this file, is measured with nothing else running: make
# test runs the timed files alone (tests/utils/run_suites.sh, Makefile's INTEGRATION_TIMED).
# The kept branch of the same loop, on the one SIMULATED host (thor-batch; the CPU test bed cannot show it,
# above). Its "vllm" (tests/nspawn/jetson_batch_simulator.py) runs steps as vLLM's scheduler does, with a
# Jetson-like speed model: a step reads the weights once (20 ms) and costs 4 ms per token it verifies, so a
# lone request gains from K = 4 drafted tokens, each accepted with probability 0.8 until the first rejection
# (vLLM's acceptance rate 0.59, 3.36 tokens per step: +58 % tok/s), while a batch of 8 verifying 5 tokens
# each, with the draft's passes over 8 requests, loses (-18 %). Measured through the simulator with a plain
# client (6 and 16 prompts):
# c=1 41.0 / 62.9 / 66.2 tok/s, c=8 149.6 / 121.9 / 149.4 for baseline / planned K=4 / batch-size-aware N=4.
# Everything else is real: the roles through ansible-playbook, the host's systemd, the unit, the guard,
# vllm_benchmark's HTTP measurements, the verdict. The host allows a 5 % loss at c=8 (c8_tolerance, as thor-accept's batch-size-aware run): the
# batch-size-aware configuration is the baseline at c=8 within the host's phase-to-phase noise, and a
# zero tolerance would make the outcome a coin flip on that noise.
BATCH_SIM_VARS = {"jetson_spec_draft_model": str(MODELS / "draft-deep-1layer"), "jetson_spec_c8_tolerance": 0.05}


def sim_steps(name):
    """{batch size: {K: steps}} the batch simulator of ``name`` ran since it started."""
    steps = json.loads(get(name, "/_sim/steps"))["steps"]
    return {int(b): {int(k): n for k, n in ks.items()} for b, ks in steps.items()}


def test_simulated_jetson_keeps_batch_size_aware_speculation_when_c8_regresses(fleet):
    baseline_unit = fleet.read("thor-batch", UNIT)
    assert b"/opt/jetson-batch-simulator/bin/vllm" in baseline_unit and b"speculative-config" not in baseline_unit
    # The oldest supported ansible-core: its keep path (the real-vLLM keep runs with the newest).
    _rc, out = fleet.play("thor-batch", extra=BATCH_SIM_VARS, core="2.18")
    fact = fleet.fact("thor-batch")
    batch = fact["batch_aware"]
    assert batch is not None, f"the planned configuration did not pass at c=1 and regress at c=8: {fact['reasons']}"
    # The planned configuration (K = 4 at every batch size): a c=1 gain and a c=8 loss the intervals show.
    assert any(r.startswith("The planned configuration passed at concurrency 1 but regressed at concurrency 8")
               and "tried speculating only up to 4 requests" in r and "kept" in r for r in fact["reasons"]), fact["reasons"]
    assert batch["max_batch"] == 4 and batch["limit_reason"] in ("", None), batch
    assert batch["tried"] is True and batch["healthy"] is True, batch
    # ... kept: both rules pass once speculation stops above 4 requests at a time.
    assert batch["kept"] is True, fact["reasons"]
    assert fact["status"] == "enabled" and fact["verdict"] == "accept", fact["reasons"]
    assert batch["deltas"]["throughput_gain_c1"] >= 0.30 and batch["deltas"]["tpot_reduction_c1"] >= 0.20, batch
    assert batch["deltas"]["throughput_change_c8"] > -0.05, batch
    ranges = [[1, 4, 4], [5, 65536, 0]]
    assert fact["speculative_config"]["num_speculative_tokens_per_batch_size"] == ranges, fact["speculative_config"]
    assert fact["deltas"] == batch["deltas"], "the record judges by the kept (batch-size-aware) measurement"
    unit = fleet.inside("thor-batch", OVERLAY) or ""
    assert "num_speculative_tokens_per_batch_size" in unit and '"--gpu-memory-utilization" "0.7"' in unit, unit
    assert "num_speculative_tokens_per_batch_size" in fleet.cmdline("thor-batch")
    assert fact["service_sha256"] == fleet.baseline_sha("thor-batch")
    assert fact["tuning"] is None, "K tuning does not run on a batch-size-aware configuration"
    assert fleet.read("thor-batch", UNIT) == baseline_unit
    # What served since that start really is the kept configuration: K = 4 for a lone request, no
    # speculation in a batch of 8 (the simulator counts its steps by batch size and K).
    steps = sim_steps("thor-batch")
    assert steps.get(1, {}).get(4, 0) > 0 and set(steps[1]) == {4}, steps
    assert steps.get(8, {}).get(0, 0) > 0 and all(set(steps[b]) == {0} for b in steps if b > 4), steps
    state = fleet.hosts["thor-batch"].nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() != "active", "the guard was not disarmed"
    assert healthy("thor-batch")
    assert "ENABLED" in out
    fleet.assert_second_run_changes_nothing("thor-batch", BATCH_SIM_VARS)


def test_a_failure_after_the_change_whose_revert_succeeds_restores_the_service_and_puts_the_host_back(fleet):
    """From the kept change of the test above, docs/troubleshooting.md's "apply an edit at once", as written: the kept
    overlay removed and the service restarted by hand (the unit's own command line runs), then the role's run that
    verifies again. In that run the candidate benchmark fails (the SIMULATOR's engine dies after a few speculative
    steps, the fault of the test below) and the revert succeeds: the record is failed with the cause first and the
    restored service said, the host fails in the run's status, and the undrain hook puts it back after the revert, as
    after a kept or reverted change.
    """
    host = fleet.hosts["thor-batch"]
    profile = host.path("/etc/jetson-batch-simulator.json")
    assert fleet.fact("thor-batch")["status"] == "enabled" and fleet.inside("thor-batch", OVERLAY) is not None
    text = (TOP / "docs" / "troubleshooting.md").read_text()
    block = re.search(r"<!-- systemd host, kept change removed -->\n```sh\n(.*?)```", text, re.S).group(1)
    on_host = [line.split("  #")[0].strip() for line in block.splitlines()
               if line.strip() and not line.startswith("ansible-playbook ")]
    assert len(on_host) == 2, on_host
    for command in on_host:
        proc = host.nsenter(["sh", "-c", command], check=False)
        assert proc.returncode == 0, (command, proc.stdout[-500:], proc.stderr[-500:])
    wait_healthy(fleet, "thor-batch")
    assert "speculative-config" not in fleet.cmdline("thor-batch") and fleet.inside("thor-batch", OVERLAY) is None
    unit_before = fleet.read("thor-batch", UNIT)
    pid_before, calls = fleet.main_pid("thor-batch"), fleet.lb_calls("thor-batch")
    profile.write_text(json.dumps({**BATCH_SIMULATOR_PROFILE, "fault_crash_after_speculative_steps": 40}))
    try:
        _rc, out = fleet.play("thor-batch", extra={**BATCH_SIM_VARS, **HOOK_VARS, "jetson_spec_tune_max_steps": 0},
                              expect_rc=2)
    finally:
        profile.write_text(json.dumps(BATCH_SIMULATOR_PROFILE))
    fact = fleet.fact("thor-batch")
    assert fact["status"] == "failed", fact
    reasons = fact["reasons"]
    first = [r for r in reasons if r.startswith('Task "')]
    assert len(first) == 1 and first[0].startswith('Task "Benchmark the running service'), reasons
    assert not any(r.startswith("REVERT FAILED") for r in reasons), reasons
    assert "The previous service was restored and is healthy." in reasons, reasons
    assert "fatal: [thor-batch]" in out, "the host is failed in the run's status"
    assert "speculative-config" not in fleet.cmdline("thor-batch") and healthy("thor-batch")
    assert fleet.read("thor-batch", UNIT) == unit_before
    fleet.assert_no_overlay("thor-batch")
    # The run verified again (the record said enabled, the process runs without speculation), as the guide says.
    assert "has no --speculative-config: verified again." in out, out[-3000:]
    # Drained before the change, back in its load balancer after the revert, serving the restored service.
    fleet.assert_drained_around_the_change("thor-batch", pid_before, calls)


def test_a_failure_after_the_change_whose_revert_fails_too_keeps_both_causes_and_says_what_to_do(fleet):
    """The one path no real component can be made to take on purpose: the change fails and so does the revert.

    Faults planted in thor-batch's SIMULATOR (tests/nspawn/jetson_batch_simulator.py, its profile's fault_* keys):
    its engine dies after a few steps with speculation (the candidate benchmark fails), and a start without
    --speculative-config fails (the previous service cannot come back). Last in the file: thor-batch is left with its
    guard armed, as a host whose revert failed is.
    """
    host = fleet.hosts["thor-batch"]
    profile = host.path("/etc/jetson-batch-simulator.json")
    # To a host without speculation (the test above leaves none running; alone, from a kept change), then a new
    # verification.
    if "speculative-config" in fleet.cmdline("thor-batch"):
        fleet.play("thor-batch", extra={**BATCH_SIM_VARS, "jetson_spec_state": "disabled"})
    assert "speculative-config" not in fleet.cmdline("thor-batch") and healthy("thor-batch")
    unit_before = fleet.read("thor-batch", UNIT)
    profile.write_text(json.dumps({**BATCH_SIMULATOR_PROFILE, "fault_crash_after_speculative_steps": 40,
                                   "fault_start_fails_without_speculation": True}))
    try:
        _rc, out = fleet.play("thor-batch", extra={**BATCH_SIM_VARS, **HOOK_VARS, "jetson_spec_tune_max_steps": 0},
                              expect_rc=2)
    finally:
        profile.write_text(json.dumps(BATCH_SIMULATOR_PROFILE))
    fact = fleet.fact("thor-batch")
    assert fact["status"] == "failed", fact
    reasons = fact["reasons"]
    # The cause first (the candidate benchmark), not the revert's failure that came after it.
    first = [r for r in reasons if r.startswith('Task "')]
    assert len(first) == 1 and first[0].startswith('Task "Benchmark the running service'), reasons
    revert = [r for r in reasons if r.startswith("REVERT FAILED")]
    assert len(revert) == 1, reasons
    # The revert's own task and message: the restored service never came up (the simulator's planted fault).
    assert revert[0].startswith('REVERT FAILED (task "Wait until the service serves the model'), revert
    assert "is not healthy" in revert[0], revert
    assert revert[0].endswith("then restart vllm."), revert
    assert "The previous service was restored" not in " ".join(reasons)
    assert "REVERT FAILED" in out and first[0][:60] in out, "the run's failure message shows both"
    # Not put back in its load balancer: the host cannot serve; the reasons say so, the drain stays noted.
    assert any("stays out of service (the undrain hook was not run)" in r for r in reasons), reasons
    assert fleet.lb_down("thor-batch") and fleet.inside("thor-batch", DRAIN_MARKER) is not None
    # The guard is still armed: the host keeps trying to restore itself.
    state = host.nsenter(["systemctl", "is-active", "jetson-spec-guard-vllm.timer"], check=False)
    assert state.stdout.strip() == "active", "the guard must stay armed when the revert failed"
    # What the message tells the operator works (the fault is gone now): remove the overlays, restart.
    paths = re.search(r"remove (\S+) and (\S+), then restart", revert[0]).groups()
    assert CANDIDATE in paths and OVERLAY in paths, paths
    host.nsenter(["rm", "-f", *paths])
    host.nsenter(["systemctl", "daemon-reload"])
    host.nsenter(["systemctl", "restart", "vllm.service"])
    deadline = time.monotonic() + 60
    while not healthy("thor-batch") and time.monotonic() < deadline:
        time.sleep(1)
    assert healthy("thor-batch") and "speculative-config" not in fleet.cmdline("thor-batch")
    assert fleet.read("thor-batch", UNIT) == unit_before, "the unit itself was never written"
    # The next run, once the operator fixed the host, puts it back in its load balancer.
    fleet.play("thor-batch", extra={**BATCH_SIM_VARS, **HOOK_VARS, "jetson_spec_state": "disabled"})
    assert fleet.lb_calls("thor-batch")[-1] == ("undrain", fleet.main_pid("thor-batch"))
    assert not fleet.lb_down("thor-batch") and fleet.inside("thor-batch", DRAIN_MARKER) is None
