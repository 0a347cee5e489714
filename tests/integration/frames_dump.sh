#!/usr/bin/env bash
# frames_dump.sh — gpuingest-frames --dump: real frames out as NumPy files.
#  - a clean memif run, the consumer dumps the first 5 frames of a stream as
#    u16 with shape 32,256 (16384-byte frames) into a directory that does
#    not exist yet, two levels deep (made): each frame-N.npy loads with
#    numpy.load as that dtype and shape, its bytes are the simulator's
#    pattern for (sensor id, sensor frame), and frame-N.json beside it says
#    complete, 32/32 packets, no missing packets, the same sensor frame;
#    exactly 5 pairs, no temporary files left;
#  - a dtype/shape that does not fit the ring's frames: exit 2, one line;
#  - --dump to an existing file, or below one: exit 2, one line naming it,
#    before the ring is opened;
#  - --no-verify: the frames are counted but nothing is verified, so
#    packets_verified and bytes_verified are 0 (a verifying consumer of
#    the same frame beside it: 32 packets, 16384 bytes).
source "$(dirname "$0")/lib.sh"
need_root
/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "python3-numpy missing (setup.sh installs it)"

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
write_config "$T/d.yaml" "$DEV" s0:5000:32:512
GI_FRAMES_ARGS="--dump $T/made/dump --dump-max 5 --dtype u16 --shape 32,256" \
  run_memif_case dump "$T/d.yaml" --clean --streams 1 --dst-port 5000 --packets-per-frame 32 --payload 512 \
  --frames 40 --rate 20000 --start-delay-ms 1000 -- s0

/usr/bin/python3 - "$T/made/dump" "$T/frames-s0.json" <<'PY'
import glob, json, os, sys
import numpy as np
d = sys.argv[1]
summary = json.load(open(sys.argv[2]))
assert summary["frames_dumped"] == 5 and summary["dump_errors"] == 0, summary
npys = sorted(glob.glob(os.path.join(d, "frame-*.npy")))
assert len(npys) == 5, npys
assert not glob.glob(os.path.join(d, "*.tmp")), "temporary files left"
M = (1 << 64) - 1
def pattern(sensor_id, frame, n):
    # kernels/udp_seq.h gi_pattern_seed / gi_pattern_byte
    z = ((sensor_id << 40) ^ (frame & 0xffffffff) ^ 0x5851f42d4c957f2d) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    seed = z ^ (z >> 31)
    words = [(seed + w * 0x9e3779b97f4a7c15) & M for w in range((n + 7) // 8)]
    return np.array(words, dtype="<u8").view(np.uint8)[:n]
for p in npys:
    a = np.load(p)
    assert a.dtype == np.dtype("<u2") and a.shape == (32, 256), (p, a.dtype, a.shape)
    meta = json.load(open(p[:-4] + ".json"))
    assert meta["state"] == "complete" and meta["received"] == 32 and meta["expected"] == 32, meta
    assert meta["missing_packets"] == [] and meta["bytes"] == 16384 and meta["dtype"] == "<u2", meta
    assert os.path.basename(p) == "frame-%d.npy" % meta["frame"], (p, meta["frame"])
    want = pattern(meta["sensor_id"], meta["sensor_frame"], 16384)
    assert np.array_equal(a.view(np.uint8).reshape(-1), want), f"{p}: bytes differ from the pattern"
print(f"  ok {len(npys)} frames dumped, loaded as <u2 (32, 256), byte-exact, sidecars agree")
PY

# a shape that does not fit: refused before reading a frame
rc=0
"$FRAMES" --shm "/$TAG-none" --wait 0 --dump "$T/made/dump" --dtype u32 --shape 3,3 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "a missing ring: exit $rc, expected 2"
write_config "$T/e.yaml" "$DEV" s0:5000:32:512
start_sim --streams 1 --dst-port 5000 --packets-per-frame 32 --payload 512 --frames 1 --rate 1000 --start-delay-ms 3000
start_daemon "$T/e.yaml"
# --no-verify beside a verifying consumer: both read the one frame until the daemon closes the ring
"$FRAMES" --shm "/$TAG-s0" --wait 5 --quiet --no-verify >"$T/noverify.json" 2>"$T/noverify.log" &
NOVERIFY=$!
PIDS+=("$NOVERIFY")
"$FRAMES" --shm "/$TAG-s0" --wait 5 --quiet >"$T/verify.json" 2>"$T/verify.log" &
VERIFY=$!
PIDS+=("$VERIFY")
rc=0
"$FRAMES" --shm "/$TAG-s0" --wait 5 --dump "$T/made/dump" --dtype u32 --shape 3,3 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "do not fit the ring's 16384-byte frames" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] ||
  { cat "$T/err"; fail "a dump shape that does not fit was not refused with one line (exit $rc)"; }
# a path that is a file, or below one: refused before the ring (which exists) is read
: >"$T/file"
for bad in "$T/file" "$T/file/sub"; do
  rc=0
  "$FRAMES" --shm "/$TAG-s0" --wait 5 --dump "$bad" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "--dump $bad: $T/file exists and is not a directory" "$T/err" ||
    { cat "$T/err"; fail "--dump $bad: exit $rc, want 2 and one line saying $T/file is no directory"; }
done
echo "  ok --dump makes a missing directory, refuses a file: $(cat "$T/err")"
wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
for p in "$NOVERIFY" "$VERIFY"; do
  for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  wait "$p" || fail "a consumer of the one-frame run failed: $(cat "$T/noverify.log" "$T/verify.log")"
done
python3 - "$T/noverify.json" "$T/verify.json" <<'PY'
import json, sys
nv, v = (json.load(open(p)) for p in sys.argv[1:3])
assert nv["frames_complete"] == 1 and nv["packets_verified"] == 0 and nv["bytes_verified"] == 0, nv
assert v["frames_complete"] == 1 and v["packets_verified"] == 32 and v["bytes_verified"] == 16384, v
print(f"  ok --no-verify: 1 frame, {nv['packets_verified']} packets and {nv['bytes_verified']} bytes verified "
      f"(a verifying consumer: {v['packets_verified']} and {v['bytes_verified']})")
PY
echo "PASS"
