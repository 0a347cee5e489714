#!/usr/bin/env bash
# hsb.sh — Holoscan Sensor Bridge streams end to end: gpuingest-sim
# --format hsb → memif → daemon (rocev2 profile hsb, placement va) → frame
# consumers, in both of HSB's forms.
#
# Frames of 100,000 bytes at HSB's 1,408-byte payload (MTU 1500): 71 full
# packets and a 32-byte last one, placed by RETH VA into two pages of
# roundup(100000, 128) + 128 bytes, the first frame on page 1; PSNs run on
# across frames and wrap (24 bits for the FPGA, 20 for the emulator); each
# frame ends with a WRITE ONLY with immediate carrying HSB's 128-byte record
# — a packet of its own (FPGA), or appended to the last data packet
# (emulator, with the BTH's FECN/BECN byte 0xFF).  The record's 16-bit frame
# number wraps during the run.
#
#  0. the simulator's capture: tshark decodes every packet as InfiniBand
#     without complaint, and the records' CRCs equal ~zlib.crc32 of the
#     frames reassembled from the capture with Python;
#  1. clean, both forms: every frame complete and byte-exact; each slot's
#     sender record says what the simulator sent: frame number (extended
#     past 65535), start of frame (also the slot's first_ts_ns), record
#     time, bytes written, a CRC equal to the frame's; metadata packets
#     counted apart (FPGA: one per frame; emulator: none);
#  2. impaired, both forms: loss (frame-end packets too), duplicates and the
#     malformed variants (rkey, bounds, VA, ICRC, opcode, ...): the
#     accounting identity exact, per drop reason;
#  3. the daemon's own check of each frame against the record's CRC
#     (rocev2.frame_crc: verify) with every 5th record wrong: those frames
#     corrupt, the rest complete, the consumer's check agreeing;
#  4. all of it with the CUDA executor when the build emulates it (the
#     suite cuda_emu runs this script with backend cuda): the CTA's threads
#     sum the CRC in slices.
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
BYTES=100000
FRAME_START=65500

