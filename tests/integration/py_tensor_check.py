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
import py_consumer_check  # noqa: E402  (its pattern, TensorSpec and open_ring)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shm", required=True)
    ap.add_argument("--tensor", required=True, type=py_consumer_check.TensorSpec,
                    help="SAMPLE,TO,BYTEORDER,SCALE,OFFSET,MISSING as configured")
    ap.add_argument("--wait", type=float, default=20.0)
    ap.add_argument("--ready", help="create this file once the ring is open")
    a = ap.parse_args()
    spec = a.tensor
    ring = py_consumer_check.open_ring(a, "py_tensor_check")
    verified, mismatches, overruns, partial, problems = 0, 0, 0, 0, []
    with ring:
        if ring.info.tensor_dtype != spec.dtype:
            problems.append(f"ring tensor dtype {ring.info.tensor_dtype!r}, expected {spec.dtype!r}")
        for f in ring:
            try:
                got = f.copy_tensor().tobytes()
            except gpuingest.Overrun:
                overruns += 1
                continue
            sent = py_consumer_check.pattern(f.sensor_id, f.sensor_frame, f.nbytes)
            present = f.present[:-(-f.nbytes // f.payload_bytes)]
            want = spec.want(sent, present, f.payload_bytes)
            if not spec.same(got, want):
                mismatches += 1
                if len(problems) < 5:
                    g, w = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
                    problems.append(f"frame {f.frame}: {int(np.count_nonzero(g != w))} tensor bytes differ")
            verified += 1
            partial += not present.all()
    out = dict(shm=a.shm, dtype=spec.dtype, shape=list(ring.info.tensor_shape), tensors_verified=verified,
               with_lost_packets=partial, mismatches=mismatches, overruns=overruns, problems=problems)
    print(json.dumps(out))
    return 1 if mismatches or problems or not verified else 0


if __name__ == "__main__":
    sys.exit(main())
