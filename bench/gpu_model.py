#!/usr/bin/python3
"""gpu_model.py - the cuda executor's cost model, step by step (kernels/steps.h).

    bench/gpu_model.py [--nvcc PATH] [--build BUILD_DIR]        tables (bench/gpu_model.md)
    bench/gpu_model.py --predict GPU --rings R --payload B --batch N
                       [--threads T] [--frame-packets F]          one prediction, JSON (with the
                                                                  latency at a low rate, the fixed cost)
    bench/gpu_model.py --probe-ptx PTX --predict GPU ... [--check]  the same on a build's probes;
                                                                  --check: the calibration holds

1. Compiles kernels/exec_cuda.cu with nvcc (-ptx -lineinfo for sm_90, and
   -cubin -Xptxas -v for sm_80/86/89/90) and the probes
   (bench/gpu_model_probe.cu: one kernel per body of the per-packet path),
   and counts their static PTX instructions by class.
2. Predicts each step of one batch on one CTA (steps are separated by
   barriers, so their times add) as its hardware floors (a load from host
   memory, an L2 load, a system fence: measured on an H200, assumed for
   the other GPUs) times how often this tree's structure pays them, plus
   what the H200's step table measured beyond them (CAL, fitted to that
   table; compute parts scale with the probes' instruction counts), then
   packets per second per ring and for R rings (one CTA each, fences
   contending, up to the SM count and the memory bandwidth).
   Also the latency from a doorbell to the frame visible at a low rate
   (latency(): one batch on an idle CTA) and the fixed cost a batch (the
   line through a batch-size sweep, fixed_cost_model()): issue 21's five
   GPU targets (TARGETS).
3. Checks itself: the same function with the structure of the code the
   H200 measured reproduces that step table (calibration(), --check), and
   the latencies and sweeps those runs measured (checks()).

tests/gpu/run_on_gpu.sh runs bench/gpu_exec_bench on a real GPU with the
same parameters (and --steps) and prints this prediction beside the
measurement, with the floors measured in the same run.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per-GPU floors (microseconds, GHz, GB/s).  H200's are measured
# (bench/gpu_floors on the GPU of shared/gpu/RESULTS.md: a dependent load
# from host-mapped memory, an L2 load, __threadfence_system()); the others
# are the usual microbenchmark figures for each generation, ASSUMED: no
# such GPU was measured.  Orin's "pcie" is a load from pinned system
# memory over the SoC fabric (no PCIe).  tests/gpu/bench_vs_model.py
# replaces a row's floors with those measured in the same run.
GPUS = {
    "A100": dict(name="A100 80GB PCIe (Gen4), assumed", clk=1.41, sms=108, l2=0.14, pcie=1.0, fence=0.8,
                 dram_bw=1935, match=["A100"]),
    "H100": dict(name="H100 PCIe (Gen5), assumed", clk=1.755, sms=114, l2=0.15, pcie=0.9, fence=0.7,
                 dram_bw=2000, match=["H100", "GH200"]),
    "H200": dict(name="H200, floors measured 2026-11-26", clk=1.98, sms=132, l2=0.145, pcie=1.14, fence=0.52,
                 dram_bw=4800, match=["H200"]),
    "L4": dict(name="L4 (Gen4, GDDR6), assumed", clk=2.04, sms=58, l2=0.13, pcie=1.0, fence=0.8,
               dram_bw=300, match=["L4"]),
    "Orin": dict(name="Jetson AGX Orin (iGPU), assumed", clk=1.3, sms=16, l2=0.20, pcie=0.6, fence=0.4,
                 dram_bw=204, match=["Orin"]),
}

# Cycles per instruction of one thread's dependent chain (no ILP assumed),
# for the instruction counts of the probes.
CPI = 4

# The probes (bench/gpu_model_probe.cu): one body of the per-packet path each.
PROBES = ["probe_parse", "probe_scan", "probe_run_place", "probe_run_link", "probe_frame_open", "probe_frame_end",
          "probe_solo_place", "probe_copy", "probe_make_visible", "probe_batch_end",
          # groups of several streams (not modelled below): 2a's rank scan and 2b's per-record loop
          "probe_scan_iter", "probe_commit_rec"]

# The steps of a batch (kernels/steps.h, in order): what gpu_exec_bench
# --steps measures and predict() returns.
STEPS = ["poll", "stage", "parse", "icrc", "scan", "run", "sequence", "place", "verify", "tensor", "commit", "end"]

# Calibration: six H200 step tables (one CTA, 256 threads, custom format,
# 64-packet frames; µs per batch): the first GPU run's (shared/gpu/
# RESULTS.md, commit 5eab4c2, an instrumented build), two --steps runs
# of this project's (bench/gpu_model.md: commit 4aae5b2, and ee4a5e2), and
# one session's three builds side by side (950d350, 4ad6028 and bb60521,
# 2026-11-27); and an H100's --steps run of 950d350 (the last code before
# staging ahead, tests/gpu/ab.sh), each with the floors measured on its GPU.
# (payload, batch, rings) -> steps.
MEASURED = {
    "h200-run": dict(floors=dict(pcie=1.14, l2=0.145, fence=0.52), steps={
        (1024, 64, 1): dict(poll=4.0, stage=12.7, parse=2.7, icrc=0.2, scan=2.1, run=2.0, sequence=5.0, place=9.2,
                            verify=0.0, commit=4.5, end=3.2),
        (64, 256, 1): dict(poll=4.1, stage=12.9, parse=3.5, icrc=0.2, scan=2.5, run=2.0, sequence=15.7, place=4.9,
                           verify=0.0, commit=9.7, end=3.2),
        (64, 16, 1): dict(poll=3.8, stage=13.0, parse=2.5, icrc=0.2, scan=1.9, run=2.3, sequence=2.5, place=1.2,
                          verify=0.0, commit=1.6, end=3.1),
        (8192, 64, 1): dict(poll=3.9, stage=13.1, parse=2.7, icrc=0.2, scan=2.1, run=2.0, sequence=5.0, place=32.1,
                            verify=0.0, commit=5.2, end=3.7),
        # CTA 0 of four: the same steps with four CTAs' fences contending
        (1024, 64, 4): dict(poll=4.4, stage=13.0, parse=3.3, icrc=0.2, scan=2.1, run=2.0, sequence=7.5, place=10.5,
                            verify=0.0, commit=7.6, end=4.4),
    }),
    "h200-run-2": dict(floors=dict(pcie=1.088, l2=0.146, fence=0.606), steps={
        (1024, 64, 1): dict(poll=5.1, stage=1.9, parse=2.6, icrc=0.2, scan=2.0, run=2.1, sequence=4.8, place=6.9,
                            verify=0.0, commit=4.4, end=3.6),
        (64, 256, 1): dict(poll=5.0, stage=1.9, parse=3.4, icrc=0.2, scan=2.3, run=2.1, sequence=15.6, place=6.1,
                           verify=0.0, commit=9.9, end=3.5),
        (64, 16, 1): dict(poll=5.0, stage=1.9, parse=2.4, icrc=0.2, scan=1.9, run=2.4, sequence=2.3, place=1.4,
                          verify=0.0, commit=1.6, end=3.4),
        (8192, 64, 1): dict(poll=5.2, stage=2.0, parse=2.6, icrc=0.2, scan=2.0, run=2.1, sequence=4.7, place=34.3,
                            verify=0.0, commit=5.5, end=4.2),
    }),
    "h200-ee4a5e2": dict(floors=dict(pcie=1.107, l2=0.146, fence=0.62), steps={
        (1024, 64, 1): dict(poll=3.3, stage=2.0, parse=2.6, icrc=0.2, scan=2.0, run=2.1, sequence=5.2, place=4.0,
                            verify=0.0, commit=3.5, end=3.4),
        (64, 256, 1): dict(poll=3.0, stage=1.9, parse=3.4, icrc=0.2, scan=2.3, run=2.1, sequence=13.1, place=2.7,
                           verify=0.0, commit=8.7, end=3.1),
        (64, 16, 1): dict(poll=3.1, stage=1.9, parse=2.4, icrc=0.3, scan=1.9, run=2.4, sequence=2.8, place=1.0,
                          verify=0.0, commit=1.3, end=2.9),
        (8192, 64, 1): dict(poll=3.3, stage=2.0, parse=2.6, icrc=0.2, scan=2.0, run=2.1, sequence=5.2, place=21.3,
                            verify=0.0, commit=4.6, end=3.8),
    }),
    # NVIDIA H200, 2026-11-27, one session (bench/results/h200-2026-11-27): tests/gpu/ab.sh's step tables of
    # 950d350 (before staging ahead) and 4ad6028 (staging ahead, before the per-frame and fixed-step chains),
    # and run_on_gpu.sh's of bb60521 (this tree's kernels), with that run's floors
    "h200-950d350": dict(floors=dict(pcie=1.107, l2=0.146, fence=0.521), steps={
        (1024, 64, 1): dict(poll=3.05, stage=1.93, parse=2.64, icrc=0.18, scan=1.97, run=2.15, sequence=5.41,
                            place=3.96, verify=0.0, commit=4.23, end=2.99),
        (64, 256, 1): dict(poll=2.92, stage=1.98, parse=3.34, icrc=0.19, scan=2.39, run=2.11, sequence=13.45,
                           place=2.63, verify=0.0, commit=10.49, end=2.84),
    }),
    "h200-4ad6028": dict(floors=dict(pcie=1.107, l2=0.146, fence=0.521), steps={
        (1024, 64, 1): dict(poll=0.28, stage=0.83, parse=2.7, icrc=0.18, scan=1.97, run=1.75, sequence=5.34,
                            place=3.98, verify=0.0, commit=4.54, end=1.94),
        (64, 256, 1): dict(poll=0.35, stage=0.83, parse=3.9, icrc=0.19, scan=2.37, run=1.78, sequence=13.44,
                           place=2.62, verify=0.0, commit=11.23, end=1.91),
    }),
    "h200-bb60521": dict(floors=dict(pcie=1.107, l2=0.146, fence=0.521), steps={
        (1024, 64, 1): dict(poll=0.29, stage=0.94, parse=3.05, icrc=0.0, scan=1.37, run=1.41, sequence=5.37,
                            place=4.02, verify=0.0, commit=4.7, end=1.52),
        (64, 256, 1): dict(poll=0.35, stage=0.94, parse=4.09, icrc=0.0, scan=1.39, run=1.54, sequence=11.16,
                           place=2.7, verify=0.0, commit=11.18, end=1.49),
        (64, 16, 1): dict(poll=0.25, stage=0.94, parse=2.73, icrc=0.0, scan=1.27, run=1.47, sequence=2.82,
                          place=1.29, verify=0.0, commit=2.67, end=1.46),
        (8192, 64, 1): dict(poll=0.38, stage=0.95, parse=2.93, icrc=0.0, scan=1.4, run=1.39, sequence=5.26,
                            place=21.35, verify=0.0, commit=5.51, end=1.51),
    }),
    # NVIDIA H100 80GB HBM3, 2026-11-26 (the floors its run of 13eb77f measured an hour before)
    "h100-950d350": dict(floors=dict(pcie=1.114, l2=0.144, fence=0.711), steps={
        (1024, 64, 1): dict(poll=3.55, stage=1.97, parse=2.86, icrc=0.18, scan=1.97, run=2.06, sequence=5.26,
                            place=4.01, verify=0.0, commit=4.24, end=2.95),
        (64, 256, 1): dict(poll=3.8, stage=2.07, parse=3.64, icrc=0.19, scan=2.39, run=2.25, sequence=13.33,
                           place=2.64, verify=0.0, commit=10.86, end=3.07),
    }),
}

# Checks beside the step tables, on the same runs' code and floors (latency() and fixed_cost(), not fitted
# to these): the latency at 1 kHz, p50 µs (gpu_exec_bench --latency 1000: one ring, a 64 x 1 KiB frame a
# batch of 64; ee4a5e2's kernels run as f6241b2, bench/gpu_model.md), and the batch-size sweep of issue 21
# (64 B payloads, one ring; µs per batch: issue 21's from the first run's rates, ee4a5e2's step tables'
# totals, which have no batch of 64: its line is through 16 and 256, and the model's beside it too;
# bb60521's from its rates, bench/results/h200-2026-11-27).
LATENCY_MEASURED = {"h200-ee4a5e2": 27.5, "h100-950d350": 30.3, "h200-950d350": 28.6, "h200-4ad6028": 29.4,
                    "h200-bb60521": 28.8}
SWEEP_MEASURED = {"h200-run": {16: 31.0, 64: 36.0, 256: 58.0}, "h200-ee4a5e2": {16: 20.0, 256: 40.5},
                  "h200-bb60521": {16: 14.7, 64: 19.3, 256: 34.6}}

# What each step costs beyond its floors, fitted to those tables (µs, at
# the probes' instruction counts then: PROBE_CAL).  A step's compute part
# scales with its probes' counts now / then, so a leaner body shows here.
CAL = dict(
    poll=1.2,          # beyond the doorbell's trips and fence: the decision, tick check, barrier
    poll_ahead=0.3,    # staging ahead under load: the batch already staged, the decision and barrier alone
                       # (H200, 4ad6028 and bb60521: 0.25-0.38 µs)
    stage=0.8,         # beyond its round trips: the barrier, gi_batch_begin
    parse=2.45,        # a thread per packet, one pass: header, map, stream (L2 chains) and 738 instructions
    parse_pkt=0.0041,  # ... per packet (memory traffic of more headers): 2.5 at 16, 3.5 at 256
    icrc=0.2,          # a barrier and a loop over nothing pending
    scan=1.07,         # two block scans, per pass: beyond their serial steps (the barriers' own cost) ...
    scan_step=0.023,   # ... and per serial step (scan_steps); both fitted to one H200 session's 950d350 (33
                       # steps: 1.97 µs at batch 64, 2.39 at 256) and bb60521 (11: 1.37, 1.39)
    scan_pkt=6.6e-5,   # per packet and serial step (the warps' counts a thread sums grow with the batch)
    run=2.0,           # run_place + run_link: two L2 chains and ~270 instructions
    seq=1.67,          # per batch: solo_place's atomic ORs and the loop's setup
    seq_frame=2.19,    # per frame, beyond the fence of its open: window, open, end, publish (thread 0, L2 chains)
    seq_enter=0.1,     # ... of which its pass 1 beyond the slot's load from L2 (the stall check, two stores):
                       # an assumption, not measured (early_copy)
    seq_lanes=1.1,     # pass 2 of a group of frames by a warp's lanes (lanes_fill), in place of its frames'
                       # seq_frame past pass 1: the lanes' checks (3 loads in a row) and their frame each (the
                       # slot's stores, its count, its publication) beside each other, 6 warp sums, lane 0's
                       # counter, histogram and window words: an assumption, not measured
    place_round=0.8,   # per round of the warps' payloads: the records, the slot addresses
    chunk_issue=0.076,  # per chunk a lane moves: its loads' and store's instructions (a load latency, L2,
                        # per group of chunks in flight apart)
    place_line=0.00093,  # per 128-byte line a warp's load touches (an L1 pass: about 2 cycles)
    commit=0.63,       # per batch
    commit_frame=1.73, # per frame published: mirror copy, seq words (the copy's chain of 13 loads is not
                       # where it goes: 28d862a loads it in 4 rounds and one H200 session measured 950d350
                       # and bb60521 alike, 10.5 and 11.2 µs at 64 B batch 256)
    commit_drain=0.0021,  # per KiB the batch placed: its system fence waits for the payload stores to drain
                          # (every run's 8 KiB commit was 0.5-1.05 µs over the model without it; 64 B runs none)
    end=2.2,           # counters, the mirror's stores to host memory, the barriers; the fence apart
    fence_contention=0.72,  # µs more per system fence for each doubling of the CTAs that fence at once
    tensor_frame=0.5,  # per frame converted: the pending scan, a barrier
    # per group and per value converted, one CTA of 256 threads (ns), the GPU's generic loop: the H100 run
    # of 1bd59f9 (2026-11-26) measured ci16:cf32 (2 values a group) 40.0 µs and raw10:u16 (4) 47.5 µs per
    # 64 KiB frame, which fix the two numbers' ratio; the H200 of 2026-11-27 measured i16:bf16 (1 value)
    # 45.4 µs, 0.74x of what they predicted, which scales both to that GPU (a third H200 form would check)
    tensor_group=0.932e-3, tensor_value=0.439e-3,
    # ... the loops of their own (TENSOR_SPECIALIZED): the same H200 run measured ci16:cf32 16.6 µs and
    # raw10:u16 17.8 µs a 64 KiB frame (2.4x and 2.7x under the generic loop's H100 figures); the two
    # points fix the two numbers
    tensor_group_own=0.643e-3, tensor_value_own=0.169e-3,
)
PROBE_CAL = {"probe_parse": 738, "probe_scan": 228, "probe_run_place": 219, "probe_run_link": 51,
             "probe_frame_open": 114, "probe_frame_end": 4733, "probe_make_visible": 1795, "probe_batch_end": 187}

# The code's structure, step by step: "now" is this tree's, the others the
# code each MEASURED table timed (the calibration checks the model on them).
#   poll_trips     PCIe round trips to find a batch (the doorbell; `paused` once apart)
#   stage_trips    chained round trips to stage the slot (None: the whole slot, 4 loads in flight per thread;
#                  the first run's chain is its measured 12.7-13.1 µs over the 1.14 µs load, not derived)
#   lane_chunks    lanes per payload shrink until the batch is one round, while a lane copies at most this
#                  many chunks (None: 32 lanes for 1 KiB or more, whatever the batch)
#   loads_chunk    load instructions per 16-byte chunk of a payload 2-byte aligned (5 words, or 2 blocks)
#   wide           (chunks, lanes): a payload of more chunks keeps at least these lanes (GI_CUDA_WIDE_*)
#   early_copy     the payloads of the run's first group of frames are copied by every warp but thread 0's
#                  while thread 0 finishes 2b (phase_sequence_solo.h gi_solo_enter), when that group has two
#                  frames or more (GI_SOLO_EARLY_FRAMES); phase 3 keeps the notes.  With lanes_fill, only
#                  where the lanes do not fill that group (gi_solo_group_orderly): none of the bench's
#   lanes_fill     2b's pass 2 of a group of two frames or more by thread 0's warp, a frame a lane, lane 0
#                  summing (phase_sequence_solo.h gi_solo_group_lanes); else thread 0 alone, frame by frame
#   inflight       chunks a lane has in flight (whole groups; the rest one at a time, or with tail_pair two of
#                  them at once first: frame.h's copy since 8 and 4 in flight)
#   open_fence     "frame": a system fence per frame opened; "batch": one for a batch's opens
#   commit_fences  system fences of a publishing batch's commit (the second moved to the end's: 1)
#   timing_adds    counter words the step timing added in device memory per batch (a load each before its
#                  store: the --steps run's own cost, in its poll step)
#   ahead          staging ahead under load (exec_cuda.cu): the poll reads nothing, the stage's round trip
#                  lies beside the last batch's commit, the end's fence beside the next batch's parse
#   stage_beside   where the next batch is staged: beside the commit (bb60521 and before), or beside round
#                  0's sequence step, before any copy beside 2b ("sequence": trip_body.h, GI_TRIP_BESIDE)
#   mirror_chain   loads in a row, each waiting for the store before it, in the commit's copy of a frame's
#                  metadata to the mirror (gi_mirror_copy: field by field 13, one per scalar field, the
#                  sender's record, each NIC time, the bitmap word; in rounds of whole loads 4)
#   seq_volatile   volatile counter adds per frame sequenced (GI_COUNTER_ADD on the device: a load that
#                  always goes to L2, then its store; plain adds since, which L1 serves)
#   scan_steps     the two block scans' serial steps at one pass of 8 warps (a barrier, or a shared-memory
#                  load that waits on the one before): each scan 5 barriers, the counted threads' loops over
#                  the warps before theirs (2) and thread 0's carry loop (8), 15, plus its predicate's loads
#                  (ranks 1, starts 2): 33; every thread summing the warps' words in registers, one barrier a
#                  pass, the words' loads in two rounds (ptxas issues four warps' at once) and the caller's
#                  barrier: 4 a scan, 11 (d7a735e, 2eded68)
#   icrc_step      the icrc step runs in every batch (a barrier and a loop over nothing pending), or only
#                  when parse left a rocev2 ICRC pending (f133cb4): never in the custom format
#   place_chain    2a's place of a record (gi_seq_fast_place), loads in a row, each waiting for a branch on
#                  the one before: (from L2, from L1).  Tested where each was read, the stream's words and
#                  the slot's made 12 for the custom format: seq_max, next_pub, the slot's frame word and its
#                  bitmap word from L2 (thread 0 or an atomic wrote them last), 8 configuration words from L1;
#                  every stream word loaded first and the checks ANDed, the slot's words together: 2 from L2
#                  (the stream's round, the slot's), 1 from L1 (a divisor's fields)
#   commit_chain   loads in a row per frame in the commit's scans for its pending frames (a slot's state,
#                  frame and seq words, each tested before the next loaded): two passes, 6 (bb60521 and
#                  before); three since a42dc01 (its lanes' mirror pass); the words loaded together and the
#                  pending frames found once for every pass, by the lanes at once, and pass 0 skipped where
#                  it has nothing to do: 0 a frame.  Priced as L1 hits (thread 0 wrote those words; plain
#                  loads after its stores cost what L1 does: seq_volatile)
#   end_chain      shared-memory loads in a row in thread 0's batch end (gi_batch_end): a drop count after
#                  each counter add before it, 17, then n: 18; the batch's words first: 1 (this tree)
STRUCTURE = {
    "now": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=4, tail_pair=True,
                early_copy=True, lanes_fill=True, commit_chain=0, wide=(16, 4), open_fence="batch", commit_fences=1,
                timing_adds=0, ahead=True, stage_beside="sequence", mirror_chain=4, seq_volatile=0, scan_steps=11,
                icrc_step=False, place_chain=(2, 1), end_chain=1),
    "h200-bb60521": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=2,
                         open_fence="batch", commit_fences=1, timing_adds=0, ahead=True, mirror_chain=4,
                         seq_volatile=0, scan_steps=11, icrc_step=False, place_chain=(2, 1), end_chain=1),
    "h200-4ad6028": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=2,
                         open_fence="batch", commit_fences=1, timing_adds=0, ahead=True, mirror_chain=13,
                         seq_volatile=6, scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
    "h200-950d350": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=2,
                         open_fence="batch", commit_fences=1, timing_adds=0, mirror_chain=13, seq_volatile=6,
                         scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
    "h100-950d350": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=2,
                         open_fence="batch", commit_fences=1, timing_adds=0, mirror_chain=13, seq_volatile=6,
                         scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
    "h200-ee4a5e2": dict(poll_trips=1, stage_trips=None, lane_chunks=64, loads_chunk=2, inflight=2,
                         open_fence="batch", commit_fences=1, timing_adds=0, mirror_chain=13, seq_volatile=6,
                         scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
    "h200-run-2": dict(poll_trips=1, stage_trips=None, lane_chunks=1 << 30, loads_chunk=5, inflight=4,
                       open_fence="frame", commit_fences=2, timing_adds=12, mirror_chain=13, seq_volatile=6,
                       scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
    "h200-run": dict(poll_trips=2, stage_trips=11, lane_chunks=None, loads_chunk=5, inflight=1, open_fence="frame",
                     commit_fences=2, timing_adds=0, mirror_chain=13, seq_volatile=6,
                     scan_steps=33, icrc_step=True, place_chain=(4, 8), end_chain=18),
}
# The calibrated code's per-frame chains: seq_frame above includes its volatile adds, a structure with
# fewer pays less (an L2 load less an L1 hit each).  The mirror copy's chain (mirror_chain) was modelled
# so too, as what commit_frame leaves after two L2 loads shared by 13 links, and predicted 1 µs a frame
# saved; the H200 measured none (bb60521 against 950d350 in one session), so the model no longer prices
# it.  A block scan costs a fixed part and its serial steps, not its instructions (the per-warp loop is
# unrolled for the CTA's most warps and mostly skipped), so it does not scale with probe_scan's count.
CHAIN_THEN = dict(mirror_chain=13, seq_volatile=6, scan_steps=33, icrc_step=True, place_chain=(4, 8),
                  end_chain=18, commit_chain=6)
L1_HIT = 0.02  # µs: an L1 hit, about 40 cycles

CLASSES = [
    ("ld_global", re.compile(r"^ld(\.[a-z]+)*\.global")),
    ("st_global", re.compile(r"^st(\.[a-z]+)*\.global")),
    ("ld_shared", re.compile(r"^ld(\.[a-z]+)*\.shared")),
    ("st_shared", re.compile(r"^st(\.[a-z]+)*\.shared")),
    ("ld_generic", re.compile(r"^ld(\.[a-z0-9]+)*$|^ld\.(volatile\.)?(u|s|b|f)")),
    ("st_generic", re.compile(r"^st(\.[a-z0-9]+)*$|^st\.(volatile\.)?(u|s|b|f)")),
    ("atomic", re.compile(r"^(atom|red)\.")),
    ("fence_sys", re.compile(r"^(membar\.sys|fence\.sc\.sys|fence\.acq_rel\.sys)")),
    ("barrier", re.compile(r"^(bar\.sync|barrier\.sync|bar\.red)")),
]


def nvcc_path(arg):
    for p in [arg, "/usr/local/cuda/bin/nvcc"]:
        if p and os.access(p, os.X_OK):
            return p
    sys.exit("gpu_model.py: nvcc not found (--nvcc PATH)")


def compile_ptx(nvcc, build, tmp):
    inc = ["-I" + SRC, "-I" + os.path.join(SRC, "kernels"), "-I" + build]
    ptx = os.path.join(tmp, "k.ptx")
    subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_90", "-ptx", "-lineinfo", "-o", ptx]
                   + inc + [os.path.join(SRC, "kernels", "exec_cuda.cu")], check=True)
    probe = os.path.join(tmp, "probe.ptx")
    subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_90", "-ptx", "-o", probe]
                   + inc + [os.path.join(SRC, "bench", "gpu_model_probe.cu")], check=True)
    res = {}
    for sm in (80, 86, 89, 90):
        out = subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_%d" % sm, "-cubin",
                              "-Xptxas", "-v", "-o", os.path.join(tmp, "k.cubin")] + inc
                             + [os.path.join(SRC, "kernels", "exec_cuda.cu")],
                             check=True, capture_output=True, text=True).stderr
        kern = props = None
        for line in out.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                kern = m.group(1)
            m = re.search(r"Function properties for (\S+)", line)
            if m:  # an entry's, or a non-inlined device function's (not counted here)
                props = m.group(1)
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and kern and props == kern:
                res.setdefault(kern, {})[sm] = {"stack": int(m.group(1)), "spill": int(m.group(2)) + int(m.group(3))}
            m = re.search(r"Used (\d+) registers", line)
            if m and kern:
                res[kern][sm]["regs"] = int(m.group(1))
    return open(ptx).read(), open(probe).read(), res


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    short = []
    for n in out[:len(names)]:
        n = re.sub(r"\(.*$", "", n)  # drop the parameter list
        short.append(n.split("::")[-1])
    return short


def parse_ptx(ptx, entry="k_persistent"):
    """[(file, line, function, opcode)] for every instruction of `entry`."""
    files = dict((int(m.group(1)), m.group(2)) for m in re.finditer(r'\.file\s+(\d+)\s+"([^"]+)"', ptx))
    strs = {}
    for m in re.finditer(r"\$L__info_string(\d+):\n((?:\.b8 [0-9,]+\n)+)", ptx):
        b = bytes(int(x) for x in re.findall(r"\d+", m.group(2).replace(".b8", "")))
        strs[int(m.group(1))] = b.split(b"\0")[0].decode()
    keys = sorted(strs)
    names = dict(zip(keys, demangle([strs[k] for k in keys]))) if keys else {}
    start = re.search(r"\.entry\s+%s\(" % re.escape(entry), ptx).start()
    # the entry's own body: up to the next entry or out-of-line function (GI_NOINLINE bodies, such as the
    # tensor step's, are .func definitions of their own, not part of the path counted here)
    nxt = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?(?:\.entry|\.func)\s", re.M).search(ptx, start + 10)
    body = ptx[start:nxt.start() if nxt else len(ptx)]
    cur = (None, 0, entry)
    insns = []
    for line in body.splitlines():
        t = line.strip()
        if t.startswith(".loc"):
            m = re.match(r"\.loc\s+(\d+)\s+(\d+)\s+\d+(?:,\s*function_name\s+\$L__info_string(\d+))?", t)
            if m:
                fn = names.get(int(m.group(3)), "?") if m.group(3) else entry
                cur = (os.path.basename(files.get(int(m.group(1)), "?")), int(m.group(2)), fn)
            continue
        if not t or t.startswith((".", "//", "$", "{", "}", ")", "(")) or t.endswith(":"):
            continue
        op = t.split()[0]
        if op.startswith("@"):
            op = t.split()[1]
        insns.append((cur[0], cur[1], cur[2], op.rstrip(";")))
    return insns


def classify(op):
    for name, rx in CLASSES:
        if rx.search(op):
            return name
    return "alu"


def counts(insns):
    c = {"all": 0}
    for _, _, _, op in insns:
        c["all"] += 1
        k = classify(op)
        c[k] = c.get(k, 0) + 1
    return c


def probe_counts(probe_ptx):
    missing = [k for k in PROBES if not re.search(r"\.entry\s+%s\(" % re.escape(k), probe_ptx)]
    if missing:
        sys.exit("gpu_model.py: the probes' PTX lacks %s (bench/gpu_model_probe.cu)" % ", ".join(missing))
    parts = {k: counts(parse_ptx(probe_ptx, k)) for k in PROBES}
    empty = [k for k in PROBES if parts[k]["all"] < 2]
    if empty:
        sys.exit("gpu_model.py: probes with no body left in their PTX: %s" % ", ".join(empty))
    return parts


def gpu_named(name):
    key = next((k for k, g in GPUS.items() if any(m.lower() in name.lower() for m in g["match"])), None)
    if not key:
        sys.exit("gpu_model.py: no assumptions for a GPU named '%s' (known: %s)" % (name, ", ".join(GPUS)))
    return GPUS[key]


def lanes_for(payload):
    chunks, lanes = (payload + 15) // 16, 1
    while lanes < chunks and lanes < 32:
        lanes *= 2
    return lanes


def lanes_for_batch(lanes, chunks, warps, n, lane_chunks, wide=None):
    """kernels/exec_cuda.h gi_cuda_place_lanes_batch() (lane_chunks: GI_CUDA_LANE_CHUNKS; wide: (GI_CUDA_WIDE_CHUNKS,
    GI_CUDA_WIDE_LANES), None before them)"""
    least = wide[1] if wide and chunks > wide[0] else 1
    while lanes > least and warps * (32 // lanes) < n and chunks <= lane_chunks * (lanes // 2):
        lanes //= 2
    return lanes


def scaled(pc, base, *probes):
    """base µs at the calibration's instruction counts, scaled to the probes' counts now."""
    then = sum(PROBE_CAL[p] for p in probes)
    return base * sum(pc[p]["all"] for p in probes) / then if pc else base


def with_floors(g, floors):
    """A GPUS row with the floors bench/gpu_floors measured (its JSON) in place of the row's."""
    g = dict(g)
    for key, fk in (("pcie", "host_load_us"), ("l2", "l2_load_us"), ("fence", "fence_sys_us")):
        if floors and floors.get(fk):
            g[key] = floors[fk]
    return g


