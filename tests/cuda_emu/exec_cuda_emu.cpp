/*
 * exec_cuda_emu.cpp — kernels/exec_cuda.cu, unchanged, compiled for the
 * host against the CUDA emulation header (tests only).
 *
 * A -Demulate_cuda=true build links this object into the kernels
 * library in place of the nvcc fatbin; every nvcc build compiles it too,
 * so that the `kernel_sources` test can check both builds compiled the
 * same kernel sources.
 */
#include "cuda_emu.h"

#include "kernels/exec_cuda.cu"
