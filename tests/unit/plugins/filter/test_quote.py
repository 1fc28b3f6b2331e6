"""systemd and compose quoting (plugins/filter/quote.py), checked against systemd's own parser rules."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson_llm.vllm.plugins.filter.quote import compose_escape, systemd_quote
from ansible_collections.jetson_llm.vllm.plugins.filter.report import run_summary


def systemd_unquote(text):
    """The inverse for one argument (systemd: C escapes inside double quotes, %% and $$ literals)."""
    assert text.startswith('"') and text.endswith('"')
    body = text[1:-1]
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            out.append(body[i + 1])
            i += 2
            continue
        if char in "%$":
            assert body[i + 1] == char, f"unescaped {char} in {text}"
            out.append(char)
            i += 2
            continue
        assert char != '"', f"unescaped quote in {text}"
        out.append(char)
        i += 1
    return "".join(out)


@pytest.mark.parametrize("value", [
    '{"method":"draft_model","model":"/m/d","num_speculative_tokens":4}',
    "100%", "$HOME", "${X}", "a b", "back\\slash", "it's", "", "0.70", "--max-model-len",
])
def test_systemd_quote_round_trips(value):
    quoted = systemd_quote(value)
    assert systemd_unquote(quoted) == value
    assert "%" not in quoted.replace("%%", "") and "$" not in quoted.replace("$$", "")


def test_environment_assignments_keep_dollar_signs():
    # systemd.exec(5): Environment= values get specifiers and C escapes, not variable expansion.
    assert systemd_quote("PATTERN=a$b%c", environment=True) == '"PATTERN=a$b%%c"'
    assert systemd_quote("PATTERN=a$b") == '"PATTERN=a$$b"'


def test_numbers_become_text():
    assert systemd_quote(8000) == '"8000"'


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00b", "tab\there"])
def test_control_characters_fail(value):
    with pytest.raises(AnsibleFilterError, match="control character"):
        systemd_quote(value)
    with pytest.raises(AnsibleFilterError):
        compose_escape(value)


def test_lists_fail():
    with pytest.raises(AnsibleFilterError):
        systemd_quote(["a"])


def test_compose_escape():
    assert compose_escape("a$b${c}") == "a$$b$${c}"
    assert compose_escape("price$1") == "price$$1"
    assert compose_escape('{"k":"v"}') == '{"k":"v"}'


def test_run_summary():
    run = {"concurrency": 1, "throughput_tok_s": 44.0, "tpot_ms_p50": 22.0, "ttft_ms_p50": 300.0, "itl_ms_p50": 21.0,
           "completed": 50, "failed": 0, "spec_decode": {"acceptance_rate": 0.7}, "errors": ["x"]}
    summary = run_summary(run)
    assert summary["acceptance_rate"] == 0.7 and "errors" not in summary and summary["throughput_tok_s"] == 44.0
    assert run_summary({"concurrency": 8})["acceptance_rate"] is None
    with pytest.raises(AnsibleFilterError):
        run_summary([1])
