#!/usr/bin/env bash
# http_load.sh — the metrics server under concurrent and hostile load while
# traffic flows (http_load.py: slowloris, a burst of 200 connections against
# the 64-connection limit, 64 KiB headers, binary garbage, then more
# slowloris clients than the limit).  Loopback only, bounded loops.
#   - every legitimate scrape on the unix socket succeeds and every page
#     passes `promtool check metrics`; TCP scrapes succeed (with at most a
#     few 50 ms retries while the burst holds every connection slot);
#   - every scrape of the burst is served in the end (a refusal while all
#     slots are held is retried), and never with a wrong answer;
#   - oversized headers and garbage get 4xx or a closed connection, never a
#     hang; with the TCP listener full of slowloris clients the unix socket
#     (its own listener) still serves, and TCP serves again once they leave;
#   - the data path never notices: no ring_full, delivered == sent, every
#     packet in exactly one counter, frames complete and byte-exact.
source "$(dirname "$0")/lib.sh"
need_root
command -v promtool >/dev/null || skip "promtool missing (apt-get install prometheus)"
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export GI_LISTEN="127.0.0.1:$PORT"

# 1024 frame slots (~1.6 s at 625 frames/s): the consumer shares two cores
# with the daemon, the simulator and ~100 hostile clients, and a ring of 64
# (~0.1 s) can lap it while the scheduler holds it off; an overrun still fails
GI_FRAME_SLOTS=1024 write_config "$T/h.yaml" "$DEV" s0:5000:32:512
echo "=== hostile HTTP clients while 20 kpps flow"
start_memif_case "$T/h.yaml" --streams 1 --dst-port 5000 --packets-per-frame 32 --payload 512 --frames 0 \
  --duration 16 --rate 20000 --start-delay-ms 1000 -- s0
wait_delivered 5000
mkdir -p "$T/pages"
timeout 60 python3 "$GI_SRC/tests/integration/http_load.py" "$PORT" "$T/metrics.sock" "$T/pages" >"$T/load.json" ||
  fail "http_load.py failed or ran over 60 s"
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "daemon died under HTTP load"; }
# the simulator writes its JSON when it ends: still empty, so traffic outlasted the load
[ ! -s "$T/sim.json" ] || fail "the traffic ended before the HTTP load did (slow machine?)"
n_bad=0
for p in "$T"/pages/page-*.txt; do
  if ! promtool check metrics <"$p" >"$T/promtool.txt" 2>&1 || [ -s "$T/promtool.txt" ]; then
    n_bad=$((n_bad + 1))
    cat "$T/promtool.txt" >&2
  fi
done
python3 - "$T/load.json" "$n_bad" <<'PY' || fail "metrics server under load"
import json, sys
s, n_bad = json.load(open(sys.argv[1])), int(sys.argv[2])
print("  " + json.dumps(s))
bad = 0
def check(what, ok):
    global bad
    print(f"  {'ok ' if ok else 'BAD'} {what}")
    bad += not ok
check(f"{s['pages']} pages scraped, {n_bad} rejected by promtool", s["pages"] >= 20 and n_bad == 0)
check(f"unix scrapes: {s['scrape_unix_ok']} ok, {s['scrape_unix_fail']} failed",
      s["scrape_unix_ok"] >= 10 and s["scrape_unix_fail"] == 0)
check(f"TCP scrapes: {s['scrape_tcp_ok']} ok ({s['scrape_tcp_retries']} retries), {s['scrape_tcp_fail']} failed, "
      f"{s['scrape_tcp_bad']} wrong answers",
      s["scrape_tcp_ok"] >= 10 and s["scrape_tcp_fail"] == 0 and s["scrape_tcp_bad"] == 0)
check(f"burst of 200: {s['burst_ok']} served ({s['burst_retries']} refusals retried), "
      f"{s['burst_refused']} never served, {s['burst_bad']} wrong answers",
      s["burst_ok"] == 200 and s["burst_refused"] == 0 and s["burst_bad"] == 0)
check(f"64 KiB headers: {s['oversized']}", set(s["oversized"]) <= {"431", "400", "414", "closed", "none"})
check(f"garbage: {s['garbage_answers']}", set(s["garbage_answers"]) <= {"400", "closed", "none"})
check(f"TCP full of {s['slowloris_connected']} slowloris: unix {s['b_unix_ok']} ok / {s['b_unix_fail']} failed",
      s["b_unix_ok"] == 10 and s["b_unix_fail"] == 0)
check("TCP serves again once the slowloris clients leave", s["b_tcp_ok_after"] == 1)
sys.exit(1 if bad else 0)
PY
wait_sim
wait_delivered "$(sim_sent)"
stop_daemon
wait_consumers || fail "the frame consumer reported mismatches"
python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --frames "s0=$T/frames-s0.json" \
  --clean || fail "the data path noticed the HTTP load"
echo PASS
