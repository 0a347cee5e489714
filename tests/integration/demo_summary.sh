#!/usr/bin/env bash
# demo_summary.sh — the verdict tools/gpuingest-demo prints, on runs'
# JSON written here (the demo itself needs root and /run/gpuingest):
#  - a clean run: lost == what the simulator dropped on purpose, OK;
#  - packets that came after their frame was published (a sender stall
#    longer than frame_timeout_ms, as in a 90 s demo on a loaded box:
#    dropped 2220 on purpose, 2228 lost): each is lost and late, the
#    summary says so and the result is OK;
#  - the same 2220/2228 with the 8 dropped by the daemon itself
#    (ring_full), which the identity placed + lost == unique cannot tell
#    apart: the summary says MISMATCH and the result fails.
source "$(dirname "$0")/lib.sh"
DEMO=$GI_SRC/tools/gpuingest-demo

# run DIR LATE_ORIGINALS RING_FULL: one run's JSON files, cam0's numbers as the 90 s demo's
run() {
  mkdir -p "$1"
  python3 - "$@" <<'PY'
import json, os, sys
d, late_orig, ring_full = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mal = {"ip": 3, "truncated": 3, "magic": 2, "version": 2, "length": 2, "index": 2, "geometry": 2}
sim_streams, d_streams = [], []
for sid, (name, dropped, dup) in enumerate([("cam0", 2220, 2100), ("radar0", 1900, 1800)]):
    unique = 4_000_000 + sid
    sent_unique = unique - dropped
    lost_extra = (late_orig + ring_full) if sid == 0 else 0   # stream 0 carries the difference
    placed = sent_unique - lost_extra
    late = 40 + (late_orig if sid == 0 else 0)
    sim_streams.append({"stream_id": sid, "unique": unique, "dropped": dropped, "sent_unique": sent_unique,
                        "duplicated": dup, "malformed": sum(mal.values()), "malformed_by_reason": mal,
                        "sent": sent_unique + dup + sum(mal.values())})
    d_streams.append({"name": name, "packets": placed, "lost": unique - placed, "duplicates": dup - 40,
                      "late": late, "reordered": 9000, "frames_complete": 60000, "frames_partial": 2000,
                      "frames_timed_out": 1 if late_orig and sid == 0 else 0})
    with open(os.path.join(d, f"frames-{name}.json"), "w") as f:
        json.dump({"frames_complete": 60000, "frames_partial": 2000, "frames_timed_out": 0, "mismatches": 0,
                   "overruns": 0, "bytes_verified": 1 << 32}, f)
sent = sum(s["sent"] for s in sim_streams)
dropped = {"ring_full": ring_full, "no_stream": 0}
dropped.update({f"malformed_{r}": 2 * n for r, n in mal.items()})
accounted = sum(s["packets"] + s["duplicates"] + s["late"] for s in d_streams) + sum(dropped.values())
assert accounted == sent, (accounted, sent)
with open(os.path.join(d, "sim.json"), "w") as f:
    json.dump({"sent": sent, "pps": 100000.0, "streams": sim_streams}, f)
with open(os.path.join(d, "daemon.json"), "w") as f:
    json.dump({"delivered": sent, "accounted": accounted, "backend": "host", "dropped": dropped,
               "streams": d_streams}, f)
PY
}

run "$T/clean" 0 0
"$DEMO" --summary "$T/clean" >"$T/clean.out" || { cat "$T/clean.out"; fail "a clean run's summary failed"; }
grep -q "lost: *sim dropped 2220 on purpose = 2220 lost (OK)" "$T/clean.out" ||
  { cat "$T/clean.out"; fail "clean run: no 'dropped 2220 on purpose = 2220 lost' line"; }
echo "  ok clean run: $(grep -c '(OK)' "$T/clean.out") lines OK"

run "$T/late" 8 0
"$DEMO" --summary "$T/late" >"$T/late.out" || { cat "$T/late.out"; fail "late originals: the summary failed"; }
grep -q "sim dropped 2220 on purpose + 8 that came after their frame was published (lost, and late too) = 2228 lost (OK)" \
  "$T/late.out" || { cat "$T/late.out"; fail "late originals: the difference is not explained"; }
grep -q "^result: OK" "$T/late.out" || { cat "$T/late.out"; fail "late originals: result not OK"; }
echo "  ok 2220 dropped, 2228 lost, 8 late: explained, OK"

run "$T/ring_full" 0 8
rc=0
"$DEMO" --summary "$T/ring_full" >"$T/rf.out" || rc=$?
[ "$rc" -eq 1 ] || { cat "$T/rf.out"; fail "8 lost packets the daemon dropped itself: exit $rc, want 1"; }
grep -q "daemon counted 2228 lost.*MISMATCH" "$T/rf.out" && grep -q "ring_full.*MISMATCH" "$T/rf.out" &&
  grep -q "^result: PROBLEMS" "$T/rf.out" || { cat "$T/rf.out"; fail "unexplained loss not reported"; }
echo "  ok 2220 dropped, 2228 lost, 8 dropped by the daemon: MISMATCH, result PROBLEMS"
echo PASS
