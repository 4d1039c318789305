#!/usr/bin/env python3
"""Checks the API requests a loader really sent against the roles bpfnet installs.

usage: check_rbac.py REQUEST_LOG [RBAC_YAML...]
  REQUEST_LOG: "METHOD PATH" lines (anything after a tab ignored), as apiserver_standin.py --request-log
  writes them.
  Each request becomes (API group, resource[/subresource], verb) the way the API server authorizes it:
  GET on a collection is list (watch with ?watch=1), GET on an object get, POST create, PUT update,
  PATCH patch, DELETE delete. Prints every distinct call with the number of requests, then the granted
  calls no request used. A ClusterRole grants in every namespace, a Role only in its own (default: the roles
  `kubectl kustomize k8s/examples/ironic` renders: k8s/manifests/rbac.yaml and k8s/served-namespace's Role in
  metal3). Exit 1 when a request is not granted (the loader would get 403 in a cluster).
"""
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from urllib.parse import parse_qs, urlparse

import yaml

PATH_RE = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$")
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def call_of(method, path):
    """(namespace or None, API group, resource[/subresource], verb), or None."""
    u = urlparse(path)
    m = PATH_RE.match(u.path)
    if not m:
        return None
    group = "" if m.group("core") else m.group("group")
    resource = m.group("resource") + ("/" + m.group("sub") if m.group("sub") else "")
    if method == "GET":
        if m.group("name"):
            verb = "get"
        else:
            verb = "watch" if parse_qs(u.query).get("watch", ["0"])[0] in ("1", "true") else "list"
    else:
        verb = VERBS.get(method, method.lower())
    return m.group("ns"), group, resource, verb


def rendered_example():
    """The objects of `kubectl kustomize k8s/examples/ironic`: bpfnet as installed with the example Ironic."""
    here = os.path.dirname(os.path.abspath(__file__))
    kubectl = shutil.which("kubectl")
    if not kubectl:
        sys.exit("check_rbac: no kubectl (scripts/setup.sh installs Debian's kubernetes-client)")
    out = subprocess.run([kubectl, "kustomize", os.path.join(here, "..", "..", "k8s", "examples", "ironic")],
                         check=True, capture_output=True, text=True, timeout=60)
    return list(yaml.safe_load_all(out.stdout))


def granted_calls(docs):
    """(namespace or None for cluster-wide, group, resource, verb) the roles among docs grant."""
    calls = set()
    for doc in docs:
        if not doc or doc.get("kind") not in ("ClusterRole", "Role"):
            continue
        ns = doc["metadata"].get("namespace") if doc["kind"] == "Role" else None
        for rule in doc.get("rules") or []:
            for g in rule.get("apiGroups") or []:
                for r in rule.get("resources") or []:
                    for v in rule.get("verbs") or []:
                        calls.add((ns, g, r, v))
    return calls


def is_granted(call, granted):
    ns, g, r, v = call
    return (None, g, r, v) in granted or (ns is not None and (ns, g, r, v) in granted)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    docs = [d for path in sys.argv[2:] for d in yaml.safe_load_all(open(path))] if sys.argv[2:] else rendered_example()
    granted = granted_calls(docs)
    used = Counter()
    unknown = []
    for line in open(sys.argv[1]):
        parts = line.split("\t", 1)[0].split(None, 1)
        if len(parts) != 2:
            continue
        call = call_of(parts[0], parts[1].strip())
        if call is None:
            unknown.append(line.strip())
        else:
            used[call] += 1
    denied = sorted((c for c in used if not is_granted(c, granted)), key=str)
    for call, n in sorted(used.items(), key=str):
        print("%-8s %s %s/%s in %s (%d requests)" % ("granted" if is_granted(call, granted) else "DENIED", call[3],
                                                   call[1] or "core", call[2], call[0] or "all namespaces", n))
    used_grants = {g for g in granted if any(c[1:] == g[1:] and (g[0] is None or g[0] == c[0]) for c in used)}
    for g in sorted(granted - used_grants, key=str):
        print("unused   %s %s/%s in %s" % (g[3], g[1] or "core", g[2], g[0] or "all namespaces"))
    for line in unknown:
        print("UNKNOWN  " + line)
    return 1 if denied or unknown or not used else 0


if __name__ == "__main__":
    sys.exit(main())
