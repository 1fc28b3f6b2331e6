"""The roles' settings beyond their types (_decision.settings: serve's and speculative_decoding's rules)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import settings as S

ROLES = Path(__file__).resolve().parents[4] / "roles"
ROLE_VARS = yaml.safe_load((ROLES / "speculative_decoding" / "vars" / "main.yml").read_text())
DEFAULTS = yaml.safe_load((ROLES / "speculative_decoding" / "defaults" / "main.yml").read_text())
SERVE_VARS = yaml.safe_load((ROLES / "serve" / "vars" / "main.yml").read_text())
SERVE_DEFAULTS = yaml.safe_load((ROLES / "serve" / "defaults" / "main.yml").read_text())
KEYS = ROLE_VARS["_jetson_spec_benchmark_keys"]
FLAGS = SERVE_VARS["_vllm_managed_flags"]
NAMES = ([name for name, _check, _allowed in S.RULES] + list(S.BENCHMARK_SETTINGS) + list(S.STAGE_SETTINGS)
         + list(S.HOOK_SETTINGS))
SERVE_NAMES = [name for name, _check, _allowed in S.SERVE_RULES] + ["vllm_extra_args"]


def problems(**settings):
    return S.role_setting_problems(settings, "speculative_decoding", KEYS)


def serve_problems(**settings):
    return S.role_setting_problems(settings, "serve", managed_flags=FLAGS)


def test_the_roles_check_exactly_the_settings_of_the_rules():
    assert ROLE_VARS["_jetson_spec_checked_settings"] == NAMES
    assert SERVE_VARS["_vllm_checked_settings"] == SERVE_NAMES


def test_every_checked_setting_has_a_role_default_and_the_defaults_pass():
    assert set(NAMES) <= set(DEFAULTS), sorted(set(NAMES) - set(DEFAULTS))
    assert problems(**{name: DEFAULTS[name] for name in NAMES}) == []
    # vllm_model has no default (the operator names the model: required by the argument spec).
    assert set(SERVE_NAMES) - set(SERVE_DEFAULTS) == {"vllm_model"}
    serve = dict({name: SERVE_DEFAULTS[name] for name in SERVE_NAMES if name != "vllm_model"}, vllm_model="Qwen/Qwen3-8B")
    assert serve_problems(**serve) == []


# (setting, bad value, words the problem says): the cases of tests/integration/test_roles_lifecycle.py's BAD_VARIABLES
# that these checks own, and the hostile values (NaN, infinity, huge, booleans, text, control characters).
BAD = [
    ("jetson_spec_expected_concurrency", 0, "allowed: 1 to 100000"),
    ("jetson_spec_expected_concurrency", 100001, "allowed: 1 to 100000"),
    ("jetson_spec_expected_concurrency", "8 ", None),  # "8 " is read as 8: not a problem (see GOOD)
    ("jetson_spec_expected_concurrency", True, "allowed: 1 to 100000"),
    ("jetson_spec_expected_concurrency", "eight", "allowed: 1 to 100000"),
    ("jetson_spec_expected_concurrency", 1.5, "allowed: 1 to 100000"),
    ("jetson_spec_num_speculative_tokens", -1, "0 (the family default) or more"),
    ("jetson_spec_num_speculative_tokens", "abc", "0 (the family default) or more"),
    ("jetson_spec_max_startup_attempts", 6, "allowed: 1 to 5"),
    ("jetson_spec_guard_timeout", 10, "60 to 604800 seconds"),
    ("jetson_spec_guard_timeout", "1e9", "60 to 604800 seconds"),
    ("jetson_spec_guard_timeout", 604801, "60 to 604800 seconds"),
    ("jetson_spec_revert_min_ratio", "nan", "allowed: 0 to 1"),
    ("jetson_spec_revert_min_ratio", 1.01, "allowed: 0 to 1"),
    ("jetson_spec_c8_tolerance", 0.15, "allowed: 0 to 0.1 (the loss at concurrency 8 tolerated"),
    ("jetson_spec_c8_tolerance", float("inf"), "allowed: 0 to 0.1"),
    ("jetson_spec_c8_margin", "nan", "jetson_spec_c8_margin is \"nan\""),
    ("jetson_spec_c8_margin", -0.01, "the interval must rule out"),
    ("jetson_spec_max_ttft_increase", "nan", "null (off) or 0 to 10"),
    ("jetson_spec_max_ttft_increase", -0.5, "null (off) or 0 to 10"),
    ("jetson_spec_max_ttft_increase", 10.5, "null (off) or 0 to 10"),
    ("jetson_spec_baseline_max_age", -1, "0 (always measure the baseline again) to 9999999999 seconds"),
    ("jetson_spec_baseline_max_age", 10 ** 10, "9999999999 seconds"),
    ("jetson_spec_baseline_max_age", "1h", "9999999999 seconds"),
    ("jetson_spec_tune_max_steps", 5, "0 (no tuning) to 4"),
    ("jetson_spec_tune_min_acceptance", "inf", "allowed: 0 to 1"),
    ("jetson_spec_batch_aware_max_batch", 1025, "0 (off) to 1024"),
    ("jetson_spec_benchmark_throttle", -5, "0 (no limit) or more"),
    ("jetson_spec_progress_interval", 3601, "0 (in the foreground) or 1 to 3600 seconds"),
    ("jetson_spec_progress_interval", -1, "1 to 3600 seconds"),
    ("jetson_spec_progress_interval", "2.5", "1 to 3600 seconds"),
    ("jetson_spec_drop_caches", "maybe", "allowed: auto, true or false"),
    ("jetson_spec_drop_caches", 1, "allowed: auto, true or false"),
    ("jetson_spec_state_dir", "relative/dir", "an absolute path of letters, digits and ._/-"),
    ("jetson_spec_state_dir", "/var/lib/x\nExecStart=/bin/sh", "\\u000a"),
    ("jetson_spec_state_dir", "/var/lib/x\n", "an absolute path"),
    ("jetson_spec_fact_file", "/etc/ansible/facts.d/x.json", "an absolute path ending in .fact"),
    ("jetson_spec_fact_file", "-rf.fact", "an absolute path ending in .fact"),
    ("jetson_spec_metrics_file", "/var/lib/node_exporter/x.txt", "empty (no metrics) or an absolute path ending in .prom"),
    ("jetson_spec_phase_shift", {"c1": "nan"}, "jetson_spec_phase_shift"),
    ("jetson_spec_phase_shift", {"c1": 0.08, "c8": 0.9}, "each a number from 0 to 0.5"),
    ("jetson_spec_phase_shift", {"c2": 0.08}, "'c2'"),
    ("jetson_spec_phase_shift", "c1=0.08", "a dictionary with c1 and c8"),
    ("jetson_spec_cohort_spread", "1.2.3", "0 to 0.5 (a relative SD)"),
    ("jetson_spec_cohort_spread", 0.6, "0 to 0.5 (a relative SD)"),
    ("jetson_spec_benchmark", {"concurency": [1]}, "jetson_spec_benchmark is \"['concurency']\"; allowed: vllm_benchmark"),
    ("jetson_spec_confirm_benchmark", {"concurency": [1]}, "jetson_spec_confirm_benchmark"),
    ("jetson_spec_revert_benchmark", "num_prompts=4", "jetson_spec_revert_benchmark is \"num_prompts=4\""),
]


@pytest.mark.parametrize("name, value, words", [case for case in BAD if case[2] is not None],
                         ids=lambda v: v if isinstance(v, str) and v.startswith("jetson_spec_") else None)
def test_a_bad_setting_is_one_sentence_naming_it_its_value_and_what_is_allowed(name, value, words):
    found = problems(**{name: value})
    assert len(found) == 1, found
    assert found[0].startswith(f"{name} is "), found
    assert "; allowed: " in found[0] and found[0].endswith("."), found
    assert words in found[0], found
    assert "\n" not in found[0] and "\r" not in found[0]


GOOD = [
    ("jetson_spec_expected_concurrency", "8 "), ("jetson_spec_expected_concurrency", "100000"),
    ("jetson_spec_num_speculative_tokens", 0), ("jetson_spec_num_speculative_tokens", "7"),
    ("jetson_spec_guard_timeout", "60"), ("jetson_spec_revert_min_ratio", "0.5"), ("jetson_spec_c8_tolerance", 0),
    ("jetson_spec_c8_margin", "0.1"), ("jetson_spec_max_ttft_increase", None), ("jetson_spec_max_ttft_increase", "0.25"),
    ("jetson_spec_baseline_max_age", 0), ("jetson_spec_baseline_max_age", "9999999999"),
    ("jetson_spec_progress_interval", 0), ("jetson_spec_progress_interval", "3600"),
    ("jetson_spec_drop_caches", True), ("jetson_spec_drop_caches", "Auto"), ("jetson_spec_drop_caches", "no"),
    ("jetson_spec_metrics_file", ""), ("jetson_spec_phase_shift", {}), ("jetson_spec_phase_shift", {"c1": "0.08", "c8": 0}),
    ("jetson_spec_cohort_spread", "0.05"), ("jetson_spec_benchmark", {}),
    ("jetson_spec_benchmark", {"concurrency": [1, 8], "num_prompts": 8}),
]


@pytest.mark.parametrize("name, value", GOOD)
def test_good_settings_strings_from_a_survey_included_are_no_problem(name, value):
    assert problems(**{name: value}) == []


def test_several_bad_settings_are_said_together_in_the_rules_order():
    found = problems(jetson_spec_cohort_spread=2, jetson_spec_guard_timeout=1, jetson_spec_expected_concurrency=0)
    names = [p.split(" is ")[0] for p in found]
    assert names == ["jetson_spec_expected_concurrency", "jetson_spec_guard_timeout", "jetson_spec_cohort_spread"]


def test_a_long_value_is_cut_and_an_unknown_setting_is_not_checked():
    found = problems(jetson_spec_state_dir="x" * 5000, jetson_spec_something_else=float("nan"))
    assert len(found) == 1 and len(found[0]) < 300 and "..." in found[0], found


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), "NaN", " inf", "1e400"])
def test_no_share_accepts_a_number_that_is_not_finite(value):
    for name, _check, _allowed in S.RULES:
        if name in ("jetson_spec_revert_min_ratio", "jetson_spec_c8_tolerance", "jetson_spec_c8_margin",
                    "jetson_spec_max_ttft_increase", "jetson_spec_tune_min_acceptance", "jetson_spec_cohort_spread"):
            assert problems(**{name: value}), (name, value)


# serve's settings: the cases of BAD_VARIABLES it owns, and hostile ones.
SERVE_BAD = [
    ("vllm_model", "/models/x\nExecStartPre=/bin/rm -rf /", "a Hugging Face id (owner/name) or an absolute path"),
    ("vllm_model", "/models/target\n", "vllm_model is \"/models/target\\u000a\""),
    ("vllm_model", "-rf", "a Hugging Face id"),
    ("vllm_model", "a/b/c", "a Hugging Face id"),
    ("vllm_served_model_name", "name with space", "letters, digits and ._/:-"),
    ("vllm_service_name", "-Hlc@evil", "a unit and project name"),
    ("vllm_service_name", "x" * 64, "a unit and project name"),
    ("vllm_compose_dir", "srv/vllm", "the project directory"),
    ("vllm_definition_backup_dir", "/var/backups/x y", "copies of a replaced unit"),
    ("vllm_definition_backups_keep", 0, "1 to 100 copies"),
    ("vllm_definition_backups_keep", "1e3", "1 to 100 copies"),
    ("vllm_host", "0.0.0.0 --evil", "an IP address or host name"),
    ("vllm_port", 70000, "1 to 65535"),
    ("vllm_port", "0", "1 to 65535"),
    ("vllm_gpu_memory_utilization", "nan", "a number above 0 and at most 1"),
    ("vllm_gpu_memory_utilization", "inf", "a number above 0 and at most 1"),
    ("vllm_gpu_memory_utilization", 0, "a number above 0 and at most 1"),
    ("vllm_gpu_memory_utilization", 1.01, "a number above 0 and at most 1"),
    ("vllm_max_model_len", 8, "16 to 10485760 tokens"),
    ("vllm_startup_timeout", 10 ** 9, "30 to 86400 seconds"),
    ("vllm_max_restarts", -1, "0 to 100"),
    ("vllm_native_command", [], "the executable's absolute path"),
    ("vllm_native_command", ["vllm", "serve"], "the executable's absolute path"),
    ("vllm_native_command", "/usr/bin/vllm serve", "the executable's absolute path"),
    ("vllm_environment", {"BAD-NAME": "1"}, "vllm_environment is \"['BAD-NAME']\"; allowed: shell-style"),
    ("vllm_extra_args", ["--dtype", "float32", "--gpu-memory-utilization=0.5"],
     "vllm_extra_args is \"['--gpu-memory-utilization']\"; allowed: arguments other than the ones"),
    ("vllm_extra_args", ["--speculative_config", "{}"], "--speculative-config is jetson_llm.vllm.speculative_decoding's"),
    ("vllm_extra_args", ["--port=9000"], "vllm_extra_args is \"['--port']\""),
]


@pytest.mark.parametrize("name, value, words", SERVE_BAD,
                         ids=lambda v: v if isinstance(v, str) and v.startswith("vllm_") else None)
def test_a_bad_serve_setting_is_one_sentence_naming_it_its_value_and_what_is_allowed(name, value, words):
    found = serve_problems(**{name: value})
    assert len(found) == 1, found
    assert found[0].startswith(f"{name} is ") and "; allowed: " in found[0] and found[0].endswith("."), found
    assert words in found[0], found
    assert "\n" not in found[0] and "\r" not in found[0]


def test_environment_values_are_never_shown_only_their_names():
    found = serve_problems(vllm_environment={"HF TOKEN": "hf_secretValue123"})
    assert len(found) == 1 and "HF TOKEN" in found[0] and "hf_secretValue123" not in found[0], found


@pytest.mark.parametrize("name, value", [
    ("vllm_model", "Qwen/Qwen3-8B"), ("vllm_model", "/var/cache/models/target+x"), ("vllm_served_model_name", ""),
    ("vllm_port", "8000"), ("vllm_gpu_memory_utilization", "0.75"), ("vllm_gpu_memory_utilization", 1),
    ("vllm_extra_args", ["--dtype", "float32", "--enforce-eager"]), ("vllm_extra_args", ["--port-range=1"]),
    ("vllm_environment", {"VLLM_CPU_KVCACHE_SPACE": "1", "_X": ""}),
    ("vllm_native_command", ["/var/cache/jetson_llm_vllm/venv/bin/vllm", "serve"]),
])
def test_good_serve_settings_are_no_problem(name, value):
    assert serve_problems(**{name: value}) == []


MIRROR = "http://mirror.site.example:8080/models/draft-1layer/"


@pytest.mark.parametrize("settings, words", [
    ({"jetson_spec_stage": ["x"]}, 'jetson_spec_stage is "[\'x\']"; allowed: a dictionary of draft_model, '
                                   'smaller_draft_model, eagle3_head -> source'),
    ({"jetson_spec_stage": {"target": MIRROR}}, 'jetson_spec_stage has the key "target"; allowed: draft_model,'),
    ({"jetson_spec_stage": {"draft_model": "ftp://m/x"}, "jetson_spec_draft_model": "/var/lib/m/d"},
     'jetson_spec_stage.draft_model is "ftp://m/x"; allowed: an http:// or https:// URL'),
    ({"jetson_spec_stage": {"draft_model": "http://u:pw-9x@m/x/"}, "jetson_spec_draft_model": "/var/lib/m/d"},
     'jetson_spec_stage.draft_model is "(a URL with credentials, not shown)"'),
    ({"jetson_spec_stage": {"draft_model": "http://m/x/\r\n"}, "jetson_spec_draft_model": "/var/lib/m/d"},
     "jetson_spec_stage.draft_model is"),
    ({"jetson_spec_stage": {"draft_model": MIRROR}, "jetson_spec_draft_model": "Qwen/Qwen3-0.6B"},
     'jetson_spec_stage.draft_model stages into jetson_spec_draft_model, which is "Qwen/Qwen3-0.6B"; allowed: '
     'the absolute path'),
    ({"jetson_spec_stage": {"eagle3_head": "/mnt/mirror/head"}, "jetson_spec_eagle3_head": ""},
     'stages into jetson_spec_eagle3_head, which is ""'),
])
def test_a_bad_stage_setting_names_the_value_and_what_is_allowed(settings, words):
    found = problems(**settings)
    assert len(found) == 1 and words in found[0], found
    assert "pw-9x" not in found[0]


def test_a_good_stage_setting_has_no_problem():
    assert problems(jetson_spec_stage={"draft_model": MIRROR, "smaller_draft_model": "/mnt/mirror/tiny"},
                    jetson_spec_draft_model="/var/lib/jetson_llm/models/draft-1layer",
                    jetson_spec_smaller_draft_model="/var/lib/jetson_llm/models/tiny") == []


@pytest.fixture()
def hooks(tmp_path):
    """A drain and an undrain task file on the controller."""
    drain, undrain = tmp_path / "drain.yml", tmp_path / "undrain.yaml"
    drain.write_text("- ansible.builtin.meta: noop\n")
    undrain.write_text("- ansible.builtin.meta: noop\n")
    return str(drain), str(undrain)


def hook_problems(drain, undrain):
    return S.role_setting_problems({"jetson_spec_drain_tasks": drain, "jetson_spec_undrain_tasks": undrain},
                                   "speculative_decoding", KEYS, is_file=lambda path: Path(path).is_file())


def test_drain_hooks_set_together_and_found_on_the_controller_are_no_problem(hooks):
    assert hook_problems(*hooks) == []
    assert hook_problems("", "") == []


@pytest.mark.parametrize("which, value, words", [
    (0, "drain.yml", 'jetson_spec_drain_tasks is "drain.yml"; allowed: empty (no hook) or the absolute path'),
    (1, "/srv/hooks/undrain.sh", 'jetson_spec_undrain_tasks is "/srv/hooks/undrain.sh"; allowed: empty'),
    (0, "/srv/hooks/../../etc/x.yml", 'jetson_spec_drain_tasks is "/srv/hooks/../../etc/x.yml"'),
    (0, "/srv/hooks/d.yml\n- shell: x", 'jetson_spec_drain_tasks is "/srv/hooks/d.yml\\u000a- shell: x"'),
    (0, "-e@/srv/x.yml", 'jetson_spec_drain_tasks is "-e@/srv/x.yml"'),
    (1, ["/srv/x.yml"], 'jetson_spec_undrain_tasks is "[\'/srv/x.yml\']"'),
    (0, "/nonexistent/jetson/drain.yml", 'jetson_spec_drain_tasks is "/nonexistent/jetson/drain.yml"; allowed: a task '
                                         'file that exists on the controller'),
])
def test_a_bad_drain_hook_names_the_value_and_what_is_allowed(hooks, which, value, words):
    given = list(hooks)
    given[which] = value
    found = hook_problems(*given)
    assert len(found) == 1 and words in found[0], found


@pytest.mark.parametrize("which", [0, 1])
def test_a_drain_hook_without_its_undrain_is_refused_and_the_reverse_too(hooks, which):
    given = list(hooks)
    given[which] = ""
    found = hook_problems(*given)
    assert len(found) == 1 and "allowed: both set or both empty (a host taken out of service must be put back)" in found[0]
