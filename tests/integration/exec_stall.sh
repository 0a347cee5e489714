#!/usr/bin/env bash
# exec_stall.sh — the host executor stops serving its rings for 2 s in the
# middle of steady traffic (test hook GI_TEST_PAUSE_EXECUTOR_MS=2000:2000,
# daemon/notify.c), then resumes.  With a fake notify socket
# (notify_listener.py, WATCHDOG_USEC=400000) and the metrics page sampled
# every 100 ms:
#   - during the pause the batch ring fills (occupancy == ring_slots),
#     ring_full drops are counted, mbufs in use rise, and WATCHDOG=1 stops
#     (none from 0.8 s after the pause, or from 0.6 s after the last batch
#     in service then completed, until the resume);
#   - after the resume the ring drains, pings come back, packets are placed
#     again and complete frames grow (on the emulated GPU under ASan only
#     where it keeps up with the traffic);
#   - once traffic stops, mbufs in use return to their idle value (no leak),
#     delivered == sent, every packet in exactly one counter, and the frame
#     consumer never saw a wrong byte;
#   - on the (emulated) GPU, never more than two kernel launches waited on
#     the executor's stream.
source "$(dirname "$0")/lib.sh"
need_root
# timing assertions (ping gaps, exit within 1 s): ThreadSanitizer slows the
# daemon several times over; the plain and ASan builds check them
case ${GI_SANITIZE:-} in *thread*) skip "a ThreadSanitizer build: timing assertions are for the other builds" ;; esac
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID GI_TEST_STALL_EXECUTOR_AFTER_MS
# the stall must fill the ring: no pacing by it (lib.sh, GI_SIM_PACE)
unset GI_SIM_PACE
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"

write_config "$T/s.yaml" "$DEV" s0:5000:32:512
sed -i 's/ring_slots: 256/ring_slots: 16/' "$T/s.yaml"

python3 "$GI_SRC/tests/integration/notify_listener.py" "$T/notify.sock" "$T/notify.log" &
PIDS+=("$!")
for i in $(seq 1 50); do grep -q '^# listening' "$T/notify.log" 2>/dev/null && break; sleep 0.1; done

echo "=== steady traffic, executor paused from +2 s to +4 s"
export NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=400000 GI_TEST_PAUSE_EXECUTOR_MS=2000:2000
# the CUDA emulation's report at exit (the cuda backends here always run on it)
[ "${GI_BACKEND:-host}" = host ] || export GI_CUDA_EMU_REPORT=$T/emu-report.txt
# the traffic starts once the first sample is taken (the mbufs' idle value),
# however long the daemon and the consumer took to start ($T/go)
start_memif_case "$T/s.yaml" --streams 1 --dst-port 5000 --packets-per-frame 32 --payload 512 --frames 0 \
  --duration 6 --rate 40000 --start-file "$T/go" --start-delay-ms 200 -- s0
unset NOTIFY_SOCKET WATCHDOG_USEC GI_TEST_PAUSE_EXECUTOR_MS GI_CUDA_EMU_REPORT

# sample the page every 100 ms until the simulator is done, then 1.5 s more
python3 - "$T/metrics.sock" "$SIM_PID" "$T/go" >"$T/samples.txt" <<'PY'
import os, socket, sys, time
path, sim, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
keys = ['ring_occupancy{port="p0",queue="0"}', 'dropped_packets_total{reason="ring_full"}',
        'mempool_in_use{pool="pool0"}', 'stream_frames_total{stream="s0",state="complete"}',
        'queue_rx_packets_total{port="p0",queue="0"}', 'stream_packets_total{stream="s0"}',
        'batches_completed_total']
def scrape():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    vals = {}
    for line in data.decode().splitlines():
        k, _, v = line.rpartition(" ")
        vals[k[len("gpuingest_"):]] = v
    return [int(float(vals.get(k, "0"))) for k in keys]
end = None
while end is None or time.monotonic() < end:
    t = time.clock_gettime(time.CLOCK_MONOTONIC)
    print(f"{t:.6f}", *scrape(), flush=True)
    if not os.path.exists(go):
        open(go, "w").close()
    if end is None:
        try:
            os.kill(sim, 0)
            if open(f"/proc/{sim}/stat").read().split()[2] == "Z":
                raise ProcessLookupError
        except ProcessLookupError:
            end = time.monotonic() + 1.5
    time.sleep(0.1)
PY
wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
wait_consumers || fail "the frame consumer reported mismatches"
sleep 0.2
python3 - "$T/notify.log" "$T/samples.txt" "$T/daemon.json" "$T/frames-s0.json" "$(sim_sent)" <<'PY' ||
import json, os, sys
be = os.environ.get("GI_BACKEND", "host")
ev = [(float(t), kv) for t, kv in (l.rstrip("\n").split(" ", 1) for l in open(sys.argv[1]) if not l.startswith("#"))]
rows = [list(map(float, l.split())) for l in open(sys.argv[2])]
d = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
fr = json.load(open(sys.argv[4]))
sent = int(sys.argv[5])
bad = []
def check(what, ok, detail=""):
    print(f"  {'ok ' if ok else 'BAD'} {what} {detail}")
    if not ok:
        bad.append(what)
t_pause = next((t for t, kv in ev if kv.startswith(f"STATUS=test hook: executor {be} paused")), None)
t_resume = next((t for t, kv in ev if kv.startswith(f"STATUS=test hook: executor {be} resumed")), None)
check("pause and resume seen on the notify socket", t_pause is not None and t_resume is not None)
if bad:
    sys.exit(1)
