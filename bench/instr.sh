#!/usr/bin/env bash
# instr.sh — instructions per packet, counted by valgrind's callgrind (exact
# and repeatable, unlike timings on a shared VM):
#   executor: bench/exec_bench on a gpuingest-sim pcap of each format,
#             collected inside gi_exec_slot_phased() (the default
#             pipeline) and, for reference, gi_exec_slot_host() (serial);
#             the payload copy (the libc memcpy/memmove it calls) is
#             counted apart, so Ir/pkt excl. copy is the executor's own work;
#   rx lcore: gpuingestd on net_null under callgrind, collected inside
#             gi_rx_lcore_main() only (rte_eth_rx_burst of net_null, batch
#             building, reaping and freeing mbufs: the whole rx lcore).
#
#   bench/instr.sh [BUILD_DIR]    (as root for the rx part; FORMATS, PAYLOAD=1024, PPF=64, FRAMES=64,
#                                  PIPELINES="phased serial", RX=1)
#
# Prints one table row per format, then the rx lcore's row.
set -euo pipefail
BUILD=${1:-build}
FORMATS=${FORMATS-"udp_seq rocev2 vita49 custom"}
PAYLOAD=${PAYLOAD:-1024}
PPF=${PPF:-64}
FRAMES=${FRAMES:-64}
RX=${RX:-1}
PIPELINES=${PIPELINES:-"phased serial"}
SIM=$BUILD/tools/gpuingest-sim
EXEC=$BUILD/bench/exec_bench
GPUINGESTD=$BUILD/daemon/gpuingestd
CUSTOM_SPEC="seq=0:4:be,frame=4:4:be,index=8:2:be,header=16" # = GI_BENCH_CUSTOM_SPEC in exec_bench.c
command -v valgrind >/dev/null || { echo "instr.sh: valgrind missing"; exit 1; }
[ -x "$EXEC" ] || { echo "instr.sh: build first ($EXEC missing)"; exit 1; }

T=$(mktemp -d /tmp/gi-instr.XXXXXX)
trap 'rm -rf "$T"' EXIT

# Ir inside the toggled function, from a callgrind output file
ir_of() { awk '/^summary:/ {print $2}' "$1"; }
# of which in libc's memcpy/memmove (the payload copy; self cost, they call nothing): the
# function table only (--auto=no), where a source annotation would add each call line again
copy_ir_of() {
  callgrind_annotate --auto=no --threshold=100 "$1" 2>/dev/null |
    awk '/mem(cpy|move)/ { gsub(",", "", $1); s += $1 } END { print s + 0 }'
}

printf "%-10s %-7s %9s %10s %12s %10s %10s %13s\n" format pipe packets placed Ir_in_exec Ir/packet copy/pkt Ir/pkt_excl_copy
for f in $FORMATS; do
  extra=()
  [ "$f" = custom ] && extra=(--custom "$CUSTOM_SPEC")
  "$SIM" --port "pcap:$T/$f.pcap" --format "$f" "${extra[@]}" --frames "$FRAMES" --packets-per-frame "$PPF" \
    --payload "$PAYLOAD" >"$T/$f.sim.json" 2>"$T/$f.sim.log"
  for p in $PIPELINES; do
    fn=gi_exec_slot_phased
    [ "$p" = serial ] && fn=gi_exec_slot_host
    valgrind --tool=callgrind --callgrind-out-file="$T/$f.$p.cg" --toggle-collect=$fn \
      "$EXEC" --pcap "$T/$f.pcap" --format "$f" --packets "$PPF" --payload "$PAYLOAD" --pipeline "$p" \
      >"$T/$f.$p.json" 2>"$T/$f.$p.vg"
    python3 - "$f" "$p" "$T/$f.$p.json" "$(ir_of "$T/$f.$p.cg")" "$(copy_ir_of "$T/$f.$p.cg")" <<'PY'
import json, sys
f, p, j, ir, cp = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), int(sys.argv[4]), int(sys.argv[5])
n = j['fed']
print(f"{f:<10} {p:<7} {n:>9} {j['placed']:>10} {ir:>12} {ir / n:>10.1f} {cp / n:>10.1f} {(ir - cp) / n:>13.1f}")
PY
  done
done

if [ "$RX" = 1 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "instr.sh: the rx part needs root (DPDK EAL); RX=0 skips it"; exit 1; }
  for size in ${RX_SIZES:-64 1500}; do
    cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "512", --file-prefix, gii$$]
executor: {backend: host, idle: adaptive}
lcores: [{id: 1, idle: busy}]
memory: [{name: pool0, kind: host, mbufs: 16384, hugepages: false}]
ports:
  - name: null0
    device: "net_null0,size=$size,copy=0"
    rx_queues:
      - {lcore: 1, mempool: pool0, ring_slots: 1024, batch: {max_packets: 64, timeout_us: 100}}
stats: {unix: "", listen: ""}
YAML
    timeout 120 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$T/rx.cg" --toggle-collect=gi_rx_lcore_main \
      "$GPUINGESTD" --config "$T/g.yaml" --duration "${RX_SECONDS:-10}" >"$T/rx.json" 2>"$T/rx.vg" || {
        tail -20 "$T/rx.vg"; exit 1; }
    python3 - "$T/rx.json" "$(ir_of "$T/rx.cg")" "$size" <<'PY'
import json, sys
j, ir, size = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
def find(o, k):
    if isinstance(o, dict):
        for a, b in o.items():
            if a == k: return b
            r = find(b, k)
            if r is not None: return r
    if isinstance(o, list):
        for b in o:
            r = find(b, k)
            if r is not None: return r
rx = find(j, "rx_packets")
rf = find(j, "ring_full")
print(f"rx lcore (net_null {size} B): rx_packets {rx}, ring_full {rf}, Ir in gi_rx_lcore_main {ir}, Ir/packet {ir / max(rx, 1):.1f}")
PY
  done
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), valgrind $(valgrind --version), $(date -u +%F)"
