#!/usr/bin/env bash
# make demo: boot the demo fleet (inventories/demo/hosts.yml), run the main job, run it again (it
# must change nothing), and tear the fleet down (KEEP=1 leaves it up). Needs the vLLM test bed and
# the nspawn root (the Makefile's testbed and nspawn targets).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
inv="$top/inventories/demo/hosts.yml"
py="$top/.venv/bin/python"
report_dir=${REPORT_DIR:-$top/reports}
# enable_speculation.yml's play settings: the whole demo fleet, a canary then one batch.
extra=(-e jetson_spec_hosts=demo_fleet -e jetson_spec_canary_size=1 -e jetson_spec_batch_size=100%
       -e "jetson_spec_report_dir=$report_dir")
t0=$(date +%s)
say() { printf '\n=== [demo %ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

teardown() {
  if [ "${KEEP:-0}" = 1 ]; then
    say "KEEP=1: the demo fleet stays up (tests/nspawn/fleet.py demo-down $inv removes it)"
  else
    say "tearing the demo fleet down"
    "$py" "$top/tests/nspawn/fleet.py" demo-down "$inv"
  fi
}
trap teardown EXIT

say "booting the demo fleet (systemd-nspawn hosts with Jetson identities)"
"$py" "$top/tests/nspawn/fleet.py" demo-up "$inv"

say "first run: facts, baseline services, speculative decoding where it pays (several minutes: vLLM starts and benchmarks on 2 shared cores)"
ansible-playbook -i "$inv" "$top/playbooks/demo.yml" "${extra[@]}" | tee "$top/.build/demo-run1.log"

say "checking the report: the four outcomes the demo fleet is built for"
"$py" - "$report_dir/fleet-report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
got = {row["host"]: row["status"] for row in report["hosts"]}
want = {"thor-devkit": "enabled", "agx-orin-64": "reverted", "orin-nano-super": "refused", "build-server": "skipped"}
bad = {host: (got.get(host), status) for host, status in want.items() if got.get(host) != status}
for host in sorted(got):
    print(f"  {host:18} {got[host]}")
if bad:
    sys.exit(f"demo: unexpected outcomes (host: (got, expected)): {bad}")
PY

say "second run: the same inputs must change nothing (no restart, no benchmark)"
ansible-playbook -i "$inv" "$top/playbooks/demo.yml" "${extra[@]}" | tee "$top/.build/demo-run2.log"
if grep -E '^[a-z0-9-]+ +: ok=[0-9]+ +changed=[1-9]' "$top/.build/demo-run2.log"; then
  echo "demo: the second run changed something (see above)" >&2
  exit 1
fi
say "done in $(( $(date +%s) - t0 )) s; second run: changed=0 on every host; report: $report_dir/fleet-report.html"