hsb_config() {
  local file=$1 form=$2 psn_bits=$3 frame_crc=${4:-ignore}
  write_config "$file" "$DEV"
  cat >>"$file" <<YAML
  - name: h0
    port: p0
    format: rocev2
    match: {dst_qp: 256}
    frame: {payload_bytes: 1408, bytes: $BYTES}
    rocev2: {profile: hsb, placement: va, close_on: imm, frame_end: $form, pages: 2, rkey: 0x1000,
             psn_bits: $psn_bits, frame_crc: $frame_crc}
    ring: {slots: 64, shm: /$TAG-h0}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

# ---- 0. the capture ------------------------------------------------------------
for form in fpga emulator; do
  echo "=== capture: $form"
  "$SIM" --port "pcap:$T/$form.pcap" --format hsb --hsb-form $form --frames 4 --mtu 1500 \
    --packets-per-frame 72 --frame-bytes $BYTES --frame-start 65534 --seq-start 16777100 \
    >"$T/$form.json" 2>"$T/$form.log" || { cat "$T/$form.log" >&2; fail "sim failed"; }
  tshark -r "$T/$form.pcap" -V 2>/dev/null >"$T/$form.txt"
  if grep -qiE "malformed|expert info" "$T/$form.txt"; then
    grep -iE -B20 "malformed|expert info" "$T/$form.txt" | head -40 >&2
    fail "$form: tshark reports a problem"
  fi
  /usr/bin/python3 - "$T/$form.pcap" "$form" <<'PY' || fail "$form: capture check"
import struct, sys, zlib
from scapy.all import rdpcap, raw
BYTES, PAGE = 100000, 100096 + 128
pk, form = rdpcap(sys.argv[1]), sys.argv[2]
frame, frames, ops, bad = bytearray(), 0, set(), []
for p in pk:
    u = raw(p)[42:]
    op, psn = u[0], struct.unpack(">I", u[8:12])[0] & 0xffffff
    va, rkey, dma = struct.unpack(">QII", u[12:28])
    ops.add(op)
    resv = u[4]
    if resv != (0xff if form == "emulator" else 0):
        bad.append(f"BTH resv {resv:#x}")
    body = u[28:-4]
    if op == 0x2b:
        imm = struct.unpack(">I", body[:4])[0]
        body = body[4:]
        if imm & 0xfff != va // PAGE or imm >> 12 != psn & 0xfffff:
            bad.append(f"immediate {imm:#x} for psn {psn} va {va:#x}")
        data, m = body[:-128], body[-128:]
        frame += data
        crc, = struct.unpack(">I", m[8:12])
        bw, = struct.unpack(">Q", m[24:32])
        want = ~zlib.crc32(bytes(frame[:BYTES])) & 0xffffffff
        if crc != want or bw != BYTES:
            bad.append(f"frame {frames}: crc {crc:#x} != ~zlib.crc32 {want:#x} or bytes written {bw}")
        if form == "fpga" and (data or va % PAGE != 100096):
            bad.append(f"frame {frames}: FPGA record at {va:#x} with {len(data)} data bytes")
        frame, frames = bytearray(), frames + 1
    else:
        if dma != len(body):
            bad.append(f"DMA length {dma} for {len(body)} bytes")
        frame += body
if ops != {0x2a, 0x2b} or frames != 4 or bad:
    print("BAD", sorted(ops), frames, bad[:5])
    sys.exit(1)
print(f"  ok {form}: {len(pk)} packets, 4 records, CRCs equal ~zlib.crc32 of the reassembled frames")
PY
done

# ---- 1, 2. end to end ------------------------------------------------------------
run_case() {
  local label=$1 form=$2 check_args=$3; shift 3
  local cfg_form=packet psn_bits=24
  [ "$form" = emulator ] && { cfg_form=embedded; psn_bits=20; }
  hsb_config "$T/$label.yaml" $cfg_form $psn_bits "${FRAME_CRC:-ignore}"
  GI_FRAMES_ARGS=--sender run_memif_case "$label" "$T/$label.yaml" "$check_args" --format hsb --hsb-form $form \
    --payload 1408 --packets-per-frame 72 --frame-bytes $BYTES --frame-start $FRAME_START --start-delay-ms 1000 \
    "$@" -- h0
}

check_records() { # LABEL FORM FRAMES: every record as the simulator wrote it
  /usr/bin/python3 - "$T/frames-h0.json" "$T/daemon.json" "$2" "$3" <<'PY' || fail "$1: sender records"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"frame"')]
d = json.loads([l for l in open(sys.argv[2]) if l.startswith("{")][-1])
form, frames = sys.argv[3], int(sys.argv[4])
st = d["streams"][0]
bad = []
for r in lines:
    k = r["sensor_frame"]
    sof = (1700000000 + k) * 10**9 + k * 1000
    want = {"sender_frame": 65500 + k, "sof_ns": sof, "first_ts_ns": sof, "meta_ns": sof + 10**6,
            "bytes_written": 100000, "crc_ok": True if r["state"] == 2 else None}
    got = {key: r[key] for key in want}
    if got != want:
        bad.append((r["frame"], got, want))
print(f"  {'ok ' if not bad else 'BAD'} {len(lines)} sender records equal what the simulator sent")
if bad:
    print("   ", bad[:3])
ok = not bad
if len(lines) != frames:
    print(f"  BAD records seen {len(lines)}, frames {frames}"); ok = False
meta = st["metadata"]
want_meta = frames if form == "fpga" else 0
print(f"  {'ok ' if meta == want_meta else 'BAD'} metadata packets {meta} (expected {want_meta})")
sys.exit(0 if ok and meta == want_meta else 1)
PY
}

for form in fpga emulator; do
  run_case "clean $form" $form --clean --frames 120 --rate 40000 --seed 3
  check_records "clean $form" $form 120
  run_case "impaired $form" $form "" --frames 120 --rate 40000 --seed 11 \
    --loss 0.01 --dup 0.01 --malformed 0.03
done
# the impaired runs injected every variant an HSB stream carries
python3 - "$T/sim.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["streams"][0]["malformed_by_reason"]
want = ("ip", "truncated", "version", "length", "rocev2_icrc", "rocev2_opcode", "rocev2_va", "rocev2_rkey",
        "rocev2_bounds")
assert all(r[k] > 0 for k in want), r
print("  ok every malformed variant of an HSB stream was sent at least once")
PY
# 3. the daemon checks each frame against the record's CRC (rocev2.frame_crc:
#    verify; on the GPU the CTA's threads sum slices of it): every 5th record
#    carries a wrong CRC, those frames are corrupt, the others complete, and
#    the consumer's own check agrees frame by frame
FRAME_CRC=verify run_case "crc verify fpga" fpga "" --frames 120 --rate 40000 --seed 5 --bad-crc-every 5
python3 - "$T/daemon.json" "$T/frames-h0.json" <<'PY' || fail "crc verify: counts"
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])["streams"][0]
f = json.loads([l for l in open(sys.argv[2]) if l.startswith('{"shm"')][-1])
got = (d["frames_complete"], d["frames_corrupt"], f["sender_crc_mismatch"], f["sender_crc_ok"], f["header_errors"])
print(f"  {'ok ' if got == (96, 24, 24, 96, 0) else 'BAD'} complete, corrupt, consumer's CRC mismatches, "
      f"CRCs ok, header errors: {got} (expected (96, 24, 24, 96, 0))")
sys.exit(0 if got == (96, 24, 24, 96, 0) else 1)
PY

echo "PASS"
