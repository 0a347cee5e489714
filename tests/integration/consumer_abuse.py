#!/usr/bin/python3
"""consumer_abuse.py — a consumer doing to a frame ring's shared objects what a
broken or hostile one could (tests/integration/consumer_abuse.sh runs it while
traffic flows, as a consumer in the service group: another uid, the ring's group).

usage: consumer_abuse.py SHM_NAME STEP...      (one JSON line per step on stdout)

Steps:
  ring        the ring (0640): opened read-write, resized through a read-only
              descriptor, removed from /dev/shm — each must be refused
  wake        the wake object from the daemon's wake socket, then truncated
              and grown — refused by its seals
  garbage     the sleeper count set to 0xffffffff for 1.5 s
  stale       the count set to 1 and left there 4 s: a consumer killed asleep
  refused     requests the wake socket must refuse: garbage, no descriptor,
              another file's descriptor
Each step prints what the kernel or the daemon answered.  Exit 1 if an
attempt that must fail succeeded.
"""
import errno
import json
import os
import socket
import struct
import sys
import time

WAKE_MAGIC = 0x4749574B
REQUEST = b"GIWAKE1\0"


def attempt(what, fn):
    try:
        fn()
        return {"what": what, "refused": False}
    except OSError as e:
        return {"what": what, "refused": True, "errno": errno.errorcode.get(e.errno, str(e.errno))}


def wake_socket(shm):
    with open("/dev/shm" + shm, "rb") as f:
        hdr = f.read(256)
    token = struct.unpack_from("<Q", hdr, 248)[0]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(2)
    s.connect(b"\0" + b"gpuingest-wake-%016x" % token)
    return s


def get_wake(shm):
    ro = os.open("/dev/shm" + shm, os.O_RDONLY)
    with wake_socket(shm) as s:
        socket.send_fds(s, [REQUEST], [ro])
        msg, fds, _, _ = socket.recv_fds(s, 16, 1)
    os.close(ro)
    if struct.unpack("<I", msg[:4])[0] != WAKE_MAGIC or len(fds) != 1:
        raise SystemExit(f"consumer_abuse: the wake socket did not hand the wake object over ({msg!r}, {fds})")
    return fds[0]


def set_count(fd, value, seconds):
    import mmap
    m = mmap.mmap(fd, 128)
    struct.pack_into("<I", m, 64, value)  # struct gi_frame_wake.waiters
    time.sleep(seconds)
    struct.pack_into("<I", m, 64, 0)
    m.close()


def main():
    shm, steps = sys.argv[1], sys.argv[2:]
    bad = 0
    for step in steps:
        out = {"step": step, "uid": os.getuid(), "gid": os.getgid(), "results": []}
        r = out["results"]
        if step == "ring":
            path = "/dev/shm" + shm
            r.append(attempt("open read-write", lambda: os.close(os.open(path, os.O_RDWR))))
            ro = os.open(path, os.O_RDONLY)
            r.append(attempt("truncate to 0 (read-only descriptor)", lambda: os.ftruncate(ro, 0)))
            r.append(attempt("grow (read-only descriptor)", lambda: os.ftruncate(ro, 1 << 30)))
            os.close(ro)
            r.append(attempt("unlink the name", lambda: os.unlink(path)))
            r.append(attempt("truncate by path", lambda: os.truncate(path, 0)))
        elif step == "wake":
            fd = get_wake(shm)
            r.append(attempt("truncate to 0", lambda: os.ftruncate(fd, 0)))
            r.append(attempt("grow to 1 MiB", lambda: os.ftruncate(fd, 1 << 20)))
            r.append({"what": "size after", "bytes": os.fstat(fd).st_size})
            os.close(fd)
        elif step == "garbage":
            fd = get_wake(shm)
            set_count(fd, 0xFFFFFFFF, 1.5)
            os.close(fd)
            r.append({"what": "count 0xffffffff for 1.5 s", "done": True})
        elif step == "stale":
            fd = get_wake(shm)
            set_count(fd, 1, 4.0)
            os.close(fd)
            r.append({"what": "count 1 with nobody asleep for 4 s", "done": True})
        elif step == "refused":
            for what, payload, fds in (("garbage", b"GET / HTTP/1.0\r\n\r\n", []),
                                       ("no descriptor", REQUEST, []),
                                       ("another file's descriptor", REQUEST, [os.open("/dev/null", os.O_RDONLY)])):
                with wake_socket(shm) as s:
                    socket.send_fds(s, [payload], fds) if fds else s.send(payload)
                    try:
                        msg, got, _, _ = socket.recv_fds(s, 16, 1)
                    except (socket.timeout, OSError):
                        msg, got = b"", []
                for fd in fds + got:
                    os.close(fd)
                r.append({"what": what, "refused": not got})
        else:
            raise SystemExit(f"consumer_abuse: unknown step {step}")
        for x in r:
            if x.get("refused") is False or x.get("bytes", 128) != 128:
                bad += 1
        print(json.dumps(out), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
