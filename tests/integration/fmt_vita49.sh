#!/usr/bin/env bash
# fmt_vita49.sh — the vita49 format end to end, checked by outside tools.
#
#  1. tshark: the simulator's VITA 49 pcap output decodes cleanly with
#     Wireshark's own VRT dissector (-d udp.port==PORT,vrt) in several
#     packet shapes — no "Malformed" anywhere, good IPv4/UDP checksums, the
#     packet count the sim reports, each stream's stream ID with its data
#     and context packet counts, and packet counts running mod 16;
#  2. memif: two vita49 streams (distinct stream IDs on one UDP port, one
#     sequenced by the 4-bit count, one by timestamps) and one udp_seq
#     stream on the same daemon port at once: a clean run, byte-exact
#     through gpuingest-frames, then an impaired one (loss, duplicates,
#     reordering, malformed variants, context packets) checked exactly by
#     check_accounting.py against the simulator's JSON;
#  3. a loss of 20 consecutive packets: counted exactly on the stream that
#     uses the timestamp rule (vita49.ts_step_ps).
# Without tshark (a GPU machine: tests/gpu/run_on_gpu.sh) the outside
# dissector's checks are skipped, said so, and parts 2 and 3 still run.
source "$(dirname "$0")/lib.sh"

HAVE_TSHARK=1
command -v tshark >/dev/null 2>&1 || HAVE_TSHARK=0
[ -x "$SIM" ] || fail "$SIM not built"

VPORT=4991

# ---- 1. tshark ---------------------------------------------------------------

tshark_case() {
  local label=$1; shift
  echo "=== tshark: $label"
  "$SIM" --port "pcap:$T/$label.pcap" --format vita49 --dst-ports $VPORT --frames 5 --packets-per-frame 24 \
    --payload 256 --seed 3 "$@" >"$T/$label.json" 2>"$T/$label.log" || { cat "$T/$label.log" >&2; fail "sim failed"; }
  tshark -r "$T/$label.pcap" -d "udp.port==$VPORT,vrt" -V 2>/dev/null >"$T/$label.txt"
  if grep -qi malformed "$T/$label.txt"; then
    grep -i -B20 malformed "$T/$label.txt" | head -40 >&2
    fail "$label: tshark reports a malformed packet"
  fi
  tshark -r "$T/$label.pcap" -d "udp.port==$VPORT,vrt" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
    -T fields -E separator=/t -e frame.number -e ip.checksum.status -e udp.checksum.status -e vrt.type \
    -e vrt.sid -e vrt.seq -e vrt.len -e _ws.malformed -e _ws.expert.message 2>/dev/null >"$T/$label.tsv"
  python3 - "$T/$label.json" "$T/$label.tsv" "$@" <<'EOF'
import json, sys
sim = json.load(open(sys.argv[1]))
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
args = sys.argv[3:]
base = int(args[args.index("--stream-id-base") + 1], 0) if "--stream-id-base" in args else 0
no_sid = "--vita49-no-stream-id" in args
errors = []
def check(what, got, want):
    ok = got == want
    print(f"  {'ok ' if ok else 'BAD'} {what}: {got} (expected {want})")
    if not ok:
        errors.append(what)
check("packets decoded == sim sent", len(rows), sim["sent"])
check("bad IPv4 checksums", sum(r[1] != "1" for r in rows), 0)
check("bad UDP checksums", sum(r[2] != "1" for r in rows), 0)
check("malformed or expert messages", [r for r in rows if any(x.strip() for x in r[7:])], [])
data, ctx, seqs = {}, {}, {}
for r in rows:
    sid = int(r[4], 16) if r[4] else None
    t = int(r[3])
    if t in (0, 1):
        data[sid] = data.get(sid, 0) + 1
        seqs.setdefault(sid, []).append(int(r[5]))
    elif t == 4:
        ctx[sid] = ctx.get(sid, 0) + 1
    else:
        errors.append(f"unexpected packet type {t}")
for s in sim["streams"]:
    sid = None if no_sid else base + s["stream_id"]
    check(f"stream {sid}: data packets", data.get(sid, 0), s["sent_unique"])
    check(f"stream {sid}: context packets", ctx.get(sid, 0), s["malformed_by_reason"]["vita49_context"])
    check(f"stream {sid}: packet counts run 0..15 in order", seqs.get(sid) == [i % 16 for i in range(s["unique"])], True)
if errors:
    print("FAILED:", ", ".join(errors))
    sys.exit(1)
EOF
}

