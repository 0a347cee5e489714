#!/usr/bin/env python3
"""notify_listener.py SOCKET LOG — a fake systemd notify socket.

Binds a unix datagram socket at SOCKET (a path, or '@name' for an abstract
name, as NOTIFY_SOCKET spells them) and appends every assignment of every
datagram it receives to LOG, one per line, prefixed with the CLOCK_MONOTONIC
time (seconds) of receipt:  "12345.678901 READY=1".  The first line,
"# listening", says the socket is bound.  Runs until killed.
"""
import socket
import sys
import time


def main():
    path, log = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + path[1:] if path.startswith("@") else path)
    with open(log, "a", buffering=1) as out:
        out.write("# listening\n")
        while True:
            data = sock.recv(65536)
            t = time.clock_gettime(time.CLOCK_MONOTONIC)
            for line in data.decode("utf-8", "replace").split("\n"):
                if line:
                    out.write(f"{t:.6f} {line}\n")


if __name__ == "__main__":
    main()
