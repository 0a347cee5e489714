#!/usr/bin/env bash
# same_sources.sh BUILD_DIR SOURCE_DIR — the nvcc build and the CUDA
# emulation compiled the same kernel sources (tests only; every nvcc build).
#
# Compares the dependencies ninja recorded for kernels/exec_cuda.fatbin
# (nvcc's depfile) and for the emulation's object of the same .cu: the
# project files each read, minus the emulation's own (tests/cuda_emu/).
# A header one build includes and the other does not means the emulated
# kernels are not the ones that run on a GPU.  Also: the .cu touches shared
# memory only through gi_hd.h's macros (no raw volatile), which is what
# lets the emulation give each access its meaning.  This compares which
# sources were built, not what they do: it is not a GPU check.
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
fatbin=kernels/exec_cuda.fatbin
obj=$(ninja -C "$build" -t targets all | sed -n 's|^\(tests/cuda_emu/[^:]*exec_cuda_emu\.cpp\.o\):.*|\1|p' | head -1)
[ -n "$obj" ] || { echo "FAIL: no object of tests/cuda_emu/exec_cuda_emu.cpp in $build"; exit 1; }

deps() {
  ninja -C "$build" -t deps "$1" | sed -n 's/^    //p' | while read -r f; do
    case $f in /*) ;; *) f=$build/$f ;; esac
    realpath -m "$f"
  done | sed -n "s|^$src/||p" | grep -v '^tests/cuda_emu/' | sort -u
}
a=$(deps "$fatbin")
b=$(deps "$obj")
[ -n "$a" ] || { echo "FAIL: ninja recorded no dependencies for $fatbin (build it first)"; exit 1; }
echo "$a" | grep -qx 'kernels/exec_cuda.cu' || { echo "FAIL: $fatbin does not depend on kernels/exec_cuda.cu"; exit 1; }
if [ "$a" != "$b" ]; then
  echo "FAIL: the nvcc build and the emulation compiled different kernel sources:"
  diff <(echo "$a") <(echo "$b") | sed 's/^/  /'
  exit 1
fi
echo "ok: both builds compiled the same $(echo "$a" | wc -l) kernel sources:"
echo "$a" | sed 's/^/  /'
if grep -nE '\(volatile|volatile[[:space:]]*\*' "$src/kernels/exec_cuda.cu"; then
  echo "FAIL: kernels/exec_cuda.cu uses volatile directly; use gi_hd.h's GI_LOAD_*/GI_STORE_* macros"
  exit 1
fi
echo "ok: exec_cuda.cu touches shared memory only through gi_hd.h's macros"
