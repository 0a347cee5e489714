#!/usr/bin/env bash
# telemetry.sh — /gpuingest/stats and /gpuingest/streams on DPDK's telemetry
# socket give the numbers of the metrics page: every counter read between
# two scrapes lies between their values, the stream names and order match,
# one stream can be asked for by name, an unknown one answers null, the
# ports[].xstats names the driver has are exported (an unknown one is one
# warning, not fatal), and clients hammering the socket during shutdown do
# not stop the daemon from exiting 0.
source "$(dirname "$0")/lib.sh"
need_root
command -v curl >/dev/null || skip "curl missing"

write_config "$T/t.yaml" "net_null0" s0:5000:8:256 s-1:5001:8:256
sed -i 's|    rx_queues:|    xstats: [rx_good_packets, no_such_xstat]\n    rx_queues:|' "$T/t.yaml"
start_daemon "$T/t.yaml"
TEL=/var/run/dpdk/$TAG-d/dpdk_telemetry.v2
for i in $(seq 1 50); do [ -S "$TEL" ] && break; sleep 0.1; done
[ -S "$TEL" ] || fail "telemetry socket $TEL missing"

grep -q "port p0: xstats no_such_xstat not offered by this driver.*available: .*rx_good_packets" "$T/daemon.log" ||
  { cat "$T/daemon.log"; fail "no warning naming the unknown xstat and the available ones"; }

cat >"$T/tel.py" <<'PY'
import json, socket, sys
def query(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    json.loads(s.recv(1024))  # the greeting: version, pid, max_output_len
    s.send(cmd.encode())
    reply = json.loads(s.recv(1 << 20))
    s.close()
    return reply[cmd.split(",")[0]]
if __name__ == "__main__":
    for cmd in sys.argv[2:]:
        print(json.dumps(query(sys.argv[1], cmd)))
PY

sleep 0.5
metrics_unix >"$T/m1.txt"
python3 "$T/tel.py" "$TEL" /gpuingest/stats /gpuingest/streams /gpuingest/streams,s-1 /gpuingest/streams,nope / \
  >"$T/tel.json"
metrics_unix >"$T/m2.txt"

python3 - "$T/m1.txt" "$T/m2.txt" "$T/tel.json" <<'PY'
import json, re, sys
m1, m2 = open(sys.argv[1]).read(), open(sys.argv[2]).read()
stats, streams, one, nope, cmds = [json.loads(l) for l in open(sys.argv[3])]

def val(page, name, labels=""):
    m = re.search(r'^gpuingest_%s%s (\S+)$' % (name, re.escape("{%s}" % labels) if labels else ""), page, re.M)
    assert m, f"no sample {name}{{{labels}}}"
    return float(m.group(1))

def between(tel, name, labels="", scale=1):
    lo, hi = val(m1, name, labels) * scale, val(m2, name, labels) * scale
    assert lo - 1 <= tel <= hi + 1, f"{name}{{{labels}}}: telemetry {tel} not within [{lo}, {hi}]"

assert "/gpuingest/stats" in cmds and "/gpuingest/streams" in cmds, cmds
assert stats["up"] == 1 and stats["backend"] == "host", stats
assert stats["port_names"] == ["p0"], stats["port_names"]
for f in ("rx_packets", "rx_bytes", "rx_missed", "rx_nombuf", "rx_errors"):
    between(stats["port_" + f][0], f"port_{f}_total", 'port="p0"')
assert stats["port_rx_packets"][0] > 0, "net_null delivered nothing"
assert stats["port_xstat_names"] == ["rx_good_packets"], stats["port_xstat_names"]
between(stats["port_xstat_values"][0], "port_xstats_total", 'port="p0",name="rx_good_packets"')
assert stats["queue_ports"] == ["p0"] and stats["queue_ids"] == [0]
between(stats["queue_rx_packets"][0], "queue_rx_packets_total", 'port="p0",queue="0"')
between(stats["queue_batches_published"][0], "batches_published_total", 'port="p0",queue="0"')
for i, l in enumerate(stats["lcore_ids"]):
    between(stats["lcore_idle_polls"][i], "lcore_polls_total", f'lcore="{l}",result="idle"')
    between(stats["lcore_busy_polls"][i], "lcore_polls_total", f'lcore="{l}",result="busy"')
between(stats["batches_completed"], "batches_completed_total")
between(stats["executor_busy_ns"], "executor_busy_seconds_total", scale=1e9)
assert 0 <= stats["executor_busy_ratio_ppm"] <= 1000000
for k, v in stats.items():
    if k.startswith("dropped_"):
        between(v, "dropped_packets_total", f'reason="{k[8:]}"')
assert len(stats["batch_latency_buckets"]) == len(stats["batch_latency_bounds_ns"]) + 1 == 17
between(stats["batch_latency_count"], "batch_latency_seconds_count")

names = re.findall(r'^gpuingest_stream_packets_total\{stream="([^"]*)"\}', m2, re.M)
assert streams["names"] == names == ["s0", "s-1"], (streams["names"], names)
assert streams["n_streams"] == 2
for i, n in enumerate(names):
    between(streams["packets"][i], "stream_packets_total", f'stream="{n}"')
    between(streams["lost"][i], "stream_lost_packets_total", f'stream="{n}"')
    between(streams["frames_complete"][i], "stream_frames_total", f'stream="{n}",state="complete"')
    between(streams["frame_latency_count"][i], "frame_latency_seconds_count", f'stream="{n}"')
assert one["name"] == "s-1" and len(one["frame_latency_buckets"]) == 17, one
assert nope is None, nope
print("  ok telemetry agrees with the metrics page")
PY

# counters only move forward between two telemetry reads
python3 - "$T/tel.py" "$TEL" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from tel import query
a = query(sys.argv[2], "/gpuingest/stats"); time.sleep(0.3); b = query(sys.argv[2], "/gpuingest/stats")
for k in ("port_rx_packets", "queue_rx_packets", "lcore_idle_polls"):
    assert all(y >= x for x, y in zip(a[k], b[k])), k
assert b["port_rx_packets"][0] > a["port_rx_packets"][0]
assert b["uptime_ms"] > a["uptime_ms"]
print("  ok telemetry counters are monotonic")
PY

if command -v dpdk-telemetry.py >/dev/null; then
  echo /gpuingest/stats | timeout 10 dpdk-telemetry.py -f "$TAG-d" >"$T/usertool.txt" 2>&1 || true
  grep -q '"port_rx_packets"' "$T/usertool.txt" || { cat "$T/usertool.txt"; fail "dpdk-telemetry.py did not show /gpuingest/stats"; }
  echo "  ok dpdk-telemetry.py shows /gpuingest/stats"
fi

# clients asking while the daemon tears down: it must still exit 0
python3 - "$T/tel.py" "$TEL" <<'PY' &
import sys, time
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from tel import query
end = time.time() + 10
while time.time() < end:
    try:
        query(sys.argv[2], "/gpuingest/stats"); query(sys.argv[2], "/gpuingest/streams")
    except Exception:
        time.sleep(0.01)
PY
HAMMER=$!
PIDS+=("$HAMMER")
sleep 0.3
stop_daemon
kill "$HAMMER" 2>/dev/null || true
echo PASS
