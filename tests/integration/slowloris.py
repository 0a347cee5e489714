#!/usr/bin/python3
"""slowloris.py PORT UNIX_SOCKET DEADLINE_S PER_ADDRESS — clients that trickle
their request headers against the metrics server, for
tests/integration/slowloris.sh.  Loopback only; every loop is bounded in
count and time, every socket has a timeout or is non-blocking, and every
client is closed on the way out, whatever happened.

  - 64 clients from 127.0.0.2 each send "GET /metrics HTTP/1.1\\r\\n", then
    one header byte every 0.5 s, never finishing.  The daemon takes
    PER_ADDRESS of them (its per-address share of the TCP connection limit)
    and closes the rest at once;
  - while those it took are still open, a normal scrape from 127.0.0.1 (the
    way Prometheus comes from another host) gets the whole page within 1 s
    (at most 3 tries, 0.2 s apart, for a loaded CI box), and so does one on
    the unix socket;
  - the daemon closes every client it took no earlier than DEADLINE_S - 0.5
    and no later than DEADLINE_S + 5 s after it connected.

Prints a JSON summary on stdout, what failed on stderr; exit status 0 when
all of it held.
"""
import json
import select
import socket
import sys
import threading
import time

PORT, UNIX, DEADLINE_S, PER_ADDRESS = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
CLIENTS = 64
TRICKLE_S = 0.5
SLACK_S = 5.0
REFUSED_WITHIN_S = 2.0  # closed this soon after connecting: refused at accept, never served
SCRAPE_LIMIT_S = 1.0
SCRAPE_TRIES = 3
REQ = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


class Trickler:
    def __init__(self, sock, t_connect):
        self.sock = sock
        self.t_connect = t_connect
        self.t_closed = None  # when we saw the daemon close it


def scrape(family, address, source=None):
    """(ok, seconds, why): the whole page within SCRAPE_LIMIT_S of starting."""
    t0 = time.monotonic()
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.settimeout(SCRAPE_LIMIT_S)
        if source:
            s.bind((source, 0))
        s.connect(address)
        s.sendall(REQ)
        data = b""
        while len(data) < (1 << 22):
            left = t0 + SCRAPE_LIMIT_S - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError as e:
        return False, round(time.monotonic() - t0, 3), f"{type(e).__name__}: {e}"
    finally:
        s.close()
    took = round(time.monotonic() - t0, 3)
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not sep or not lines[0].startswith(b"HTTP/1.1 200"):
        return False, took, f"no 200 answer: {lines[0][:80]!r} ({len(data)} bytes)"
    length = [int(l.split(b":", 1)[1]) for l in lines[1:] if l.lower().startswith(b"content-length:")]
    if not length or len(body) != length[0]:
        return False, took, f"incomplete page: {len(body)} of {length[0] if length else '?'} bytes"
    if b"\ngpuingest_up 1\n" not in b"\n" + body:
        return False, took, "the page has no gpuingest_up 1"
    if took > SCRAPE_LIMIT_S:
        return False, took, f"took {took} s"
    return True, took, ""


def scrape_with_retries(family, address, source=None):
    tries = []
    for attempt in range(SCRAPE_TRIES):
        if attempt:
            time.sleep(0.2)
        ok, took, why = scrape(family, address, source)
        tries.append({"ok": ok, "s": took, "why": why})
        if ok:
            break
    return tries


def watch(clients, stop, until):
    """Trickle one byte every TRICKLE_S to each open client and note when the
    daemon closes it (EOF, or a reset on send); bounded by `until`."""
    next_byte = time.monotonic() + TRICKLE_S
    while not stop.is_set() and time.monotonic() < until:
        live = [c for c in clients if c.t_closed is None]
        if not live:
            return
        readable, _, _ = select.select([c.sock for c in live], [], [], 0.05)
        now = time.monotonic()
        for c in live:
            if c.sock in readable:
                try:
                    if c.sock.recv(4096) == b"":
                        c.t_closed = now
                except BlockingIOError:
                    pass
                except OSError:
                    c.t_closed = now
        if now >= next_byte:
            next_byte = now + TRICKLE_S
            for c in live:
                if c.t_closed is not None:
                    continue
                try:
                    c.sock.send(b"X")
                except BlockingIOError:
                    pass
                except OSError:
                    c.t_closed = time.monotonic()


