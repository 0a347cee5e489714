#!/usr/bin/env bash
# e2e_memif.sh — end to end over memif: the highest simulator rate that the
# daemon receives with zero loss, vs dpdk-testpmd rxonly fed the same way,
# and the host executor's batch-to-done latency at fractions of that rate.
#
#   bench/e2e_memif.sh [BUILD_DIR]   (as root; PAYLOADS="64 1024" SECONDS_PER_TRIAL=2 STEPS=7
#                                     LO=100000 HI=4000000 FRACTIONS="0.1 0.5 0.9" TESTPMD=1)
#
# The simulator is the memif server (it starts first), the receiver the
# client.  A trial at rate R sends for SECONDS_PER_TRIAL and passes when
#   gpuingest: the stream placed every packet sent (no drops of any reason,
#              no loss) and the simulator reached >= 95 % of R;
#   testpmd:   its last periodic stats line (read while the simulator
#              lingers: testpmd's memif stats reset on link down) shows every
#              packet sent received and RX-missed 0, at >= 95 % of R.
# The search is a bisection over [LO, HI] (STEPS trials, geometric).
# Latency: gpuingest_batch_latency_seconds scraped at the end of a longer
# trial at each fraction of gpuingest's max rate; percentiles by linear
# interpolation inside the histogram's buckets.
set -euo pipefail
BUILD=${1:-build}
PAYLOADS=${PAYLOADS:-"64 1024"}
DUR=${SECONDS_PER_TRIAL:-2}
STEPS=${STEPS:-7}
LO=${LO:-100000}
HI=${HI:-4000000}
FRACTIONS=${FRACTIONS:-"0.1 0.5 0.9"}
TESTPMD=${TESTPMD:-1}
SIM=$BUILD/tools/gpuingest-sim
GPUINGESTD=$BUILD/daemon/gpuingestd
[ "$(id -u)" -eq 0 ] || { echo "e2e_memif.sh: run as root (DPDK EAL)"; exit 1; }
T=$(mktemp -d /tmp/gi-e2e.XXXXXX)
TAG=gie$$
SIM_PID="" D_PID=""
trap '[ -n "$SIM_PID" ] && kill -9 $SIM_PID 2>/dev/null; [ -n "$D_PID" ] && kill -9 $D_PID 2>/dev/null; rm -f /dev/shm/$TAG-*; rm -rf "$T"' EXIT

start_sim() {  # RATE PAYLOAD SECONDS LINGER_MS
  rm -f "$T/m.sock"
  "$SIM" --port "memif:$T/m.sock" --eal "--file-prefix $TAG-s --log-level *:error" --lcore 0 --frames 0 \
    --duration "$3" --rate "$1" --packets-per-frame 64 --payload "$2" --start-delay-ms 300 --linger-ms "$4" \
    --wait-link 15 >"$T/sim.json" 2>"$T/sim.log" &
  SIM_PID=$!
  for _ in $(seq 1 100); do [ -S "$T/m.sock" ] && return 0; sleep 0.05; done
  echo "simulator did not listen" >&2; cat "$T/sim.log" >&2; return 1
}

write_config() {  # PAYLOAD
  cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "512", --file-prefix, $TAG-d, --log-level, "*:warning"]
executor: {backend: host, idle: adaptive}
lcores: [{id: 1, idle: busy}]
memory: [{name: pool0, kind: host, mbufs: 16384, hugepages: false}]
ports:
  - name: p0
    device: "net_memif0,role=client,socket=$T/m.sock,socket-abstract=no"
    rx_queues:
      - {lcore: 1, mempool: pool0, ring_slots: 1024, batch: {max_packets: 64, timeout_us: 100}}
stats: {unix: $T/metrics.sock, listen: ""}
streams:
  - name: s0
    port: p0
    match: {udp_dst_port: 5000}
    format: udp_seq
    frame: {packets: 64, payload_bytes: $1}
    ring: {slots: 64, shm: /$TAG-s0}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

# trial_gi RATE PAYLOAD [SECONDS] → "pass|fail achieved_pps"; leaves metrics in $T/metrics.txt
trial_gi() {
  local dur=${3:-$DUR}
  write_config "$2"
  rm -f "$T/metrics.sock"
  start_sim "$1" "$2" "$dur" 300
  "$GPUINGESTD" --config "$T/g.yaml" >"$T/d.json" 2>"$T/d.log" &
  D_PID=$!
  wait "$SIM_PID" || true; SIM_PID=""
  sleep 0.3
  curl -sS --max-time 3 --unix-socket "$T/metrics.sock" http://localhost/metrics >"$T/metrics.txt" || true
  kill -TERM "$D_PID"; wait "$D_PID" || true; D_PID=""
  python3 - "$T/sim.json" "$T/d.json" "$1" "$dur" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
try:
    d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
except Exception:
    print("fail 0"); sys.exit()
rate, dur = float(sys.argv[3]), float(sys.argv[4])
sent = s.get("sent", 0)
st = d["streams"][0] if d.get("streams") else {}
placed = st.get("packets", st.get("placed", 0))
drops = sum(d["dropped"].values())
ok = sent > 0 and placed == sent and drops == 0 and st.get("lost", 0) == 0 and sent >= 0.95 * rate * dur
print(("pass" if ok else "fail"), int(sent / dur))
PY
}

