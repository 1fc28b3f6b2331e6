#!/usr/bin/env bash
# A Debian 12 root filesystem for the systemd-nspawn test hosts (and the demo fleet), cached
# outside the clone as a zstd tarball:
#
#   CACHE=${JETSON_LLM_NSPAWN_CACHE:-/var/cache/jetson_llm_nspawn}
#   $CACHE/root.tar.zst   systemd, dbus, python3 and its headers (runs the modules and the test bed's vLLM venv,
#                         bound read-only), libnuma1, g++ and openssl (vLLM CPU start-up needs them)
#   $CACHE/root.key       the package list the tarball was built with
#
# Idempotent (same package list: returns at once); from nothing on a fresh Debian 12 machine as root.
set -euo pipefail

CACHE=${JETSON_LLM_NSPAWN_CACHE:-/var/cache/jetson_llm_nspawn}
MIRROR=${JETSON_LLM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
INCLUDE="systemd,systemd-sysv,dbus,python3,libpython3.11-dev,libnuma1,g++,openssl,ca-certificates,procps"
KEY="$SUITE minbase $INCLUDE"
APT_PACKAGES="systemd-container debootstrap zstd"

t0=$(date +%s)
step() { echo "[nspawn-root $(( $(date +%s) - t0 ))s] $*"; }
die() { echo "nspawn root build FAILED: $*" >&2; exit 1; }

if [ -f "$CACHE/root.tar.zst" ] && [ "$(cat "$CACHE/root.key" 2>/dev/null)" = "$KEY" ]; then
  step "already built ($KEY): $CACHE/root.tar.zst"
  exit 0
fi

missing=""
for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  command -v apt-get >/dev/null || die "missing Debian packages:$missing and no apt-get"
  step "apt-get install$missing"
  apt-get update -qq
  # shellcheck disable=SC2086  # a list of package names, split on purpose
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
step "debootstrap $SUITE ($INCLUDE), about 2 minutes"
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
# No getty on a console nobody reads; a stable machine-id is written per host at boot.
rm -f "$work/root/etc/machine-id"
: > "$work/root/etc/machine-id"
chroot "$work/root" systemctl mask console-getty.service getty@tty1.service systemd-timesyncd.service >/dev/null 2>&1 || true
chroot "$work/root" /usr/bin/python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || die "the root's python3 is not 3.11 (the test bed venv needs it)"
step "packing"
tar --numeric-owner -C "$work/root" --zstd -cf "$work/root.tar.zst" .
mv "$work/root.tar.zst" "$CACHE/root.tar.zst"
echo "$KEY" > "$CACHE/root.key"
step "done: $(du -h "$CACHE/root.tar.zst" | cut -f1)"
