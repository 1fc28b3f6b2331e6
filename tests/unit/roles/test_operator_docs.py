"""What an operator reads first: the README's first screen, the docs index, and the production impact figures.

The figures (restarts and requests per host) are computed here from the role's defaults, so a change of the
benchmark workload, the confirmation's, the revert check's or the tuning steps fails until the docs say it.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

TOP = Path(__file__).resolve().parents[3]
README = (TOP / "README.md").read_text()
FLEET = (TOP / "docs" / "fleet.md").read_text()
DEFAULTS = yaml.safe_load((TOP / "roles" / "speculative_decoding" / "defaults" / "main.yml").read_text())
FIRST_SCREEN = "\n".join(README.splitlines()[:60])


def _requests(workload, override=None):
    merged = dict(workload, **(override or {}))
    return len(merged["concurrency"]) * (merged["num_prompts"] + merged["warmup_prompts"])


def impact():
    """Requests per outcome with the defaults (tasks/baseline.yml, verify.yml, revert.yml, tune.yml, confirm.yml)."""
    workload = DEFAULTS["jetson_spec_benchmark"]
    bench = _requests(workload)
    revert = _requests(workload, DEFAULTS["jetson_spec_revert_benchmark"])
    confirm = _requests(workload, dict(DEFAULTS["jetson_spec_confirm_benchmark"], concurrency=[1]))
    steps = DEFAULTS["jetson_spec_tune_max_steps"]
    outcomes = {
        "kept": 2 * bench,
        "reverted": 2 * bench + revert,
        "kept and tuned": 2 * bench + steps * bench,
        "batch-size-aware, reverted": 3 * bench + revert,
        "batch-size-aware, kept": 3 * bench,
    }
    return bench, revert, confirm, outcomes


def test_the_production_impact_figures_are_the_defaults():
    bench, revert, confirm, outcomes = impact()
    low, high = min(outcomes.values()), max(outcomes.values())
    workload = DEFAULTS["jetson_spec_benchmark"]
    assert "%d + %d warm-up requests at concurrency 1 and at concurrency 8" % (
        workload["num_prompts"], workload["warmup_prompts"]) in FLEET
    assert "`jetson_spec_tune_max_steps` %d" % DEFAULTS["jetson_spec_tune_max_steps"] in FLEET
    assert "`jetson_spec_max_startup_attempts` %d" % DEFAULTS["jetson_spec_max_startup_attempts"] in FLEET
    revert_bench = DEFAULTS["jetson_spec_revert_benchmark"]
    assert "| %d (baseline) + %d (candidate) + %d (revert check: %d and %d warm-up, at concurrency 1) |" % (
        bench, bench, revert, revert_bench["num_prompts"], workload["warmup_prompts"]) in FLEET
    assert "| kept, no tuning | 1: the candidate | %d |" % outcomes["kept"] in FLEET
    assert "| %d per step |" % bench in FLEET and "| %d more (sequential: fewer) |" % bench in FLEET
    assert "| up to %d attempts, then the previous service | %d (baseline) + %d (revert check) |" % (
        DEFAULTS["jetson_spec_max_startup_attempts"], bench, revert) in FLEET
    summary = ("one to four restarts and %d to %d requests** per host on these paths (%d requests when no\n"
               "candidate starts; %d fewer when a stored baseline is reused" % (low, high, bench + revert, bench))
    assert summary in FLEET
    assert "| 1 to 4 | %d to %d |" % (low, high) in FLEET
    usual, worst = restarts()
    assert (usual, worst) == (4, 7), "the docs say one to four restarts, at most 7: %r" % ((usual, worst),)
    assert "restarts vLLM at most %d times" % worst in FLEET
    assert "restarts a host's vLLM one to four times (at most %d) and sends it %d to %d requests" % (
        worst, low, high) in README
    confirm_bench = DEFAULTS["jetson_spec_confirm_benchmark"]
    assert "(%d + %d requests, `jetson_spec_confirm_benchmark`)" % (
        confirm_bench["num_prompts"], confirm_bench["warmup_prompts"]) in FLEET
    for text in (README, FLEET):
        assert "one restart and %d requests" % confirm in text
    assert "one start-up and %d requests" % confirm in FLEET


def restarts():
    """(the most restarts of one path, the most when the paths combine) with the defaults: tasks/apply.yml tries up to
    jetson_spec_max_startup_attempts starts, verify.yml reverts (1) or tune.yml tries each step (1 each) and puts the
    best back (1), batch_aware.yml starts once more; baseline.yml first removes speculation that already runs (1)."""
    attempts = DEFAULTS["jetson_spec_max_startup_attempts"]
    steps = DEFAULTS["jetson_spec_tune_max_steps"]
    paths = {"kept": 1, "reverted": 2, "kept and tuned": 1 + steps + 1, "no start": attempts + 1,
             "batch-size-aware, reverted": 3}
    # combined: a re-verification's removal, failed starts before the last attempt starts, then tuning (batch-size-aware
    # speculation and tuning never combine: main.yml skips tuning for a per-batch-size K)
    combined = max(1 + attempts + steps + 1, 1 + attempts + 2)
    return max(paths.values()), combined


def test_the_readmes_first_screen_has_both_paths():
    blocks = re.findall(r"```sh\n(.*?)```", FIRST_SCREEN, re.S)
    assert blocks, "no shell block on the README's first screen"
    first = [line.split("#")[0].strip() for line in blocks[0].splitlines() if line.split("#")[0].strip()]
    assert first[0].endswith("make demo") and first[1] == "make test", first
    for words in ("## Try it here", "## Run it on your fleet", "What each Jetson needs", "systemd", "Docker Compose v2",
                  "NVIDIA runtime", "Hugging Face access", "a local path", "community.docker",
                  "ansible-galaxy collection install", "jetson_llm.vllm.enable_speculation",
                  "jetson_llm.vllm.disable_speculation", "jetson_llm.vllm.report", "docs/README.md"):
        assert words in FIRST_SCREEN, "the README's first screen (60 lines) lacks %r" % words


def test_the_docs_index_links_every_document_and_defines_the_terms():
    index = (TOP / "docs" / "README.md").read_text()
    links = {link[2:] if link.startswith("./") else link
             for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", index) if not re.match(r"[a-z]+://", link)}
    for link in links:
        assert (TOP / "docs" / link).resolve().exists(), "docs/README.md links %s, which does not exist" % link
    documents = {path.name for path in (TOP / "docs").glob("*.md")} - {"README.md"}
    assert documents <= links, "docs/README.md does not link %s" % sorted(documents - links)
    for term in ("**target**", "**draft**", "**EAGLE-3 head**", "**MTP**", "**K**", "**acceptance rate**", "**TPOT**",
                 "**baseline**", "**candidate**", "**the specification**", "**non-inferiority**",
                 "**alpha spending**", "**phase shift**", "**cohort**", "**canary**", "**confirmation**"):
        assert term in index, "docs/README.md defines no %s" % term
