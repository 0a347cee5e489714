#!/usr/bin/env python3
"""check_accounting.py — compare what gpuingest-sim sent with what the daemon
and the frame consumers report, and enforce DESIGN.md's accounting identity.

usage: check_accounting.py --sim SIM.json --daemon DAEMON.json
                           [--frames NAME=FRAMES.json ...] [--clean]
                           [--stream NAME=STREAM_ID ...]

Every failed equality is printed with both sides; exit 1 if any failed.
--clean additionally requires zero loss, zero duplicates and only complete,
byte-exact frames.
"""
import argparse
import json
import sys

def load(path):
    with open(path) as f:
        text = f.read().strip()
    # the daemon's stdout holds one JSON object; take the last line that parses
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit(f"{path}: no JSON object found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--frames", action="append", default=[])
    ap.add_argument("--stream", action="append", default=[], help="daemon stream NAME=sim stream_id")
    ap.add_argument("--clean", action="store_true")
    ap.add_argument("--allow-no-stream", type=int, default=0)
    a = ap.parse_args()

    sim, d = load(a.sim), load(a.daemon)
    errors = []

    def eq(what, got, want):
        ok = got == want
        print(f"  {'ok ' if ok else 'BAD'} {what}: {got} (expected {want})")
        if not ok:
            errors.append(what)

    sim_streams = {s["stream_id"]: s for s in sim["streams"]}
    d_streams = {s["name"]: s for s in d["streams"]}
    mapping = dict(kv.split("=") for kv in a.stream) if a.stream else {n: i for i, n in enumerate(d_streams)}

    print("packets on the wire:")
    sent = sum(s["sent"] for s in sim["streams"])
    eq("daemon delivered == sim sent", d["delivered"], sent)
    eq("daemon accounted == delivered (every packet in exactly one counter)", d["accounted"], d["delivered"])
    eq("ring_full drops", d["dropped"]["ring_full"], 0)
    eq("no_stream drops", d["dropped"]["no_stream"], a.allow_no_stream)
    for p in d["ports"]:
        eq(f"port {p['name']} rx_missed", p["rx_missed"], 0)
    # every drop reason the daemon has, against what the simulator says it
    # injected under that name (sim "X" <-> daemon "malformed_X" or "X")
    injected = {}
    for s in sim["streams"]:
        for r, n in s.get("malformed_by_reason", {}).items():
            key = r if r in d["dropped"] else f"malformed_{r}"
            injected[key] = injected.get(key, 0) + n
    unknown = [k for k in injected if k not in d["dropped"]]
    eq("simulator reasons the daemon knows", unknown, [])
    for r, v in d["dropped"].items():
        if r in ("ring_full", "no_stream"):
            continue
        eq(f"dropped {r}", v, injected.get(r, 0))

    for name, sid in mapping.items():
        s, ds = sim_streams[int(sid)], d_streams[name]
        print(f"stream {name} (sim stream {sid}):")
        # frame-end packets that carry only the sender's record (hsb) are neither placed nor lost
        meta = ds.get("metadata", 0)
        eq("placed + metadata + lost == unique sent", ds["packets"] + meta + ds["lost"], s["unique"])
        eq("lost == dropped by the sim", ds["lost"], s["dropped"])
        eq("placed + metadata == sent_unique", ds["packets"] + meta, s["sent_unique"])
        eq("duplicates + late == duplicated by the sim", ds["duplicates"] + ds["late"], s["duplicated"])
        # every packet payload_bytes, each frame's last data packet the rest (--frame-bytes)
        eq("bytes == payload bytes of the unique packets sent", ds["bytes"], s["bytes_unique"])
        frames = ds["frames_complete"] + ds["frames_partial"] + ds["frames_timed_out"] + ds.get("frames_corrupt", 0)
        eq("frames published == frames sent", frames, s["frames"])
        if a.clean:
            eq("lost", ds["lost"], 0)
            eq("duplicates", ds["duplicates"], 0)
            eq("late", ds["late"], 0)
            eq("frames_complete", ds["frames_complete"], s["frames"])

    for kv in a.frames:
        name, path = kv.split("=", 1)
        fj, ds = load(path), d_streams[name]
        print(f"consumer of {name}:")
        eq("mismatches", fj["mismatches"], 0)
        eq("overruns", fj["overruns"], 0)
        eq("complete frames seen == daemon's", fj["frames_complete"], ds["frames_complete"])
        eq("corrupt frames seen == daemon's", fj.get("frames_corrupt", 0), ds.get("frames_corrupt", 0))
        eq("partial frames seen == daemon's", fj["frames_partial"] + fj["frames_timed_out"],
           ds["frames_partial"] + ds["frames_timed_out"])
        eq("packets verified == placed", fj["packets_verified"], ds["packets"])
        if a.clean:
            s = sim_streams[int(mapping[name])]
            eq("bytes verified", fj["bytes_verified"], s["frames"] * s["frame_bytes"])

    if errors:
        print(f"FAILED: {len(errors)} check(s): {', '.join(errors)}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
