#!/usr/bin/env bash
# reload.sh — live reload (SIGHUP) under steady traffic, simulator → memif → daemon.
#
# The daemon starts with streams s0 (udp 5000) and s1 (5001); the simulator
# sends three streams, so packets to 5002 count as no_stream until:
#  a. a valid change — stream s2 (5002) added, batch.timeout_us,
#     log.level and executor.shutdown_timeout_ms changed: s2 appears in
#     the metrics and fills frames, the changes are logged as applied,
#     no_stream stops growing;
#  b. an invalid file (two errors) — result="error", each error logged with
#     FILE:LINE:COL, nothing changes, counters keep rising;
#  c. a change that needs a restart (mtu) — reported by name, not applied
#     (a second reload of the same file reports it again), result="ok".
# At the end s0 and s1 pass the full accounting identity against the
# simulator (clean: nothing lost across the reloads), every consumer is
# byte-exact, and the only no_stream packets are s2's before (a):
#     no_stream == sim sent(s2) - placed(s2).
source "$(dirname "$0")/lib.sh"
need_root

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"

metric() { # metric NAME_AND_LABELS → value (0 when absent)
  metrics_unix | awk -v k="$1" '$1 == k { v = $2 } END { printf "%d", v }'
}

wait_metric_ge() { # wait_metric_ge NAME_AND_LABELS MIN (bounded 10 s)
  local i v=0
  for i in $(seq 1 100); do
    v=$(metric "$1")
    [ "$v" -ge "$2" ] && return 0
    sleep 0.1
  done
  cat "$T/daemon.log" >&2
  fail "$1 is $v, expected >= $2 within 10 s"
}

need_log() { # need_log LABEL PATTERN (fixed string)
  grep -qF -- "$2" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "$1: no log line with '$2'"; }
  echo "  ok $1"
}

reload_to() { # reload_to FILE: make it the config and send SIGHUP
  cp "$1" "$T/run.yaml"
  kill -HUP "$DAEMON_PID"
}

OK='gpuingest_config_reloads_total{result="ok"}'
ERR='gpuingest_config_reloads_total{result="error"}'
NO_STREAM='gpuingest_dropped_packets_total{reason="no_stream"}'
S0='gpuingest_stream_packets_total{stream="s0"}'
S2='gpuingest_stream_packets_total{stream="s2"}'

write_config "$T/two.yaml" "$DEV" s0:5000:32:512 s1:5001:32:512
write_config "$T/three.yaml" "$DEV" s0:5000:32:512:6 s1:5001:32:512 s2:5002:32:512
sed -i 's/timeout_us: 200}/timeout_us: 500}/; s/^  level: info/  level: debug/; s/^  idle: adaptive$/&\n  shutdown_timeout_ms: 7000/' \
  "$T/three.yaml"
grep -q 'shutdown_timeout_ms: 7000' "$T/three.yaml" || fail "could not set shutdown_timeout_ms"
# two errors: a typo'd key and a value out of range
sed -e 's/^    rx_queues:/    mtuu: 9000\n    rx_queues:/' -e '0,/reorder_window: [0-9]*/s//reorder_window: 0/' \
  "$T/three.yaml" >"$T/invalid.yaml"
sed 's/^    rx_queues:/    mtu: 9000\n    rx_queues:/' "$T/three.yaml" >"$T/mtu.yaml"
cp "$T/two.yaml" "$T/run.yaml"

echo "=== start: 2 streams configured, the simulator sends 3"
start_memif_case "$T/run.yaml" --streams 3 --dst-port 5000 --packets-per-frame 32 --payload 512 \
  --frames 0 --duration 8 --rate 15000 --start-delay-ms 1000 -- s0 s1
start_consumer s2 # waits for s2's frame ring, which the reload creates
wait_delivered 6000
ns_before=$(metric "$NO_STREAM")
[ "$ns_before" -gt 0 ] || fail "packets to udp 5002 should count as no_stream before the reload"
echo "  ok no_stream before the reload: $ns_before"

echo "=== (a) valid change: stream s2 added, s0 reorder_window 4 -> 6, batch.timeout_us 200 -> 500, log.level info -> debug, shutdown_timeout_ms 5000 -> 7000"
reload_to "$T/three.yaml"
wait_metric_ge "$OK" 1
need_log "s2 added" "reload: stream s2 added: port p0 queue 0 udp 5002"
need_log "batch timeout applied" "reload: port p0 queue 0: batch timeout_us 200 -> 500"
need_log "s0's window applied" "reload: stream s0: reorder_window 4 -> 6 (state and frame ring kept)"
need_log "log level applied" "reload: log.level info -> debug"
need_log "drain bound applied" "reload: executor.shutdown_timeout_ms 5000 -> 7000"
need_log "summary" "4 changes applied" # the stream table, the batch, the log level, the drain bound
# what did not change is not listed as a change
if grep -qE -- "-> (32|1000|0),|max_packets 32 -> 32|frame_timeout_ms 0 -> 0" "$T/daemon.log"; then
  grep -E -- "reload: (stream|port)" "$T/daemon.log" >&2
  fail "a reload line lists a field that did not change"
