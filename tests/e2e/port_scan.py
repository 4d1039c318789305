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
import resource
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


def scan(address, ports, timeout):
    """One round of connects, all at once: (accepted ports, refused count, silent count)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    pending = {}
    for port in ports:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((address, port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            continue
        pending[s] = port
    accepted, refused = [], 0
    poller = select.poll()  # not select(): more than 1024 sockets
    by_fd = {s.fileno(): s for s in pending}
    for fd in by_fd:
        poller.register(fd, select.POLLOUT)
    deadline = time.monotonic() + timeout
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
    silent = len(pending)
    for s in pending:
        s.close()
    return accepted, refused, silent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("address")
    parser.add_argument("ports")
    args = parser.parse_args()
    ports = ports_of(args.ports)
    # As many sockets at once as the descriptor limit allows (its soft value is often 1024): rounds of them.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = len(ports) + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        soft = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    per_round = max(64, len(ports) if soft == resource.RLIM_INFINITY else soft - 64)
    accepted, refused, silent = [], 0, 0
    for first in range(0, len(ports), per_round):
        a, r, s = scan(args.address, ports[first : first + per_round], args.timeout)
        accepted += a
        refused += r
        silent += s
    print(" ".join(str(p) for p in sorted(accepted)))
    print("refused %d silent %d" % (refused, silent))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(2)
