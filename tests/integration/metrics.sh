#!/usr/bin/env bash
# metrics.sh — the metrics page of a running daemon through the unix socket
# and the TCP listener: same families on both (ports[].xstats and the
# executor busy ratio included), values equal to the final
# counters, `promtool check metrics` clean, 404 / 405 for the rest, socket
# mode 0660, and a garbage request does not hurt the next scrape.
source "$(dirname "$0")/lib.sh"
need_root
command -v promtool >/dev/null || skip "promtool missing (apt-get install prometheus)"
command -v curl >/dev/null || skip "curl missing"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export GI_LISTEN="127.0.0.1:$PORT"
"$SIM" --port "pcap:$T/cap.pcap" --streams 2 --frames 30 --packets-per-frame 8 --payload 256 --seed 5 \
  --loss 0.02 --malformed 0.05 >"$T/sim.json" 2>/dev/null
write_config "$T/m.yaml" "net_pcap0,rx_pcap=$T/cap.pcap" s0:5000:8:256 s1:5001:8:256
sed -i 's|    rx_queues:|    xstats: [rx_good_packets]\n    rx_queues:|' "$T/m.yaml"
start_daemon "$T/m.yaml"
wait_delivered "$(sim_sent)"
# the executor finishes the last batch: every published batch completed and
# the streams' counters the same on two scrapes 0.1 s apart (bounded: 10 s)
settled() {
  metrics_unix | awk '/^gpuingest_batches_(published|completed)_total|^gpuingest_stream_(packets|frames)_total/'
}
prev="" settled_ok=0
for _ in $(seq 1 100); do
  cur=$(settled) || fail "the metrics page did not answer"
  pub=$(awk '/^gpuingest_batches_published_total/ {s += $2} END {print s + 0}' <<<"$cur")
  done_=$(awk '/^gpuingest_batches_completed_total/ {s += $2} END {print s + 0}' <<<"$cur")
  if [ "$pub" = "$done_" ] && [ "$cur" = "$prev" ]; then settled_ok=1; break; fi
  prev=$cur
  sleep 0.1
done
[ "$settled_ok" = 1 ] || fail "the executor did not finish its batches within 10 s"

[ "$(stat -c %a "$T/metrics.sock")" = 660 ] || fail "unix socket mode is $(stat -c %a "$T/metrics.sock"), want 660"
metrics_unix >"$T/unix.txt"
curl -sS --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$T/tcp.txt"
promtool check metrics <"$T/unix.txt" >"$T/promtool.txt" 2>&1 || { cat "$T/promtool.txt"; fail "promtool rejected the page"; }
[ ! -s "$T/promtool.txt" ] || { cat "$T/promtool.txt"; fail "promtool has remarks"; }

for fam in up build_info port_rx_packets_total queue_rx_packets_total batches_published_total \
  batches_completed_total dropped_packets_total stream_packets_total stream_bytes_total \
  stream_lost_packets_total stream_duplicate_packets_total stream_late_packets_total \
  stream_reordered_packets_total stream_frames_total batch_latency_seconds frame_latency_seconds \
  ring_occupancy config_reloads_total lcore_polls_total executor_busy_seconds_total executor_busy_ratio \
  executor_inline_workers executor_auto_trials_total port_xstats_total; do
  grep -q "^# TYPE gpuingest_$fam " "$T/unix.txt" || fail "family gpuingest_$fam missing"
  grep -q "^# TYPE gpuingest_$fam " "$T/tcp.txt" || fail "family gpuingest_$fam missing on TCP"
done
grep -q '^gpuingest_up 1$' "$T/unix.txt" || fail "gpuingest_up is not 1"
awk '/^gpuingest_executor_busy_ratio / {exit !($2 >= 0 && $2 <= 1)}' "$T/unix.txt" ||
  fail "gpuingest_executor_busy_ratio outside 0..1"
grep -q '^gpuingest_port_xstats_total{port="p0",name="rx_good_packets"} [1-9]' "$T/unix.txt" ||
  fail "ports[].xstats rx_good_packets not exported"
grep -q 'gpuingest_build_info{.*backend="host"' "$T/unix.txt" || fail "build_info lacks backend=host"

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
[ "$(code "http://127.0.0.1:$PORT/nope")" = 404 ] || fail "GET /nope is not 404"
[ "$(code -X POST "http://127.0.0.1:$PORT/metrics")" = 405 ] || fail "POST /metrics is not 405"
[ "$(code --unix-socket "$T/metrics.sock" http://localhost/)" = 404 ] || fail "GET / is not 404"
printf '\x00\xffgarbage\r\n\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=4)
s.sendall(sys.stdin.buffer.read())
try:
    s.recv(100)
except Exception:
    pass
' "$PORT" || true
[ "$(code "http://127.0.0.1:$PORT/metrics")" = 200 ] || fail "scrape after garbage failed"

stop_daemon
# the page's counters equal the final summary (nothing moved after the scrape)
python3 - "$T/unix.txt" "$T/daemon.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
def val(name, labels):
    m = re.search(r'^gpuingest_%s\{%s\} (\S+)$' % (name, re.escape(labels)), page, re.M)
    assert m, f"no sample {name}{{{labels}}}"
    return int(float(m.group(1)))
for s in d["streams"]:
    n = s["name"]
    assert val("stream_packets_total", f'stream="{n}"') == s["packets"], n
    assert val("stream_lost_packets_total", f'stream="{n}"') == s["lost"], n
    assert val("stream_frames_total", f'stream="{n}",state="complete"') == s["frames_complete"], n
for r, v in d["dropped"].items():
    assert val("dropped_packets_total", f'reason="{r}"') == v, r
assert val("queue_rx_packets_total", 'port="p0",queue="0"') == d["delivered"]
print("  ok page values equal the final counters")
PY
echo PASS
