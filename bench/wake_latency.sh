#!/usr/bin/env bash
# wake_latency.sh — publish → consumer wake-up, futex vs spinning, on the
# whole pipeline: gpuingest-sim (memif) → rx lcore → host executor → frame
# ring → bench/wake_latency through libgpuingest.
#
#   bench/wake_latency.sh [BUILD_DIR]   (as root; RATES="1000 10000" FRAMES=3000 PACKETS=8 PAYLOAD=1024)
#
# One stream of PACKETS x PAYLOAD-byte frames at each frame rate in RATES
# (the simulator sends RATE x PACKETS packets per second).  For each rate
# the same traffic runs twice, one consumer each time: `futex` (gic_next
# with a timeout: the consumer sleeps on the ring's futex word, the executor
# wakes it) and `spin` (gic_next with timeout 0 in a loop).  Per frame:
# consumer's CLOCK_MONOTONIC at return − the slot's publish_ns (executor's
# clock when it marked the frame final).  Printed: p50/p90/p99/max in µs and
# the consumer's CPU seconds per wall second.  The daemon runs with
# executor idle: adaptive and the rx lcore adaptive, as the test configs;
# on a 2-core box the simulator, the daemon and a spinning consumer share
# the cores, so read the spin row's latency with that in mind.
set -euo pipefail
BUILD=${1:-build}
RATES=${RATES:-"1000 10000"}
FRAMES=${FRAMES:-3000}
PACKETS=${PACKETS:-8}
PAYLOAD=${PAYLOAD:-1024}
SIM=$BUILD/tools/gpuingest-sim
GPUINGESTD=$BUILD/daemon/gpuingestd
WL=$BUILD/bench/wake_latency
[ "$(id -u)" -eq 0 ] || { echo "wake_latency.sh: run as root (DPDK EAL)"; exit 1; }
for b in "$SIM" "$GPUINGESTD" "$WL"; do [ -x "$b" ] || { echo "wake_latency.sh: build first ($b missing)"; exit 1; }; done
T=$(mktemp -d /tmp/gi-wake.XXXXXX)
TAG=giw$$
SIM_PID="" D_PID=""
trap '[ -n "$SIM_PID" ] && kill -9 $SIM_PID 2>/dev/null; [ -n "$D_PID" ] && kill -9 $D_PID 2>/dev/null; rm -f /dev/shm/$TAG-*; rm -rf "$T"' EXIT

cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "256", --file-prefix, $TAG-d, --log-level, "*:warning"]
log:
  level: warning
executor:
  backend: host
  idle: adaptive
lcores:
  - id: 1
    idle: adaptive
memory:
  - name: pool0
    kind: host
    mbufs: 8192
    hugepages: false
ports:
  - name: p0
    device: "net_memif0,role=client,socket=$T/m.sock,socket-abstract=no"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 256
        batch: {max_packets: 32, timeout_us: 50}
stats:
  unix: $T/metrics.sock
streams:
  - name: w0
    port: p0
    match: {udp_dst_port: 5000}
    format: udp_seq
    frame: {packets: $PACKETS, payload_bytes: $PAYLOAD}
    ring: {slots: 64, shm: /$TAG-w0}
    reorder_window: 2
    frame_timeout_ms: 0
YAML

run() {  # RATE MODE
  local rate=$1 mode=$2 pps=$(( $1 * PACKETS )) secs
  secs=$(( FRAMES / rate + 4 ))
  rm -f "$T/m.sock"
  "$SIM" --port "memif:$T/m.sock" --eal "--file-prefix $TAG-s --log-level *:error" --lcore 0 --frames 0 \
    --duration "$secs" --rate "$pps" --packets-per-frame "$PACKETS" --payload "$PAYLOAD" --dst-port 5000 \
    --start-delay-ms 1000 >"$T/sim.json" 2>"$T/sim.log" &
  SIM_PID=$!
  for _ in $(seq 50); do [ -S "$T/m.sock" ] && break; sleep 0.1; done
  "$GPUINGESTD" --config "$T/g.yaml" >"$T/d.json" 2>"$T/d.log" &
  D_PID=$!
  "$WL" --shm "/$TAG-w0" --mode "$mode" --frames "$FRAMES" --skip "$(( rate / 2 ))" --wait 10 >"$T/wl.json" \
    2>"$T/wl.log" || { cat "$T/wl.log" "$T/d.log" >&2; exit 1; }
  kill -TERM "$D_PID"; wait "$D_PID" || true; D_PID=""
  kill -INT "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
  /usr/bin/python3 - "$rate" "$T/wl.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{int(sys.argv[1]):>8} {r['mode']:>6} {r['frames']:>7} {r['p50_us']:>9.1f} {r['p90_us']:>9.1f} "
      f"{r['p99_us']:>9.1f} {r['max_us']:>9.1f} {r['cpu_per_wall']:>9.3f} {r['waits']:>8} {r['wake']:>4}")
PY
}

echo "frames of $PACKETS x $PAYLOAD B, $FRAMES frames per row; latency = consumer return - publish_ns"
printf "%8s %6s %7s %9s %9s %9s %9s %9s %8s %4s\n" fps mode frames p50_us p90_us p99_us max_us cpu/wall waits wake
for rate in $RATES; do
  run "$rate" futex
  run "$rate" spin
done
