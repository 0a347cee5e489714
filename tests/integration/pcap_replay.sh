#!/usr/bin/env bash
# pcap_replay.sh — a capture replayed through net_pcap: the simulator writes
# a pcap with impairments, the daemon reads it through DPDK's pcap PMD, and
# the accounting matches what the simulator wrote, packet for packet.
source "$(dirname "$0")/lib.sh"
need_root

"$SIM" --port "pcap:$T/cap.pcap" --streams 2 --dst-port 5000 --frames 40 --geometry 16x700,8x1400 \
  --seed 3 --loss 0.02 --dup 0.02 --reorder 0.03 --reorder-depth 6 --malformed 0.03 >"$T/sim.json" 2>"$T/sim.log"
write_config "$T/pcap.yaml" "net_pcap0,rx_pcap=$T/cap.pcap" s0:5000:16:700 s1:5001:8:1400
start_daemon "$T/pcap.yaml"
start_consumer s0
start_consumer s1
wait_delivered "$(sim_sent)"
stop_daemon
wait_consumers || fail "a frame consumer reported mismatches"
python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
  --frames "s0=$T/frames-s0.json" --frames "s1=$T/frames-s1.json"
echo PASS
