#!/usr/bin/env bash
# socket_activation.sh — the metrics endpoint from systemd socket activation
# (gpuingest.socket), with systemd-socket-activate standing in for systemd:
#  1. the unix socket exists before the daemon runs; the first scrape starts
#     it and is answered through the passed descriptor (the daemon binding
#     its own would fail: the path is in use), and after the daemon exits
#     the socket file is still there, the same inode (we never unlink it);
#  2. a unix and a TCP socket passed to a daemon whose config names neither
#     are both served (sockets are taken by type).
source "$(dirname "$0")/lib.sh"
need_root
SSA=$(command -v systemd-socket-activate || true)
[ -n "$SSA" ] || skip "systemd-socket-activate missing (package systemd)"
command -v curl >/dev/null || skip "curl missing"

"$SIM" --port "pcap:$T/cap.pcap" --streams 1 --frames 20 --packets-per-frame 8 --payload 256 --seed 7 \
  >"$T/sim.json" 2>/dev/null
SENT=$(sim_sent)

# activate CONFIG LISTEN... : systemd-socket-activate execs the daemon (same
# PID) on the first connection; returns once the unix socket exists.
activate() {
  local config=$1; shift
  local args=() a
  for a in "$@"; do args+=(-l "$a"); done
  "$SSA" "${args[@]}" "$GPUINGESTD" --config "$config" >"$T/daemon.json" 2>"$T/daemon.log" &
  DAEMON_PID=$!
  PIDS+=("$DAEMON_PID")
  wait_socket "$T/metrics.sock" "$DAEMON_PID" "$T/daemon.log" "systemd-socket-activate"
}

scrape_unix() { curl -sS --max-time 30 --unix-socket "$T/metrics.sock" http://localhost/metrics; }

echo "=== 1: unix socket passed, config names the same path"
write_config "$T/a.yaml" "net_pcap0,rx_pcap=$T/cap.pcap" s0:5000:8:256
activate "$T/a.yaml" "$T/metrics.sock"
INODE=$(stat -c %i "$T/metrics.sock")
[ "$(readlink /proc/"$DAEMON_PID"/exe)" = "$(readlink -f "$SSA")" ] ||
  fail "the daemon ran before the first connection ($(readlink /proc/"$DAEMON_PID"/exe))"
# this scrape waits in the backlog while the daemon starts
scrape_unix >"$T/first.txt" || { cat "$T/daemon.log" >&2; fail "first scrape through the passed socket failed"; }
grep -q '^gpuingest_up 1$' "$T/first.txt" || fail "first scrape is not the metrics page"
grep -q 'socket activation: serving the unix socket on the socket systemd passed' "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "the daemon did not log that it serves the passed socket"; }
wait_delivered "$SENT"
stop_daemon
[ -S "$T/metrics.sock" ] || fail "the socket file systemd owns was removed"
[ "$(stat -c %i "$T/metrics.sock")" = "$INODE" ] || fail "the socket file was replaced (inode changed)"
echo "  ok served through the passed socket; socket file kept (inode $INODE)"

echo "=== 2: unix and TCP sockets passed, config names neither"
rm -f "$T/metrics.sock"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_config "$T/b.yaml" "net_pcap0,rx_pcap=$T/cap.pcap" s0:5000:8:256
sed -i 's|^  unix: .*|  unix: ""|' "$T/b.yaml"
grep -q '^  unix: ""$' "$T/b.yaml" || fail "could not clear stats.unix in the test config"
activate "$T/b.yaml" "$T/metrics.sock" "127.0.0.1:$PORT"
scrape_unix >"$T/unix.txt" || { cat "$T/daemon.log" >&2; fail "scrape through the passed unix socket failed"; }
curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$T/tcp.txt" ||
  { cat "$T/daemon.log" >&2; fail "scrape through the passed TCP socket failed"; }
grep -q '^gpuingest_up 1$' "$T/unix.txt" || fail "unix page is not the metrics page"
grep -q '^gpuingest_up 1$' "$T/tcp.txt" || fail "TCP page is not the metrics page"
grep -q 'serving the unix socket and the TCP listener on the sockets systemd passed' "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "the daemon did not log that it serves both passed sockets"; }
stop_daemon
[ -S "$T/metrics.sock" ] || fail "the socket file systemd owns was removed"
echo "  ok both passed sockets served"
echo PASS
