#!/usr/bin/env python3
"""nic_ts_consumer.py SHM EXPECT.json READY — read every frame of a ring
through the gpuingest module until the daemon closes it, and hold each
frame's first_nic_ns/last_nic_ns to EXPECT exactly (nic_timestamps.sh).
One line per mismatch; exit 1 if any."""
import json
import os
import sys

import gpuingest

shm, expect_path, ready = sys.argv[1:4]
expect = json.load(open(expect_path))["frames"]
ring = gpuingest.open(shm, timeout=20)
open(ready, "w").close()
problems, seen = [], {}
if ring.info.nic_ts != "realtime":
    problems.append(f"ring nic_ts {ring.info.nic_ts!r}, expected 'realtime' (net_pcap's capture times)")
while True:
    try:
        f = ring.next(timeout=30)
    except gpuingest.Closed:
        break
    if f is None:
        problems.append("no frame and no close within 30 s")
        break
    seen[str(f.sensor_frame)] = [f.first_nic_ns, f.last_nic_ns, f.state, f.received]
for k, want in expect.items():
    got = seen.get(k)
    if got is None:
        problems.append(f"frame {k}: never returned")
    elif got[:2] != want:
        problems.append(f"frame {k}: first/last_nic_ns {got[:2]}, expected {want} ({got[2]}, {got[3]} packets)")
for p in problems:
    print(p, file=sys.stderr)
print(json.dumps(seen))
sys.exit(1 if problems else 0)