fi
wait_metric_ge "$S2" 200
wait_metric_ge 'gpuingest_stream_frames_total{stream="s2",state="complete"}' 3
ns_after=$(metric "$NO_STREAM")
sleep 0.5
ns_later=$(metric "$NO_STREAM")
[ "$ns_later" -eq "$ns_after" ] || fail "no_stream still grows after s2 was added ($ns_after -> $ns_later)"
echo "  ok s2 receives frames; no_stream stays at $ns_after"

echo "=== (b) invalid config: nothing changes"
s0_before=$(metric "$S0")
reload_to "$T/invalid.yaml"
wait_metric_ge "$ERR" 1
typo_line=$(grep -n 'mtuu' "$T/invalid.yaml" | cut -d: -f1)
range_line=$(grep -n 'reorder_window: 0' "$T/invalid.yaml" | cut -d: -f1)
need_log "typo reported with line:col" "reload: $T/run.yaml:$typo_line:5: ports[0].mtuu: unknown key"
need_log "range error reported with line:col" "reload: $T/run.yaml:$range_line:"
grep -F "reload: $T/run.yaml:$range_line:" "$T/daemon.log" | grep -qF "streams[0].reorder_window" ||
  fail "the reorder_window error should name its key"
need_log "kept" "keeping the running configuration, nothing changed"
[ "$(metric "$OK")" -eq 1 ] || fail "an invalid reload must not count as ok"
sleep 0.5
s0_after=$(metric "$S0")
[ "$s0_after" -gt "$s0_before" ] || fail "s0 stopped receiving after the invalid reload ($s0_before -> $s0_after)"
[ "$(metric "$S2")" -gt 0 ] || fail "s2 vanished after the invalid reload"
echo "  ok counters keep rising (s0 $s0_before -> $s0_after), 3 streams still served"

echo "=== (c) a change that needs a restart: mtu 1500 -> 9000"
reload_to "$T/mtu.yaml"
wait_metric_ge "$OK" 2
need_log "mtu needs a restart" "ports[0].mtu: changed from 1500 to 9000 (needs a restart)"
need_log "ok with warnings" "0 changes applied, 1 needs a restart"
kill -HUP "$DAEMON_PID" # the running mtu is still 1500: reported again
wait_metric_ge "$OK" 3
[ "$(grep -cF 'ports[0].mtu: changed from 1500 to 9000 (needs a restart)' "$T/daemon.log")" -eq 2 ] ||
  fail "the mtu change should be reported by both reloads (it was not applied)"
echo "  ok not applied: reported again by the next reload"

echo "=== end: accounting"
wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
wait_consumers || fail "a frame consumer reported mismatches"
no_stream=$(python3 - "$T/sim.json" "$T/daemon.json" "$T/frames-s2.json" <<'PY'
import json, sys
sim = json.load(open(sys.argv[1]))
d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
f2 = json.load(open(sys.argv[3]))
s2 = {s["name"]: s for s in d["streams"]}["s2"]
sent2 = [s for s in sim["streams"] if s["stream_id"] == 2][0]["sent"]
ns = d["dropped"]["no_stream"]
assert s2["packets"] > 0 and s2["duplicates"] == 0 and s2["late"] == 0, s2
assert s2["lost"] < 32, f"s2 lost {s2['lost']}: only its first frame may miss packets (sent before the reload)"
assert ns == sent2 - s2["packets"], f"no_stream {ns} != s2 sent {sent2} - placed {s2['packets']}"
assert f2["mismatches"] == 0 and f2["overruns"] == 0 and f2["packets_verified"] == s2["packets"], f2
print(f"  ok s2: sent {sent2} = placed {s2['packets']} + no_stream before the reload {ns}; consumer byte-exact",
      file=sys.stderr)
print(ns)
PY
) || fail "s2 accounting"
python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
  --frames "s0=$T/frames-s0.json" --frames "s1=$T/frames-s1.json" --clean --allow-no-stream "$no_stream" ||
  fail "accounting of s0 and s1 across the reloads"
echo "PASS"
