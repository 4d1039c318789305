#!/usr/bin/env python3
"""Checks the API requests a loader really sent against the ClusterRole in k8s/manifests/rbac.yaml.

usage: check_rbac.py REQUEST_LOG [RBAC_YAML]
  REQUEST_LOG: "METHOD PATH" lines (anything after a tab ignored), as apiserver_standin.py --request-log
  writes them.
  Each request becomes (API group, resource[/subresource], verb) the way the API server authorizes it:
  GET on a collection is list (watch with ?watch=1), GET on an object get, POST create, PUT update,
  PATCH patch, DELETE delete. Prints every distinct call with the number of requests, then the granted
  calls no request used. Exit 1 when a request is not granted (the loader would get 403 in a cluster).
"""
import os
import re
import sys
from collections import Counter
from urllib.parse import parse_qs, urlparse

import yaml

PATH_RE = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$")
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def call_of(method, path):
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
    return group, resource, verb


def granted_calls(rbac_path):
    calls = set()
    for doc in yaml.safe_load_all(open(rbac_path)):
        if not doc or doc.get("kind") != "ClusterRole":
            continue
        for rule in doc.get("rules") or []:
            for g in rule.get("apiGroups") or []:
                for r in rule.get("resources") or []:
                    for v in rule.get("verbs") or []:
                        calls.add((g, r, v))
    return calls


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    rbac = sys.argv[2] if len(sys.argv) == 3 else os.path.join(here, "..", "..", "k8s", "manifests", "rbac.yaml")
    granted = granted_calls(rbac)
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
    denied = sorted(c for c in used if c not in granted)
    for call, n in sorted(used.items()):
        print("%-8s %s %s/%s (%d requests)" % ("granted" if call in granted else "DENIED", call[2], call[0] or "core",
                                              call[1], n))
    for call in sorted(granted - set(used)):
        print("unused   %s %s/%s" % (call[2], call[0] or "core", call[1]))
    for line in unknown:
        print("UNKNOWN  " + line)
    return 1 if denied or unknown or not used else 0


if __name__ == "__main__":
    sys.exit(main())
