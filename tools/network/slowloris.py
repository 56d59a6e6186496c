#!/usr/bin/env python3
"""Slow and idle connections against a running `activespeaker serve`, and how long a request from
another address then waits (issue 12 item 3).

Opens COUNT connections to 127.0.0.1:PORT from the loopback address 127.0.0.2 (every other one sends
half a request's headers and stops), then times one GET /v1/health from 127.0.0.1, and counts the slow
connections the server still holds.

Usage: python3 tools/network/slowloris.py PORT [COUNT]       (COUNT default 500; loopback only)
"""

import socket
import sys
import time


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    port = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    slow = []
    for index in range(count):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        try:
            s.connect(("127.0.0.1", port))
            if index % 2:
                s.send(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            continue
        slow.append(s)
    time.sleep(0.5)
    start = time.monotonic()
    legit = socket.create_connection(("127.0.0.1", port), timeout=30)
    legit.send(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = legit.recv(100)
    waited = time.monotonic() - start
    held = 0
    for s in slow:
        s.setblocking(False)
        try:
            held += s.recv(1) != b""
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    print(f"answer {status!r} after {waited:.2f} s; slow connections held by the server: {held} of {len(slow)}")


if __name__ == "__main__":
    main()
