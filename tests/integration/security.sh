#!/usr/bin/env bash
# security.sh — what the daemon creates, and whom it listens to.
#
#  1. a config writable by group or others is refused, with the mode and
#     the fix in one line (--check-config, start-up and live reload, where
#     the running config stays); 0644 and 0600 are accepted;
#  2. run as an unprivileged user (nobody, via setpriv) under umask 077:
#     the unix stats socket is 0660 and owned by that user and group, the
#     shared-memory frame ring /dev/shm/<name> is 0640 and theirs too, and
#     nothing else is in /dev/shm: the ring's wake object, the one thing
#     consumers write, is a sealed memfd without a name (consumer_abuse.sh);
#  3. as root, with no stats.listen in the config: the TCP listener is on
#     127.0.0.1:9475 and nowhere else (ss -ltnp), the socket 0660 root:root.
source "$(dirname "$0")/lib.sh"
need_root
command -v ss >/dev/null || skip "ss missing (iproute2)"

"$SIM" --port "pcap:$T/cap.pcap" --streams 1 --frames 10 --packets-per-frame 8 --payload 256 \
  >"$T/sim.json" 2>/dev/null || fail "could not write the capture"
write_config "$T/c.yaml" "net_pcap0,rx_pcap=$T/cap.pcap" s0:5000:8:256

# ---- 1. configs writable by others (refused) or by the group (a warning) ------
echo "=== configs writable by others"
for mode in 646 666 602; do
  chmod "$mode" "$T/c.yaml"
  rc=0
  "$GPUINGESTD" --check-config --config "$T/c.yaml" >"$T/check.out" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "mode $mode accepted by --check-config"
  grep -qF "$T/c.yaml: writable by others (mode 0$mode); refusing it: chmod o-w $T/c.yaml" "$T/check.out" ||
    { cat "$T/check.out"; fail "no clear message for mode $mode"; }
done
echo "  ok refused: $(head -1 "$T/check.out")"
chmod 666 "$T/c.yaml"
rc=0
"$GPUINGESTD" --config "$T/c.yaml" >"$T/start.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$T/start.out"; fail "start-up with a world-writable config: exit $rc, want 1"; }
grep -q "writable by others" "$T/start.out" || { cat "$T/start.out"; fail "start-up: no clear message"; }
echo "  ok start-up refused (exit 1)"
for mode in 664 620; do
  chmod "$mode" "$T/c.yaml"
  "$GPUINGESTD" --check-config --config "$T/c.yaml" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out"; fail "group-writable mode $mode refused (only a warning is due)"; }
  grep -q "warning: writable by its group" "$T/check.out" || { cat "$T/check.out"; fail "no warning for mode $mode"; }
done
echo "  ok group-writable accepted with a warning (umask 002 checkouts)"
for mode in 644 600 400; do
  chmod "$mode" "$T/c.yaml"
  "$GPUINGESTD" --check-config --config "$T/c.yaml" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out"; fail "mode $mode refused"; }
done
echo "  ok 0644, 0600 and 0400 accepted"

echo "=== live reload of a config that became world-writable"
chmod 644 "$T/c.yaml"
start_daemon "$T/c.yaml"
chmod 666 "$T/c.yaml"
kill -HUP "$DAEMON_PID"
for i in $(seq 1 50); do
  metrics_has '^gpuingest_config_reloads_total{result="error"} 1$' && break
  sleep 0.1
done
metrics_has '^gpuingest_config_reloads_total{result="error"} 1$' ||
  { cat "$T/daemon.log" >&2; fail "the reload was not refused"; }
grep -q "writable by others" "$T/daemon.log" || { cat "$T/daemon.log" >&2; fail "reload: no clear message"; }
kill -0 "$DAEMON_PID" || fail "the daemon died on the refused reload"
metrics_has '^gpuingest_up 1$' || fail "not serving after the refused reload"
echo "  ok reload refused, still running on the previous config"
stop_daemon
chmod 644 "$T/c.yaml"

