#!/usr/bin/python3
"""numpy_stats.py — one line of statistics per frame of a gpuingestd stream.

    python3 numpy_stats.py cam0 [--count N] [--timeout S]

A host ring is read in place: frame.numpy() is the ring slot itself, no
copy, and frame.valid() afterwards says whether the daemon reused the slot
meanwhile.  A GPU ring (executor.backend: cuda) is copied to the host with
frame.copy(), which checks the same thing.
"""
import argparse
import sys

import gpuingest


def main():
    ap = argparse.ArgumentParser(description="Print per-frame statistics of a gpuingestd stream.")
    ap.add_argument("stream", help="a stream name (cam0) or the ring's shared-memory name (/gpuingest-cam0)")
    ap.add_argument("--count", type=int, default=0, help="stop after N frames (default: until the daemon stops)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds to wait for the ring, and for each frame (default 10)")
    a = ap.parse_args()

    try:
        ring = gpuingest.open(a.stream, timeout=a.timeout)
    except gpuingest.Error as e:
        print(f"numpy_stats: {e}", file=sys.stderr)
        return 1
    shown = 0
    with ring:
        print(f"{ring.info.stream}: {ring.info.packets} x {ring.info.payload_bytes}-byte packets, "
              f"{ring.info.frame_bytes} bytes a frame, in {'GPU' if ring.info.in_device else 'host'} memory")
        try:
            for frame in ring.frames(timeout=a.timeout):
                if ring.info.in_device:
                    try:
                        data = frame.copy()
                    except gpuingest.Overrun:
                        continue
                else:
                    data = frame.numpy()
                mean, std = data.mean(), data.std()
                if not frame.valid():
                    continue  # overwritten while we read it: the numbers mean nothing (counted as an overrun)
                print(f"frame {frame.frame} (sensor {frame.sensor_id} #{frame.sensor_frame}): {frame.state}, "
                      f"{frame.received}/{frame.expected} packets, mean {mean:.2f}, std {std:.2f}")
                shown += 1
                if a.count and shown >= a.count:
                    break
        except KeyboardInterrupt:
            pass
        except gpuingest.Restarted as e:
            print(f"numpy_stats: {e}", file=sys.stderr)
        s = ring.stats()
    print(f"{shown} frames shown; {s['complete']} complete, {s['partial'] + s['timed_out']} partial, "
          f"{s['missing']} missing, {s['overruns']} overrun")
    return 0


if __name__ == "__main__":
    sys.exit(main())
