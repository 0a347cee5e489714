#!/usr/bin/python3
"""py_tensor_check.py — a stream's typed tensors (its tensor: block), any format,
held to NumPy's conversion of what gpuingest-sim sent (hsb.sh).

A second consumer beside gpuingest-frames, which checks the bytes: this one
reads each frame's tensor (frame.copy_tensor(), host or GPU ring), converts
the simulator's pattern for that frame (gi_pattern_seed(sensor_id,
sensor_frame), py_consumer_check.pattern) with tests/python/test_tensor.py's
reference over the packets the bitmap says arrived, and compares bit for
bit.  Prints one JSON object; exits 1 on a mismatch or when no tensor was
verified, 2 if the ring cannot be opened.
"""
import argparse
import json
import os
import sys

import numpy as np

import gpuingest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import py_consumer_check  # noqa: E402
import test_tensor  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shm", required=True)
    ap.add_argument("--tensor", required=True, help="SAMPLE,TO,BYTEORDER,SCALE,OFFSET,MISSING as configured")
    ap.add_argument("--wait", type=float, default=20.0)
    ap.add_argument("--ready", help="create this file once the ring is open")
    a = ap.parse_args()
    sample, to, order, scale, offset, missing = a.tensor.split(",")
    to = None if to == "same" else to
    dt = to or test_tensor.SAME[sample]
    width = {"f16": 2, "cf16": 2, "f32": 4, "cf32": 4}.get(dt, 0)
    try:
        ring = gpuingest.open(a.shm, timeout=a.wait)
    except gpuingest.Error as e:
        print(f"py_tensor_check: {a.shm}: {e}", file=sys.stderr)
        return 2
    if a.ready:
        open(a.ready, "w").close()
    verified, mismatches, overruns, partial, problems = 0, 0, 0, 0, []
    with ring:
        if ring.info.tensor_dtype != dt:
            problems.append(f"ring tensor dtype {ring.info.tensor_dtype!r}, expected {dt!r}")
        for f in ring:
            try:
                got = f.copy_tensor().tobytes()
            except gpuingest.Overrun:
                overruns += 1
                continue
            sent = py_consumer_check.pattern(f.sensor_id, f.sensor_frame, f.nbytes)
            packets = -(-f.nbytes // f.payload_bytes)
            present = f.present[:packets]
            want = test_tensor.reference(sent.tobytes(), sample, to, order == "big", float(scale), float(offset),
                                         missing, "".join("1" if p else "0" for p in present), f.payload_bytes)
            if not test_tensor.same_bits(got, want, bool(width), width or 4):
                mismatches += 1
                if len(problems) < 5:
                    g, w = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
                    problems.append(f"frame {f.frame}: {int(np.count_nonzero(g != w))} tensor bytes differ")
            verified += 1
            partial += not present.all()
    out = dict(shm=a.shm, dtype=dt, shape=list(ring.info.tensor_shape), tensors_verified=verified,
               with_lost_packets=partial, mismatches=mismatches, overruns=overruns, problems=problems)
    print(json.dumps(out))
    return 1 if mismatches or problems or not verified else 0


if __name__ == "__main__":
    sys.exit(main())