# ---- 2. unprivileged user, umask 077 ---------------------------------------------
echo "=== files the daemon creates, as nobody under umask 077"
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  uid=$(id -u nobody)
  gid=$(id -g nobody)
  chmod 755 "$T"
  chmod 644 "$T/cap.pcap"
  mkdir -m 0750 "$T/run"
  chown "$uid:$gid" "$T/run"
  sed "s|unix: $T/metrics.sock|unix: $T/run/metrics.sock|" "$T/c.yaml" >"$T/u.yaml"
  chmod 644 "$T/u.yaml"
  (umask 077 && exec setpriv --reuid="$uid" --regid="$gid" --clear-groups \
    "$GPUINGESTD" --config "$T/u.yaml" >"$T/u.json" 2>"$T/u.log") &
  UPID=$!
  PIDS+=("$UPID")
  for i in $(seq 1 100); do [ -S "$T/run/metrics.sock" ] && break; sleep 0.1; done
  [ -S "$T/run/metrics.sock" ] || { cat "$T/u.log" >&2; fail "unprivileged daemon did not start"; }
  got=$(stat -c '%a %u:%g' "$T/run/metrics.sock")
  [ "$got" = "660 $uid:$gid" ] || fail "unix socket is '$got', want '660 $uid:$gid'"
  echo "  ok unix socket 0660 $uid:$gid"
  got=$(stat -c '%a %u:%g' "/dev/shm/$TAG-s0")
  [ "$got" = "640 $uid:$gid" ] || fail "frame ring /dev/shm/$TAG-s0 is '$got', want '640 $uid:$gid'"
  echo "  ok frame ring /dev/shm/$TAG-s0 0640 $uid:$gid"
  others=$(ls /dev/shm | grep "^$TAG-" | grep -vx "$TAG-s0" || true)
  [ -z "$others" ] || fail "the daemon made more in /dev/shm than its ring: $others"
  echo "  ok nothing else in /dev/shm (the wake object has no name)"
  kill -TERM "$UPID"
  rc=0
  wait "$UPID" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$T/u.log" >&2; fail "unprivileged daemon exited $rc"; }
else
  echo "  (setpriv or user nobody missing: unprivileged part skipped)"
fi

# ---- 3. default TCP listener: loopback only ----------------------------------------
echo "=== default stats.listen"
sed '/^  listen:/d' "$T/c.yaml" >"$T/d.yaml"
chmod 644 "$T/d.yaml"
grep -q 'listen' "$T/d.yaml" && fail "could not drop stats.listen"
if ss -ltnH 'sport = :9475' | grep -q .; then
  echo "  (port 9475 is taken on this machine: default-listener part skipped)"
else
  (umask 077 && exec "$GPUINGESTD" --config "$T/d.yaml" >"$T/daemon.json" 2>"$T/daemon.log") &
  DAEMON_PID=$!
  PIDS+=("$DAEMON_PID")
  for i in $(seq 1 100); do [ -S "$T/metrics.sock" ] && break; sleep 0.1; done
  [ -S "$T/metrics.sock" ] || { cat "$T/daemon.log" >&2; fail "daemon did not start"; }
  # the TCP listener may come a moment after the unix socket (bounded: 5 s);
  # then once more, for any other listener a moment behind the first
  for i in $(seq 1 50); do
    ss -ltnpH | grep -q "pid=$DAEMON_PID," && break
    sleep 0.1
  done
  sleep 0.2
  ss -ltnpH | grep "pid=$DAEMON_PID," >"$T/ss.txt" || true
  cat "$T/ss.txt"
  [ "$(awk '{print $4}' "$T/ss.txt")" = "127.0.0.1:9475" ] ||
    fail "the daemon listens on $(awk '{print $4}' "$T/ss.txt" | tr '\n' ' '), want 127.0.0.1:9475 only"
  echo "  ok TCP listener 127.0.0.1:9475 only"
  got=$(stat -c '%a %u:%g' "$T/metrics.sock")
  [ "$got" = "660 0:0" ] || fail "unix socket is '$got' under umask 077, want '660 0:0'"
  got=$(stat -c '%a' "/dev/shm/$TAG-s0")
  [ "$got" = "640" ] || fail "frame ring mode $got under umask 077, want 640"
  echo "  ok as root under umask 077: socket 0660 0:0, frame ring 0640"
  stop_daemon
fi
echo PASS
