#!/usr/bin/env python3
"""nic_ts_pcap.py OUT.pcap EXPECT.json — a udp_seq capture whose packets carry
known capture times, for nic_timestamps.sh, and each frame's expected
first_nic_ns/last_nic_ns: the smallest and largest capture time of the
packets the daemon places (net_pcap stamps a packet with its capture time in
microseconds, so every time here is a whole microsecond).

Stream s0 (udp 5000), 4 packets of 64 bytes a frame, 10 frames:
  frame 0  in order
  frame 1  its first packet lost
  frame 2  reordered: 3, 1, 0, 2 (the earliest time is packet 3's, the latest packet 2's)
  frame 3  in order, then a duplicate of its packet 1 long after: not placed, so not its last time
  4 .. 9   in order (they push frame 1 out of the reorder window, so all ten are published)
"""
import json
import struct
import sys
from decimal import Decimal

from scapy.all import IP, UDP, Ether, PcapWriter

PACKETS, PAYLOAD, FRAMES, STREAM_ID = 4, 64, 10, 7
BASE_US = 1_700_000_000_000_000  # µs since the epoch: a plausible wall clock


def packet(frame, index, seq):
    hdr = struct.pack(">HBBHHIIHHIQ", 0x4749, 1, 1 if index == PACKETS - 1 else 0, STREAM_ID, PACKETS, seq, frame,
                      index, PAYLOAD, 0, 1000 * frame + index)
    body = bytes((frame * 13 + index * 7 + i) & 0xFF for i in range(PAYLOAD))
    return Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01") / IP(src="10.0.0.2", dst="10.0.0.1") / \
        UDP(sport=40000, dport=5000) / (hdr + body)


def main():
    out, expect_path = sys.argv[1], sys.argv[2]
    sends = []  # (frame, index) in wire order
    for f in range(FRAMES):
        order = list(range(PACKETS))
        if f == 1:
            order = [1, 2, 3]
        elif f == 2:
            order = [3, 1, 0, 2]
        sends += [(f, i) for i in order]
        if f == 5:
            sends.append((3, 1))  # the duplicate, long after frame 3 was complete
    w = PcapWriter(out, linktype=1, sync=True)
    t_us = BASE_US
    placed = {}
    seen = set()
    for k, (f, i) in enumerate(sends):
        t_us += 7 + (k % 5) * 3  # uneven gaps, increasing like a NIC's clock
        p = packet(f, i, f * PACKETS + i)
        p.time = Decimal(t_us) / Decimal(1_000_000)
        w.write(p)
        if (f, i) not in seen:  # a duplicate is not placed
            seen.add((f, i))
            placed.setdefault(f, []).append(t_us * 1000)
    w.close()
    expect = {str(f): [min(ts), max(ts)] for f, ts in placed.items()}
    with open(expect_path, "w") as fp:
        json.dump({"frames": expect, "packets": len(sends)}, fp)


if __name__ == "__main__":
    main()