def main():
    out = {"clients": CLIENTS, "connect_failed": 0}
    problems = []
    clients = []
    stop = threading.Event()
    watcher = None
    try:
        for _ in range(CLIENTS):
            s = socket.socket()
            try:
                s.settimeout(2)
                s.bind(("127.0.0.2", 0))
                s.connect(("127.0.0.1", PORT))
                t = time.monotonic()
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
                s.setblocking(False)
                clients.append(Trickler(s, t))
            except OSError:
                # refused at accept before the request line went out
                out["connect_failed"] += 1
                s.close()
        first = min(c.t_connect for c in clients) if clients else time.monotonic()
        last = max(c.t_connect for c in clients) if clients else time.monotonic()
        watcher = threading.Thread(target=watch, args=(clients, stop, last + DEADLINE_S + SLACK_S + 1.0),
                                   daemon=True)
        watcher.start()

        # the attack is in place: the refused are gone, the others trickle
        time.sleep(1.0)
        out["trickling_at_scrape"] = sum(c.t_closed is None for c in clients)
        out["scrape_tcp"] = scrape_with_retries(socket.AF_INET, ("127.0.0.1", PORT), "127.0.0.1")
        out["scrape_unix"] = scrape_with_retries(socket.AF_UNIX, UNIX)
        out["scrapes_done_after_s"] = round(time.monotonic() - first, 3)
        out["trickling_after_scrape"] = sum(c.t_closed is None for c in clients)

        watcher.join(timeout=max(0.0, last + DEADLINE_S + SLACK_S + 2.0 - time.monotonic()))
    finally:
        stop.set()
        if watcher is not None:
            watcher.join(timeout=2)
        for c in clients:
            c.sock.close()

    lifetimes = sorted(round(c.t_closed - c.t_connect, 2) for c in clients if c.t_closed is not None)
    refused = [l for l in lifetimes if l < REFUSED_WITHIN_S]
    served = [l for l in lifetimes if l >= REFUSED_WITHIN_S]
    out["refused"] = len(refused) + out["connect_failed"]
    out["taken"] = CLIENTS - out["refused"]
    out["never_closed"] = sum(c.t_closed is None for c in clients)
    out["taken_closed_after_s"] = [served[0], served[-1]] if served else None
    print(json.dumps(out))

    def check(what, ok):
        if not ok:
            problems.append(what)

    check(f"the daemon takes {PER_ADDRESS} clients from one address and refuses the rest at once "
          f"(took {out['taken']}, refused {out['refused']})",
          out["taken"] == PER_ADDRESS and out["refused"] == CLIENTS - PER_ADDRESS)
    check(f"the attack holds while scraping ({out['trickling_at_scrape']} trickling, "
          f"scrapes done {out['scrapes_done_after_s']} s after the first client)",
          out["trickling_at_scrape"] >= PER_ADDRESS and out["trickling_after_scrape"] >= PER_ADDRESS
          and out["scrapes_done_after_s"] < DEADLINE_S)
    check(f"a TCP scrape gets the whole page within {SCRAPE_LIMIT_S} s: {out['scrape_tcp']}",
          out["scrape_tcp"][-1]["ok"])
    check(f"a unix socket scrape gets the whole page within {SCRAPE_LIMIT_S} s: {out['scrape_unix']}",
          out["scrape_unix"][-1]["ok"])
    check(f"every client taken is closed by the daemon {DEADLINE_S - 0.5}..{DEADLINE_S + SLACK_S} s "
          f"after connecting ({out['never_closed']} never closed, lifetimes {served[:1]}..{served[-1:]})",
          out["never_closed"] == 0 and all(DEADLINE_S - 0.5 <= l <= DEADLINE_S + SLACK_S for l in served))
    for p in problems:
        print("BAD " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