# trial_tp RATE PAYLOAD → "pass|fail achieved_pps"
trial_tp() {
  start_sim "$1" "$2" "$DUR" 2500
  timeout -s INT $((DUR + 8)) dpdk-testpmd -l 0,1 --no-huge --no-pci -m 512 --file-prefix "$TAG-t" --log-level '*:error' \
    --vdev "net_memif0,role=client,socket=$T/m.sock,socket-abstract=no" -- --forward-mode=rxonly \
    --stats-period 1 --no-lsc-interrupt --total-num-mbufs=16384 --nb-cores=1 --rxq=1 --txq=1 --burst=32 \
    >"$T/t.log" 2>&1 &
  local tp=$!
  wait "$SIM_PID" || true; SIM_PID=""
  kill -INT $tp 2>/dev/null; wait $tp || true
  python3 - "$T/sim.json" "$T/t.log" "$1" "$DUR" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
rate, dur = float(sys.argv[3]), float(sys.argv[4])
sent = s.get("sent", 0)
rx = miss = 0
for line in open(sys.argv[2], errors="replace"):
    m = re.search(r"RX-packets:\s+(\d+)\s+RX-missed:\s+(\d+)", line)
    if m:
        rx, miss = max(rx, int(m.group(1))), int(m.group(2))
ok = sent > 0 and rx == sent and miss == 0 and sent >= 0.95 * rate * dur
print(("pass" if ok else "fail"), int(sent / dur), rx)
PY
}

search() {  # FUNC PAYLOAD → highest passing rate (0 if none)
  local lo=$LO hi=$HI best=0 r res
  read -r res _ < <($1 "$lo" "$2" 2>>"$T/errors.log") || true
  [ "$res" = pass ] || { echo 0; return; }
  best=$lo
  for _ in $(seq 1 "$STEPS"); do
    r=$(python3 -c "import math,sys; print(int(math.sqrt(float(sys.argv[1]) * float(sys.argv[2]))))" "$lo" "$hi")
    res=""
    for _try in 1 2; do  # a trial that produced no result (a start-up race) is run once more
      read -r res _ < <($1 "$r" "$2" 2>>"$T/errors.log") || true
      [ -n "$res" ] && break
    done
    echo "  $1 payload $2 rate $r: $res" >&2
    if [ "$res" = pass ]; then lo=$r; best=$r; else hi=$r; fi
  done
  echo "$best"
}

pct() {  # metrics file → "p50 p99 p99.9" in microseconds
  python3 - "$1" <<'PY'
import re, sys
b = []
for line in open(sys.argv[1]):
    m = re.match(r'gpuingest_batch_latency_seconds_bucket\{le="([^"]+)"\}\s+(\S+)', line)
    if m:
        b.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)), float(m.group(2))))
if not b or b[-1][1] == 0:
    print("n/a n/a n/a 0"); sys.exit()
tot = b[-1][1]
def q(p):
    want, prev_le, prev_c = p * tot, 0.0, 0.0
    for le, c in b:
        if c >= want:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (want - prev_c) / max(c - prev_c, 1)
        prev_le, prev_c = le, c
print(" ".join(f"{q(p) * 1e6:.1f}" for p in (0.5, 0.99, 0.999)), int(tot))
PY
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %16s %16s %7s\n" payload gpuingest_pps testpmd_pps ratio
declare -A MAXR
for p in $PAYLOADS; do
  g=$(search trial_gi "$p")
  t=nan
  [ "$TESTPMD" = 1 ] && t=$(search trial_tp "$p")
  MAXR[$p]=$g
  printf "%-8s %16s %16s %7s\n" "$p" "$g" "$t" \
    "$(python3 -c "import sys; a, b = sys.argv[1:]; print(f'{float(a) / float(b):.3f}' if b not in ('nan', '0') else 'n/a')" "$g" "$t")"
done
echo
printf "%-8s %9s %12s %10s %10s %10s %9s %s\n" payload fraction rate_pps p50_us p99_us p99.9_us batches result
for p in $PAYLOADS; do
  for f in $FRACTIONS; do
    r=$(python3 -c "import sys; print(int(float(sys.argv[1]) * float(sys.argv[2])))" "${MAXR[$p]}" "$f")
    [ "$r" -gt 0 ] || continue
    read -r res _ < <(trial_gi "$r" "$p" "${LAT_SECONDS:-5}")
    read -r p50 p99 p999 n < <(pct "$T/metrics.txt")
    printf "%-8s %9s %12s %10s %10s %10s %9s %s\n" "$p" "$f" "$r" "$p50" "$p99" "$p999" "$n" "$res"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
