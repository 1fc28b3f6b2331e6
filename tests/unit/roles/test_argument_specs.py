"""Each role's meta/argument_specs.yml and defaults/main.yml say the same (prometheus lints this too).

Role argument validation runs the spec; the spec's ``default:`` is documentation only and the real
defaults live in defaults/main.yml: a variable added, removed or changed in one and not the other
fails here.
"""
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
ROLE_NAMES = sorted(p.name for p in ROLES.iterdir() if (p / "meta" / "argument_specs.yml").is_file())


def _load(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    return defaults, spec["options"]


def test_both_roles_have_specs():
    assert ROLE_NAMES == ["serve", "speculative_decoding"]


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_every_default_is_documented_with_the_same_value(role):
    defaults, options = _load(role)
    for name, value in defaults.items():
        assert name in options, f"{role}: {name} has a default but no argument spec entry"
        assert "default" in options[name], f"{role}: the spec of {name} names no default"
        assert options[name]["default"] == value, f"{role}: {name} defaults to {value!r}, the spec says {options[name]['default']!r}"


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_every_documented_option_has_a_default_or_is_required(role):
    defaults, options = _load(role)
    for name, option in options.items():
        if option.get("required"):
            assert name not in defaults, f"{role}: {name} is required but has a default"
        else:
            assert name in defaults, f"{role}: {name} is documented with no default in defaults/main.yml"
        assert option.get("description"), f"{role}: {name} has no description"
        assert option.get("type"), f"{role}: {name} has no type"


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_choices_hold_the_default(role):
    defaults, options = _load(role)
    for name, option in options.items():
        if "choices" in option and name in defaults:
            assert defaults[name] in option["choices"], f"{role}: {name} default {defaults[name]!r} not in {option['choices']}"


# The serve role's variables speculative_decoding documents too, because a run without them fails (ansible-doc shows
# them required): the same name, type and requirement as in serve's spec.
SHARED_WITH_SERVE = ("vllm_model",)


@pytest.mark.parametrize("role,prefix", [("serve", "vllm_"), ("speculative_decoding", "jetson_spec_")])
def test_public_variables_carry_the_role_prefix(role, prefix):
    _defaults, options = _load(role)
    shared = SHARED_WITH_SERVE if role == "speculative_decoding" else ()
    assert all(name.startswith(prefix) or name in shared for name in options), \
        [n for n in options if not n.startswith(prefix) and n not in shared]


@pytest.mark.parametrize("name", SHARED_WITH_SERVE)
def test_a_serve_variable_speculative_decoding_needs_is_documented_as_serve_documents_it(name):
    _defaults, serve = _load("serve")
    _defaults, spec = _load("speculative_decoding")
    for key in ("type", "required", "choices", "no_log"):
        assert spec[name].get(key) == serve[name].get(key), f"{name}: {key} differs between the roles' specs"
    assert spec[name].get("required") is True


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_secrets_are_no_log(role):
    _defaults, options = _load(role)
    for name, option in options.items():
        if name.endswith(("_hf_token", "_api_key", "_password", "_secret")):
            assert option.get("no_log") is True, f"{role}: {name} is a secret but not no_log"


def test_the_role_names_the_overlay_files_the_module_writes():
    """speculative_decoding's vars name the overlay's paths (messages, the record, the guard script): they must be the
    ones jetson_llm.vllm.speculative_overlay writes (module_utils _overlay and _overlay_compose own the names)."""
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay as _overlay
    from ansible_collections.jetson_llm.vllm.plugins.module_utils._service import overlay_compose as _overlay_compose

    text = (ROLES / "speculative_decoding" / "vars" / "main.yml").read_text()
    for name in _overlay.NAMES + _overlay_compose.NAMES:
        assert name in text, f"vars/main.yml does not name {name}"
    assert "/run/systemd/system/" in text and "/etc/systemd/system/" in text
    assert _overlay.CANDIDATE_DIR == "/run/systemd/system" and _overlay.COMMITTED_DIR == "/etc/systemd/system"
