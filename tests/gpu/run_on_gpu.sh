#!/usr/bin/env bash
# run_on_gpu.sh — the GPU path for real, on a machine with an NVIDIA GPU.
#
#   tests/gpu/run_on_gpu.sh --bundle GI.tgz [--out DIR] [--steps LIST] [--budget SECONDS]
#   tests/gpu/run_on_gpu.sh [BUILD_DIR]        (this checkout, built here: needs DPDK and meson)
#
# GPU machines in labs and clouds often have the NVIDIA driver, the CUDA
# toolkit and a Python with NumPy/CuPy/PyTorch, but no DPDK, meson or
# package archive: build on a development machine, `tests/gpu/bundle.sh
# build GI.tgz`, carry GI.tgz over, run this as root next to it.
#
# Steps (LIST: a comma-separated subset of these names; default all):
#   machine  the GPU, driver, CUDA, Python and its NumPy/CuPy/PyTorch
#   floors   the hardware floors (bench/gpu_floors): doorbell round trip,
#            host-memory load, L2 load, system and GPU fences, launches
#   unit     test_exec_cuda (the kernels against the host reference, both
#            modes) and test_copy_device
#   san      compute-sanitizer synccheck, racecheck and memcheck
#            (GI_SAN_TOOLS) over test_exec_cuda and a short
#            gpu_exec_bench in each mode
#   bench    bench/gpu_exec_bench beside bench/gpu_model.py's prediction,
#            both modes, and per batch against the floors just measured
#   e2e      tests/integration/e2e_memif.sh with backend cuda, both modes
#   fmt      every format test with backend cuda (rocev2 + ICRC, short
#            frames, vita49, custom, HSB), both modes; tshark not needed
#   py       the Python consumer of GPU rings with NumPy, CuPy and PyTorch
#            (whichever import): zero-copy, the same bytes as copy().
#            Interpreter: GI_PYTHON, else the first python3 with numpy.
# Results (at most 8 files) in DIR (default $OUT, else ./gpu-results):
# summary.txt, steps.log (every step's whole output), machine.txt,
# floors.json, bench.jsonl.  The summary table is printed last.  Each step
# is bounded; the whole run stops starting steps when --budget (default
# 450 s) is spent, and says which it skipped.  Exit status: 0 when every
# step that ran passed, 1 otherwise, 77 without a GPU.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE= OUTDIR=${OUT:-$PWD/gpu-results} STEPS=all BUDGET=450 BUILD_ARG=
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) BUNDLE=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --inside) INSIDE=1; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    -*) echo "run_on_gpu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) BUILD_ARG=$1; shift ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "run_on_gpu.sh: run as root (DPDK EAL, memif sockets, the plugin folder)" >&2; exit 2; }
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run_on_gpu.sh: no NVIDIA GPU or driver here (nvidia-smi -L failed): nothing to run"
  exit 77
fi
T0=$(date +%s)

