#!/usr/bin/env bash
# nic_timestamps.sh — ports[].rx_timestamp: NIC receive times per frame.
#  1. A capture with known per-packet times, replayed through net_pcap (which
#     stamps each packet with its capture time): every frame's first_nic_ns
#     and last_nic_ns, read through the Python module, are exactly the
#     smallest and largest time of the packets placed in it — in order, with
#     its first packet lost, reordered, and with a late duplicate that is not
#     placed (nic_ts_pcap.py says which).  The ring says CLOCK_REALTIME.
#  2. gpuingest_stream_frame_assembly_seconds counts every frame, its sum is
#     the sum of their last - first, and promtool accepts the page.
#  3. rx_timestamp on a driver without the offload (net_null): start-up fails
#     with one error line naming the port and the driver.
# GI_BACKEND=cuda (cuda_emu suite): the same through the emulated GPU executor.
source "$(dirname "$0")/lib.sh"
need_root
py_consumer_setup || skip "$PY_WHY"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import scapy' 2>/dev/null || skip "needs python3-scapy"
HERE=$GI_SRC/tests/integration

# rx_timestamp: true on the config's one port
timestamping() { sed -i 's|^    device: \(.*\)$|    device: \1\n    rx_timestamp: true|' "$1"; }

/usr/bin/python3 "$HERE/nic_ts_pcap.py" "$T/ts.pcap" "$T/expect.json"
write_config "$T/ts.yaml" "net_pcap0,rx_pcap=$T/ts.pcap" s0:5000:4:64
timestamping "$T/ts.yaml"
start_daemon "$T/ts.yaml"
env "${PY_ENV[@]}" "$PY" "$HERE/nic_ts_consumer.py" "/$TAG-s0" "$T/expect.json" "$T/ready" \
  >"$T/frames.json" 2>"$T/consumer.log" &
CONSUMER=$!
PIDS+=("$CONSUMER")
consumer_ring "$CONSUMER" "/$TAG-s0"
wait_delivered "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$T/expect.json")"
grep -q "port p0: NIC receive times: net_pcap's capture times" "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "the log does not say which clock the NIC times are in"; }

# every frame published (frame 1 pushed out of the window as partial): then the histogram holds all ten
for i in $(seq 1 100); do
  frames=$(metrics_unix | awk '/^gpuingest_stream_frames_total\{stream="s0"/ {s += $2} END {printf "%d", s}')
  [ "$frames" -ge 10 ] && break
  sleep 0.1
done
[ "$frames" -eq 10 ] || fail "stream s0 published $frames frames, expected 10"
metrics_unix >"$T/metrics.txt"
python3 - "$T/metrics.txt" "$T/expect.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
expect = json.load(open(sys.argv[2]))["frames"]
def val(name):
    m = re.search(r'^gpuingest_stream_frame_assembly_seconds_%s\{stream="s0"\} (\S+)$' % name, page, re.M)
    assert m, f"no gpuingest_stream_frame_assembly_seconds_{name} for s0:\n{page}"
    return float(m.group(1))
want_sum = sum(last - first for first, last in expect.values()) / 1e9
assert val("count") == len(expect), (val("count"), len(expect))
assert abs(val("sum") - want_sum) <= 1e-9 * max(1.0, want_sum), (val("sum"), want_sum)
for le, bound in (("1e-05", 10e3), ("2.5e-05", 25e3), ("5e-05", 50e3)):  # cumulative buckets, in ns
    n = sum(1 for first, last in expect.values() if last - first <= bound)
    assert re.search(r'^gpuingest_stream_frame_assembly_seconds_bucket\{stream="s0",le="%s"\} %d$' % (le, n), page,
                     re.M), (le, n)
PY
if command -v promtool >/dev/null; then
  promtool check metrics <"$T/metrics.txt" || fail "promtool rejects the metrics page"
fi
stop_daemon
for i in $(seq 1 100); do kill -0 "$CONSUMER" 2>/dev/null || break; sleep 0.1; done
wait "$CONSUMER" || { cat "$T/consumer.log" >&2; fail "frames' NIC times differ from the capture's"; }
echo "  ok: 10 frames' first/last_nic_ns exact, the histogram's count and sum"

# a driver without receive timestamps: one error line naming the port and the driver
write_config "$T/null.yaml" "net_null0" s0:5000:4:64
timestamping "$T/null.yaml"
rc=0
"$GPUINGESTD" --config "$T/null.yaml" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 3 ] || { cat "$T/err" >&2; fail "rx_timestamp on net_null: exit status $rc, expected 3"; }
[ "$(grep 'error:' "$T/err" | grep -vc 'start-up failed')" -eq 1 ] || { cat "$T/err" >&2; fail "not one error line"; }
grep -q "error: port p0: rx_timestamp: driver net_null has no NIC receive timestamps" "$T/err" ||
  { cat "$T/err" >&2; fail "the error does not name the port and the driver"; }
echo "  ok $(grep -m1 'error:' "$T/err" | cut -c1-150)"
echo PASS
