#!/usr/bin/env python3
"""A tiny HTTP server for the e2e tests: answers every GET with the client address it saw.

usage: addr_server.py BIND_ADDRESS PORT

BIND_ADDRESS may be IPv6 (then it serves IPv6, and IPv4 too for "::"). The body is the peer's address and a
newline (an IPv4 peer of an IPv6 socket as IPv4, not ::ffff:a.b.c.d), so a test can check that a NAT
preserved (or rewrote) the source address. GET /delay/N answers after N seconds (a slow agent: the client
waits, silent, for the first byte). It logs one line per request to stderr.
"""
import http.server
import re
import socket
import sys
import time


def peer(address):
    return address[7:] if address.startswith("::ffff:") and "." in address else address


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        delay = re.fullmatch(r"/delay/(\d+)", self.path)
        if delay:
            time.sleep(int(delay.group(1)))
        body = (peer(self.client_address[0]) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("%s:%d %s\n" % (self.client_address[0], self.client_address[1], fmt % args))
        sys.stderr.flush()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    server_class = http.server.ThreadingHTTPServer
    if ":" in sys.argv[1]:  # an IPv6 bind address

        class Server6(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6

        server_class = Server6
    server = server_class((sys.argv[1], int(sys.argv[2])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
