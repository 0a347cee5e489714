#!/usr/bin/env bash
# frame_bytes.sh — frames of any byte length (frame.bytes), end to end in
# every format at once: simulator → memif → daemon → frame consumers.
#
# Four streams of 32 packets of 512 payload bytes whose frames are 16,084
# bytes long, so each frame's last packet carries 212: udp_seq, custom,
# vita49 and rocev2 (WRITE FIRST/MIDDLE/LAST, the RETH's DMA length the
# frame's rest).  Config: u0 with frame.bytes and frame.packets both, the
# others with frame.bytes alone (packets derived).
#  1. clean traffic: every frame complete and byte-exact, bytes verified ==
#     frames x frame bytes, counters equal what the simulator sent;
#  2. loss, duplication, reordering and malformed packets: the accounting
#     identity holds exactly (bytes == placed x payload - the short last
#     packets' shortfall), per stream and per drop reason.
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
BYTES=16084
CUSTOM="seq=0:4:be,header=8"

fb_config() {
  write_config "$1" "$DEV"
  cat >>"$1" <<YAML
  - name: u0
    port: p0
    match: {udp_dst_port: 5000}
    frame: {packets: 32, payload_bytes: 512, bytes: $BYTES}
    ring: {slots: 64, shm: /$TAG-u0}
    reorder_window: 4
    frame_timeout_ms: 0
  - name: c0
    port: p0
    match: {udp_dst_port: 5001}
    format: custom
    frame: {payload_bytes: 512, bytes: $BYTES}
    ring: {slots: 64, shm: /$TAG-c0}
    reorder_window: 4
    frame_timeout_ms: 0
    custom:
      header_bytes: 8
      seq: {offset: 0, width: 4, endian: big}
  - name: v0
    port: p0
    format: vita49
    match: {udp_dst_port: 5002, stream_id: 2}
    frame: {payload_bytes: 512, bytes: $BYTES}
    ring: {slots: 64, shm: /$TAG-v0}
    reorder_window: 4
    frame_timeout_ms: 0
  - name: r0
    port: p0
    format: rocev2
    match: {dst_qp: 259}
    rocev2: {base_va: 0x7f0000000000}
    frame: {payload_bytes: 512, bytes: $BYTES}
    ring: {slots: 64, shm: /$TAG-r0}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

run_case() {
  local label=$1 check_args=$2; shift 2
  fb_config "$T/$label.yaml"
  # sim stream i: udp port 5000 + i, VRT stream id i, QP 256 + i
  run_memif_case "$label" "$T/$label.yaml" "$check_args" --streams 4 --format udp_seq,custom,vita49,rocev2 \
    --custom "$CUSTOM" --dst-port 5000 --dst-qp 256 --base-va 0x7f0000000000 --opcode write \
    --packets-per-frame 32 --payload 512 --frame-bytes $BYTES --start-delay-ms 1000 "$@" -- u0 c0 v0 r0
}

run_case clean --clean --frames 100 --rate 40000 --seed 5
run_case impaired "" --frames 100 --rate 40000 --seed 9 \
  --loss 0.01 --dup 0.01 --reorder 0.02 --reorder-depth 8 --malformed 0.03

# the daemon said what it derived for each stream: 32 packets, the last one 212 bytes
for s in u0 c0 v0 r0; do
  grep -q "stream $s: .*16084-byte frames of 32 x 512-byte packets (the last 212)" "$T/daemon.log" ||
    fail "stream $s: the start-up line does not show the derived geometry"
done
echo "PASS"