pings = [t for t, kv in ev if kv == "WATCHDOG=1"]
during = [t for t in pings if t_pause < t <= t_resume]
after = [t for t in pings if t > t_resume]
check("pings before the pause", any(t < t_pause for t in pings), f"({sum(t < t_pause for t in pings)})")
# pings may follow the pause for a while: the check that covers progress
# made before it, and the batches the executor was serving when the pause
# came (on the GPU the one in service and the one staged beside it, slowly
# under the emulation and ASan on two busy cores).  So silence is required
# from 0.8 s after the pause, or from 0.6 s (a watchdog interval, a sample's
# lag and slack) after batches_completed_total last moved, whichever is later:
# ticks queued behind a slow launched pass, each counted as progress, once
# kept pings going for a second after the last batch
in_pause = [r for r in rows if t_pause < r[0] < t_resume]
settled = next((r[0] for r in in_pause if r[7] == in_pause[-1][7]), t_pause)
quiet_from = max(0.8, settled - t_pause + 0.6)
late = [t - t_pause for t in during if t - t_pause > quiet_from]
room = quiet_from + 0.4 < t_resume - t_pause  # two watchdog intervals of silence to show
if be == "host" or room:
    check("WATCHDOG=1 stopped while paused", not late and room,
          f"(at +{' +'.join(f'{t - t_pause:.2f}' for t in during) or 'none'} s of {t_resume - t_pause:.2f}, "
          f"{len(late)} later than {quiet_from:.2f} s; "
          f"batches done {settled - t_pause:.2f} s into the pause)")
else:
    print(f"  --  WATCHDOG=1 not checked while paused: the emulated executor finished its last batch "
          f"{settled - t_pause:.2f} s into a {t_resume - t_pause:.2f} s pause, too late to show silence")
check("a STATUS= names the stuck executor", any(f"executor {be} is stuck" in kv or f"executor {be} worker" in kv for _, kv in ev))
check("pings come back after the resume", len(after) >= 2, f"({len(after)})")
SLOTS = 16
paused = [r for r in rows if t_pause + 0.3 < r[0] < t_resume]
resumed = [r for r in rows if r[0] > t_resume + 0.5]
check("ring full while paused", paused and max(r[1] for r in paused) == SLOTS,
      f"(max occupancy {max((r[1] for r in paused), default=-1):.0f} of {SLOTS})")
rf0 = max((r[2] for r in rows if r[0] < t_pause), default=0)
rf1 = max((r[2] for r in rows if r[0] < t_resume), default=0)
check("ring_full drops counted while paused", rf1 > rf0, f"({rf0:.0f} -> {rf1:.0f})")
idle = rows[0][3]
check("first sample before traffic", rows[0][5] == 0, f"(rx {rows[0][5]:.0f})")
check("mbufs held while paused", paused and max(r[3] for r in paused) > idle,
      f"(idle {idle:.0f}, max {max((r[3] for r in paused), default=-1):.0f})")
check("ring drains after the resume", resumed and min(r[1] for r in resumed) < SLOTS // 2)
p_resume = min((r[6] for r in rows if r[0] > t_resume), default=0)
check("placed packets grow after the resume", rows[-1][6] > p_resume, f"({p_resume:.0f} -> {rows[-1][6]:.0f})")
# complete frames too, where the executor keeps up with the traffic: the CUDA
# emulation under ASan on two busy cores may not, and then ring_full drops
# take a packet of every frame after the resume as before the pause
c_resume = min((r[4] for r in rows if r[0] > t_resume), default=0)
grew = rows[-1][4] > c_resume
if be == "host" or grew:
    check("complete frames grow after the resume", grew, f"({c_resume:.0f} -> {rows[-1][4]:.0f})")
else:
    print(f"  --  complete frames did not grow after the resume ({c_resume:.0f}): ring_full drops "
          f"{rf1:.0f} -> {d['dropped']['ring_full']}, the emulated executor slower than the traffic")
check("mbufs in use back to idle after traffic", rows[-1][3] == idle, f"({rows[-1][3]:.0f}, idle {idle:.0f})")
check("delivered == sent", d["delivered"] == sent, f"({d['delivered']} vs {sent})")
check("accounted == delivered", d["accounted"] == d["delivered"], f"({d['accounted']})")
check("ring_full in the final count", d["dropped"]["ring_full"] >= rf1, f"({d['dropped']['ring_full']})")
check("consumer: no wrong byte, no header error", fr["mismatches"] == 0 and fr["header_errors"] == 0)
sys.exit(1 if bad else 0)
PY
  fail "executor stall: see above"
grep -q "watchdog: every rx lcore and the executor make progress again" "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "no log line saying the executor recovered"; }
# launch mode behind a pass slower than tick_ns (the emulation's are): one
# pass and one tick in the stream at most, so at most two launches wait
# behind the running one (at the stop, the final flush may be the second)
if [ "${GI_BACKEND:-host}" != host ]; then
  queued=$(awk '$1 == "launches_queued_max" { print $2 }' "$T/emu-report.txt" 2>/dev/null)
  [ -n "$queued" ] || fail "no launches_queued_max in the CUDA emulation's report ($T/emu-report.txt)"
  [ "$queued" -le 2 ] || fail "up to $queued kernel launches waited on the executor's stream (at most 2)"
  echo "  ok  at most $queued launches waited on the stream"
fi
echo PASS
