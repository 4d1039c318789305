#!/usr/bin/env python3
"""A TCP connect scan of one address, for the exposure cases of the e2e tests: which ports accept a connection.

usage: port_scan.py [--timeout SECONDS] ADDRESS PORTS
PORTS is a comma-separated list of ports and ranges (1-1024,6385,8080). All connections are started at
once (non-blocking) and given SECONDS (default 2) to complete; prints the ports that accepted, space
separated, in order (an empty line when none did), and "refused N silent M" on a second line: ports that
answered with a reset, and ports that never answered (dropped). Exit 0, or 2 on a usage or socket error.
"""
import argparse
import errno
import select
import socket
import sys
import time


def ports_of(spec):
    ports = set()
    for part in spec.split(","):
        first, _, last = part.partition("-")
        ports.update(range(int(first), int(last or first) + 1))
    return sorted(ports)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("address")
    parser.add_argument("ports")
    args = parser.parse_args()
    family = socket.AF_INET6 if ":" in args.address else socket.AF_INET
    pending = {}
    for port in ports_of(args.ports):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((args.address, port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            continue
        pending[s] = port
    accepted, refused = [], 0
    poller = select.poll()  # not select(): more than 1024 sockets
    by_fd = {s.fileno(): s for s in pending}
    for fd in by_fd:
        poller.register(fd, select.POLLOUT)
    deadline = time.monotonic() + args.timeout
    while pending and time.monotonic() < deadline:
        for fd, _ in poller.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            s = by_fd[fd]
            poller.unregister(fd)
            port = pending.pop(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                accepted.append(port)
            else:
                refused += 1
            s.close()
    for s in pending:
        s.close()
    print(" ".join(str(p) for p in sorted(accepted)))
    print("refused %d silent %d" % (refused, len(pending)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(2)
