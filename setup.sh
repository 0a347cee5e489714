#!/usr/bin/env bash
# setup.sh — install what gpuingest needs on Debian 12, build it, and either
# run the demo or the test suite.
#
#   sudo ./setup.sh --demo    install + build + run the built-in demo (~20 s)
#   sudo ./setup.sh --test    install + build + run the whole test suite
#   sudo ./setup.sh           install + build only
#
# Idempotent: packages already present are not reinstalled, an existing
# build directory is reused.  BUILD_DIR overrides the build directory.
set -euo pipefail

cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
mode=${1:-build}

PACKAGES=(
  build-essential pkg-config meson ninja-build
  libdpdk-dev dpdk-dev
  libyaml-dev libsystemd-dev libmicrohttpd-dev libcmocka-dev
  python3 python3-scapy tshark prometheus
  iproute2 valgrind curl procps
)

die() { echo "setup.sh: $*" >&2; exit 1; }

case "$mode" in
  --demo|--test|build|--build) ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *) die "unknown option '$mode' (use --demo, --test or nothing)" ;;
esac

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "run as root (or install sudo): apt-get and the DPDK demo need it"
  SUDO=sudo
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # tshark asks whether non-root users may capture; the default (no) is right
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
fi

# The CUDA toolkit (nvcc) is not a Debian package here: when it is installed
# at /usr/local/cuda, build the CUDA executor too (CI must), so a machine
# with a GPU and one without build the same way.
meson_opts=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if command -v nvcc >/dev/null; then
  meson_opts+=(-Dcuda=enabled)
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" "${meson_opts[@]}" >/dev/null
elif [ ${#meson_opts[@]} -gt 0 ]; then
  meson configure "$BUILD_DIR" "${meson_opts[@]}" >/dev/null
fi
ninja -C "$BUILD_DIR"

case "$mode" in
  --demo) exec $SUDO tools/gpuingest-demo "$BUILD_DIR" ;;
  --test)
    rc=0
    $SUDO meson test -C "$BUILD_DIR" --print-errorlogs || rc=$?
    # one plain closing line, whatever the runner printed above
    python3 - "$BUILD_DIR/meson-logs/testlog.json" <<'PY' || true
import json, sys
r = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(x in ("OK", "EXPECTEDFAIL") for x in r)
skip = sum(x == "SKIP" for x in r)
print(f"{ok} passed, {len(r) - ok - skip} failed, {skip} skipped")
PY
    exit $rc ;;
  *) echo "setup.sh: built into $BUILD_DIR/ (daemon/gpuingestd, tools/gpuingest-sim, tools/gpuingest-frames)" ;;
esac
