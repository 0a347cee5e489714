#!/usr/bin/env bash
# slowloris.sh — clients that trickle their request cannot keep the metrics
# endpoint from a real scraper (daemon/http.c: a 5 s deadline for complete
# request headers, and on TCP at most 3/4 of the 64 connections from one
# address).  Loopback only, every loop bounded.
#   - 64 clients from 127.0.0.2 each send a request line, then one header
#     byte every 0.5 s, never finishing;
#   - meanwhile a normal scrape from 127.0.0.1 (another host, as Prometheus
#     would be) gets the whole page within 1 s (up to 3 tries, for a loaded
#     CI box), and the unix socket serves too;
#   - the daemon closes every trickling connection it accepted by the
#     deadline plus slack (10 s), says so in one log line, and still serves.
source "$(dirname "$0")/lib.sh"
need_root
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export GI_LISTEN="127.0.0.1:$PORT"
write_config "$T/s.yaml" "$DEV" s0:5000:8:256
start_sim --streams 1 --dst-port 5000 --packets-per-frame 8 --payload 256 --frames 0 --duration 30 --rate 2000 \
  --start-delay-ms 500
start_daemon "$T/s.yaml"

timeout 60 python3 - "$PORT" "$T/metrics.sock" <<'PY' >"$T/slow.json" || { cat "$T/slow.json" >&2; fail "slowloris check"; }
import json, socket, sys, threading, time
port, unix = int(sys.argv[1]), sys.argv[2]
REQ = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
out = {"trickling_accepted": 0, "trickling_refused": 0, "scrape_tcp_s": None, "scrape_tcp_tries": 0,
       "scrape_unix_ok": False, "closed_by_daemon": 0, "still_open": 0}

def page(s, deadline):
    data = b""
    while time.monotonic() < deadline:
        b = s.recv(65536)
        if not b:
            break
        data += b
    return data

# 64 trickling clients from another loopback address
clients = []
for _ in range(64):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\n")
        clients.append(s)
    except OSError:
        s.close()
time.sleep(0.3)
alive = []
for s in clients:  # a refused one (over the per-address limit) is closed at once by the server
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            out["trickling_refused"] += 1
            s.close()
            continue
    except BlockingIOError:
        pass
    except OSError:
        out["trickling_refused"] += 1
        s.close()
        continue
    alive.append(s)
out["trickling_accepted"] = len(alive)
stop = threading.Event()
closed = set()
def trickle():
    while not stop.is_set():
        for s in alive:
            if s in closed:
                continue
            try:
                s.send(b"X")
            except OSError:
                closed.add(s)
        stop.wait(0.5)
t = threading.Thread(target=trickle)
t.start()
time.sleep(1.0)

# a normal scrape from 127.0.0.1: the whole page within 1 s
for attempt in range(3):
    out["scrape_tcp_tries"] += 1
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.settimeout(1)
        s.sendall(REQ)
        data = page(s, t0 + 1)
        s.close()
        if data.startswith(b"HTTP/1.1 200") and b"gpuingest_up" in data and time.monotonic() - t0 <= 1.0:
            out["scrape_tcp_s"] = round(time.monotonic() - t0, 3)
            break
    except OSError:
        pass
    time.sleep(0.2)
u = socket.socket(socket.AF_UNIX)
u.settimeout(1)
u.connect(unix)
u.sendall(REQ)
out["scrape_unix_ok"] = page(u, time.monotonic() + 1).startswith(b"HTTP/1.1 200")
u.close()

# the daemon closes the trickling connections: by the 5 s deadline plus slack
deadline = time.monotonic() + 10
while time.monotonic() < deadline and len(closed) < len(alive):
    for s in alive:
        if s in closed:
            continue
        try:
            if s.recv(4096) == b"":
                closed.add(s)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(s)
    time.sleep(0.1)
stop.set()
t.join()
out["closed_by_daemon"] = len(closed)
out["still_open"] = len(alive) - len(closed)
for s in alive:
    s.close()
print(json.dumps(out))
ok = (out["trickling_accepted"] > 0 and out["scrape_tcp_s"] is not None and out["scrape_unix_ok"]
      and out["still_open"] == 0)
sys.exit(0 if ok else 1)
PY
cat "$T/slow.json"
grep -q "http: closed [0-9]* connection.* that sent no complete request within 5 s" "$T/daemon.log" ||
  { cat "$T/daemon.log" >&2; fail "no log line about the closed slow connections"; }
metrics_has '^gpuingest_up 1' || fail "the unix socket does not serve after the attack"
stop_daemon
kill -INT "$SIM_PID" 2>/dev/null || true
wait "$SIM_PID" 2>/dev/null || true
echo "PASS"
