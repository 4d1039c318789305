#!/usr/bin/env python3
"""Fills the API server stand-in as a large cluster would be before a loader starts: many Services of other
kinds, each with its EndpointSlices, and some LoadBalancer Services of bpfnet's class whose pods run on other
nodes (a loader must read them all, and serves none of them).

usage: k8s_populate.py PORT SERVICES OURS [--slices-per-service N] [--ip-prefix P] [--first-host H]
  SERVICES in all, OURS of them bpfnet's (namespace metal3, LoadBalancer, class bpfnet.io/provisioning, the
  service IP P + str(H + i), one port 80 -> 8080, their endpoints on node-2); the others ClusterIP Services
  spread over 100 namespaces. Every Service gets N EndpointSlices (default 2) of 3 ready endpoints each.
  Prints "OBJECTS objects in SECONDS s". The requests carry the X-Standin-Test header (the test's own).
"""
import argparse
import http.client
import json
import sys
import time

HEADERS = {"Content-Type": "application/json", "X-Standin-Test": "1"}


def service(name, namespace, ours, ip):
    spec = {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    metadata = {"name": name, "namespace": namespace}
    if ours:
        spec.update({"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning"})
        metadata["annotations"] = {"bpfnet.io/ip": ip}
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def endpoint_slice(service_name, namespace, index, node_of, address_of):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "%s-%d" % (service_name, index), "namespace": namespace,
                         "labels": {"kubernetes.io/service-name": service_name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [address_of(k)], "conditions": {"ready": True}, "nodeName": node_of(k)}
                          for k in range(3)]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("services", type=int)
    parser.add_argument("ours", type=int)
    parser.add_argument("--slices-per-service", type=int, default=2)
    parser.add_argument("--ip-prefix", default="198.18.0.")
    parser.add_argument("--first-host", type=int, default=150)
    args = parser.parse_args()
    if args.ours > args.services or args.first_host + args.ours > 255:
        sys.exit("k8s_populate: OURS must fit in SERVICES and in the /24 after --first-host")
    conn = http.client.HTTPConnection("127.0.0.1", args.port)

    def post(path, body):
        conn.request("POST", path, json.dumps(body), HEADERS)
        response = conn.getresponse()
        response.read()
        if response.status >= 300:
            sys.exit("POST %s: HTTP %d" % (path, response.status))

    start = time.monotonic()
    objects = 0
    for i in range(args.services):
        ours = i < args.ours
        namespace = "metal3" if ours else "ns-%d" % (i % 100)
        name = ("ours-%d" if ours else "svc-%d") % i
        post("/api/v1/namespaces/%s/services" % namespace,
             service(name, namespace, ours, args.ip_prefix + str(args.first_host + i)))
        objects += 1
        for s in range(args.slices_per_service):
            # Pods of 10.244.0.0/16 on nodes other than the loader's (node-1): bpfnet's too.
            def address_of(k, i=i, s=s):
                n = (i * args.slices_per_service + s) * 3 + k
                return "10.244.%d.%d" % (n // 250 % 250, n % 250 + 1)

            post("/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % namespace,
                 endpoint_slice(name, namespace, s, lambda k, i=i: "node-%d" % (2 + (i + k) % 49), address_of))
            objects += 1
    print("%d objects in %.2f s" % (objects, time.monotonic() - start))


if __name__ == "__main__":
    main()
