#!/usr/bin/env bash
# consumer_faults.sh — frame consumers misbehave; the daemon must not notice.
#
# Two streams at 20 kpps for ~3 s.  On s0: 16 gpuingest-frames at once.  On
# s1: one well-behaved consumer, one slow consumer (--slow-us 50000: it
# reads 20 frames/s of ~310, for 4 s), one SIGKILLed ~1 s in (in the middle of its
# verify loop), and one started after that kill.
#   - the daemon: delivered == sent, no ring_full, every packet in exactly
#     one counter, every frame complete (check_accounting.py --clean);
#   - the 16 and the well-behaved s1 consumer: every frame complete and
#     byte-exact, no overrun;
#   - the slow one: overruns counted on its side, never a wrong byte;
#   - the late one: byte-exact from the oldest frame the ring held when it
#     joined, to the last; what was published before it joined is none of
#     its overruns: every frame of its span is complete or its overrun, no
#     other.  It keeps up, so few overruns (32 at most: ~100 ms held off),
#     where the slow one has hundreds.  Not none: the oldest frame it starts
#     at sits in the slot the daemon fills next (a frame or two away: 3.2 ms
#     each at s1's 10 kpps), and a consumer the scheduler holds off that
#     long as it joins loses it, rightly counted.
source "$(dirname "$0")/lib.sh"
need_root
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
N_FRAMES=1000

write_config "$T/c.yaml" "$DEV" s0:5000:32:512 s1:5001:32:512
# s0: 1024 frame slots (~3 s at this rate): 16 consumers sharing 2 cores
# with the daemon and the simulator may fall behind for a while without
# overruns.  s1: 256 (~0.8 s), which the slow consumer cannot keep up with.
sed -i '0,/ring: {slots: 64,/s//ring: {slots: 1024,/; s/ring: {slots: 64,/ring: {slots: 256,/' "$T/c.yaml"
if ! grep -q 'slots: 1024, shm: /'"$TAG"'-s0' "$T/c.yaml" || ! grep -q 'slots: 256, shm: /'"$TAG"'-s1' "$T/c.yaml"; then
  fail "could not set the frame ring sizes"
fi

# consumer NAME STREAM ARGS...: gpuingest-frames → $T/frames-NAME.json, pid in $LAST
consumer() {
  local name=$1 stream=$2; shift 2
  "$FRAMES" --shm "/$TAG-$stream" --wait 20 --quiet "$@" >"$T/frames-$name.json" 2>"$T/frames-$name.log" &
  LAST=$!
  PIDS+=("$LAST")
}

echo "=== 16 consumers on s0; good, slow, killed and late consumers on s1"
start_memif_case "$T/c.yaml" --streams 2 --dst-port 5000 --packets-per-frame 32 --payload 512 \
  --frames "$N_FRAMES" --rate 20000 --start-delay-ms 1500 --
WAIT=()
for i in $(seq 1 16); do consumer "s0-$i" s0; WAIT+=("$LAST"); done
consumer s1 s1; WAIT+=("$LAST")
consumer slow s1 --slow-us 50000 --duration 4; WAIT+=("$LAST") # 4 s: it would need ~13 to drain
consumer killed s1; KILLED=$LAST
wait_delivered 20000 # ~1 s into the traffic
kill -0 "$KILLED" 2>/dev/null || fail "the consumer to kill exited early: $(cat "$T/frames-killed.log")"
kill -KILL "$KILLED"
wait "$KILLED" 2>/dev/null || true
echo "  SIGKILLed consumer $KILLED mid-stream"
consumer late s1; WAIT+=("$LAST")

wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
rc=0
for p in "${WAIT[@]}"; do
  for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && fail "frame consumer $p did not exit after the daemon closed its ring"
  wait "$p" || rc=1
done
[ "$rc" -eq 0 ] || { cat "$T"/frames-*.log >&2; fail "a frame consumer reported mismatches"; }

python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
  --frames "s0=$T/frames-s0-1.json" --frames "s1=$T/frames-s1.json" --clean || fail "daemon accounting"
python3 - "$T" "$N_FRAMES" <<'PY' || fail "consumers"
import json, sys
t, n = sys.argv[1], int(sys.argv[2])
bad = 0
def check(what, ok):
    global bad
    print(f"  {'ok ' if ok else 'BAD'} {what}")
    bad += not ok
ld = lambda name: json.load(open(f"{t}/frames-{name}.json"))
for i in range(1, 17):
    f = ld(f"s0-{i}")
    check(f"s0 consumer {i}: {f['frames_complete']} complete, {f['mismatches']} mismatches, {f['overruns']} overruns",
          f["frames_complete"] == n and f["mismatches"] == 0 and f["overruns"] == 0 and f["header_errors"] == 0)
f = ld("slow")
check(f"slow consumer: {f['overruns']} overruns counted, {f['frames_complete']} frames verified, "
      f"{f['mismatches']} mismatches", f["overruns"] > 0 and f["mismatches"] == 0 and f["header_errors"] == 0)
f, whole = ld("late"), ld("s1")
# it starts at the oldest frame the ring held when it opened: the frames
# before that were gone before it came, and are not its overruns (counted
# as such, complete + overruns would exceed its span); the few it may lose
# at its head as it joins are (see the top)
span = f["last_frame"] - f["first_frame"] + 1
check(f"late consumer: frames {f['first_frame']}..{f['last_frame']} of {whole['first_frame']}..{whole['last_frame']}, "
      f"{f['frames_complete']} complete, {f['overruns']} overruns, {f['mismatches']} mismatches",
      whole["first_frame"] < f["first_frame"] and f["last_frame"] == whole["last_frame"]
      and f["frames_complete"] + f["overruns"] == span and f["overruns"] <= 32
      and f["mismatches"] == 0 and f["header_errors"] == 0)
sys.exit(1 if bad else 0)
PY
echo PASS
