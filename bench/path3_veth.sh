#!/usr/bin/env bash
# path3_veth.sh — the traditional copy path (Path 3: kernel UDP socket,
# recvmmsg into host memory, memcpy into a frame; bench/udp_recv.c) vs
# gpuingestd on net_af_packet, both receiving the same simulator traffic
# over a veth pair between two network namespaces this script creates and
# deletes.  Reports CPU seconds (user + system of the receiving process,
# /proc/PID/stat or getrusage) per million packets received.
#
#   bench/path3_veth.sh [BUILD_DIR]   (as root; PAYLOADS="64 1024" RATE=100000 SECONDS_PER_RUN=5 REPEAT=3)
#
# Addresses 10.0.0.1 (sender) and 10.0.0.2 (receiver) exist only inside the
# two namespaces.  gpuingestd runs with the `adaptive` idle policy on its rx
# lcore and executor so that its CPU time follows the load (busy polling
# would burn a whole core at any rate); both runs alternate REPEAT times.
set -euo pipefail
BUILD=${1:-build}
PAYLOADS=${PAYLOADS:-"64 1024"}
RATE=${RATE:-100000}
DUR=${SECONDS_PER_RUN:-5}
REPEAT=${REPEAT:-3}
SIM=$BUILD/tools/gpuingest-sim
GPUINGESTD=$BUILD/daemon/gpuingestd
RECV=$BUILD/bench/udp_recv
[ "$(id -u)" -eq 0 ] || { echo "path3_veth.sh: run as root (namespaces, DPDK EAL)"; exit 1; }
NTX=gib-tx$$ NRX=gib-rx$$ TAG=gip$$
T=$(mktemp -d /tmp/gi-path3.XXXXXX)
cleanup() {
  ip netns pids "$NRX" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$NTX" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$NTX" 2>/dev/null || true
  ip netns del "$NRX" 2>/dev/null || true
  rm -f /dev/shm/$TAG-*; rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP_LOG:-}" ] && trap 'cp -r "$T" /tmp/gi-path3-kept; cleanup' EXIT
ip netns add "$NTX"; ip netns add "$NRX"
ip link add vtx$$ netns "$NTX" type veth peer name vrx netns "$NRX"
ip -n "$NTX" link set vtx$$ name vtx
ip -n "$NTX" addr add 10.0.0.1/24 dev vtx; ip -n "$NTX" link set vtx up; ip -n "$NTX" link set lo up
ip -n "$NRX" addr add 10.0.0.2/24 dev vrx; ip -n "$NRX" link set vrx up; ip -n "$NRX" link set lo up
RX_MAC=$(ip -n "$NRX" -br link show vrx | awk '{print $3}')
ip -n "$NTX" neigh add 10.0.0.2 lladdr "$RX_MAC" dev vtx nud permanent

send() {  # PAYLOAD: the same traffic for both receivers
  ip netns exec "$NTX" "$SIM" --port udp:10.0.0.2:5000 --frames 0 --duration "$DUR" --rate "$RATE" \
    --packets-per-frame 64 --payload "$1" >"$T/sim.json" 2>"$T/sim.log"
}

cpu_of() {  # PID → utime + stime seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

run_path3() {
  ip netns exec "$NRX" "$RECV" --bind 10.0.0.2:5000 --packets 64 --payload "$1" --idle-ms 1000 \
    --max-s $((DUR + 10)) >"$T/r.json" 2>"$T/r.log" &
  local pid=$!
  sleep 0.3
  send "$1"
  wait $pid
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['placed'], j['utime_s'] + j['stime_s'])" "$T/r.json"
}

run_daemon() {
  cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "512", --file-prefix, $TAG-d, --log-level, "*:warning"]
executor: {backend: host, idle: adaptive}
lcores: [{id: 1, idle: adaptive}]
memory: [{name: pool0, kind: host, mbufs: 16384, hugepages: false, buf_size: 2304}]
ports:
  - name: p0
    device: "net_af_packet0,iface=vrx,qpairs=1,framecnt=4096"
    rx_queues:
      - {lcore: 1, mempool: pool0, ring_slots: 1024, batch: {max_packets: 64, timeout_us: 200}}
stats: {unix: $T/metrics.sock, listen: ""}
streams:
  - {name: s0, port: p0, match: {udp_dst_port: 5000}, format: udp_seq, frame: {packets: 64, payload_bytes: $1}, ring: {slots: 64, shm: /$TAG-s0}, reorder_window: 4, frame_timeout_ms: 0}
YAML
  rm -f "$T/metrics.sock"
  ip netns exec "$NRX" "$GPUINGESTD" --config "$T/g.yaml" >"$T/d.json" 2>"$T/d.log" &
  local pid=$!
  for _ in $(seq 1 200); do [ -S "$T/metrics.sock" ] && break; sleep 0.05; done
  local c0; c0=$(cpu_of $pid)
  send "$1"
  sleep 1
  local c1; c1=$(cpu_of $pid)
  kill -TERM $pid; wait $pid || true
  python3 -c "
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(d['streams'][0]['packets'], float(sys.argv[3]) - float(sys.argv[2]))" "$T/d.json" "$c0" "$c1"
}

median() { python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %10s %14s %16s %16s %18s %7s\n" payload sent path3_placed path3_cpu_s/Mpkt gpuingest_placed gpuingest_cpu_s/Mpkt ratio
for p in $PAYLOADS; do
  a=() b=() pa=() pb=()
  for _ in $(seq 1 "$REPEAT"); do
    read -r n c < <(run_path3 "$p"); pa+=("$n"); a+=("$(python3 -c "import sys; print(float(sys.argv[2]) / max(float(sys.argv[1]), 1) * 1e6)" "$n" "$c")")
    read -r n c < <(run_daemon "$p"); pb+=("$n"); b+=("$(python3 -c "import sys; print(float(sys.argv[2]) / max(float(sys.argv[1]), 1) * 1e6)" "$n" "$c")")
  done
  sent=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sent'])" "$T/sim.json")
  ma=$(median "${a[@]}"); mb=$(median "${b[@]}")
  printf "%-8s %10s %14s %16s %16s %18s %7s\n" "$p" "$sent" "$(median "${pa[@]}")" "$ma" "$(median "${pb[@]}")" "$mb" \
    "$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.3f}')" "$ma" "$mb")"
  echo "  runs cpu_s/Mpkt path3: ${a[*]}  gpuingest: ${b[*]}"
done
echo "rate $RATE pps for $DUR s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
