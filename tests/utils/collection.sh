#!/usr/bin/env bash
# Place this checkout where Ansible expects a collection:
#   link  -> .build/collections/ansible_collections/jetson_llm/vllm (a symlink to the checkout;
#            used by pytest, ansible-playbook, ansible-doc; edits are seen at once)
#   copy [BASE] -> BASE/ansible_collections/jetson_llm/vllm (default BASE: .build/ansible-test;
#            ansible-test needs BASE outside this git checkout: see ansible_test.sh),
#            a copy of the files git tracks or would track; ansible-test refuses symlinked
#            collection roots. Give each concurrent run its own BASE.
# Prints the collection path it made.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-link}
case "$mode" in
  link)
    dest="$top/.build/collections/ansible_collections/jetson_llm"
    mkdir -p "$dest"
    ln -sfn "$top" "$dest/vllm"
    echo "$dest/vllm"
    ;;
  copy)
    dest="${2:-$top/.build/ansible-test}/ansible_collections/jetson_llm/vllm"
    rm -rf "$dest"
    mkdir -p "$dest"
    cd "$top"
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z --cached --others --exclude-standard \
        | xargs -0 -I{} sh -c 'if test -e "{}"; then printf "%s\0" "{}"; fi' \
        | tar --null -T - -cf - | tar -C "$dest" -xf -
    else
      tar --exclude=./.venv --exclude=./.build --exclude=./.cache -cf - . | tar -C "$dest" -xf -
    fi
    echo "$dest"
    ;;
  *)
    echo "usage: $0 link|copy" >&2
    exit 2
    ;;
esac
