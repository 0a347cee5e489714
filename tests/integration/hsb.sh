#!/usr/bin/env bash
# hsb.sh — Holoscan Sensor Bridge streams end to end: gpuingest-sim
# --format hsb → memif → daemon (rocev2 profile hsb, placement va, and no
# frame_end: auto, the default, learns the form per stream) → frame
# consumers, in each of the three forms a real bridge sends.
#
# HSB's 1,408-byte payloads (MTU 1500), placed by RETH VA into two pages of
# roundup(frame bytes, 128) + 128 bytes, the first frame on page 1; PSNs run
# on across frames and wrap (24 bits for the FPGA, 20 for the emulator);
# each frame ends with a WRITE ONLY with immediate carrying HSB's 128-byte
# record, whose 16-bit frame number wraps during the run:
#   fpga          100,000-byte frames (71 full packets, a last of 32): the
#                 record a packet of its own with its own PSN, a real CRC;
#   emulator      the same frames from HSB's software emulator (BTH resv
#                 0xFF, record CRC 0, a 32-bit frame number): 32 + 96 of
#                 padding + 128 + 4 + 128 fit a packet, so the record is
#                 appended to the last data packet;
#   emulator-own  101,248-byte frames (71 full, a last of 1,280: 128-aligned,
#                 no padding): 1280 + 128 + 4 + 128 do not fit, so the
#                 emulator sends the record as a packet of its own, as the
#                 FPGA does (as it does at 1920x1080 RAW10).
#
#  0. the simulator's capture, each form: tshark decodes every packet as
#     InfiniBand without complaint; with Python, the records where and as
#     each form puts them (their CRCs ~zlib.crc32 of the frames reassembled
#     from the capture for the FPGA, 0 for the emulator);
#  1. clean, each form: every frame complete and byte-exact; each slot's
#     sender record says what the simulator sent: frame number (extended
#     past 65535), start of frame (also the slot's first_ts_ns), record
#     time, bytes written, the CRC (the frame's for the FPGA, so the
#     consumer's check passes; 0 for the emulator, so it reports a
#     sender_crc_mismatch for every frame); metadata packets counted apart
#     (one per frame where the record is a packet of its own, else none);
#  2. impaired, each form: loss (frame-end packets too, so some epochs learn
#     the form from the second frame), duplicates and the malformed
#     variants (rkey, bounds, VA, ICRC, opcode, ...): the accounting
#     identity exact, per drop reason;
#  3. the daemon's own check of each frame against the record's CRC
#     (rocev2.frame_crc: verify) with every 5th FPGA record wrong: those
#     frames corrupt, the rest complete, the consumer's check agreeing;
#  4. all of it with the CUDA executor when the build emulates it (the
#     suite cuda_emu runs this script with backend cuda): the CTA's threads
#     sum the CRC in slices.
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
FRAME_START=65500

# the simulator's --hsb-form, the frame's bytes and the PSN width of each form
sim_form() { case $1 in fpga) echo fpga ;; *) echo emulator ;; esac; }
form_bytes() { case $1 in emulator-own) echo 101248 ;; *) echo 100000 ;; esac; }
form_psn_bits() { case $1 in fpga) echo 24 ;; *) echo 20 ;; esac; }

