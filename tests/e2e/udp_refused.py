#!/usr/bin/env python3
"""Sends one UDP datagram from a connected socket and reports what came back, for the ICMP error cases.

usage: udp_refused.py [--sport PORT] [--timeout SECONDS] HOST PORT   (HOST: an IPv4 or IPv6 address)
Prints "refused" when an ICMP port unreachable reached the socket (ECONNREFUSED on the receive),
"answered" when a datagram came back, "silent" when nothing did within SECONDS (default 2).
Exit 0 for refused, 1 otherwise (2 on a usage or socket error).
"""
import argparse
import socket
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sport", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    args = parser.parse_args()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", args.sport))
    sock.connect((args.host, args.port))
    sock.settimeout(args.timeout)
    sock.send(b"bpfnet icmp probe")
    try:
        sock.recv(2048)
        print("answered")
        return 1
    except ConnectionRefusedError:
        print("refused")
        return 0
    except socket.timeout:
        print("silent")
        return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(2)
