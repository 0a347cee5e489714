#!/usr/bin/env python3
"""http_load.py PORT UNIX_SOCKET OUTDIR — hostile and busy clients against
the metrics server, for tests/integration/http_load.sh.  Loopback only, every
loop bounded, every socket with a timeout.

Phase A (~5 s), all at once:
  - 32 slowloris clients on TCP: a request line, then one header byte per
    second, never finishing (half the 64-connection limit);
  - 200 scrapes on TCP in a burst (20 threads x 10), each a whole
    GET /metrics, a refused one retried after 50 ms (at most 20 times);
  - 20 requests with a 64 KiB header (MHD's per-connection pool is 16 KiB);
  - 20 connections of binary garbage, 10 on TCP and 10 on the unix socket;
  - a legitimate scraper: GET /metrics every 100 ms on the unix socket and
    on TCP (a refused TCP attempt, no answer, is retried after 50 ms, at
    most 20 times, as in the burst; a wrong answer is not retried).
Phase B (~3 s): 80 slowloris clients on TCP (more than the limit); the unix
  socket, a listener of its own, must keep serving; then they go away and
  TCP must serve again.

Writes every scraped page to OUTDIR/page-N.txt and a JSON summary on stdout.
"""
import json
import os
import socket
import sys
import threading
import time

PORT, UNIX, OUT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
REQ = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
lock = threading.Lock()
stats = {"burst_ok": 0, "burst_refused": 0, "burst_bad": 0, "burst_retries": 0, "oversized": {}, "garbage_answers": {},
         "scrape_unix_ok": 0, "scrape_unix_fail": 0, "scrape_tcp_ok": 0, "scrape_tcp_fail": 0, "scrape_tcp_bad": 0,
         "scrape_tcp_retries": 0, "slowloris_connected": 0, "pages": 0,
         "b_unix_ok": 0, "b_unix_fail": 0, "b_tcp_refused_while_full": 0, "b_tcp_ok_after": 0}


def bump(key, n=1):
    with lock:
        stats[key] += n


def connect(unix=False, timeout=5.0):
    if unix:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        s.connect(UNIX)
    else:
        s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    return s


def recv_all(s, limit=1 << 22):
    data = b""
    while len(data) < limit:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        data += b
    return data


def get(unix=False, timeout=5.0):
    """(status, body) or (None, why)."""
    try:
        s = connect(unix, timeout)
        s.sendall(REQ)
        data = recv_all(s)
        s.close()
    except OSError as e:
        return None, str(e)
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return None, f"no HTTP answer ({len(data)} bytes)"
    return int(parts[1]), body


def status_of(data):
    parts = data.split(b" ", 2)
    return parts[1].decode(errors="replace") if len(parts) > 1 and parts[0].startswith(b"HTTP/") else "none"


def slowloris(stop, counter="slowloris_connected"):
    try:
        s = connect(timeout=2)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        bump(counter)
    except OSError:
        return
    with s:
        for _ in range(60):  # bounded: at most 60 s
            if stop.wait(1.0):
                return
            try:
                s.sendall(b"a")
            except OSError:
                return


def burst_worker():
    """10 whole scrapes; one the server refuses (every slot held) is tried
    again after 50 ms, at most 20 times: the server must serve each in the
    end and never answer wrongly, however much of the burst it turns away."""
    for _ in range(10):
        for attempt in range(21):
            st, body = get()
            if st is not None:
                break
            bump("burst_retries")
            time.sleep(0.05)
        if st == 200 and body.startswith(b"# HELP"):
            bump("burst_ok")
        elif st is None:
            bump("burst_refused")
        else:
            bump("burst_bad")


def oversized():
    try:
        s = connect()
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"x" * 65536 + b"\r\n\r\n")
        st = status_of(recv_all(s, 4096))
        s.close()
    except OSError as e:
        st = "closed" if isinstance(e, (BrokenPipeError, ConnectionResetError)) else type(e).__name__
    with lock:
        stats["oversized"][st] = stats["oversized"].get(st, 0) + 1


def garbage(i):
    blob = bytes((i * 7919 + k * 104729) % 256 for k in range(4096))
    try:
        s = connect(unix=i % 2 == 1)
        s.sendall(blob)
        st = status_of(recv_all(s, 4096))
        s.close()
    except OSError as e:
        st = "closed" if isinstance(e, (BrokenPipeError, ConnectionResetError)) else type(e).__name__
    with lock:
        stats["garbage_answers"][st] = stats["garbage_answers"].get(st, 0) + 1


def save(body):
    with lock:
        n = stats["pages"]
        stats["pages"] += 1
    with open(os.path.join(OUT, f"page-{n}.txt"), "wb") as f:
        f.write(body)


def scraper(stop):
    while not stop.is_set():
        st, body = get(unix=True)
        if st == 200:
            bump("scrape_unix_ok")
            save(body)
        else:
            bump("scrape_unix_fail")
        for attempt in range(21):  # as a burst worker: the burst may hold the listener's slots a while
            st, body = get()
            if st is not None:
                break
            bump("scrape_tcp_retries")
            time.sleep(0.05)
        if st == 200:
            bump("scrape_tcp_ok")
            save(body)
        elif st is None:
            bump("scrape_tcp_fail")
        else:
            bump("scrape_tcp_bad")
        stop.wait(0.1)


def main():
    t0 = time.monotonic()
    # ---- phase A
    stop_a, stop_scrape = threading.Event(), threading.Event()
    threads = [threading.Thread(target=slowloris, args=(stop_a,)) for _ in range(32)]
    for t in threads:
        t.start()
    sc = threading.Thread(target=scraper, args=(stop_scrape,))
    sc.start()
    time.sleep(0.5)
    work = [threading.Thread(target=burst_worker) for _ in range(20)]
    work += [threading.Thread(target=oversized) for _ in range(20)]
    work += [threading.Thread(target=garbage, args=(i,)) for i in range(20)]
    for t in work:
        t.start()
    for t in work:
        t.join(30)
    time.sleep(max(0.0, 5.0 - (time.monotonic() - t0)))
    stop_scrape.set()
    sc.join(30)
    stop_a.set()
    for t in threads:
        t.join(10)
    # ---- phase B: more slowloris clients than the TCP listener admits
    stop_b = threading.Event()
    threads = [threading.Thread(target=slowloris, args=(stop_b, "slowloris_connected")) for _ in range(80)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    for _ in range(10):
        st, body = get(unix=True)
        bump("b_unix_ok" if st == 200 else "b_unix_fail")
        if st == 200:
            save(body)
        time.sleep(0.1)
    st, _ = get(timeout=1.0)
    if st != 200:
        bump("b_tcp_refused_while_full")
    stop_b.set()
    for t in threads:
        t.join(10)
    for _ in range(50):  # bounded: 5 s for MHD to see the clients gone
        st, body = get()
        if st == 200:
            bump("b_tcp_ok_after")
            save(body)
            break
        time.sleep(0.1)
    stats["elapsed_s"] = round(time.monotonic() - t0, 2)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
