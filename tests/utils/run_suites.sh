#!/usr/bin/env bash
# make test: every suite, each suite's wall time printed as it ends and all of them at the end.
#
# Three lanes at once (each lane's suites in turn), then the rest of the integration suite alone
# (its real-vLLM benchmarks and start-ups need the machine to themselves):
#   lane 1: sanity, units        (ansible-test; each in its own temporary copy of the collection)
#   lane 2: lint, changelog, galaxy, compat
#   lane 3: integration-shared   (the integration files that time nothing on real vLLM: Makefile's
#                                 INTEGRATION_SHARED)
#   then:   integration-alone    (every other integration file)
# A suite's output goes to .build/test-logs/<suite>.log and is printed whole when the suite ends,
# so the lanes' outputs are not interleaved. The first failure fails the run (the other lanes are
# waited for, their results printed too) with the failing suite named.
# Set-up shared by the lanes (the venv, ansible-test's pip cache, the collection link, the nspawn
# root, the ansible-core venvs) is made first, in turn.
#   run_suites.sh            everything (make test)
#   run_suites.sh --static   the static suites only (lanes 1 and 2)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
make=${MAKE:-make}
logs=.build/test-logs
mkdir -p "$logs"
t0=$(date +%s)

static_only=0
[ "${1:-}" = --static ] && static_only=1
$make --no-print-directory venv "$top/.build/stamps/ansible-test" collection
[ "$static_only" -eq 1 ] || $make --no-print-directory nspawn compat-venvs

run_suite() {  # $1 suite: runs `make $1`, keeps its time in $logs/$1.time; prints its log when it ends
  local suite=$1 s0 rc=0
  s0=$(date +%s)
  $make --no-print-directory "$suite" >"$logs/$suite.log" 2>&1 || rc=$?
  echo "$(( $(date +%s) - s0 ))" >"$logs/$suite.time"
  {
    echo "=== make test: $suite (output follows)"
    cat "$logs/$suite.log"
    if [ "$rc" -eq 0 ]; then
      echo "=== make test: $suite took $(cat "$logs/$suite.time") s"
    else
      echo "=== make test: suite '$suite' FAILED after $(cat "$logs/$suite.time") s (exit $rc; $logs/$suite.log)"
    fi
  } >&2
  return "$rc"
}

lane() {  # the suites "$@" in turn; stops at the first failure
  local suite
  for suite in "$@"; do
    run_suite "$suite" || return 1
  done
}

lane sanity units &
lane1=$!
lane lint changelog galaxy compat &
lane2=$!
lane3=
if [ "$static_only" -eq 0 ]; then
  lane integration-shared &
  lane3=$!
fi
failed=0
wait "$lane1" || failed=1
wait "$lane2" || failed=1
if [ -n "$lane3" ]; then wait "$lane3" || failed=1; fi
if [ "$failed" -ne 0 ]; then
  echo "make test: a suite FAILED (above); the rest of the integration suite not run" >&2
  exit 1
fi

if [ "$static_only" -eq 1 ]; then
  echo "make test: the static suites passed in $(( $(date +%s) - t0 )) s (integration not run: --static)"
  exit 0
fi

# Alone, its output as it comes (also kept in $logs/integration-alone.log).
s0=$(date +%s)
rc=0
$make --no-print-directory integration-alone 2>&1 | tee "$logs/integration-alone.log" || rc=$?
echo "$(( $(date +%s) - s0 ))" >"$logs/integration-alone.time"
if [ "$rc" -ne 0 ]; then
  echo "make test: suite 'integration-alone' FAILED after $(cat "$logs/integration-alone.time") s" >&2
  exit 1
fi
echo "=== make test: integration-alone took $(cat "$logs/integration-alone.time") s"

times=""
for suite in lint changelog galaxy sanity units compat integration-shared integration-alone; do
  times="$times $suite=$(cat "$logs/$suite.time")s"
done
echo "make test: all suites passed in $(( $(date +%s) - t0 )) s (three lanes, then integration-alone):$times"