# ---- the tree to run: an unpacked bundle, or this checkout's build -------------------
if [ -z "${INSIDE:-}" ]; then
  mkdir -p "$OUTDIR"
  OUTDIR=$(cd "$OUTDIR" && pwd)
  : >"$OUTDIR/steps.log"
  : >"$OUTDIR/summary.txt"
  if [ -n "$BUNDLE" ]; then
    [ -f "$BUNDLE" ] || { echo "run_on_gpu.sh: no bundle at $BUNDLE" >&2; exit 2; }
    WORK=$(mktemp -d /tmp/gi-gpu.XXXXXX)
    tar -xzf "$BUNDLE" -C "$WORK" || { echo "run_on_gpu.sh: cannot unpack $BUNDLE" >&2; exit 2; }
    G=$WORK/gi
    SRC=$G/src
    BUILD=$SRC/$(sed -n 's/^build //p' "$G/MANIFEST")
    PMD_DIR=$(sed -n 's/^eal_plugin_folder //p' "$G/MANIFEST")
    # EAL loads its plugins from a folder fixed at its build: show it the
    # bundle's, in a mount namespace of our own (nothing outside changes
    # but the folder's existence)
    mkdir -p "$PMD_DIR"
    export G SRC BUILD T0
    if unshare -m --propagation private true 2>/dev/null; then
      unshare -m --propagation private bash -c 'mount --bind "$G/pmds" "$1" && shift && exec bash "$@"' \
        _ "$PMD_DIR" "$0" --inside --out "$OUTDIR" --steps "$STEPS" --budget "$BUDGET"
      rc=$?
    elif [ -z "$(ls -A "$PMD_DIR" 2>/dev/null)" ]; then
      echo "run_on_gpu.sh: no mount namespaces here; linking the bundle's plugins into $PMD_DIR" | tee -a "$OUTDIR/steps.log"
      for f in "$G"/pmds/*.so; do ln -sf "$f" "$PMD_DIR/$(basename "$f")"; done
      bash "$0" --inside --out "$OUTDIR" --steps "$STEPS" --budget "$BUDGET"
      rc=$?
    else
      echo "run_on_gpu.sh: $PMD_DIR holds plugins of another DPDK and no mount namespace can hide them" >&2
      rc=2
    fi
    rm -rf "$WORK"
    exit $rc
  fi
  SRC=$(cd "$HERE/../.." && pwd)
  BUILD=$(cd "$SRC" && realpath -m "${BUILD_ARG:-build-gpu}")
  if [ ! -x "$BUILD/daemon/gpuingestd" ]; then
    export PATH=/usr/local/cuda/bin:$PATH
    (cd "$SRC" && { [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dcuda=enabled; } && ninja -C "$BUILD") ||
      { echo "run_on_gpu.sh: cannot build $BUILD" >&2; exit 2; }
  fi
  export SRC BUILD T0
fi

# ---- steps ----------------------------------------------------------------------------
cd "$SRC" || exit 2
LOGS=$(mktemp -d /tmp/gi-gpu-logs.XXXXXX)
SUMMARY=()
FAILED=0
mount | grep -q ' /dev/shm ' || mount -t tmpfs tmpfs /dev/shm
export GI_BUILD=$BUILD GI_SRC=$SRC
want() { [ "$STEPS" = all ] || [[ ",$STEPS," == *",$1,"* ]]; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }

# step NAME TIMEOUT CMD... : run it bounded (and within the budget), log it, tally it
step() {
  local name=$1 to=$2 rem rc verdict t1
  shift 2
  rem=$(left)
  if [ "$rem" -lt 15 ]; then
    SUMMARY+=("$(printf '%-28s %-6s %6s  %s' "$name" SKIP - "the run's budget ($BUDGET s) is spent")")
    return 0
  fi
  [ "$to" -gt "$rem" ] && to=$rem
  echo "=== $name (at most $to s)"
  t1=$(date +%s.%N)
  timeout -k 5 "$to" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  local dt
  dt=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  case $rc in
    0) verdict=PASS ;;
    77) verdict=SKIP ;;
    124|137) verdict=FAIL; FAILED=1 ;;
    *) verdict=FAIL; FAILED=1 ;;
  esac
  { echo "=================== $name: rc=$rc ${dt}s $verdict"; cat "$LOGS/$name.log"; } >>"$OUTDIR/steps.log"
  tail -n "${TAILN:-6}" "$LOGS/$name.log" | sed 's/^/    /'
  local why=""
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after $to s"
  [ "$verdict" = SKIP ] && why=$(grep -m1 '^SKIP' "$LOGS/$name.log" | cut -c1-80)
  [ "$verdict" = FAIL ] && [ -z "$why" ] && why=$(grep -m1 -E 'FAIL|error|Error|ERROR' "$LOGS/$name.log" | cut -c1-90)
  SUMMARY+=("$(printf '%-28s %-6s %6s  %s' "$name" "$verdict" "$dt" "$why")")
  return 0
}

# The interpreter with NumPy (and, if there, CuPy/PyTorch): GI_PYTHON, else the first python3 that imports numpy.
PY=${GI_PYTHON:-}
if [ -z "$PY" ]; then
  for p in $(type -ap python3) /usr/bin/python3 /usr/local/bin/python3; do
    "$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }
  done
fi
export GI_PYTHON=$PY

if want machine; then
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max \
      --format=csv 2>&1
    uname -r; grep -h PRETTY_NAME /etc/os-release; ldd --version | head -1; nproc
    [ -f "${G:-/nonexistent}/MANIFEST" ] && cat "$G/MANIFEST" | head -5
    echo "python: ${PY:-none with numpy}"
    [ -n "$PY" ] && "$PY" - <<'PYV'
import importlib
for m in ("numpy", "cupy", "torch"):
    try:
        v = importlib.import_module(m)
        extra = f", cuda {v.cuda.is_available()}" if m == "torch" else ""
        print(f"{m} {v.__version__}{extra}")
    except Exception as e:
        print(f"{m}: not importable ({type(e).__name__})")
PYV
    command -v compute-sanitizer nvcc tshark 2>&1 | sed 's/^/tool: /'
  } >"$OUTDIR/machine.txt" 2>&1
  cat "$OUTDIR/machine.txt"
fi
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)

if want floors; then
  step floors 90 bash -c "'$BUILD/bench/gpu_floors' >'$OUTDIR/floors.json'; rc=\$?; cat '$OUTDIR/floors.json'; exit \$rc"
fi

if want unit; then
  step test_exec_cuda 150 env CMOCKA_MESSAGE_OUTPUT=stdout "$BUILD/tests/test_exec_cuda"
  step test_copy_device 60 "$BUILD/tests/test_copy_device"
fi

if want san; then
  if command -v compute-sanitizer >/dev/null; then
    # the barrier/warp-sync check first (the launch-mode fault), then races, then memory
    for tool in ${GI_SAN_TOOLS:-synccheck racecheck memcheck}; do
      # 128 threads per CTA: the sanitizers run every thread instrumented; two seeds of test_gpu_random
      step "san_${tool}_exec_cuda" 100 env GI_THREADS_PER_RING=128 GI_RANDOM_SEEDS=2 CMOCKA_MESSAGE_OUTPUT=stdout \
        compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 "$BUILD/tests/test_exec_cuda"
      for mode in persistent launch; do
        step "san_${tool}_bench_$mode" 45 compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
          "$BUILD/bench/gpu_exec_bench" --rings 2 --payload 1024 --batch 64 --threads 128 --frame-packets 64 \
          --seconds 1 --mode "$mode"
      done
    done
  else
    SUMMARY+=("$(printf '%-28s %-6s %6s  %s' san SKIP - "compute-sanitizer is not installed")")
  fi
fi

if want bench; then
  step bench 240 "$PY" tests/gpu/bench_vs_model.py "$BUILD" "$GPU_NAME" "$OUTDIR/floors.json" "$OUTDIR/bench.jsonl" \
    "${BENCH_SECONDS:-3}"
fi

for mode in persistent launch; do
  want e2e && step "e2e_memif_$mode" 150 env GI_BACKEND=cuda GI_EXEC_MODE=$mode GI_POOL_KIND=host_pinned \
    bash tests/integration/e2e_memif.sh
done
if want fmt; then
  for mode in persistent launch; do
    for t in fmt_rocev2 frame_bytes fmt_vita49 fmt_custom hsb; do
      step "${t}_$mode" 150 env GI_BACKEND=cuda GI_EXEC_MODE=$mode GI_POOL_KIND=host_pinned \
        bash "tests/integration/$t.sh"
    done
  done
fi
if want py; then
  if [ -n "$PY" ]; then
    # CuPy and PyTorch take every GPU frame without a copy where they import (GI_PY_GPU_LIBS)
    libs=0
    "$PY" -c 'import cupy' 2>/dev/null && libs=1
    "$PY" -c 'import torch' 2>/dev/null && libs=1
    [ "$libs" = 1 ] || echo "    (neither CuPy nor PyTorch imports in $PY: NumPy and DLPack only)"
    step python_gpu 180 env GI_BACKEND=cuda GI_EXEC_MODE=persistent GI_POOL_KIND=host_pinned GI_PY_GPU_LIBS=$libs \
      bash tests/integration/python_consumer.sh
  else
    SUMMARY+=("$(printf '%-28s %-6s %6s  %s' python_gpu SKIP - "no python3 with numpy (set GI_PYTHON)")")
  fi
fi

rm -rf "$LOGS"
{
  echo "gpuingest on $GPU_NAME, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - T0 )) s"
  [ -s "$OUTDIR/floors.json" ] && { echo "floors:"; cat "$OUTDIR/floors.json"; }
  grep -q '^=================== bench:' "$OUTDIR/steps.log" &&
    { echo "bench (measured beside the model):"; sed -n '/^=================== bench:/,/^===================/p' \
      "$OUTDIR/steps.log" | grep -v '^==================='; }
  echo
  printf '%-28s %-6s %6s  %s\n' step result s note
  printf '%s\n' "${SUMMARY[@]}"
} >"$OUTDIR/summary.txt"
echo
echo "=================== summary ($OUTDIR)"
cat "$OUTDIR/summary.txt"
exit $FAILED
