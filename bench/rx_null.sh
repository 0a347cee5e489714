#!/usr/bin/env bash
# rx_null.sh — our rx path vs dpdk-testpmd --forward-mode=rxonly on the same
# net_null vdev, one rx lcore, side by side in one invocation.
#
#   bench/rx_null.sh [BUILD_DIR]      (as root; SIZES="64 512 1500" SECONDS_PER_RUN=5 REPEAT=3)
#
# Rates are measured over a steady-state window for both: the first second
# after start-up is discarded.  The two programs run alternately REPEAT
# times and the medians are compared, because a shared or virtual machine
# drifts by tens of percent from one second to the next.  gpuingest's figure counts packets
# the rx lcore received and handed to the batch ring (ring_full drops, if
# any, are reported separately: a slower executor shows up there, not as a
# lower rx rate).  Prints one table row per packet size.
set -euo pipefail
BUILD=${1:-build}
SIZES=${SIZES:-64}
DUR=${SECONDS_PER_RUN:-5}
REPEAT=${REPEAT:-3}
GPUINGESTD=$BUILD/daemon/gpuingestd
[ "$(id -u)" -eq 0 ] || { echo "rx_null.sh: run as root (DPDK EAL)"; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "rx_null.sh: dpdk-testpmd missing (apt-get install dpdk-dev)"; exit 1; }
[ -x "$GPUINGESTD" ] || { echo "rx_null.sh: build first ($GPUINGESTD missing)"; exit 1; }

T=$(mktemp -d /tmp/gi-bench.XXXXXX)
trap 'pkill -f "file-prefix gib$$" 2>/dev/null || true; rm -rf "$T"' EXIT

scrape() {  # total rx packets over all queues
  curl -sS --max-time 2 --unix-socket "$T/m.sock" http://localhost/metrics |
    awk -v k="$1" '$1 ~ "^"k {s += $2} END {printf "%d", s}'
}

run_gpuingest() {
  local size=$1
  cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "1024", --file-prefix, gib$$-g]
executor: {backend: host, idle: busy, cpu: 0}
lcores: [{id: 1, idle: busy}]
memory: [{name: pool0, kind: host, mbufs: 16384, hugepages: true}]
ports:
  - name: null0
    device: "net_null0,size=$size,copy=0"
    rx_queues:
      - {lcore: 1, mempool: pool0, ring_slots: 1024, batch: {max_packets: 64, timeout_us: 100}}
stats: {unix: $T/m.sock, listen: ""}
YAML
  "$GPUINGESTD" --config "$T/g.yaml" --duration $((DUR + 3)) >"$T/g.json" 2>"$T/g.log" &
  local pid=$!
  for _ in $(seq 1 100); do [ -S "$T/m.sock" ] && break; sleep 0.1; done
  sleep 1
  local t0 p0 f0 t1 p1 f1
  t0=$(date +%s.%N); p0=$(scrape gpuingest_queue_rx_packets_total); f0=$(scrape 'gpuingest_dropped_packets_total{reason="ring_full"}')
  sleep "$DUR"
  t1=$(date +%s.%N); p1=$(scrape gpuingest_queue_rx_packets_total); f1=$(scrape 'gpuingest_dropped_packets_total{reason="ring_full"}')
  kill -INT $pid; wait $pid || true
  python3 -c "import sys; t0,p0,f0,t1,p1,f1=map(float,sys.argv[1:]); print(f'{(p1-p0)/(t1-t0)/1e6:.2f} {100*(f1-f0)/max(p1-p0,1):.2f}')" \
    "$t0" "$p0" "$f0" "$t1" "$p1" "$f1"
}

run_testpmd() {
  local size=$1
  timeout -s INT $((DUR + 3)) dpdk-testpmd -l 0,1 --no-huge --no-pci -m 1024 --file-prefix "gib$$-t" \
    --vdev "net_null0,size=$size,copy=0" -- --forward-mode=rxonly --stats-period 1 --no-lsc-interrupt \
    --total-num-mbufs=16384 --nb-cores=1 --rxq=1 --txq=1 --burst=32 >"$T/t.log" 2>&1 || true
  # Rx-pps lines, one per second: skip the first two (start-up), average the rest
  awk '/Rx-pps:/ {n++; if (n > 2) {s += $2; k++}} END {if (k) printf "%.2f", s / k / 1e6; else print "nan"}' "$T/t.log"
}

median() { python3 -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.2f}")' "$@"; }

printf "%-6s %14s %16s %8s %11s   %s\n" size testpmd_Mpps gpuingest_Mpps ratio ring_full% "runs (testpmd / gpuingest)"
for size in $SIZES; do
  tps=() gis=() rfs=()
  for _ in $(seq 1 "$REPEAT"); do
    tps+=("$(run_testpmd "$size")")
    read -r gi rf < <(run_gpuingest "$size")
    gis+=("$gi"); rfs+=("$rf")
  done
  tp=$(median "${tps[@]}"); gi=$(median "${gis[@]}"); rf=$(median "${rfs[@]}")
  ratio=$(python3 -c "import sys; a,b=sys.argv[1:]; print(f'{float(b)/float(a):.3f}' if float(a) > 0 else 'nan')" "$tp" "$gi")
  printf "%-6s %14s %16s %8s %11s   %s / %s\n" "$size" "$tp" "$gi" "$ratio" "$rf" "${tps[*]}" "${gis[*]}"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
