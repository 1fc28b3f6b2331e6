#!/usr/bin/env bash
# make test: every suite, each suite's wall time printed as it ends and all of them at the end.
#
# The static suites run in two lanes at once (each lane's suites in turn), the integration suite
# alone after them (its real-vLLM benchmarks need the machine to themselves):
#   lane 1: sanity, units        (ansible-test; each in its own temporary copy of the collection)
#   lane 2: lint, changelog, galaxy, compat
# A suite's output goes to .build/test-logs/<suite>.log and is printed whole when the suite ends,
# so the lanes' outputs are not interleaved. The first failure fails the run (the other lane is
# waited for, its result printed too) with the failing suite named.
# Set-up shared by both lanes (the venv, ansible-test's pip cache) is made first, in turn.
#   run_suites.sh            everything (make test)
#   run_suites.sh --static   the static suites only
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
make=${MAKE:-make}
logs=.build/test-logs
mkdir -p "$logs"
t0=$(date +%s)

$make --no-print-directory venv "$top/.build/stamps/ansible-test" collection

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
failed=0
wait "$lane1" || failed=1
wait "$lane2" || failed=1
if [ "$failed" -ne 0 ]; then
  echo "make test: a static suite FAILED (above); integration not run" >&2
  exit 1
fi

if [ "${1:-}" = --static ]; then
  echo "make test: the static suites passed in $(( $(date +%s) - t0 )) s (integration not run: --static)"
  exit 0
fi

s0=$(date +%s)
if ! $make --no-print-directory integration; then
  echo "make test: suite 'integration' FAILED after $(( $(date +%s) - s0 )) s" >&2
  exit 1
fi
echo "$(( $(date +%s) - s0 ))" >"$logs/integration.time"
echo "=== make test: integration took $(cat "$logs/integration.time") s"

times=""
for suite in lint changelog galaxy sanity units compat integration; do
  times="$times $suite=$(cat "$logs/$suite.time")s"
done
echo "make test: all suites passed in $(( $(date +%s) - t0 )) s (the static ones two at a time):$times"
