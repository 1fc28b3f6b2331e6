"""Write (or check) each role's README.md from its meta/argument_specs.yml.

Galaxy and Automation Hub refuse a collection whose roles have no README ("No role readme found").
The README is generated so that it cannot drift from the argument specs: what the role does, its entry
points, every variable (type, default, choices, description) and an example play.

    role_readme.py          write roles/*/README.md
    role_readme.py --check  fail (exit 1) when one differs from what the specs give (make lint runs this)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

TOP = Path(__file__).resolve().parents[2]
COLLECTION = "jetson_llm.vllm"

EXAMPLES = {
    "serve": """\
- name: Deploy the baseline vLLM service
  hosts: jetsons
  become: true
  roles:
    - role: jetson_llm.vllm.serve
      vars:
        vllm_model: Qwen/Qwen3-8B
        vllm_host: 127.0.0.1
        vllm_api_key: "{{ vault_vllm_api_key }}"
""",
    "speculative_decoding": """\
- name: Speculative decoding where a benchmark proves it pays
  hosts: jetsons
  become: true
  roles:
    - role: jetson_llm.vllm.serve
      vars:
        vllm_model: Qwen/Qwen3-8B
    - role: jetson_llm.vllm.speculative_decoding
      vars:
        jetson_spec_expected_concurrency: 1
""",
}

MARKUP = [
    (re.compile(r"[CVOM]\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"[IB]\(([^)]*)\)"), r"*\1*"),
    (re.compile(r"L\(([^,)]*),\s*([^)]*)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^)]*)\)"), r"<\1>"),
]


def text(value):
    """Ansible doc markup -> Markdown, one paragraph per list item."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        item = " ".join(str(item).split())
        for pattern, repl in MARKUP:
            item = pattern.sub(repl, item)
        out.append(item)
    return out


def cell(value):
    return " ".join(text(value)).replace("|", "\\|")


def default_of(option):
    if "default" not in option:
        return "*required*" if option.get("required") else ""
    value = option["default"]
    shown = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    shown = shown[:-4].strip() if shown.endswith("\n...") else shown.replace("\n...", "")
    return "`%s`" % shown.replace("|", "\\|")


def render(role):
    specs = yaml.safe_load((TOP / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    main = specs["main"]
    lines = ["# %s.%s" % (COLLECTION, role), "",
             "<!-- Generated from meta/argument_specs.yml by tests/utils/role_readme.py: edit those, then run it. -->",
             "", cell(main["short_description"]) + ".", ""]
    for paragraph in text(main.get("description", [])):
        lines += [paragraph, ""]
    lines += ["More: [docs/roles.md](../../docs/roles.md), `ansible-doc -t role %s.%s`." % (COLLECTION, role), "",
              "## Entry points", ""]
    for name, spec in specs.items():
        lines.append("- `%s`: %s" % (name, cell(spec.get("short_description", ""))))
    lines += ["", "## Example", "", "```yaml", EXAMPLES[role].rstrip("\n"), "```", "",
              "## Variables", "", "Entry point `main` (the other entry points take the same variables).", "",
              "| variable | type | default | description |", "|---|---|---|---|"]
    for name, option in main["options"].items():
        kind = option.get("type", "str")
        if kind == "list" and option.get("elements"):
            kind = "list of %s" % option["elements"]
        description = cell(option.get("description", ""))
        if option.get("choices"):
            description += " Choices: %s." % ", ".join("`%s`" % choice for choice in option["choices"])
        lines.append("| `%s` | %s | %s | %s |" % (name, kind, default_of(option), description))
    return "\n".join(lines) + "\n"


def main(argv):
    check = "--check" in argv
    stale = []
    for role in sorted(path.name for path in (TOP / "roles").iterdir() if (path / "meta" / "argument_specs.yml").exists()):
        if role not in EXAMPLES:
            stale.append("%s: no example in tests/utils/role_readme.py" % role)
            continue
        path = TOP / "roles" / role / "README.md"
        wanted = render(role)
        if check:
            if not path.exists() or path.read_text() != wanted:
                stale.append("%s is stale: run tests/utils/role_readme.py" % path.relative_to(TOP))
        else:
            path.write_text(wanted)
    for line in stale:
        print(line, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