hsb_config() {
  local file=$1 bytes=$2 psn_bits=$3 frame_crc=${4:-ignore}
  write_config "$file" "$DEV"
  cat >>"$file" <<YAML
  - name: h0
    port: p0
    format: rocev2
    match: {dst_qp: 256}
    frame: {payload_bytes: 1408, bytes: $bytes}
    rocev2: {profile: hsb, placement: va, close_on: imm, pages: 2, rkey: 0x1000, psn_bits: $psn_bits,
             frame_crc: $frame_crc}
    ring: {slots: 64, shm: /$TAG-h0}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

# ---- 0. the capture ------------------------------------------------------------
# (a GPU machine may lack tshark or scapy: tests/gpu/run_on_gpu.sh runs the rest)
CAPTURE_FORMS="fpga emulator emulator-own"
if ! command -v tshark >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import scapy' 2>/dev/null; then
  echo "=== tshark or python3-scapy is not installed: the capture checks (0) are skipped"
  CAPTURE_FORMS=
fi
for form in $CAPTURE_FORMS; do
  echo "=== capture: $form"
  bytes=$(form_bytes $form)
  "$SIM" --port "pcap:$T/$form.pcap" --format hsb --hsb-form "$(sim_form $form)" --frames 4 --mtu 1500 \
    --packets-per-frame 72 --frame-bytes "$bytes" --frame-start 65534 --seq-start 16777100 \
    >"$T/$form.json" 2>"$T/$form.log" || { cat "$T/$form.log" >&2; fail "sim failed"; }
  tshark -r "$T/$form.pcap" -V 2>/dev/null >"$T/$form.txt"
  if grep -qiE "malformed|expert info" "$T/$form.txt"; then
    grep -iE -B20 "malformed|expert info" "$T/$form.txt" | head -40 >&2
    fail "$form: tshark reports a problem"
  fi
  /usr/bin/python3 - "$T/$form.pcap" "$form" "$bytes" <<'PY' || fail "$form: capture check"
import struct, sys, zlib
from scapy.all import rdpcap, raw
pk, form, BYTES = rdpcap(sys.argv[1]), sys.argv[2], int(sys.argv[3])
META = (BYTES + 127) // 128 * 128  # the record's offset in its page
PAGE = META + 128
emu, own = form != "fpga", form != "emulator"  # the emulator's traits; a record packet of its own
frame, frames, ops, bad, last_psn = bytearray(), 0, set(), [], None
for p in pk:
    u = raw(p)[42:]
    op, psn = u[0], struct.unpack(">I", u[8:12])[0] & 0xffffff
    va, rkey, dma = struct.unpack(">QII", u[12:28])
    ops.add(op)
    if u[4] != (0xff if emu else 0):
        bad.append(f"BTH resv {u[4]:#x}")
    if psn >= (1 << 20 if emu else 1 << 24):
        bad.append(f"PSN {psn:#x} wider than the form's")
    if last_psn is not None and psn != (last_psn + 1) % (1 << 20 if emu else 1 << 24):
        bad.append(f"PSN {psn:#x} after {last_psn:#x}: one PSN per packet, records of their own too")
    last_psn = psn
    body = u[28:-4]
    if dma != len(body) - (4 if op == 0x2b else 0) - (u[1] >> 4 & 3):
        bad.append(f"DMA length {dma} for {len(body)} bytes of op {op:#x}")
    if op == 0x2b:
        imm = struct.unpack(">I", body[:4])[0]
        body = body[4:len(body) - (u[1] >> 4 & 3)]
        if imm & 0xfff != va // PAGE or imm >> 12 != psn & 0xfffff:
            bad.append(f"immediate {imm:#x} for psn {psn} va {va:#x}")
        data, m = body[:-128], body[-128:]
        if own and (data or va % PAGE != META or dma != 128):
            bad.append(f"frame {frames}: record of its own at {va:#x}, {len(data)} data bytes, DMA {dma}")
        if not own and (va % PAGE != len(frame) or len(frame) + len(data) != META):
            bad.append(f"frame {frames}: appended record at {va:#x} after {len(data)} bytes (data + zeros)")
        frame += data
        crc, = struct.unpack(">I", m[8:12])
        bw, = struct.unpack(">Q", m[24:32])
        fn, = struct.unpack(">I", m[32:36])
        want = 0 if emu else ~zlib.crc32(bytes(frame[:BYTES])) & 0xffffffff
        if crc != want or bw != BYTES or any(frame[BYTES:]):
            bad.append(f"frame {frames}: crc {crc:#x} (want {want:#x}), bytes written {bw}, or padding not zero")
        if fn != (65534 + frames if emu else (65534 + frames) & 0xffff):
            bad.append(f"frame {frames}: frame number {fn}")
        frame, frames = bytearray(), frames + 1
    else:
        if va % PAGE != len(frame):
            bad.append(f"VA {va:#x} after {len(frame)} bytes of frame {frames}")
        frame += body
want_pk = 4 * (72 + own)
if ops != {0x2a, 0x2b} or frames != 4 or len(pk) != want_pk or bad:
    print("BAD", sorted(ops), frames, len(pk), want_pk, bad[:5])
    sys.exit(1)
print(f"  ok {form}: {len(pk)} packets, 4 records {'of their own' if own else 'appended'}, CRCs "
      f"{'0' if emu else 'equal ~zlib.crc32 of the reassembled frames'}")
PY
done

# ---- 1, 2. end to end ------------------------------------------------------------
run_case() {
  local label=$1 form=$2 check_args=$3; shift 3
  hsb_config "$T/case.yaml" "$(form_bytes "$form")" "$(form_psn_bits "$form")" "${FRAME_CRC:-ignore}"
  GI_FRAMES_ARGS=--sender run_memif_case "$label" "$T/case.yaml" "$check_args" --format hsb \
    --hsb-form "$(sim_form "$form")" --payload 1408 --packets-per-frame 72 --frame-bytes "$(form_bytes "$form")" \
    --frame-start $FRAME_START --start-delay-ms 1000 "$@" -- h0
}

check_records() { # LABEL FORM FRAMES: every record as the simulator wrote it
  /usr/bin/python3 - "$T/frames-h0.json" "$T/daemon.json" "$2" "$3" "$(form_bytes "$2")" <<'PY' || fail "$1: sender records"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"frame"')]
summary = json.loads([l for l in open(sys.argv[1]) if l.startswith('{"shm"')][-1])
d = json.loads([l for l in open(sys.argv[2]) if l.startswith("{")][-1])
form, frames, nbytes = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
emu = form != "fpga"
st = d["streams"][0]
bad = []
for r in lines:
    k = r["sensor_frame"]
    sof = (1700000000 + k) * 10**9 + k * 1000
    complete = r["state"] == 2
    want = {"sender_frame": 65500 + k, "sof_ns": sof, "first_ts_ns": sof, "meta_ns": sof + 10**6,
            "bytes_written": nbytes, "crc_ok": (not emu) if complete else None}
    if emu:
        want["crc"] = 0  # the emulator never writes its record's CRC
    got = {key: r[key] for key in want}
    if got != want:
        bad.append((r["frame"], got, want))
print(f"  {'ok ' if not bad else 'BAD'} {len(lines)} sender records equal what the simulator sent")
if bad:
    print("   ", bad[:3])
ok = not bad
if len(lines) != frames:
    print(f"  BAD records seen {len(lines)}, frames {frames}"); ok = False
got = (summary["sender_crc_ok"], summary["sender_crc_mismatch"], summary["header_errors"])
want = (0, frames, 0) if emu else (frames, 0, 0)
print(f"  {'ok ' if got == want else 'BAD'} consumer's sender CRCs ok, mismatched, header errors: {got} "
      f"(expected {want})")
ok = ok and got == want
meta = st["metadata"]
want_meta = 0 if form == "emulator" else frames  # a record packet of its own per frame, or none
print(f"  {'ok ' if meta == want_meta else 'BAD'} metadata packets {meta} (expected {want_meta})")
sys.exit(0 if ok and meta == want_meta else 1)
PY
}

check_variants() { # LABEL: the impaired run injected every variant an HSB stream carries
  python3 - "$T/sim.json" <<'PY' || fail "$1: malformed variants"
import json, sys
r = json.load(open(sys.argv[1]))["streams"][0]["malformed_by_reason"]
want = ("ip", "truncated", "version", "length", "rocev2_icrc", "rocev2_opcode", "rocev2_va", "rocev2_rkey",
        "rocev2_bounds")
assert all(r[k] > 0 for k in want), r
print("  ok every malformed variant of an HSB stream was sent at least once")
PY
}

for form in fpga emulator emulator-own; do
  run_case "clean $form" $form --clean --frames 120 --rate 40000 --seed 3
  check_records "clean $form" $form 120
  run_case "impaired $form" $form "" --frames 120 --rate 40000 --seed 11 \
    --loss 0.01 --dup 0.01 --malformed 0.03
  check_variants "impaired $form"
done
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


# 4. typed tensors: the camera's RAW10 frames as uint16 pixels (100,000 bytes:
#    80,000 pixels, 40 rows of 2,000), lost pixels 0, on impaired FPGA-form
#    traffic; a Python consumer beside gpuingest-frames holds every frame's
#    tensor to NumPy's unpacking of what the simulator sent (host ring, or the
#    device ring through the library's copy with the CUDA executor)
if py_consumer_setup; then
  hsb_config "$T/tensor.yaml" 100000 24
  echo "    tensor: {sample: raw10, shape: [40, 2000], to: u16}" >>"$T/tensor.yaml"
  echo "=== tensor raw10 -> u16 (fpga, impaired)"
  CONSUMER_PIDS=()
  start_sim --format hsb --hsb-form fpga --payload 1408 --packets-per-frame 72 --frame-bytes 100000 \
    --frame-start $FRAME_START --start-delay-ms 1000 --frames 60 --rate 40000 --seed 13 --loss 0.01 --dup 0.01
  start_daemon "$T/tensor.yaml"
  env "${PY_ENV[@]}" "$PY" "$GI_SRC/tests/integration/py_tensor_check.py" --shm "/$TAG-h0" \
    --tensor raw10,u16,big,1,0,zero >"$T/tensor-h0.json" 2>"$T/tensor-h0.log" &
  PIDS+=("$!")
  CONSUMER_PIDS+=("$!")
  consumer_ring "$!" "/$TAG-h0"
  wait_sim
  wait_delivered "$(sim_sent)"
  stop_daemon
  wait_consumers || { cat "$T/tensor-h0.json" "$T/tensor-h0.log" >&2; fail "tensor: the Python consumer found mismatches"; }
  python3 - "$T/tensor-h0.json" <<'PY' || fail "tensor: too few frames checked"
import json, sys
j = json.load(open(sys.argv[1]))
ok = j["tensors_verified"] >= 50 and j["with_lost_packets"] > 0 and j["shape"] == [40, 2000] and j["dtype"] == "u16"
print(f"  {'ok ' if ok else 'BAD'} {j['tensors_verified']} tensors {j['dtype']} {j['shape']} equal NumPy's RAW10 "
      f"unpacking of the sent frames, {j['with_lost_packets']} with lost packets")
sys.exit(0 if ok else 1)
PY
else
  echo "=== tensor: skipped ($PY_WHY)"
fi

echo "PASS"
