#!/usr/bin/env python3
"""Writes a burst of changes into the API server stand-in, as a busy cluster would: unrelated Services created
and EndpointSlices of other Services updated (pod churn). Every write is one watch event for a loader.

usage: k8s_burst.py PORT EVENTS [--services N]
  N (default EVENTS / 5) Services of type ClusterIP in namespace "churn" are created, and the rest of the
  EVENTS are updates spread over 100 EndpointSlices there (created first; those 100 creations count too).
  Prints "EVENTS events in SECONDS s" at the end. The requests carry the X-Standin-Test header, so they are
  not taken for the loader's own.
"""
import argparse
import http.client
import json
import sys
import time

HEADERS = {"Content-Type": "application/json", "X-Standin-Test": "1"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("events", type=int)
    parser.add_argument("--services", type=int)
    args = parser.parse_args()
    services = args.events // 5 if args.services is None else args.services
    slices = 100
    conn = http.client.HTTPConnection("127.0.0.1", args.port)

    def call(method, path, body):
        conn.request(method, path, json.dumps(body), HEADERS)
        r = conn.getresponse()
        r.read()
        if r.status >= 300:
            sys.exit("%s %s: HTTP %d" % (method, path, r.status))

    start = time.monotonic()
    sent = 0
    slice_path = "/apis/discovery.k8s.io/v1/namespaces/churn/endpointslices"
    for i in range(slices):
        call("POST", slice_path, slice_body(i, 0))
        sent += 1
    for i in range(services):
        call("POST", "/api/v1/namespaces/churn/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-%d" % i, "namespace": "churn"},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}})
        sent += 1
    n = 0
    while sent < args.events:
        call("PUT", slice_path + "/svc-%d-abcde" % (n % slices), slice_body(n % slices, n // slices + 1))
        sent += 1
        n += 1
    print("%d events in %.2f s" % (sent, time.monotonic() - start))


def slice_body(i, generation):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "svc-%d-abcde" % i, "namespace": "churn",
                         "labels": {"kubernetes.io/service-name": "svc-%d" % i}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.%d.%d.%d" % (i % 250, generation % 250, e)],
                           "conditions": {"ready": True}, "nodeName": "node-%d" % e} for e in range(1, 4)]}


if __name__ == "__main__":
    main()
