#!/usr/bin/env bash
# run_on_gpu.sh — the GPU path for real, on a machine with an NVIDIA GPU.
#
#   sudo tests/gpu/run_on_gpu.sh [BUILD_DIR]      (default build-gpu)
#
# Builds with -Dcuda=enabled, then runs the memif end-to-end test with
# backend: cuda in both executor modes (persistent kernel, launch per
# batch).  Packet buffers are host_pinned (memif copies with the CPU, so
# device-memory packet buffers need a real NIC); frames are assembled in GPU
# memory and gpuingest-frames verifies them byte for byte through CUDA IPC.
# Prints the GPU, the driver, and each run's verdict.  Needs the packages
# setup.sh installs (run it once) and root.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
[ "$(id -u)" -eq 0 ] || { echo "run_on_gpu.sh: run as root"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
  { echo "run_on_gpu.sh: no NVIDIA GPU/driver here (nvidia-smi -L failed): nothing to run"; exit 77; }
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dcuda=enabled
ninja -C "$BUILD"
grep -h "ptxas info" "$BUILD"/meson-logs/*.txt 2>/dev/null | sort -u | head -20 || true

rc=0
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
exit $rc