if [ "$HAVE_TSHARK" = 1 ]; then
  tshark_case sid_cid_trailer --streams 2 --stream-id-base 0x100 --vita49-class-id --vita49-trailer --context-every 7
  tshark_case gps_samples --streams 3 --stream-id-base 0xabcd0000 --vita49-tsi gps --vita49-tsf samples \
    --vita49-ts-step 1024 --context-every 10
  tshark_case no_sid_free --vita49-no-stream-id --vita49-tsi other --vita49-tsf free
  tshark_case bare --streams 2 --vita49-tsi none --vita49-tsf none --vita49-trailer
else
  echo "=== tshark is not installed: the VITA 49 dissector checks (1) are skipped"
fi

# ---- 2, 3. memif end to end ----------------------------------------------------

need_root
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"

# write_config's udp_seq stream u0, plus two vita49 streams on one UDP port
vita49_config() {
  write_config "$1" "$DEV" u0:5002:32:512
  cat >>"$1" <<YAML
  - name: v0
    port: p0
    format: vita49
    match: {udp_dst_port: $VPORT, stream_id: 256}
    frame: {packets: 32, payload_bytes: 512}
    ring: {slots: 64, shm: /$TAG-v0}
    reorder_window: 4
    frame_timeout_ms: 0
  - name: v1
    port: p0
    format: vita49
    match: {udp_dst_port: $VPORT, stream_id: 257}
    vita49: {ts_step_ps: 1000000}
    frame: {packets: 32, payload_bytes: 512}
    ring: {slots: 64, shm: /$TAG-v1}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

run_case() {
  local label=$1 check_args=$2; shift 2
  vita49_config "$T/$label.yaml"
  run_memif_case "memif: $label" "$T/$label.yaml" "$check_args" --streams 3 --format vita49,vita49,udp_seq \
    --dst-ports $VPORT,$VPORT,5002 --stream-id-base 256 --packets-per-frame 32 --payload 512 --start-delay-ms 1000 \
    "$@" -- v0 v1 u0
}

run_case clean --clean --frames 120 --rate 40000 --seed 1 --vita49-class-id --vita49-trailer
run_case impaired "" --frames 120 --rate 40000 --seed 7 --loss 0.01 --dup 0.01 --reorder 0.02 \
  --reorder-depth 3 --malformed 0.02 --context-every 50
grep -q '"vita49_context":[1-9]' "$T/sim.json" || fail "impaired: no context packets were sent"

# 3. --loss 0.85 makes runs of 20 and more consecutive losses (the pcap of
# the same seeded run proves it, from the timestamps); only the timestamp
# rule can count them, so v1 (ts_step_ps) must match the sim exactly
echo "=== memif: long losses, timestamp rule"
long_args=(--streams 2 --format vita49 --dst-ports $VPORT --stream-id-base 256 --packets-per-frame 32 --payload 512
           --frames 60 --seed 5 --loss 0.85)
if [ "$HAVE_TSHARK" = 1 ]; then
  "$SIM" --port "pcap:$T/long.pcap" "${long_args[@]}" >/dev/null 2>&1 || fail "sim (pcap) failed"
  longest=$(tshark -r "$T/long.pcap" -d "udp.port==$VPORT,vrt" -Y "vrt.sid == 257" -T fields -e vrt.ts_int \
    -e vrt.ts_frac_picosecond 2>/dev/null |
    awk '{ t = $1 * 1000000 + $2 / 1000000; if (NR > 1 && t - p - 1 > m) m = t - p - 1; p = t } END { print m + 0 }')
  echo "  longest run of lost packets of stream 257: $longest"
  [ "$longest" -ge 20 ] || fail "the seeded run has no loss of 20 consecutive packets"
fi
vita49_config "$T/long.yaml"
start_memif_case "$T/long.yaml" "${long_args[@]}" --start-delay-ms 1000 --rate 40000 --
wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
python3 - "$T/sim.json" "$T/daemon.json" <<'EOF2'
import json, sys
sim = json.load(open(sys.argv[1]))
d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
s = sim["streams"][1]
v1 = {x["name"]: x for x in d["streams"]}["v1"]
print(f"  sim stream 1: unique {s['unique']} dropped {s['dropped']}; daemon v1: placed {v1['packets']} lost {v1['lost']}")
assert d["delivered"] == d["accounted"], d
assert v1["packets"] == s["sent_unique"], (v1, s)
assert v1["lost"] == s["dropped"], (v1, s)
assert v1["duplicates"] + v1["late"] == 0, v1
print("  ok v1: lost == dropped by the sim, across runs of 20+ consecutive losses")
EOF2
echo "PASS"
