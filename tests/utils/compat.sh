#!/usr/bin/env bash
# Run the unit suite and render every module's documentation under the oldest and newest
# ansible-core this collection claims (meta/runtime.yml: >=2.18): 2.18 on Python 3.11 and 2.21
# on Python 3.12+ (ansible-core 2.21 needs it; these build machines have it under pyenv).
# Each runs in its own cached virtualenv under .build/compat/ansible-core-<version>/.
#   compat.sh          the venvs, then the unit suite and ansible-doc under each
#   compat.sh venvs    only the venvs (make integration: tests/integration/test_roles.py runs some role
#                      scenarios with these ansible-playbooks)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
mode=${1:-all}

find_python() {  # the first interpreter of the candidates "$2..." that is at least $1 (e.g. 3.12)
  local want=$1 cand
  shift
  for cand in "$@"; do
    local exe
    exe=$(command -v "$cand" 2>/dev/null) || continue
    if "$exe" -c "import sys; sys.exit(0 if sys.version_info[:2] >= tuple(map(int, '$want'.split('.'))) else 1)" 2>/dev/null; then
      echo "$exe"; return 0
    fi
  done
  return 1
}

run_one() {  # $1 ansible-core version, $2 minimum python, $3... interpreters in order of preference
  local core=$1 pymin=$2 py venv
  shift 2
  if ! py=$(find_python "$pymin" "$@"); then
    echo "compat: ansible-core $core needs Python >= $pymin and none was found (set COMPAT_PYTHON)" >&2
    exit 1
  fi
  venv=.build/compat/ansible-core-$core
  if [ ! -x "$venv/bin/ansible-doc" ] || ! "$venv/bin/python" -c "import ansible.release as r; assert r.__version__ == '$core'" 2>/dev/null; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q "ansible-core==$core" pytest pyyaml
  fi
  if [ "$mode" = venvs ]; then
    echo "compat: $venv ($("$venv/bin/ansible-playbook" --version | head -n1))"
    return 0
  fi
  echo "== ansible-core $core on $("$venv/bin/python" --version)"
  tests/utils/collection.sh link >/dev/null
  for module in plugins/modules/*.py; do
    name=$(basename "$module" .py)
    ANSIBLE_COLLECTIONS_PATH=.build/collections "$venv/bin/ansible-doc" -t module "jetson_llm.vllm.$name" >/dev/null
    echo "ansible-doc jetson_llm.vllm.$name: ok"
  done
  # The decision error rates (Monte Carlo on pure-Python decision code, no ansible-core in it) run once, in units.
  "$venv/bin/pytest" -q -p no:cacheprovider tests/unit \
    --deselect tests/unit/plugins/module_utils/test_decision_error_rates.py
}

# The floor on the oldest Python the controller supports here, the ceiling on the newest.
run_one 2.18.19 3.11 python3.11 /usr/bin/python3.11 python3
# COMPAT_PYTHON names a Python 3.12+ where none of these exists (Debian 12 ships 3.11 only).
run_one 2.21.5 3.12 "${COMPAT_PYTHON:-}" python3.13 /root/.pyenv/versions/3.13*/bin/python3 python3.12 /root/.pyenv/versions/3.12*/bin/python3 python3
