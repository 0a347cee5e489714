#!/usr/bin/env bash
# fmt_rocev2.sh — RoCEv2 end to end: simulator → memif → daemon → frame consumers.
#
# Two rocev2 streams (QPs 256 and 257, both on UDP 4791, told apart by the
# BTH destination QP) and one udp_seq stream share one port at once:
#  1. clean, RDMA WRITE with immediate closing each frame (close_on: imm),
#     PSNs starting just below 2^24 so they wrap: every frame complete and
#     byte-exact, counters equal what the simulator sent;
#  2. loss, duplication, reordering and malformed packets of every variant
#     (ip truncated version length geometry rocev2_icrc rocev2_opcode
#     rocev2_va, and udp_seq's own): the accounting identity holds exactly
#     per stream, each drop reason equals what the simulator injected.
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"

# write_rocev2_config FILE CLOSE_ON OPCODE_LINE: streams r0 (QP 256), r1 (QP 257), u0 (udp_seq 5002)
write_rocev2_config() {
  local file=$1 close_on=$2
  write_config "$file" "$DEV" u0:5002:32:512
  cat >>"$file" <<YAML
  - name: r0
    port: p0
    format: rocev2
    match: {dst_qp: 256}
    rocev2: {base_va: 0x7f0000000000, icrc: verify, close_on: $close_on}
    frame: {packets: 32, payload_bytes: 510}
    ring: {slots: 64, shm: /$TAG-r0}
    reorder_window: 4
    frame_timeout_ms: 0
  - name: r1
    port: p0
    format: rocev2
    match: {udp_dst_port: 4791, dst_qp: 257}
    rocev2: {base_va: 0x7f0000000000, close_on: $close_on}
    frame: {packets: 32, payload_bytes: 510}
    ring: {slots: 64, shm: /$TAG-r1}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

run_case() {
  local label=$1 close_on=$2 check_args=$3; shift 3
  write_rocev2_config "$T/$label.yaml" "$close_on"
  # sim streams 0, 1: rocev2 QP 256, 257; stream 2: udp_seq on 5000 + 2
  run_memif_case "$label" "$T/$label.yaml" "$check_args" --streams 3 --format rocev2,rocev2,udp_seq \
    --geometry 32x510,32x510,32x512 --dst-port 5000 --dst-qp 256 --base-va 0x7f0000000000 --start-delay-ms 1000 \
    "$@" -- r0 r1 u0
}

run_case clean imm --clean --frames 150 --rate 40000 --seed 1 --opcode write-imm --seq-start 16775000
run_case impaired none "" --frames 150 --rate 40000 --seed 7 --opcode write --seq-start 16775000 \
  --loss 0.01 --dup 0.01 --reorder 0.02 --reorder-depth 8 --malformed 0.03
echo "PASS"
