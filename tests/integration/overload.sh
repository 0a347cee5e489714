#!/usr/bin/env bash
# overload.sh — the simulator sends far faster than the executor can place
# (memif at full speed, 64-byte payloads, a batch ring of 8 slots of 4
# packets), then, on a second port of the same daemon, a normal-rate phase.
#
#  1. overload (GI_OVERLOAD_S, default 10 s; GI_LONG=1: 30 s): the daemon
#     stays up; offered >= 2x served (ring_full >= half of what arrived);
#     RSS, sampled every second from /proc/PID/status, stays flat (the
#     largest sample of the last third exceeds that of the first third by
#     at most 4 MiB); a consumer of the overloaded stream sees partial frames
#     but never a wrong byte;
#  2. afterwards, at 20 kpps on port p1 (the first simulator is gone: DPDK's
#     memif client does not reconnect, so the second one waits on its own
#     socket): every frame complete and byte-exact, no new ring_full;
#  3. at the end: delivered == sent over both phases, every packet in exactly
#     one counter (delivered == accounted), mbufs in use back to their idle
#     value.
source "$(dirname "$0")/lib.sh"
need_root

if [ -n "${GI_LONG:-}" ]; then DUR=${GI_OVERLOAD_S:-30}; else DUR=${GI_OVERLOAD_S:-10}; fi
SOCK=$T/memif.sock  # phase 1 (lib.sh's start_sim)
SOCK2=$T/memif2.sock
FRAMES2=200

cat >"$T/o.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "256", --file-prefix, $TAG-d, --log-level, "*:warning"]
log:
  level: info
executor:
  backend: host
  mode: threads   # its own thread, as slow as it is: auto would run it inline, and rx would slow down with it
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
    device: "net_memif0,role=client,socket=$SOCK,socket-abstract=no"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 8
        batch: {max_packets: 4, timeout_us: 50}
  - name: p1
    device: "net_memif1,role=client,socket=$SOCK2,socket-abstract=no"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 256
        batch: {max_packets: 32, timeout_us: 200}
stats:
  unix: $T/metrics.sock
streams:
  - name: s0
    port: p0
    match: {udp_dst_port: 5000}
    format: udp_seq
    frame: {packets: 8, payload_bytes: 64}
    ring: {slots: 64, shm: /$TAG-s0}
    reorder_window: 4
    frame_timeout_ms: 0
  - name: s1
    port: p1
    match: {udp_dst_port: 5001}
    format: udp_seq
    frame: {packets: 32, payload_bytes: 512}
    ring: {slots: 64, shm: /$TAG-s1}
    reorder_window: 4
    frame_timeout_ms: 0
YAML

# sample NAME LABELS: one value from the page (0 when absent)
sample() { metrics_unix | awk -v k="gpuingest_$1$2" '$1 == k {v = $2} END {printf "%d", v}'; }

# The normal-rate simulator first: it waits for the daemon on its own socket
# and sends only once the overload is long over (start delay DUR + 5 s).
rm -f "$SOCK2"
"$SIM" --port "memif:$SOCK2" --eal "--file-prefix $TAG-s2" --streams 1 --dst-port 5001 --packets-per-frame 32 \
  --payload 512 --frames "$FRAMES2" --rate 20000 --start-delay-ms $(((DUR + 5) * 1000)) \
  >"$T/sim2.json" 2>"$T/sim2.log" &
SIM2_PID=$!
PIDS+=("$SIM2_PID")
for i in $(seq 1 100); do [ -S "$SOCK2" ] && break; sleep 0.1; done
[ -S "$SOCK2" ] || { cat "$T/sim2.log" >&2; fail "second simulator socket did not appear"; }

echo "=== overload: ${DUR} s at full memif speed into an 8-slot ring"
start_memif_case "$T/o.yaml" --streams 1 --dst-port 5000 --packets-per-frame 8 --payload 64 --frames 0 \
  --duration "$DUR" --rate 0 --start-delay-ms 1500 -- s0 s1
idle_in_use=$(sample mempool_in_use '{pool="pool0"}')
: >"$T/rss.txt"
for i in $(seq 1 $((DUR + 1))); do
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "daemon died under overload"; }
  awk '/^VmRSS:/ {print $2}' "/proc/$DAEMON_PID/status" >>"$T/rss.txt"
  sleep 1
done
wait_sim
sent1=$(sim_sent)
wait_delivered "$sent1"
for i in $(seq 1 50); do [ "$(sample ring_occupancy '{port="p0",queue="0"}')" -eq 0 ] && break; sleep 0.1; done
kill -0 "$DAEMON_PID" 2>/dev/null || fail "daemon died under overload"
metrics_unix >"$T/after1.txt"
[ "$(sample queue_rx_packets_total '{port="p1",queue="0"}')" -eq 0 ] ||
  fail "the normal-rate phase began before the overload ended (machine too slow for the 3.5 s gap?)"
