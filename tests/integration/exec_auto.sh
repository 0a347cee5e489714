#!/usr/bin/env bash
# exec_auto.sh — the host executor's default mode, auto, on an rx lcore that
# is saturated: net_pcap with infinite_rx=1 replays one VITA 49 frame of 16
# packets (4-bit count 0..15, so it closes on itself) forever, and never
# finds its queue empty.  Within about a second the lcore's worker is tried
# on its own thread (one window, 0.1 s) and placed where it served more.
# Which one wins depends on the box; the test holds what does not:
#   - the daemon logs the decision (`executor auto: rx lcore 1: ...`) with
#     both rates, and the metrics count the trial;
#   - `gpuingest_executor_inline_workers` says where the worker is;
#   - every packet is accounted for across the hand-overs: delivered ==
#     accounted == placed + ring_full, no loss, duplicate, reorder or resync
#     seen by the stream, no partial frame (ring_full drops whole 32-packet
#     bursts, a multiple of the count's cycle), exit 0 on SIGTERM.
# (The hand-over itself, under ThreadSanitizer too: test_phased.c.)
source "$(dirname "$0")/lib.sh"
need_root

"$SIM" --port "pcap:$T/v.pcap" --format vita49 --streams 1 --packets-per-frame 16 --frames 1 --payload 1024 \
  >"$T/sim.json" 2>"$T/sim.log" || { cat "$T/sim.log" >&2; fail "gpuingest-sim could not write the capture"; }
cat >"$T/auto.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "256", --file-prefix, $TAG-d, --log-level, "*:warning"]
log:
  level: info
executor:
  backend: host
lcores:
  - id: 1
    idle: busy
memory:
  - name: pool0
    kind: host
    mbufs: 8192
    hugepages: false
ports:
  - name: p0
    device: "net_pcap0,rx_pcap=$T/v.pcap,infinite_rx=1"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 64
        batch: {max_packets: 64, timeout_us: 100}
stats:
  unix: $T/metrics.sock
  listen: ""
streams:
  - name: s0
    port: p0
    format: vita49
    match: {udp_dst_port: 5000, stream_id: 0}
    frame: {packets: 16, payload_bytes: 1024}
    ring: {slots: 16, shm: /$TAG-s0}
    reorder_window: 2
YAML
start_daemon "$T/auto.yaml"
grep -q "1 worker (mode auto: inline on the rx lcores" "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "auto: not 1 worker run by its rx lcore"; }
# the first trial starts after the first window and is logged within a second of its end (bounded: 30 s)
for _ in $(seq 1 300); do
  grep -q "executor auto: rx lcore 1: " "$T/daemon.log" && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "the daemon exited"; }
  sleep 0.1
done
line=$(grep -m1 "executor auto: rx lcore 1: " "$T/daemon.log") ||
  { cat "$T/daemon.log" >&2; fail "no trial logged within 30 s on a saturated lcore"; }
echo "  $line"
grep -Eq "trials? decided; the last: saturated serving [0-9.]+ Mpps inline, its worker served [0-9.]+ Mpps on a thread of its own for [0-9]+ ms: (the thread keeps it|back inline)" <<<"$line" ||
  fail "the decision line does not say both rates and the outcome"
page=$(metrics_unix) || fail "no metrics page"
trials=$(sed -n 's/^gpuingest_executor_auto_trials_total \([0-9]*\)$/\1/p' <<<"$page")
inline=$(sed -n 's/^gpuingest_executor_inline_workers \([0-9]*\)$/\1/p' <<<"$page")
[ -n "$trials" ] && [ "$trials" -ge 1 ] || fail "gpuingest_executor_auto_trials_total is '$trials', want >= 1"
[ "$inline" = 0 ] || [ "$inline" = 1 ] || fail "gpuingest_executor_inline_workers is '$inline', want 0 or 1"
echo "  ok  trials $trials, inline workers now $inline"
stop_daemon
python3 - "$T/daemon.json" <<'PY' || fail "accounting across the hand-overs"
import json, sys
j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
s = j['streams'][0]
bad = {k: s[k] for k in ('lost', 'duplicates', 'late', 'reordered', 'resyncs', 'frames_partial', 'frames_timed_out')
       if s[k]}
other = {k: v for k, v in j['dropped'].items() if v and k != 'ring_full'}
if other:
    bad['dropped'] = other
if not j['delivered'] == j['accounted'] == s['packets'] + j['dropped']['ring_full']:
    bad['delivered/accounted/placed+ring_full'] = (j['delivered'], j['accounted'], s['packets'] + j['dropped']['ring_full'])
if s['packets'] == 0 or s['frames_complete'] == 0:
    bad['nothing placed'] = (s['packets'], s['frames_complete'])
print(f"  delivered {j['delivered']}, placed {s['packets']}, ring_full {j['dropped']['ring_full']}, "
      f"frames complete {s['frames_complete']}")
if bad:
    print("FAIL:", bad)
    sys.exit(1)
print("  ok  every packet accounted for, no loss, reorder or partial frame")
PY
echo PASS
