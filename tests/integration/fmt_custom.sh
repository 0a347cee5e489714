#!/usr/bin/env bash
# fmt_custom.sh — `format: custom` end to end: simulator → memif → daemon →
# frame consumers, with three streams of two formats on one port at once:
#
#   c0  custom, frames derived from a 16-bit sequence number cut out of a
#       little-endian 64-bit word (mask 0xffff00000000, shift 32), starting
#       just below its wrap; no stream id on the wire (frame header id 0)
#   c1  custom, 32-bit big-endian seq, 16-bit little-endian frame number
#       (wrapping) and packet index, 16-bit id, a 4-byte trailer
#   u2  udp_seq
#
#  1. clean traffic: every frame complete and byte-exact, counters equal
#     what the simulator sent;
#  2. loss, duplication, reordering and malformed packets: the accounting
#     identity holds exactly, per stream and per drop reason, against the
#     simulator's JSON (check_accounting.py).
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
C0="seq=0:8:le:0xffff00000000:32,header=8"
C1="seq=0:4:be,frame=4:2:le,index=6:2:le,id=8:2:be,header=12,offset=16,trailer=4"

# the udp_seq stream from lib.sh, then the two custom ones
write_custom_config() {
  write_config "$1" "$DEV" u2:5002:32:512
  cat >>"$1" <<YAML
  - name: c0
    port: p0
    match: {udp_dst_port: 5000}
    format: custom
    frame: {packets: 32, payload_bytes: 512}
    ring: {slots: 64, shm: /$TAG-c0}
    reorder_window: 4
    frame_timeout_ms: 0
    custom:
      header_bytes: 8
      seq: {offset: 0, width: 8, endian: little, mask: 0xffff00000000, shift: 32}
  - name: c1
    port: p0
    match: {udp_dst_port: 5001}
    format: custom
    frame: {packets: 32, payload_bytes: 512}
    ring: {slots: 64, shm: /$TAG-c1}
    reorder_window: 4
    frame_timeout_ms: 0
    custom:
      header_bytes: 12
      payload_offset: 16
      trailer_bytes: 4
      seq: {offset: 0, width: 4, endian: big}
      frame: {offset: 4, width: 2, endian: little}
      index: {offset: 6, width: 2, endian: little}
      id: {offset: 8, width: 2, endian: big}
YAML
}

run_case() {
  local label=$1 check_args=$2; shift 2
  write_custom_config "$T/$label.yaml"
  run_memif_case "$label" "$T/$label.yaml" "$check_args" --streams 3 --dst-port 5000 \
    --format custom,custom,udp_seq --custom "$C0" --custom "$C1" --packets-per-frame 32 --payload 512 \
    --seq-start 60000 --frame-start 65500 --start-delay-ms 1000 "$@" -- c0 c1 u2
}

# 150 frames x 32 packets: c0's 16-bit seq wraps (60000 + 4800), c1's frame number too (65500 + 150)
run_case clean --clean --frames 150 --rate 40000 --seed 3
run_case impaired "" --frames 150 --rate 40000 --seed 11 \
  --loss 0.01 --dup 0.01 --reorder 0.02 --reorder-depth 8 --malformed 0.03

# the impaired run did inject every variant the custom map can carry
python3 - "$T/sim.json" <<'PY'
import json, sys
sim = json.load(open(sys.argv[1]))
for sid in (0, 1):
    r = sim["streams"][sid]["malformed_by_reason"]
    want = ("ip", "truncated", "length") + (("index",) if sid == 1 else ())
    assert all(r[k] > 0 for k in want), (sid, r)
    assert all(v == 0 for k, v in r.items() if k not in want), (sid, r)
print("  ok custom streams carried only their own malformed variants, each at least once")
PY
echo "PASS"
