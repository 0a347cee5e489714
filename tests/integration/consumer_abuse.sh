#!/usr/bin/env bash
# consumer_abuse.sh — nothing a consumer can do to a frame ring's shared
# objects can crash, stall or corrupt the daemon (daemon/wake_server.h has
# the threat).  While traffic flows on two streams, a consumer of s0 in the
# service group (another uid, the ring's group: consumer_abuse.py) tries:
#   - the ring: open it read-write, resize it, remove its name: refused;
#   - its wake object: truncate it (which killed the daemon with SIGBUS when
#     it was a named shared-memory object) and grow it: refused by its seals;
#   - a sleeper count of 0xffffffff, and one that never drops (a consumer
#     killed while asleep), which the daemon only takes as a hint;
#   - requests to the wake socket without proof of reading the ring;
# (after a real consumer of s0 was killed while it ran), then root removes
# s0's ring name.  Through all of it the daemon keeps publishing frames of both
# streams, says once in its log what it saw (each kind), counts it
# (gpuingest_consumer_faults_total, gpuingest_wake_refused_total), stops
# cleanly with the accounting exact; the consumer of s1 is woken for its
# frames throughout, and every frame it reads is complete and byte-exact.
source "$(dirname "$0")/lib.sh"
need_root
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
ABUSE=$GI_SRC/tests/integration/consumer_abuse.py
# a consumer in the service group: uid nobody, the rings' group (root here)
AS_CONSUMER=(setpriv --reuid=65534 --regid=0 --clear-groups)
chmod o+rx "$T" # nobody reaches the test's files only through here

write_config "$T/a.yaml" "$DEV" s0:5000:32:512 s1:5001:32:512
sed -i 's/slots: 64/slots: 256/' "$T/a.yaml"
start_memif_case "$T/a.yaml" --streams 2 --dst-port 5000 --packets-per-frame 32 --payload 512 --frames 0 \
  --duration 14 --rate 8000 --seed 3 --start-file "$T/go" -- s1
"$FRAMES" --shm "/$TAG-s0" --wait 20 --quiet >/dev/null 2>&1 &
VICTIM=$!
PIDS+=("$VICTIM")
sleep 0.5
touch "$T/go"
sleep 1.5
kill -9 "$VICTIM" # a consumer of s0 killed while it runs (asleep, most of the time: its count stays)
wait "$VICTIM" 2>/dev/null || true

frames_of() { metrics_unix | awk -v s="$1" '$1 ~ "^gpuingest_stream_frames_total\\{stream=\""s"\",state=\"complete\"" {print $2}'; }
before0=$(frames_of s0)
before1=$(frames_of s1)
echo "=== abuse of s0, as uid 65534 gid 0 (frames so far: s0 $before0, s1 $before1)"
"${AS_CONSUMER[@]}" /usr/bin/python3 "$ABUSE" "/$TAG-s0" ring wake garbage stale refused >"$T/abuse.json" \
  2>"$T/abuse.log" || { cat "$T/abuse.json" "$T/abuse.log" >&2; fail "an abuse that must be refused succeeded"; }
python3 - "$T/abuse.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    for r in j["results"]:
        print(f"  ok {j['step']}: {r['what']}: " + (f"refused ({r.get('errno', '')})" if r.get("refused") else
              f"{r.get('bytes')} bytes" if "bytes" in r else "done"))
PY
echo "=== root removes s0's ring name"
rm -f /dev/shm/"$TAG"-s0
sleep 2.5 # the daemon looks once a second
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "the daemon died"; }
page=$(metrics_unix)
after0=$(frames_of s0)
after1=$(frames_of s1)
echo "  frames published since the abuse began: s0 $((after0 - before0)), s1 $((after1 - before1))"
[ "$((after0 - before0))" -gt 100 ] && [ "$((after1 - before1))" -gt 100 ] ||
  fail "the daemon stopped publishing frames during the abuse"
for kind in waiters_implausible waiters_stale ring_name_gone; do
  v=$(awk -v k="$kind" '$1 ~ "^gpuingest_consumer_faults_total\\{stream=\"s0\",kind=\""k"\"" {print $2}' <<<"$page")
  [ "${v:-0}" -ge 1 ] || { grep consumer_faults <<<"$page" >&2; fail "consumer_faults_total{s0,$kind} is ${v:-absent}"; }
  v1=$(awk -v k="$kind" '$1 ~ "^gpuingest_consumer_faults_total\\{stream=\"s1\",kind=\""k"\"" {print $2}' <<<"$page")
  [ "${v1:-x}" = 0 ] || fail "consumer_faults_total{s1,$kind} is ${v1:-absent}: s1 was not abused"
  echo "  ok gpuingest_consumer_faults_total{stream=\"s0\",kind=\"$kind\"} $v"
done
refused=$(awk '$1 == "gpuingest_wake_refused_total" {print $2}' <<<"$page")
[ "${refused:-0}" -ge 3 ] || fail "gpuingest_wake_refused_total is ${refused:-absent}, expected at least 3"
echo "  ok gpuingest_wake_refused_total $refused"

wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
wait_consumers || fail "the consumer of s1 found mismatches"
for what in "impossible sleeper count" "counts sleepers that are not there" "name was removed or replaced" \
  "wake socket .* refused a request"; do
  n=$(grep -c "$what" "$T/daemon.log" || true)
  [ "$n" -eq 1 ] || { cat "$T/daemon.log" >&2; fail "'$what' logged $n times, expected once"; }
  echo "  ok logged once: $(grep -m1 "$what" "$T/daemon.log" | cut -c1-140)"
done
python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
  --frames "s1=$T/frames-s1.json" --clean || fail "accounting"
python3 - "$T/frames-s1.json" <<'PY' || fail "the consumer of s1"
import json, sys
j = json.load(open(sys.argv[1]))
print(f"  consumer of s1: {j['frames_complete']} complete frames, {j['waits']} sleeps, woken by the daemon: {j['wake']}")
# a consumer nobody woke would sleep to its 200 ms name check: at most 5 sleeps a second
assert j["wake"] and j["waits"] > 100, j
PY
echo "PASS"