def predict(g, pc, rings, payload, batch, threads=256, frame_packets=64, code="now", floors=None, tensor=None,
            loaded=True):
    """Microseconds per batch on one CTA (one stream per ring), by step (STEPS), and the rates.

    g: a GPUS row; pc: probe counts (probe_counts()); floors: measured
    floors (bench/gpu_floors' JSON) that replace the row's; tensor: a
    stream's `tensor:` as SAMPLE:TYPE (ci16:cf32, raw10:u16, ...), None: none.
    loaded: the next batch is always there (a rate run); False: each batch
    finds the CTA idle (latency(): nothing staged ahead)."""
    g = with_floors(g, floors)
    st = STRUCTURE[code]
    n, warps, lanes = batch, threads // 32, lanes_for(payload)
    frames = n / frame_packets                    # frames a batch opens and publishes, on average
    busy = min(1.0, frames)                       # batches that open (and publish) at least one frame
    fence = g["fence"] + CAL["fence_contention"] * math.log2(max(1, min(rings, g["sms"])))
    fence_host = max(fence, g["pcie"])            # a fence with host-memory (mirror) writes outstanding
    stride = 32 + 12 * n                          # the slot: header, addr[] and len[] (no split)
    t = {}
    t["poll"] = st["poll_trips"] * g["pcie"] + fence + CAL["poll"] + st["timing_adds"] * g["l2"]
    trips = st["stage_trips"] or math.ceil(stride / 16 / (4 * threads))
    t["stage"] = trips * g["pcie"] + CAL["stage"]
    passes = math.ceil(n / threads)
    t["parse"] = passes * scaled(pc, CAL["parse"], "probe_parse") + n * CAL["parse_pkt"]
    t["icrc"] = CAL["icrc"] if st["icrc_step"] else 0.0
    t["scan"] = passes * (CAL["scan"] + st["scan_steps"] * CAL["scan_step"]) + n * st["scan_steps"] * CAL["scan_pkt"]
    l2_then, l1_then = CHAIN_THEN["place_chain"]
    l2_now, l1_now = st["place_chain"]
    t["run"] = passes * (scaled(pc, CAL["run"], "probe_run_place", "probe_run_link") - (l2_then - l2_now) * g["l2"] -
                         (l1_then - l1_now) * L1_HIT)
    open_fences = frames if st["open_fence"] == "frame" else busy
    seq_frame = scaled(pc, CAL["seq_frame"], "probe_frame_open", "probe_frame_end") - (
        CHAIN_THEN["seq_volatile"] - st["seq_volatile"]) * (g["l2"] - L1_HIT)
    # thread 0 enters each frame (pass 1), then fills it (pass 2); with lanes_fill a group of two frames or
    # more is filled by its warp's lanes, a frame each, for one group's cost (phase_sequence_solo.h; the
    # bench's batches are one group)
    enter = frames * (g["l2"] + CAL["seq_enter"])
    fill = CAL["seq_lanes"] if st.get("lanes_fill") and frames >= 2 else frames * seq_frame - enter
    t["sequence"] = CAL["seq"] + open_fences * fence_host + enter + fill
    chunks_pkt = (payload + 15) // 16

    def copy_us(w):
        """The payloads copied by w warps: (rounds, µs)."""
        ln = lanes if not st["lane_chunks"] else lanes_for_batch(lanes, chunks_pkt, w, n, st["lane_chunks"],
                                                                  st.get("wide"))
        per_round = min(n, w * (32 // ln))        # payloads a round copies
        rounds = math.ceil(n / per_round)
        chunks = math.ceil(chunks_pkt / ln)       # a lane's chunks of one payload
        rest = chunks % st["inflight"]
        groups = chunks // st["inflight"] + (rest // 2 + rest % 2 if st.get("tail_pair") else rest)
        lines = per_round * st["loads_chunk"] * chunks * max(1, ln // 8)  # L1 passes of a round's loads
        return rounds, rounds * (CAL["place_round"] + max(groups * g["l2"] + chunks * CAL["chunk_issue"],
                                                          lines * CAL["place_line"]))

    rounds, t["place"] = copy_us(warps)
    if st.get("early_copy") and warps > 1 and frames >= 2 and not st.get("lanes_fill"):
        # the payloads copied by the warps after thread 0's beside its 2b past the first group's opens (the
        # bench's batches are one group); phase 3 is then the records' bookkeeping and notes alone
        t["sequence"] = CAL["seq"] + open_fences * fence_host + enter + max(fill, copy_us(warps - 1)[1])
        t["place"] = rounds * CAL["place_round"]
    t["verify"] = 0.0                             # custom format: no sender CRC
    # tensor: every thread on the round's frames, one group of sample bytes at a time (kernels/tensor.h):
    # bound by its instructions and their latency on the CTA's warps, not by bytes (CAL above), so per
    # group and per value, scaled by the warps there are to issue; the GPU's own loops cost less
    t["tensor"] = 0.0
    if tensor:
        in_bytes, values = tensor_form(tensor)
        groups = frame_packets * payload // in_bytes
        own = "_own" if tensor in TENSOR_SPECIALIZED else ""
        t["tensor"] = frames * (CAL["tensor_frame"] + groups * (CAL["tensor_group" + own] + values *
                                                                CAL["tensor_value" + own]) * 256 / threads)
    commit_frame = scaled(pc, CAL["commit_frame"], "probe_make_visible") - (
        CHAIN_THEN["commit_chain"] - st.get("commit_chain", CHAIN_THEN["commit_chain"])) * L1_HIT
    t["commit"] = CAL["commit"] + busy * st["commit_fences"] * fence_host + frames * max(
        0.0, commit_frame) + CAL["commit_drain"] * n * payload / 1024
    end = CAL["end"] - (CHAIN_THEN["end_chain"] - st["end_chain"]) * L1_HIT  # a shared-memory load: an L1 hit
    t["end"] = end + fence_host
    # under load: no doorbell; the stage's round trip in the commit step (the H200 measured it there, not
    # hidden beside the commit: 4ad6028's commit 0.3-0.7 µs over 950d350's, bb60521's at batch 16 1.4 over
    # ee4a5e2's); the end's fence beside parse.  Beside 2b instead (stage_beside), the same where the batch
    # opens a frame (2b's system fence, as the commit's: an assumption, that a fenced step waits for the
    # trip), and where it opens none hidden up to 2b's fixed part, the trip with the read-ahead's fence
    # (an assumption: no H200 has run it)
    if st.get("ahead") and loaded:
        t["poll"] = CAL["poll_ahead"] + st["timing_adds"] * g["l2"]
        trip = t["stage"] - CAL["stage"]
        if st.get("stage_beside") == "sequence":
            t["sequence"] += busy * trip + (1 - busy) * max(0.0, trip + g["fence"] - CAL["seq"])
        else:
            t["commit"] += trip
        t["stage"] = CAL["stage"]
        t["parse"] = max(t["parse"], fence_host)
        t["end"] = end
    total = sum(t.values())
    per_ring = n / total                          # Mpps = packets per microsecond
    r = min(rings, g["sms"])
    bw_cap = g["dram_bw"] * 1e3 / (2.0 * payload)  # Mpps: each payload read and written once
    mpps = min(r * per_ring, bw_cap)
    return {"gpu": g["name"], "code": code, "rings": rings, "payload": payload, "batch": batch, "threads": threads,
            "frame_packets": frame_packets, "us_per_batch": round(total, 2),
            "steps_us": {k: round(t[k], 2) for k in STEPS}, "Mpps_per_ring": round(per_ring, 2),
            "Mpps": round(mpps, 2), "Gbps_payload": round(mpps * payload * 8e-3, 1),
            "bound": "memory bandwidth" if mpps < r * per_ring else "per-batch latency chain"}


def latency(g, pc, payload=1024, batch=64, frame_packets=64, code="now", floors=None, threads=256):
    """Microseconds from the doorbell of a frame's batch to next_frame past it in the host mirror, one ring
    at a low rate (gpu_exec_bench --latency: a frame a batch at 1 kHz): the batch's steps on an idle CTA
    (its doorbell found by the poll's round trip, its slot staged then, the end's fence on the path),
    then the mirror's store on its way to the host, half a round trip.  Checked against LATENCY_MEASURED
    (whose codes did not stage ahead: for them loaded=False changes nothing, so the check holds the rest
    of the sum, not what an idle CTA gives up of staging ahead)."""
    p = predict(g, pc, 1, payload, batch, threads=threads, frame_packets=frame_packets, code=code, floors=floors,
                loaded=False)
    return p["us_per_batch"] + with_floors(g, floors)["pcie"] / 2


FIXED_BATCHES = (16, 64, 256)  # issue 21's batch-size sweep: 64 B payloads, one ring, under load


def fixed_cost(per_batch):
    """{batch: µs per batch} -> (fixed µs, µs per packet): the least-squares line through the sweep."""
    xs, ys = list(per_batch), [per_batch[b] for b in per_batch]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def fixed_cost_model(g, pc, code="now", floors=None, batches=FIXED_BATCHES, threads=256):
    """The model's fixed cost and cost a packet through the same sweep (batches: those measured)."""
    return fixed_cost({b: predict(g, pc, 1, 64, b, threads=threads, code=code, floors=floors)["us_per_batch"]
                       for b in batches})


def run_gpu(code):
    """The GPUS row a MEASURED run's code ran on, with that run's floors."""
    return dict(GPUS["H200"], **MEASURED[code]["floors"])


def calibration(pc):
    """The model on each measured run's code and floors beside its step table: (rows, worst |error| of a step
    over 0.5 µs, or of a batch)."""
    rows, worst = [], 0.0
    for code, run in MEASURED.items():
        g = run_gpu(code)
        for (payload, batch, rings), meas in run["steps"].items():
            p = predict(g, pc, rings, payload, batch, code=code)
            cells = []
            for k in STEPS:
                mv, pv = meas.get(k, 0.0), p["steps_us"][k]   # tables from before a step existed: 0
                cells.append("%.1f / %.1f" % (mv, pv))
                if mv > 0.5:
                    worst = max(worst, abs(pv - mv) / mv)
            tm = sum(meas.values())
            worst = max(worst, abs(p["us_per_batch"] - tm) / tm)
            rows.append([code, payload, batch, rings] + cells + ["%.1f / %.1f" % (tm, p["us_per_batch"])])
    return rows, worst


def checks(pc):
    """latency() and fixed_cost_model() beside what the runs measured: (rows, worst |error|)."""
    rows, worst = [], 0.0
    for code, lat in LATENCY_MEASURED.items():
        p = latency(run_gpu(code), pc, code=code)
        worst = max(worst, abs(p - lat) / lat)
        rows.append([code, "latency at 1 kHz, p50 µs", lat, round(p, 1), "%+.0f%%" % (100 * (p / lat - 1))])
    for code, sweep in SWEEP_MEASURED.items():
        m = fixed_cost(sweep)[0]
        p = fixed_cost_model(run_gpu(code), pc, code=code, batches=tuple(sweep))[0]
        worst = max(worst, abs(p - m) / m)
        rows.append([code, "fixed µs a batch (batches %s)" % "/".join(str(b) for b in sweep), round(m, 1),
                     round(p, 1), "%+.0f%%" % (100 * (p / m - 1))])
    return rows, worst


# issue 21's targets, persistent, 256 threads: (label, kind, rings, payload, batch, target, measured on the
# H200 at 5eab4c2 (the first run) and at bb60521 (this tree's kernels, 2026-11-27); None: not measured).
# kind: "Mpps" (at least the target), "fixed" (µs a batch, the sweep's line: at most), "latency" (p50 µs at
# 1 kHz: at most).
TARGETS = [
    ("1 ring, 1 KiB, batch 64", "Mpps", 1, 1024, 64, 4.5, 1.44, 2.84),
    ("4 rings, 1 KiB, batch 64", "Mpps", 4, 1024, 64, 15.0, 4.75, 10.90),
    ("4 rings, 64 B, batch 256", "Mpps", 4, 64, 256, 40.0, 14.90, 29.80),
    ("fixed cost a batch, µs (line: 64 B, batch 16/64/256)", "fixed", 1, 64, None, 8.0, fixed_cost(
        SWEEP_MEASURED["h200-run"])[0], fixed_cost(SWEEP_MEASURED["h200-bb60521"])[0]),
    ("doorbell → frame visible at 1 kHz, 64 × 1 KiB, p50 µs", "latency", 1, 1024, 64, 15.0, None,
     LATENCY_MEASURED["h200-bb60521"]),
]


def target_model(g, pc, kind, rings, payload, batch, code="now", floors=None):
    """The model's figure for one TARGETS row."""
    if kind == "Mpps":
        return predict(g, pc, rings, payload, batch, code=code, floors=floors)["Mpps"]
    if kind == "fixed":
        return round(fixed_cost_model(g, pc, code=code, floors=floors)[0], 1)
    return round(latency(g, pc, payload, batch, code=code, floors=floors), 1)


def floor_batch_us(g, floors=None):
    """The hardware's floor for one batch (issue 21): learn that it exists and read its descriptors (two
    loads from host memory), make its frames visible (two system fences); giving the slot back is a posted
    store.  3.3 µs on the H200's floors."""
    g = with_floors(g, floors)
    return 2 * g["pcie"] + 2 * g["fence"]


def target_us(kind, rings, batch, value):
    """A TARGETS row's figure as µs one CTA spends on a batch (Mpps: batch x rings / Mpps), else itself."""
    return batch * rings / value if kind == "Mpps" else value


def target_met(kind, value, target):
    return value >= target if kind == "Mpps" else value <= target


def md_table(rows, head):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# a tensor's sample forms: bytes per group and values per group (kernels/tensor.h, gi_tensor_sample_*)
TENSOR_SAMPLES = {"u8": (1, 1), "u16": (2, 1), "i16": (2, 1), "u32": (4, 1), "i32": (4, 1), "f32": (4, 1),
                  "ci8": (2, 2), "ci16": (4, 2), "raw10": (5, 4), "raw12": (3, 2)}


# the forms the GPU converts with a loop of their own (kernels/tensor.h gi_tensor_convert_as: the GPU's forms)
TENSOR_SPECIALIZED = ("ci16:cf32", "ci16:cf16", "raw10:u16", "raw12:u16")


def tensor_form(spec):
    """SAMPLE:TYPE (the output type does not change the GPU's cost by the model) -> (bytes, values) a group."""
    sample = spec.split(":")[0]
    if sample not in TENSOR_SAMPLES:
        sys.exit("gpu_model.py: --tensor %s: SAMPLE:TYPE with SAMPLE one of %s" % (spec, " ".join(TENSOR_SAMPLES)))
    return TENSOR_SAMPLES[sample]


def one_prediction(a, parts):
    """--predict's JSON: the case's steps and rates, its latency at a low rate and the GPU's fixed cost."""
    g = gpu_named(a.predict)
    p = predict(g, parts, a.rings, a.payload, a.batch, a.threads, a.frame_packets, tensor=a.tensor)
    p["latency_us"] = round(latency(g, parts, a.payload, a.batch, a.frame_packets, threads=a.threads), 2)
    p["fixed_us_per_batch"], p["us_per_packet"] = (round(v, 3) for v in fixed_cost_model(g, parts,
                                                                                          threads=a.threads))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvcc")
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--predict")
    ap.add_argument("--rings", type=int, default=1)
    ap.add_argument("--payload", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--frame-packets", type=int, default=64)
    ap.add_argument("--tensor", help="SAMPLE:TYPE: every frame converted as a stream's tensor: block does "
                    "(ci16:cf32, raw10:u16, ...); the model's added `tensor` step")
    ap.add_argument("--probe-ptx", help="with --predict: the probes' PTX as the build made it (meson's "
                    "bench/gpu_model_probe.ptx; the `gpu_model` test), instead of compiling them here")
    ap.add_argument("--check", action="store_true", help="with --probe-ptx: also the calibration table; exit 1 "
                    "if a step (over 0.5 µs) or a batch of the H200 run's code is modelled more than 30%% off "
                    "what that run measured")
    a = ap.parse_args()
    if a.probe_ptx:
        if not a.predict:
            sys.exit("gpu_model.py: --probe-ptx goes with --predict")
        with open(a.probe_ptx) as f:
            parts = probe_counts(f.read())
        print(json.dumps(one_prediction(a, parts)))
        if a.check:
            rows, worst = calibration(parts)
            print(md_table(rows, ["code", "payload", "batch", "rings"] + STEPS + ["batch"]))
            print("worst error %.0f%% (limit 30%%)" % (100 * worst))
            rows, worst_c = checks(parts)
            print(md_table(rows, ["code", "what", "measured", "model", "model off by"]))
            print("worst error of latency and fixed cost %.0f%% (limit 30%%)" % (100 * worst_c))
            if worst > 0.30 or worst_c > 0.30:
                sys.exit(1)
        return
    if not os.path.exists(os.path.join(a.build, "gi_build_config.h")):
        sys.exit("gpu_model.py: %s has no gi_build_config.h: configure a build first (meson setup build)" % a.build)
    with tempfile.TemporaryDirectory() as tmp:
        ptx, probe_ptx, res = compile_ptx(nvcc_path(a.nvcc), a.build, tmp)
    insns = parse_ptx(ptx)
    parts = probe_counts(probe_ptx)
    if a.predict:
        print(json.dumps(one_prediction(a, parts)))
        return

    print("## ptxas (-Xptxas -v): registers, stack, spills\n")
    rows = []
    for k in ("k_persistent", "k_pass", "k_tick", "k_clock_probe"):
        rows.append([k] + ["%d regs, %d B stack, %d B spill" % (res[k][sm]["regs"], res[k][sm]["stack"],
                                                              res[k][sm]["spill"]) for sm in (80, 86, 89, 90)])
    print(md_table(rows, ["kernel", "sm_80", "sm_86", "sm_89", "sm_90"]))
    print("\n## sm_90 PTX: static instructions of each body of the path (bench/gpu_model_probe.cu)\n")
    cols = ["all", "ld_global", "st_global", "ld_generic", "st_generic", "ld_shared", "st_shared", "atomic",
            "fence_sys", "barrier"]
    rows = [[p] + [parts[p].get(c, 0) for c in cols] for p in PROBES]
    tot = counts(insns)
    rows.append(["(k_persistent, whole)"] + [tot.get(c, 0) for c in cols])
    print(md_table(rows, ["part"] + cols))
    print("\n## calibration: each H200 run's code, measured / modelled, µs per batch on one CTA\n")
    rows, worst = calibration(parts)
    print(md_table(rows, ["code", "payload", "batch", "rings"] + STEPS + ["batch"]))
    print("\nworst error of a step over 0.5 µs, or of a batch: %.0f%%" % (100 * worst))
    print("\n## this tree: one batch, step by step (H200 floors)\n")
    rows = []
    for payload, batch, rings in ((1024, 64, 1), (64, 256, 1), (64, 16, 1), (8192, 64, 1), (1024, 64, 4)):
        p = predict(GPUS["H200"], parts, rings, payload, batch)
        rows.append([payload, batch, rings] + [p["steps_us"][k] for k in STEPS] + [p["us_per_batch"]])
    print(md_table(rows, ["payload", "batch", "rings"] + STEPS + ["batch µs"]))
    print("\n## latency and fixed cost: the model beside what the runs measured (not fitted to these)\n")
    rows, _ = checks(parts)
    print(md_table(rows, ["code", "what", "measured", "model", "model off by"]))
    print("\n## issue 21's targets on the H200 (persistent, 256 threads)\n")
    rows = []
    for label, kind, rings, payload, batch, target, m_then, m_now in TARGETS:
        then = target_model(run_gpu("h200-run"), parts, kind, rings, payload, batch, code="h200-run")
        now = target_model(GPUS["H200"], parts, kind, rings, payload, batch)
        fmt = lambda v: "–" if v is None else "%.3g" % v
        rows.append([label, ("≥ " if kind == "Mpps" else "≤ ") + fmt(target), "%s / %s" % (fmt(m_then), fmt(then)),
                     "%s / %s" % (fmt(m_now), fmt(now)), "met" if target_met(kind, now, target) else "missed"])
    print(md_table(rows, ["case", "target", "first run's code: measured / model",
                          "bb60521 measured / this tree's model", "this tree by the model"]))
    print("\n## predictions for other GPUs (this tree; batch 64, 256 threads, 64-packet frames;"
          " 64 B also with batch 256)\n")
    rows = []
    for key, g in GPUS.items():
        for payload, batch in ((64, 64), (64, 256), (1024, 64), (8192, 64)):
            p1 = predict(g, parts, 1, payload, batch)
            p4 = predict(g, parts, 4, payload, batch)
            rows.append([g["name"], payload, batch, p1["us_per_batch"], p1["Mpps"], p4["Mpps"], p4["Gbps_payload"],
                         p4["bound"]])
    print(md_table(rows, ["GPU", "payload B", "batch", "µs/batch", "Mpps 1 ring", "Mpps 4 rings",
                          "Gb/s 4 rings", "4 rings bound by"]))
    sensitivity(parts)
    structures(parts)


def split_cta(g, parts, rings, payload, batch):
    """What-if: one CTA's warps in two halves, 128 threads each, the front half (poll, stage, parse, icrc,
    the ranks' scan: half the scan step) on batch k + 1 while the back half takes batch k through the rest
    (named barriers a half each; every batch-local array twice).  µs a batch: the longer half."""
    s = predict(g, parts, rings, payload, batch, threads=128)["steps_us"]
    front = s["poll"] + s["stage"] + s["parse"] + s["icrc"] + s["scan"] / 2
    return max(front, sum(s.values()) - front)


def ctas_per_ring(g, parts, rings, payload, batch, k):
    """What-if: k CTAs on one ring, batch j served by CTA j mod k, the stream's state handed from CTA to CTA
    in batch order.  Each CTA still takes each of its batches through the whole trip (fences contending
    among rings x k CTAs), so a batch every trip / k at best; and the two chains that read and write the
    stream run one batch at a time, each link a handoff (the CTA before releases, the next acquires: a
    system fence and two L2 round trips, an assumption; the stream's words, now another SM's, from L2
    rather than L1 not priced): 2a and 2b (run, the starts' scan, sequence) and the commit.  µs a batch."""
    p = predict(g, parts, rings * k, payload, batch)
    s, handoff = p["steps_us"], g["fence"] + 2 * g["l2"]
    chain = s["run"] + s["scan"] / 2 + s["sequence"]
    return max(p["us_per_batch"] / k, chain + handoff, s["commit"] + handoff)


def structures(parts):
    """Issue 21's rate and fixed-cost targets under two structures beyond this tree's, as arithmetic on this
    tree's step table (H200): what each would give if built, not a prediction of code that exists."""
    print("\n## structures beyond this tree: issue 21's targets as µs a batch on the ring (H200; what-if"
          " arithmetic on this tree's steps, not a prediction of code that exists)\n")
    g = GPUS["H200"]
    forms = [("this tree", lambda r, pl, b: predict(g, parts, r, pl, b)["us_per_batch"]),
             ("warps split front / back", lambda r, pl, b: split_cta(g, parts, r, pl, b)),
             ("2 CTAs a ring", lambda r, pl, b: ctas_per_ring(g, parts, r, pl, b, 2))]
    rows = []
    for label, kind, rings, payload, batch, target, _, _ in TARGETS:
        if kind == "latency":
            continue  # one batch on an idle CTA: neither structure shortens it
        cells = []
        for _, f in forms:
            if kind == "Mpps":
                us = f(rings, payload, batch)
                cells.append("%.1f (%.3g Mpps)" % (us, batch * rings / us))
            else:
                us = fixed_cost({b: f(1, 64, b) for b in FIXED_BATCHES})[0]
                cells.append("%.1f" % us)
        need = target_us(kind, rings, batch, target) if kind == "Mpps" else target
        rows.append([label, "≤ %.1f" % need] + cells)
    print(md_table(rows, ["case", "target, µs"] + [f[0] for f in forms]))


def sensitivity(parts):
    print("\n## sensitivity: H200, 4 rings, this tree, Mpps when one input changes\n")
    rows = []
    cases = [("as measured", {}), ("system fence x2", {"fence": 1.04}), ("load from host x2", {"pcie": 2.28}),
             ("no fence contention between CTAs", {"_contention": 0.0}),
             ("per-frame thread-0 work halved", {"_seq_frame": CAL["seq_frame"] / 2})]
    for name, over in cases:
        g = dict(GPUS["H200"])
        saved = dict(CAL)
        for k, v in over.items():
            if k == "_contention":
                CAL["fence_contention"] = v
            elif k == "_seq_frame":
                CAL["seq_frame"] = v
            else:
                g[k] = v
        rows.append([name] + [predict(g, parts, 4, payload, batch)["Mpps"]
                              for payload, batch in ((64, 256), (1024, 64), (8192, 64))])
        CAL.clear()
        CAL.update(saved)
    print(md_table(rows, ["input", "64 B (batch 256)", "1 KiB (batch 64)", "8 KiB (batch 64)"]))


if __name__ == "__main__":
    main()
