#!/usr/bin/env bash
# exec_modes.sh — the host executor's modes on the same traffic: two ports
# (two rings, two ring groups), each replaying half of one impaired capture
# through net_pcap, run with
#   1. mode threads, threads: 2   two workers, each the only writer of its
#                                 group's streams
#   2. mode inline                the rx lcore runs the worker itself (pipeline
#                                 auto: the serial steps there)
#   3. mode inline, pipeline phased  the rx lcore runs the batch's trip
#   4. mode auto                  inline here (the capture ends before a trial;
#                                 trials: exec_auto.sh), each lcore's worker with
#                                 a thread of its own waiting
#   5. pipeline serial            the one-packet-at-a-time reference path
# Each run: exit 0 on SIGTERM, the accounting identity exact against the
# simulator, consumers byte-exact; and all five end with the same stream
# counters and drop counts (the phased executor decides as the serial one).
# (Mode inline refusing a ring group split across lcores: test_phased.c.)
source "$(dirname "$0")/lib.sh"
need_root

"$SIM" --port "pcap:$T/cap.pcap" --streams 2 --dst-port 5000 --frames 60 --geometry 16x700,8x1400 \
  --seed 5 --loss 0.02 --dup 0.02 --reorder 0.03 --reorder-depth 6 >"$T/sim.json" 2>"$T/sim.log"
# stream i's packets (UDP dst port 5000 + i) into capture i: each port carries one stream
python3 - "$T/cap.pcap" "$T/cap0.pcap" "$T/cap1.pcap" <<'PY'
import struct, sys
src = open(sys.argv[1], "rb").read()
outs = [open(p, "wb") for p in sys.argv[2:]]
for o in outs:
    o.write(src[:24])
off = 24
while off < len(src):
    incl = struct.unpack_from("<I", src, off + 8)[0]
    rec = src[off:off + 16 + incl]
    pkt = rec[16:]
    port = struct.unpack_from(">H", pkt, 14 + 20 + 2)[0] if len(pkt) >= 38 else 5000
    outs[port - 5000].write(rec)
    off += 16 + incl
PY

# write_modes_config FILE EXECUTOR_LINES
write_modes_config() {
  local file=$1 exec_lines=$2 p
  cat >"$file" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "256", --file-prefix, $TAG-d, --log-level, "*:warning"]
executor:
  backend: host
  idle: adaptive
$exec_lines
lcores:
  - id: 1
    idle: adaptive
memory:
  - name: pool0
    kind: host
    mbufs: 8192
    hugepages: false
ports:
YAML
  for p in 0 1; do
    cat >>"$file" <<YAML
  - name: p$p
    device: "net_pcap$p,rx_pcap=$T/cap$p.pcap"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 256
        batch: {max_packets: 32, timeout_us: 200}
YAML
  done
  cat >>"$file" <<YAML
stats:
  unix: $T/metrics.sock
  listen: ""
streams:
  - name: s0
    port: p0
    match: {udp_dst_port: 5000}
    frame: {packets: 16, payload_bytes: 700}
    ring: {slots: 64, shm: /$TAG-s0}
    reorder_window: 4
    # no timeout: a frame's close is then the window's or the flush's in every mode;
    # with one, a mode the scheduler holds off for 1 s (TSan with the emulation's
    # stress switch) closes it timed_out where another closes it partial
    frame_timeout_ms: 0
  - name: s1
    port: p1
    match: {udp_dst_port: 5001}
    frame: {packets: 8, payload_bytes: 1400}
    ring: {slots: 64, shm: /$TAG-s1}
    reorder_window: 4
    frame_timeout_ms: 0
YAML
}

run_mode() {
  local label=$1 lines=$2
  echo "=== $label"
  write_modes_config "$T/$label.yaml" "$lines"
  CONSUMER_PIDS=()
  start_daemon "$T/$label.yaml"
  start_consumer s0
  start_consumer s1
  wait_delivered "$(sim_sent)"
  grep -q "executor: host, 2 rings in 2 groups" "$T/daemon.log" ||
    { cat "$T/daemon.log" >&2; fail "$label: the two ports are not two ring groups"; }
  stop_daemon
  wait_consumers || fail "$label: a frame consumer reported mismatches"
  python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
    --frames "s0=$T/frames-s0.json" --frames "s1=$T/frames-s1.json" || fail "$label: accounting"
  cp "$T/daemon.json" "$T/$label.json"
}

run_mode threads "  mode: threads
  threads: 2"
grep -q "2 workers" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "threads: not 2 workers"; }
grep -q "executor: pipeline phased" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "threads: pipeline auto is not phased"; }
run_mode inline "  mode: inline"
grep -q "1 worker (inline on the rx lcores)" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "inline: not 1 worker"; }
grep -q "executor: pipeline serial" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "inline: pipeline auto is not serial"; }
run_mode inline_phased "  mode: inline
  pipeline: phased"
grep -q "executor: pipeline phased" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "inline_phased: not phased"; }
run_mode auto "  mode: auto"
grep -q "1 worker (mode auto: inline on the rx lcores" "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "auto: not 1 worker per rx lcore"; }
run_mode serial "  pipeline: serial"

python3 - "$T/threads.json" "$T/inline.json" "$T/inline_phased.json" "$T/auto.json" "$T/serial.json" <<'PY' || fail "the modes disagree"
import json, sys
def load(p):
    return json.loads(open(p).read().strip().splitlines()[-1])
runs = [load(p) for p in sys.argv[1:]]
keep = lambda d: ({s["name"]: {k: v for k, v in s.items()} for s in d["streams"]}, d["dropped"], d["delivered"])
ref = keep(runs[-1])
for name, d in zip(("threads", "inline", "inline_phased", "auto"), runs[:4]):
    if keep(d) != ref:
        print(f"FAIL: {name} differs from serial:\n  {keep(d)}\n  {ref}")
        sys.exit(1)
print("  ok: threads, inline (serial and phased), auto and serial end with the same stream counters and drops")
PY

echo PASS
