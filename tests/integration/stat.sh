#!/usr/bin/env bash
# stat.sh — gpuingest-stat against a running daemon fed by the simulator
# over memif: --once exits 0 after two scrapes and shows the port, queue and
# stream rows with nonzero rates, loss near the simulated loss, latency
# percentiles; --count 2 prints two tables; the TCP listener works too; a
# missing socket is one line on stderr and exit status 2; without a TARGET
# it takes the packaged daemon's socket, else the demo's, and says which.
source "$(dirname "$0")/lib.sh"
need_root
STAT=$GI_BUILD/tools/gpuingest-stat

# a missing socket: one line, exit 2, nothing on stdout
rc=0
"$STAT" --once "$T/absent.sock" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "missing socket: exit status $rc, want 2"
[ "$(wc -l <"$T/err")" -eq 1 ] || { cat "$T/err"; fail "missing socket: want exactly one line on stderr"; }
grep -q "cannot connect to $T/absent.sock: No such file or directory" "$T/err" || { cat "$T/err"; fail "unclear error"; }
[ ! -s "$T/out" ] || fail "missing socket: something on stdout"
echo "  ok missing socket: $(cat "$T/err")"
rc=0; "$STAT" --count 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "--count 0: exit status $rc, want 1 (usage)"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export GI_LISTEN="127.0.0.1:$PORT"
SOCK=$T/memif.sock
write_config "$T/s.yaml" "net_memif0,role=client,socket=$SOCK,socket-abstract=no" s0:5000:32:512 s1:5001:32:512
sed -i 's|    rx_queues:|    xstats: [rx_q0_packets]\n    rx_queues:|' "$T/s.yaml"
start_memif_case "$T/s.yaml" --streams 2 --dst-ports 5000,5001 --packets-per-frame 32 --payload 512 \
  --frames 0 --duration 20 --rate 100000 --loss 0.02
sleep 1

"$STAT" --once "$T/metrics.sock" >"$T/once.txt" 2>"$T/once.err" || { cat "$T/once.err"; fail "--once failed"; }
cat "$T/once.txt"
python3 - "$T/once.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def num(s):
    m = re.fullmatch(r'([\d.]+)([kMGT]?)', s)
    assert m, s
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]
def row(name):
    m = re.search(r'^ *%s +(.*)$' % re.escape(name), t, re.M)
    assert m, f"no row {name}"
    return m.group(1).split()
assert re.search(r'^gpuingest-stat .* backend host +executor busy [\d.]+% ', t, re.M), "header"
p0 = row("p0")
assert 50e3 < num(p0[0]) < 150e3, f"port rx pps {p0[0]}"
assert num(p0[1]) > 0, "port bit/s"
assert num(row("rx_q0_packets")[0].removesuffix("/s")) > 0, "xstat rate"
assert num(row("p0/0")[0]) > 0, "queue rate"
for s in ("s0", "s1"):
    r = row(s)
    assert 25e3 < num(r[0]) < 75e3, f"{s} placed pps {r[0]}"
    assert 0.5 < float(r[2]) < 4, f"{s} loss% {r[2]} (simulated 2%)"
    assert num(r[5]) > 0, f"{s} frames/s"
    assert r[7] != "-" and r[8] != "-", f"{s} frame latency percentiles"
assert re.search(r'^batches [\d.]+k?/s +batch latency p50 \S+ p99 \S+', t, re.M), "batch line"
assert re.search(r'^lcore 1 +polls ', t, re.M), "lcore line"
print("  ok --once shows nonzero port, queue and stream rates")
PY

"$STAT" --count 2 --interval 0.5 "127.0.0.1:$PORT" >"$T/two.txt" || fail "--count 2 over TCP failed"
[ "$(grep -c '^gpuingest-stat ' "$T/two.txt")" -eq 2 ] || fail "--count 2 did not print two tables"
echo "  ok --count 2 over TCP"

# No TARGET: the packaged daemon's socket, else the demo's, whichever exists
# first, named in the header.  The real paths, in a mount namespace of the
# run's own with a tmpfs on /run: links there to this daemon's socket stand
# for the two daemons, and the machine's /run/gpuingest is neither read nor
# touched.
if unshare --mount --propagation private true 2>/dev/null; then
  # defaults NAME...: gpuingest-stat --once with /run/gpuingest/NAME linked to this daemon's socket
  defaults() {
    unshare --mount --propagation private sh -c 'mount -t tmpfs gi-stat-test /run && mkdir /run/gpuingest &&
      sock=$1 && shift && for n in "$@"; do ln -s "$sock" "/run/gpuingest/$n"; done && exec "$0" --once' \
      "$STAT" "$T/metrics.sock" "$@"
  }
  defaults demo-metrics.sock >"$T/demo.txt" 2>"$T/demo.err" || { cat "$T/demo.err"; fail "no TARGET, only the demo's socket"; }
  grep -q '^gpuingest-stat  /run/gpuingest/demo-metrics.sock (the demo.s; no /run/gpuingest/metrics.sock)  up ' \
    "$T/demo.txt" || { cat "$T/demo.txt"; fail "no TARGET, only the demo's socket: header does not name it"; }
  defaults metrics.sock demo-metrics.sock >"$T/both.txt" 2>"$T/both.err" || { cat "$T/both.err"; fail "no TARGET, both"; }
  grep -q '^gpuingest-stat  /run/gpuingest/metrics.sock  up ' "$T/both.txt" ||
    { cat "$T/both.txt"; fail "no TARGET, both sockets: the packaged daemon's is not the one taken"; }
  rc=0; defaults >"$T/none.txt" 2>"$T/none.err" || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/none.err")" -eq 1 ] && [ ! -s "$T/none.txt" ] &&
    grep -q "/run/gpuingest/metrics.sock .* or /run/gpuingest/demo-metrics.sock" "$T/none.err" ||
    { cat "$T/none.err"; fail "no TARGET, no socket: exit $rc, want 2 and one line naming both paths"; }
  echo "  ok no TARGET: the packaged daemon's socket, else the demo's; neither: $(cat "$T/none.err")"
else
  echo "  skip no-TARGET lookup: no mount namespace here (unshare --mount)"
fi
"$STAT" --help | grep -A3 "first of these that exists" | grep -q "metrics.sock .*packaged" ||
  fail "--help does not document the default lookup order"

# the daemon goes away while watching: one line, exit 2
"$STAT" --interval 0.2 "$T/metrics.sock" >/dev/null 2>"$T/gone.err" &
WATCH=$!
PIDS+=("$WATCH")
sleep 0.5
stop_daemon
rc=0; wait "$WATCH" || rc=$?
[ "$rc" -eq 2 ] || fail "daemon gone: exit status $rc, want 2"
[ "$(wc -l <"$T/gone.err")" -eq 1 ] || { cat "$T/gone.err"; fail "daemon gone: want one line"; }
echo "  ok daemon gone: $(cat "$T/gone.err")"
echo PASS
