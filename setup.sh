#!/usr/bin/env bash
# setup.sh — install what gpuingest needs on Debian 12, build it, and either
# run the demo or the test suite.  As root, or with sudo in front.
#
#   ./setup.sh --demo    install + build (~4 min the first time) + run the built-in demo (20 s)
#   ./setup.sh --test    install + build + run the whole test suite, then
#                             again under ASan+UBSan with the CUDA executor on
#                             CPU threads (build-asan/, -Demulate_cuda=true),
#                             the data path and the emulated CUDA executor
#                             under ThreadSanitizer, also with the emulation's
#                             stress switch (build-tsan/), then every fuzzer
#                             for FUZZ_SECONDS (default 30) each (build-fuzz/)
#   ./setup.sh --test --long   the same, fuzzers 600 s each
#   ./setup.sh                 install + build only
#
# Idempotent: packages already present are not reinstalled, an existing
# build directory is reused.  BUILD_DIR overrides the build directory.
set -euo pipefail

cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
mode=${1:-build}
long=${2:-}

PACKAGES=(
  build-essential pkg-config meson ninja-build
  libdpdk-dev dpdk-dev
  libyaml-dev libsystemd-dev libmicrohttpd-dev libcmocka-dev libisal-dev zlib1g-dev
  python3 python3-numpy python3-scapy tshark prometheus
  clang libclang-rt-14-dev
  iproute2 valgrind curl procps patchelf
)

die() { echo "setup.sh: $*" >&2; exit 1; }

case "$mode" in
  --demo|--test|build|--build) ;;
  -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
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
    case "$long" in
      "") fuzz_seconds=${FUZZ_SECONDS:-30} ;;
      --long) fuzz_seconds=${FUZZ_SECONDS:-600} ;;
      *) die "unknown option '$long' after --test (use --long or nothing)" ;;
    esac
    rc=0
    $SUDO meson test -C "$BUILD_DIR" --print-errorlogs || rc=$?
    logs=("$BUILD_DIR/meson-logs/testlog.json")

    # The same suites under ASan+UBSan (clang; tests/meson.build makes UBSan
    # findings fatal), built with the CUDA emulation (tests/cuda_emu): the
    # cuda executor's kernels run on CPU threads, instrumented like the rest,
    # and failures are injected at each CUDA driver call (cuda_faults).
    # nvcc objects are not instrumented, so this build has none.  The
    # emulated data-path suite (cuda_emu) runs under ThreadSanitizer below.
    cuda_headers=()
    [ -f /usr/local/cuda/include/cuda.h ] && cuda_headers=(-Demulate_cuda=true)
    if [ ! -f build-asan/build.ninja ]; then
      CC=clang CXX=clang++ meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
        "${cuda_headers[@]}" >/dev/null
    fi
    ninja -C build-asan
    $SUDO meson test -C build-asan --print-errorlogs --no-suite cuda_emu || rc=$?
    logs+=("build-asan/meson-logs/testlog.json")

    # ThreadSanitizer: the phased executor's threads (host workers, and the
    # emulated CUDA executor's CTA threads against the rx lcore and the
    # consumers), the unit tests and the emulated data path end to end; then
    # the emulated kernels again with a yield at one barrier, atomic or
    # volatile poll in eight (GI_CUDA_EMU_STRESS).  Emulation, not a GPU.
    if [ ${#cuda_headers[@]} -gt 0 ]; then
      if [ ! -f build-tsan/build.ninja ]; then
        CC=clang CXX=clang++ meson setup build-tsan -Db_sanitize=thread -Db_lundef=false "${cuda_headers[@]}" \
          >/dev/null
      fi
      ninja -C build-tsan
      $SUDO meson test -C build-tsan --print-errorlogs --suite unit --suite cuda_emu || rc=$?
      cp build-tsan/meson-logs/testlog.json build-tsan/meson-logs/testlog-tsan.json
      logs+=("build-tsan/meson-logs/testlog-tsan.json")
      # (the emulated CTA serves about a hundred batches a second under
      # ThreadSanitizer: at most 1500 packets/s in batches of up to 20 ms, so
      # that a clean run stays free of ring_full; launch mode, a kernel launch
      # per pass, is slower still there: its stressed run is test_exec_cuda's)
      $SUDO env GI_CUDA_EMU_STRESS=8 GI_SIM_RATE_CAP=1500 GI_BATCH_TIMEOUT_MIN_US=20000 \
        meson test -C build-tsan --print-errorlogs exec_cuda exec_modes e2e_memif_cuda_persistent || rc=$?
      logs+=("build-tsan/meson-logs/testlog.json")
    fi

    # Every fuzzer for a bounded time from its checked-in corpus; new inputs
    # go to build-fuzz/fuzz-<target>/, crashes there too (copy them into
    # tests/fuzz/crashes/<target>/ once fixed, so the suite replays them).
    if [ ! -f build-fuzz/build.ninja ]; then
      CC=clang meson setup build-fuzz -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
        -Dcuda=disabled -Dintegration=disabled >/dev/null
    fi
    fuzz_targets=$(sed -n "s/^  '\([a-z0-9_]*\)': \[.*/\1/p" tests/fuzz/meson.build)
    ninja -C build-fuzz $(printf 'tests/fuzz/fuzz_%s ' $fuzz_targets)
    : > build-fuzz/fuzz-results.json
    # one fuzzer per CPU at a time (each is one process), reported in order
    jobs_max=$(nproc)
    for t in $fuzz_targets; do
      work=build-fuzz/fuzz-$t
      rm -rf "$work"; mkdir -p "$work/corpus"
      dict=(); [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
      while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 1; done
      echo "setup.sh: fuzz_$t for ${fuzz_seconds} s"
      ( build-fuzz/tests/fuzz/fuzz_"$t" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 "${dict[@]}" -artifact_prefix="$work/" "$work/corpus" "tests/fuzz/corpus/$t" \
          >"$work/log" 2>&1; echo $? > "$work/rc" ) &
    done
    wait
    for t in $fuzz_targets; do
      work=build-fuzz/fuzz-$t
      result=OK
      [ "$(cat "$work/rc" 2>/dev/null)" = 0 ] || result=FAIL
      echo "setup.sh: fuzz_$t"
      grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec)' "$work/log" | sed 's/^/  /' || true
      if [ "$result" = FAIL ]; then
        rc=1
        echo "setup.sh: fuzz_$t FAILED: see $work/log; the input is $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)"
        grep -m1 -A20 -E '^==[0-9]+==ERROR|runtime error|invariant failed' "$work/log" | sed 's/^/  /' || true
      fi
      echo "{\"name\": \"fuzz_$t\", \"result\": \"$result\"}" >> build-fuzz/fuzz-results.json
    done
    logs+=("build-fuzz/fuzz-results.json")

    # one plain closing line over all of it, whatever the runners printed above
    python3 - "${logs[@]}" <<'PY' || true
import json, sys
r = [json.loads(l)["result"] for f in sys.argv[1:] for l in open(f) if l.strip()]
ok = sum(x in ("OK", "EXPECTEDFAIL") for x in r)
skip = sum(x == "SKIP" for x in r)
print(f"{ok} passed, {len(r) - ok - skip} failed, {skip} skipped")
PY
    exit $rc ;;
  *) echo "setup.sh: built into $BUILD_DIR/ (daemon/gpuingestd, tools/gpuingest-sim, tools/gpuingest-frames)" ;;
esac