python3 - "$T/after1.txt" "$T/rss.txt" "$sent1" "$DUR" <<'PY' || fail "overload phase"
import re, sys
page, rss = open(sys.argv[1]).read(), [int(x) for x in open(sys.argv[2]).read().split()]
sent, dur = int(sys.argv[3]), int(sys.argv[4])
def val(k):
    m = re.search(r"^gpuingest_%s (\S+)$" % re.escape(k), page, re.M)
    return int(float(m.group(1))) if m else 0
delivered = val('queue_rx_packets_total{port="p0",queue="0"}')
ring_full = val('dropped_packets_total{reason="ring_full"}')
served = delivered - ring_full
print(f"  offered {sent} packets in {dur} s ({sent / dur / 1e6:.2f} Mpps), delivered {delivered}, ring_full {ring_full}, "
      f"served by the executor {served} ({served / dur / 1e6:.2f} Mpps): offered/served = {delivered / max(served, 1):.1f}x")
assert delivered == sent, f"delivered {delivered} != sent {sent}"
assert ring_full > 0, "no ring_full drop: the executor was not overloaded"
assert delivered >= 2 * served, f"offered only {delivered / max(served, 1):.2f}x what the executor served (want >= 2x)"
third = max(1, len(rss) // 3)
first, last = max(rss[:third]), max(rss[-third:])
print(f"  RSS kB per second: {' '.join(map(str, rss))}")
print(f"  RSS growth (max of last third - max of first third): {last - first} kB (bound 4096)")
assert last - first <= 4096, f"RSS grew by {last - first} kB under overload"
PY

echo "=== normal rate afterwards: ${FRAMES2} frames at 20 kpps on p1"
wait "$SIM2_PID" || { cat "$T/sim2.log" >&2; fail "second simulator failed"; }
sent2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sent"])' "$T/sim2.json")
wait_delivered $((sent1 + sent2))
for i in $(seq 1 50); do [ "$(sample mempool_in_use '{pool="pool0"}')" -le "$idle_in_use" ] && break; sleep 0.1; done
in_use=$(sample mempool_in_use '{pool="pool0"}')
[ "$in_use" -eq "$idle_in_use" ] || fail "mbufs in use $in_use after traffic, $idle_in_use before: leaked?"
echo "  ok mbufs in use back to $idle_in_use"
stop_daemon
wait_consumers || fail "a frame consumer reported mismatches"
python3 - "$T/daemon.json" "$T/after1.txt" "$T/frames-s0.json" "$T/frames-s1.json" "$sent1" "$sent2" "$FRAMES2" <<'PY' ||
import json, re, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
page = open(sys.argv[2]).read()
f0, f1 = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
sent1, sent2, frames2 = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
ring_full1 = int(re.search(r'^gpuingest_dropped_packets_total\{reason="ring_full"\} (\d+)', page, re.M).group(1))
s = {x["name"]: x for x in d["streams"]}
checks = [
    ("delivered == sent (both phases)", d["delivered"], sent1 + sent2),
    ("accounted == delivered", d["accounted"], d["delivered"]),
    ("ring_full: none after the overload", d["dropped"]["ring_full"], ring_full1),
    ("s1 placed == sent", s["s1"]["packets"], sent2),
    ("s1 lost", s["s1"]["lost"], 0),
    ("s1 frames complete", s["s1"]["frames_complete"], frames2),
    ("s1 frames partial + timed out", s["s1"]["frames_partial"] + s["s1"]["frames_timed_out"], 0),
    ("consumer s1 complete", f1["frames_complete"], frames2),
    ("consumer s1 mismatches", f1["mismatches"], 0),
    ("consumer s1 overruns", f1["overruns"], 0),
    ("consumer s1 bytes", f1["bytes_verified"], frames2 * 32 * 512),
    ("consumer s0 mismatches", f0["mismatches"], 0),
    ("consumer s0 header errors", f0["header_errors"], 0),
]
bad = 0
for what, got, want in checks:
    print(f"  {'ok ' if got == want else 'BAD'} {what}: {got} (expected {want})")
    bad += got != want
print(f"  s0 under overload: {s['s0']['frames_complete']} complete, {s['s0']['frames_partial']} partial frames; "
      f"its consumer verified {f0['bytes_verified']} bytes, {f0['overruns']} overruns")
sys.exit(1 if bad else 0)
PY
  fail "accounting after overload"
echo PASS
