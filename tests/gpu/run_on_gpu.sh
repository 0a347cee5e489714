#!/usr/bin/env bash
# run_on_gpu.sh — the GPU path for real, on a machine with an NVIDIA GPU.
#
#   sudo tests/gpu/run_on_gpu.sh [BUILD_DIR]      (default build-gpu; SECONDS_PER_RUN=5, BENCH=1)
#
# Builds with -Dcuda=enabled, then:
#   1. test_exec_cuda: the kernels against the host reference, frame for
#      frame (its test_gpu_* cases run only where a GPU is);
#   2. the memif end-to-end test with backend: cuda in both executor modes
#      (persistent kernel, launch per batch).  Packet buffers are
#      host_pinned (memif copies with the CPU, so device-memory packet
#      buffers need a real NIC); frames are assembled in GPU memory and
#      gpuingest-frames verifies them byte for byte through CUDA IPC;
#   3. python_consumer.sh with GPU frames handed to CuPy and/or PyTorch
#      (whichever imports): same device address, same bytes as copy();
#   4. (BENCH=1) bench/gpu_exec_bench for exactly the cases
#      bench/gpu_model.py predicts — 64 B (batch 256), 1 KiB and 8 KiB
#      (batch 64), 1 and 4 rings, 256 threads, 64-packet frames, packets
#      and frames in GPU memory — printing predicted beside measured.
# Prints the GPU, the driver, ptxas's resource report, each verdict and the
# table.  Needs the packages setup.sh installs (run it once) and root.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
SECS=${SECONDS_PER_RUN:-5}
[ "$(id -u)" -eq 0 ] || { echo "run_on_gpu.sh: run as root"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
  { echo "run_on_gpu.sh: no NVIDIA GPU/driver here (nvidia-smi -L failed): nothing to run"; exit 77; }
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,clocks.max.sm --format=csv
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dcuda=enabled --buildtype=release -Dwerror=false
ninja -C "$BUILD"
grep -h "ptxas info" "$BUILD"/meson-logs/*.txt 2>/dev/null | sort -u | head -20 || true

rc=0
echo "=== test_exec_cuda (kernels against the host reference)"
if meson test -C "$BUILD" exec_cuda --print-errorlogs; then echo "=== exec_cuda: PASS"; else echo "=== exec_cuda: FAIL"; rc=1; fi
for mode in persistent launch; do
  echo "=== backend cuda, executor mode $mode"
  if GI_BACKEND=cuda GI_EXEC_MODE=$mode GI_POOL_KIND=host_pinned GI_BUILD=$PWD/$BUILD GI_SRC=$PWD \
    bash tests/integration/e2e_memif.sh; then
    echo "=== $mode: PASS"
  else
    echo "=== $mode: FAIL"
    rc=1
  fi
done

# consumers on a real GPU: the Python module hands GPU frames to CuPy and
# PyTorch without a copy (same device address, the same bytes as copy())
echo "=== Python consumers of GPU frames (CuPy / PyTorch, whichever is installed)"
if /usr/bin/python3 -c 'import cupy' 2>/dev/null || /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  if GI_BACKEND=cuda GI_EXEC_MODE=persistent GI_POOL_KIND=host_pinned GI_PY_GPU_LIBS=1 GI_BUILD=$PWD/$BUILD \
    GI_SRC=$PWD bash tests/integration/python_consumer.sh; then
    echo "=== python consumers: PASS"
  else
    echo "=== python consumers: FAIL"
    rc=1
  fi
else
  echo "=== python consumers: SKIPPED (neither cupy nor torch is installed for /usr/bin/python3)"
fi

if [ "${BENCH:-1}" = 1 ]; then
  echo "=== the cost model (bench/gpu_model.md) against bench/gpu_exec_bench, $SECS s per case"
  printf "%-7s %-6s %-6s %14s %14s %8s  %s\n" payload batch rings predicted_Mpps measured_Mpps ratio verdict
  for c in "64 256" "1024 64" "8192 64"; do
    set -- $c
    for rings in 1 4; do
      pred=$(/usr/bin/python3 bench/gpu_model.py --build "$BUILD" --predict "$GPU_NAME" --rings "$rings" \
        --payload "$1" --batch "$2" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["Mpps"])' ||
        echo "n/a")
      out=$("$BUILD"/bench/gpu_exec_bench --rings "$rings" --payload "$1" --batch "$2" --threads 256 \
        --frame-packets 64 --seconds "$SECS" 2>&1) && verdict=ok || { verdict="FAIL (not every packet placed once)"; rc=1; }
      meas=$(printf '%s\n' "$out" | grep '^{' | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["placed_Mpps"])' ||
        echo "n/a")
      ratio=$(/usr/bin/python3 -c "import sys; p,m=sys.argv[1:]; print('%.2f' % (float(m)/float(p)))" "$pred" "$meas" \
        2>/dev/null || echo "-")
      printf "%-7s %-6s %-6s %14s %14s %8s  %s\n" "$1" "$2" "$rings" "$pred" "$meas" "$ratio" "$verdict"
    done
  done
  echo "(ratio = measured / predicted; record the table and this GPU in bench/gpu_model.md)"
fi
exit $rc
