#!/usr/bin/env bash
# Run `ansible-test ARGS...` on a fresh copy of the collection in a temporary
# ansible_collections/jetson_llm/vllm tree outside this git checkout (inside it, ansible-test
# would ask this repo's git for the file list and find the copy ignored), then clean up.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
base=$(mktemp -d "${TMPDIR:-/tmp}/jetson_llm.vllm-ansible-test.XXXXXX")
trap 'rm -rf "$base"' EXIT
dir=$("$top/tests/utils/collection.sh" copy "$base")
cd "$dir"
"$top/.venv/bin/ansible-test" "$@"
