#!/usr/bin/env bash
# Run galaxy-importer (the check Galaxy and Automation Hub run on upload) on the built collection tarball.
# It runs in its own cached virtualenv (GALAXY_IMPORTER_VENV, outside the clone) with a pinned version; its
# ansible-test step needs containers and is off (make sanity runs ansible-test), ansible-lint and ansible-doc on.
# Fails on a failed import and on any warning or error line in its output.
# The venv also holds PyPI's `ansible` package (only PyPI is reachable here), which bundles community.docker, the
# dependency galaxy.yml declares: its ansible-lint then resolves community.docker.docker_compose_v2 as on a controller
# where `ansible-galaxy collection install` brought the dependency.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
version=0.4.44
venv=${GALAXY_IMPORTER_VENV:-/var/cache/jetson_llm_vllm/galaxy-importer-$version}
if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('galaxy-importer') == '$version'; m.version('ansible')" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "galaxy-importer==$version" "ansible==12.3.0"
fi
out=.build/galaxy
rm -rf "$out" && mkdir -p "$out"
.venv/bin/ansible-galaxy collection build --output-path "$out" . >/dev/null
cat > "$out/galaxy-importer.cfg" <<CFG
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_LINT = True
RUN_ANSIBLE_DOC = True
CHECK_CHANGELOG = True
LOG_LEVEL_MAIN = INFO
CFG
set +e
(cd "$out" && GALAXY_IMPORTER_CONFIG="$PWD/galaxy-importer.cfg" PATH="$venv/bin:$PATH" \
  timeout 900 "$venv/bin/python" -m galaxy_importer.main ./*.tar.gz) > "$out/import.log" 2>&1
rc=$?
set -e
bad=$(grep -E '^(WARNING|ERROR)|WARNING:|ERROR:' "$out/import.log" || true)
if [ "$rc" -ne 0 ] || [ -n "$bad" ]; then
  cat "$out/import.log" >&2
  echo "galaxy-importer: the import failed (rc $rc) or warned:" >&2
  echo "$bad" >&2
  exit 1
fi
grep -cE '^Loading (role|module|playbook|filter)' "$out/import.log" | sed 's/^/galaxy-importer: passed, content items loaded: /'
