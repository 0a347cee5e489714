#!/usr/bin/env bash
# exec_copy.sh — host executor frame assembly vs a plain memcpy of the same
# bytes (the ceiling on this machine), side by side in one process.
#
#   bench/exec_copy.sh [BUILD_DIR]    (PAYLOAD=8192 PPF=64 FRAMES=16 PASSES=31 REPEAT=3)
#
# exec_bench alternates the two pass by pass over a udp_seq pcap from
# gpuingest-sim and reports the median GB/s of each (payload bytes placed /
# time inside gi_exec_slot_host, and bytes / time in the memcpy loop).  The
# script runs it REPEAT times and prints each run and the medians.
set -euo pipefail
BUILD=${1:-build}
PAYLOAD=${PAYLOAD:-8192}
PPF=${PPF:-64}
FRAMES=${FRAMES:-16}
PASSES=${PASSES:-31}
REPEAT=${REPEAT:-3}
T=$(mktemp -d /tmp/gi-copy.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$BUILD/tools/gpuingest-sim" --port "pcap:$T/u.pcap" --frames "$FRAMES" --packets-per-frame "$PPF" \
  --payload "$PAYLOAD" >/dev/null
printf "%-5s %12s %14s %7s %9s\n" run exec_GBps memcpy_GBps ratio placed
for r in $(seq 1 "$REPEAT"); do
  "$BUILD/bench/exec_bench" --pcap "$T/u.pcap" --format udp_seq --packets "$PPF" --payload "$PAYLOAD" \
    --passes "$PASSES" --mode both >"$T/r$r.json"
  python3 - "$r" "$T/r$r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]:<5} {j['exec_GBps_median']:>12.2f} {j['memcpy_GBps_median']:>14.2f} {j['ratio']:>7.3f} {j['placed']:>9}")
PY
done
python3 - "$T" "$REPEAT" <<'PY'
import json, statistics, sys
js = [json.load(open(f"{sys.argv[1]}/r{r}.json")) for r in range(1, int(sys.argv[2]) + 1)]
e = statistics.median(j['exec_GBps_median'] for j in js)
m = statistics.median(j['memcpy_GBps_median'] for j in js)
print(f"{'median':<5} {e:>12.2f} {m:>14.2f} {statistics.median(j['ratio'] for j in js):>7.3f}")
PY
echo "payload ${PAYLOAD} B, ${PPF} packets/frame, $((FRAMES * PPF)) packets x ${PASSES} passes; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
