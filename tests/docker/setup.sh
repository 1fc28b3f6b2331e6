#!/usr/bin/env bash
# A real Docker Engine with Compose v2 and a local vLLM test-bed image, for the compose role test
# (tests/integration/test_compose.py). From nothing on Debian 12 as root; idempotent; fails loudly.
#
#   docker.io (bookworm, Engine 20.10)      apt-get
#   docker-compose (trixie, Compose v2.26+) one .deb fetched from Debian trixie through a separate
#                                           apt sources list and lists dir (bookworm only has v1), installed
#                                           with dpkg (it depends only on libc6 >= 2.34)
#   dockerd                                 started in the background when not running (no systemd as PID 1 here),
#                                           every container under the cgroup jetson-llm-docker at a low CPU weight
#   localhost/jetson-llm-vllm-testbed:1     `docker import` of the nspawn root tarball (tests/nspawn/build_root.sh:
#                                           python3.11 and headers, libnuma1, g++, openssl), keyed on its checksum
#
# Everything is cached outside the clone:
#   CACHE=${JETSON_LLM_DOCKER_CACHE:-/var/cache/jetson_llm_docker}   trixie lists, the .deb, dockerd.log, image key
set -euo pipefail

CACHE=${JETSON_LLM_DOCKER_CACHE:-/var/cache/jetson_llm_docker}
NSPAWN_CACHE=${JETSON_LLM_NSPAWN_CACHE:-/var/cache/jetson_llm_nspawn}
MIRROR=${JETSON_LLM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMAGE=${JETSON_LLM_TESTBED_IMAGE:-localhost/jetson-llm-vllm-testbed:1}
COMPOSE_MIN=2.18
HERE=$(cd "$(dirname "$0")" && pwd)

t0=$(date +%s)
step() { echo "[docker-setup $(( $(date +%s) - t0 ))s] $*"; }
die() { echo "docker setup FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root"
command -v apt-get >/dev/null || die "no apt-get (Debian 12 expected)"
mkdir -p "$CACHE"

# --- Docker Engine (bookworm's docker.io) -------------------------------------------------------
if ! dpkg -s docker.io >/dev/null 2>&1; then
  step "apt-get install docker.io"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
[ -x /usr/sbin/dockerd ] || die "docker.io is installed but /usr/sbin/dockerd is missing"

# --- Compose v2 from trixie (one .deb, its own apt state) ---------------------------------------
compose_version() { /usr/bin/docker compose version --short 2>/dev/null | sed 's/^v//'; }
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
have=$(compose_version || true)
if [ -z "$have" ] || ! version_ge "$have" "$COMPOSE_MIN"; then
  step "fetch docker-compose from Debian trixie (have: ${have:-none})"
  trixie="$CACHE/apt-trixie"
  mkdir -p "$trixie/lists/partial" "$trixie/archives/partial" "$trixie/etc/sources.list.d" "$trixie/etc/preferences.d"
  cat > "$trixie/etc/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main
SRC
  : > "$trixie/etc/preferences"
  apt_trixie=(-o "Dir::Etc::SourceList=$trixie/etc/sources.list" -o "Dir::Etc::SourceParts=$trixie/etc/sources.list.d"
              -o "Dir::Etc::Preferences=$trixie/etc/preferences" -o "Dir::Etc::PreferencesParts=$trixie/etc/preferences.d"
              -o "Dir::State::Lists=$trixie/lists" -o "Dir::Cache::Archives=$trixie/archives"
              -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=")
  apt-get "${apt_trixie[@]}" update -qq || die "apt-get update of the trixie lists failed"
  (cd "$trixie/archives" && rm -f docker-compose_*.deb && apt-get "${apt_trixie[@]}" download docker-compose) \
    || die "could not download trixie's docker-compose"
  deb=$(find "$trixie/archives" -maxdepth 1 -name 'docker-compose_*.deb' | head -n1)
  [ -n "$deb" ] || die "no docker-compose .deb downloaded"
  depends=$(dpkg-deb -f "$deb" Depends)
  step "$(basename "$deb"): Depends: $depends"
  case "$depends" in *,*) die "trixie's docker-compose depends on more than libc6 ($depends): refusing to mix suites";; esac
  # bookworm's docker-compose 1.x owns /usr/bin/docker-compose: the trixie package replaces it.
  dpkg -i "$deb" >/dev/null || die "dpkg -i $deb failed"
  have=$(compose_version || true)
  if [ -z "$have" ] || ! version_ge "$have" "$COMPOSE_MIN"; then
    die "docker compose version is '${have:-none}' after install (need >= $COMPOSE_MIN)"
  fi
fi
step "Compose v$have"

# --- the daemon -----------------------------------------------------------------------------------
# CPU priority of the test containers. The CPU build of vLLM keeps both cores busy while it generates, and
# a benchmark client beside it was starved for whole requests (seen in CI: 7 of 8 requests at concurrency 8
# read at once, and vllm_benchmark rightly refused the level). The test-bed servers and the nspawn hosts'
# vllm.service run at nice 10 for this reason (docs/testbed.md, "CPU priority"); a container is in a cgroup
# of its own, where nice does not reach, so every container of this engine goes under one parent cgroup
# with the CPU weight of a nice-10 task (cgroup v1 cpu.shares 110 of 1024; v2 cpu.weight 11 of 100). Only CPU
# priority: nothing the roles read or decide on changes.
CGROUP_PARENT=jetson-llm-docker
cpu_priority() {
  local dir
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then            # cgroup v2
    dir=/sys/fs/cgroup/$CGROUP_PARENT
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu > /sys/fs/cgroup/cgroup.subtree_control || return 1
    mkdir -p "$dir" && echo 11 > "$dir/cpu.weight"
  elif [ -d /sys/fs/cgroup/cpu ]; then                         # cgroup v1
    dir=/sys/fs/cgroup/cpu/$CGROUP_PARENT
    mkdir -p "$dir" && echo 110 > "$dir/cpu.shares"
  else
    return 1
  fi
}
OWN_DOCKERD=1
if [ "$(cat /proc/1/comm)" = systemd ] && systemctl is-active --quiet docker 2>/dev/null; then
  OWN_DOCKERD=0  # systemd's dockerd: left as it is, containers at their default CPU weight
  step "dockerd is systemd's docker.service: the test containers keep their default CPU weight"
else
  cpu_priority || die "cannot give the parent cgroup $CGROUP_PARENT a low CPU weight (no writable cpu controller under /sys/fs/cgroup)"
fi
# A runtime named nvidia that is runc: NVIDIA's Jetson recipe runs `docker run --runtime nvidia ...` from a systemd
# unit, and tests/integration/test_docker_unit.py runs exactly that here, where there is no NVIDIA runtime.
NVIDIA_AS_RUNC="--add-runtime=nvidia=runc"
if [ "$OWN_DOCKERD" = 1 ] && /usr/bin/docker info >/dev/null 2>&1 \
   && ! { pgrep -a -x dockerd | grep -q -- "--cgroup-parent=/$CGROUP_PARENT" \
          && pgrep -a -x dockerd | grep -q -- "$NVIDIA_AS_RUNC"; }; then
  step "restarting dockerd with --cgroup-parent=/$CGROUP_PARENT $NVIDIA_AS_RUNC"
  pkill -TERM -x dockerd || true
  for _ in $(seq 1 60); do pgrep -x dockerd >/dev/null || break; sleep 0.5; done
  pgrep -x dockerd >/dev/null && die "dockerd did not stop within 30 s"
fi
if ! /usr/bin/docker info >/dev/null 2>&1; then
  if [ -S /run/docker.sock ] && ! pgrep -x dockerd >/dev/null; then rm -f /run/docker.sock; fi
  step "starting dockerd (log: $CACHE/dockerd.log)"
  setsid /usr/sbin/dockerd --cgroup-parent="/$CGROUP_PARENT" "$NVIDIA_AS_RUNC" >"$CACHE/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 1 120); do
    /usr/bin/docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  /usr/bin/docker info >/dev/null 2>&1 || { tail -n 30 "$CACHE/dockerd.log" >&2; die "dockerd did not come up within 60 s"; }
fi
step "Docker Engine $(/usr/bin/docker version --format '{{.Server.Version}}')"
if [ "$OWN_DOCKERD" = 1 ]; then
  /usr/bin/docker info --format '{{json .Runtimes}}' | grep -q '"nvidia"' || die "dockerd has no runtime named nvidia"
fi

# --- the test-bed image ---------------------------------------------------------------------------
tarball="$NSPAWN_CACHE/root.tar.zst"
if [ ! -f "$tarball" ]; then
  step "no nspawn root tarball yet: building it"
  JETSON_LLM_NSPAWN_CACHE=$NSPAWN_CACHE "$HERE/../nspawn/build_root.sh"
fi
[ -f "$tarball" ] || die "no root tarball at $tarball"
sum_file="$tarball.sha256"
if [ ! -f "$sum_file" ] || [ "$sum_file" -ot "$tarball" ]; then
  sha256sum "$tarball" | cut -d' ' -f1 > "$sum_file.tmp" && mv "$sum_file.tmp" "$sum_file"
fi
key="root-sha256=$(cat "$sum_file")"
current=$(/usr/bin/docker image inspect --format '{{ index .Config.Labels "org.jetson-llm.root" }}' "$IMAGE" 2>/dev/null || true)
if [ "$current" != "$key" ]; then
  step "docker import $IMAGE from $tarball"
  zstd -dc "$tarball" | /usr/bin/docker import \
      --change "LABEL org.jetson-llm.root=$key" --change 'CMD ["/bin/bash"]' \
      --message "jetson_llm test bed root ($key)" - "$IMAGE" >/dev/null \
    || die "docker import failed"
  current=$(/usr/bin/docker image inspect --format '{{ index .Config.Labels "org.jetson-llm.root" }}' "$IMAGE")
  [ "$current" = "$key" ] || die "the imported image does not carry the key $key"
fi
/usr/bin/docker run --rm --network none "$IMAGE" /usr/bin/python3 -c 'import sys; assert sys.version_info[:2] == (3, 11)' \
  || die "$IMAGE cannot run python3.11"
step "image $IMAGE ($key)"
if [ "$OWN_DOCKERD" = 1 ]; then
  # The containers really land under the low-weight parent.
  /usr/bin/docker run --rm --network none "$IMAGE" /bin/cat /proc/self/cgroup | grep -q "/$CGROUP_PARENT/" \
    || die "a container of this engine is not under the cgroup $CGROUP_PARENT"
  step "containers under the cgroup $CGROUP_PARENT (low CPU weight)"
fi
