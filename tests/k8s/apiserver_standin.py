#!/usr/bin/env python3
"""Kubernetes API server stand-in for bpfnet's tests (python3 stdlib only, plain HTTP on 127.0.0.1).

Usage: apiserver_standin.py PORT [--address ADDR] [--bookmark-interval SECONDS] [--token TOKEN] [--tls CERT KEY]
  PORT 0 picks a free port. The first line on stdout is "listening on PORT".
  --address: the address to listen on (default 127.0.0.1).
  --commit-log FILE: append "TIME TYPE RESOURCE NAMESPACE/NAME RV" for every change the store commits, TIME in
  seconds since the epoch (when the API server "has" the object: the start of a failover measurement).
  --request-log FILE: append "METHOD PATH" for every API request (not the /_test/ ones, not the test's own
  requests marked with an X-Standin-Test header), for tests/k8s/check_rbac.py.
  --initial-rv N: start with resourceVersion N, compacted at N (a restarted API server whose history is gone:
  watches from an older resourceVersion get 410).
  --token: when given, every API request must carry "Authorization: Bearer TOKEN" (else 401).
  --tls: serve HTTPS with the PEM certificate CERT and key KEY (to test the client's CA handling).
  --client-ca FILE: with --tls, require a client certificate signed by the PEM CA FILE (as an API server's
  --client-ca-file); the last client certificate's CN shows in /_test/state as "client_cn".
  --event-ttl SECONDS: Events are deleted this long after their last write (default 3600).
  --h2: with --tls, offer HTTP/2 by ALPN ("h2", then "http/1.1"), as kube-apiserver does. An HTTP/2
  connection's streams are each served by the same API semantics (the stand-in forwards them to its own
  HTTP/1.1 handler on an internal port, response bodies streamed back as DATA frames as they come, so a
  watch is a long-lived stream); a stream the client resets ends its request. /_test/state counts
  "h2_connections" and "h2_streams". Needs Debian's python3-h2.
  The request log line also carries the User-Agent and fieldManager: "METHOD PATH" then, tab-separated,
  "ua=USER-AGENT".
  --kubernetes-version 1.N: the version /version reports (default 1.32) and the fields strict validation
  knows (a container's securityContext.appArmorProfile exists from 1.30).
  --exec-hook PROGRAM: serves `kubectl exec` (GET or POST .../pods/NAME/exec?command=...&container=C, upgraded
  to a WebSocket with the v5.channel.k8s.io or v4.channel.k8s.io subprotocol, as kubectl 1.31 and later ask
  first): PROGRAM NAMESPACE POD CONTAINER COMMAND... runs it (the test's kubelet), its stdout and stderr go to
  channels 1 and 2, its exit status to channel 3 as the kubelet reports it (a Success Status, or Failure with
  reason NonZeroExitCode and the code as an ExitCode cause), then a close frame. No stdin, no TTY, no resize:
  a request asking for them gets 400. Without --exec-hook, exec is 404 as any unknown path. SPDY (kubectl's
  fallback) is not offered.
  --pod-logs DIR: serves `kubectl logs` (GET .../pods/NAME/log[?container=C][&tailLines=N]): the file
  DIR/NAMESPACE_POD_CONTAINER.log, where the test's kubelet writes the container's output (the kubelet's
  /var/log/pods), as text/plain; C defaults to the pod's first container. follow and previous get 400. Without
  --pod-logs, the log subresource is 404 as any unknown path.

API semantics followed (a subset of the documented behaviour):
  Collections: /api/v1[/namespaces/NS]/RESOURCE and /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE for any
  RESOURCE name (services, endpoints, events, endpointslices, leases, ...); without /namespaces/NS a
  collection spans all namespaces. Objects: COLLECTION/NAME, and COLLECTION/NAME/status.
  The namespace need not exist (except that a terminating one refuses new objects: 403 Forbidden).
  - Every write bumps one global resourceVersion counter; objects get metadata.resourceVersion (string), uid,
    creationTimestamp, namespace.
  - metadata.generation, on DaemonSets, Deployments, ReplicaSets and StatefulSets only (as their controllers'
    status.observedGeneration counts it): 1 on create, one more on every write that changes .spec, never
    on status or metadata-only writes; the server owns it (as metadata.deletionTimestamp): a client's value is
    ignored.
  - GET collection: {kind: <Kind>List, apiVersion, metadata: {resourceVersion}, items}. A plain list, except
    for pods when the Accept header asks for a meta.k8s.io/v1 Table (kubectl get does): then the Table with
    the columns kube-apiserver's pod printer gives (NAME READY STATUS RESTARTS AGE, and with priority 1, shown
    by -o wide, IP NODE NOMINATED NODE READINESS GATES), READY and RESTARTS from status.containerStatuses.
    For other resources kubectl, given the list, prints NAME (and AGE) columns only.
  - limit=N on a list (not a watch): at most N items, in namespace/name order, with metadata.continue (an
    opaque token) and metadata.remainingItemCount when more remain; continue=TOKEN returns the next page of the
    same list, as of the resourceVersion of its first page (every page carries that resourceVersion): the
    store keeps the list's items for the token, as etcd keeps the revision. A token the store no longer has
    (/_test/expire-continues, or a compaction past its resourceVersion) gets 410 Expired, as an expired
    continue token does; the client lists again from the start.
  - labelSelector=K=V[,K2=V2...] (equality only) on lists and watches: only objects whose metadata.labels
    match all pairs. fieldSelector=metadata.name=N / metadata.namespace=NS (=, ==, !=; the waits of kubectl
    rollout status and delete use it), and on pods spec.nodeName=NODE; another field gets 400 "field label not
    supported".
  - Discovery, for kubectl: GET /api (APIVersions), /apis (APIGroupList), /apis/GROUP (APIGroup), /api/v1 and
    /apis/GROUP/VERSION (APIResourceList: name, kind, namespaced, verbs, shortNames, the /status
    subresources) for the resources of the RESOURCES table (core v1, apps, rbac, coordination, discovery,
    events.k8s.io). Plain application/json: kubectl's Accept asks for the aggregated apidiscovery.k8s.io/v2
    form first and falls back to these. GET /version. Other resource names are still served, not discovered.
  - OpenAPI v3, for kubectl's validation: GET /openapi/v3 (index) and /openapi/v3/api/v1,
    /openapi/v3/apis/GROUP/VERSION: only each resource's PATCH operation with its fieldValidation query
    parameter, so that kubectl leaves validation to the server and sends fieldValidation=Strict; no schemas
    (kubectl computes its patches from its compiled-in types). No /openapi/v2.
  - GET collection?watch=1&resourceVersion=RV[&allowWatchBookmarks=true][&timeoutSeconds=N]: HTTP/1.1 chunked
    stream of newline-delimited JSON events {type, object}, one event per chunk, for every change newer than
    RV (without RV, or RV "0": synthetic ADDED events for the current state first). BOOKMARK events
    ({kind, apiVersion, metadata: {resourceVersion}}) every --bookmark-interval seconds when asked (default 60:
    kube-apiserver sends one about once a minute). When RV is older than the compaction point: one ERROR event
    {type: ERROR, object: {kind: Status, code: 410, reason: Expired}} and the stream ends. After timeoutSeconds the stream ends normally.
  - GET object: the object or 404 Status NotFound.
  - POST collection: creates (metadata.name or metadata.generateName), 409 AlreadyExists when present.
  - PUT object: replaces; 409 Conflict when metadata.resourceVersion is given and differs from the stored one;
    404 when absent. PUT .../status changes only .status; PUT on the object keeps the stored .status.
  - PATCH object or .../status with Content-Type application/merge-patch+json (RFC 7386) or
    application/strategic-merge-patch+json (others: 415); on .../status only .status changes.
    metadata.resourceVersion in the patch is a precondition (409).
    Strategic merge patch, a subset of kube-apiserver's: directives $patch (merge, replace, delete; in maps and
    as list entries), $retainKeys, $setElementOrder/F (listed entries in that order, the others keep their
    places), $deleteFromPrimitiveList/F. Lists merged by key (the patchMergeKey tags of k8s.io/api, as a
    table: list_merge_key): in the pod spec of Pods, DaemonSets, Deployments, ReplicaSets and StatefulSets
    initContainers/containers/ephemeralContainers, volumes, imagePullSecrets, resourceClaims, schedulingGates
    by name, hostAliases by ip, topologySpreadConstraints by topologyKey; in a container env by name, ports by
    containerPort, volumeMounts by mountPath, volumeDevices by devicePath; a Service's spec.ports by port; a
    ServiceAccount's secrets by name; metadata.ownerReferences by uid; metadata.finalizers merged as a set.
    Every other list (tolerations, args, command, envFrom, RBAC rules, any list of another kind) is
    replaced whole. An entry without its merge key: 400.
  - A write that changes nothing (PUT or PATCH) does not bump resourceVersion and sends no watch event.
  - Defaulting: a Service's status.loadBalancer.ingress[] entry with an ip gets ipMode "VIP" (Kubernetes
    1.30+, LoadBalancerIPMode); a DaemonSet's spec.updateStrategy (RollingUpdate, maxUnavailable 1, maxSurge
    0) and revisionHistoryLimit (10); a Namespace's status.phase (Active) and its label
    kubernetes.io/metadata.name.
  - Validation (422 Invalid, as the real server): metadata.name and metadata.namespace (when given) are DNS
    subdomains of at most 253 characters; events.k8s.io Events need eventTime as a MicroTime
    (YYYY-MM-DDTHH:MM:SS.ffffffZ), reportingController and reportingInstance of at most 128 characters, a
    note of at most 1 kB, type Normal or Warning, and a series (if any) with count >= 2 and a MicroTime
    lastObservedTime; Leases need spec.renewTime / acquireTime as MicroTimes and leaseDurationSeconds > 0.
    Unknown fields in spec (Lease, Service status) are refused (strict field validation, as kubectl's).
  - fieldValidation=Strict|Warn|Ignore on POST, PUT and PATCH (kubectl sends Strict by default, Ignore with
    --validate=false): for the resources of the RESOURCES table, unknown top-level fields, unknown fields of
    metadata and, in a pod spec (see above), unknown fields of a container and of its securityContext; nothing
    deeper. Strict: 400 BadRequest 'DaemonSet in version "v1" cannot be handled as a DaemonSet: strict
    decoding error: unknown field "spec.template.spec.containers[0].imagePolicy"' (kube-apiserver's words),
    nothing stored; Warn: dropped, with a "Warning: 299 - ..." header each; Ignore: dropped. Without the
    parameter nothing is checked or dropped (kube-apiserver would Warn).
    POST with metadata.resourceVersion set: 500 "resourceVersion should not be set on objects to be created".
  - Events expire --event-ttl seconds (default 3600, the API server's --event-ttl) after their last write.
  - DELETE object: removes it (DELETED event), returns the object; a DeleteOptions body with
    preconditions.resourceVersion that differs from the stored one gets 409 and deletes nothing; its
    propagationPolicy is accepted and means nothing (no owner references are followed).
    A Namespace is marked first (metadata.deletionTimestamp, status.phase Terminating: a MODIFIED event) and,
    1 s later, every object in it is deleted, then the Namespace (DELETED events): the namespace controller's
    end result, not its pace. The delay matters: `kubectl delete -k` deletes the Namespace before the objects
    in it and fails on any that is already gone.
  Errors are Status objects {kind: Status, apiVersion: v1, status: Failure, message, reason, code}.

Test control interface (POST, JSON body optional, answers {"ok": true, ...}):
  /_test/compact         {"rv": N} (default: current) -> watches from an RV older than N get 410
  /_test/drop-watches    abruptly closes every open watch (no final chunk: a truncated chunked body)
  /_test/garbage         {"line": "..."} writes a malformed line into every open watch (watch continues)
  /_test/throttle        {"count": N, "retry_after": S} the next N API requests answer 429 TooManyRequests with
                         "Retry-After: S", as API Priority and Fairness does under load
  /_test/stall-watches   every open watch goes silent (no events, no bookmarks, no end) but stays connected,
                         as behind a stuck proxy; watches opened afterwards work
  /_test/truncate        writes half of an event into every open watch, then closes it abruptly
  /_test/block-watches   {"on": true|false} new watch requests get 503 while on (API server "away")
  /_test/gone-as-http    {"on": true|false} an expired watch gets HTTP 410 (a Status body) instead of
                         the ERROR event (both happen with real API servers)
  /_test/garbage-list    {"count": N} the next N collection LISTs answer 200 with a malformed body
  /_test/garbage-writes  {"count": N} the next N POSTs and PUTs answer 200 with a malformed body (and change
                         nothing)
  /_test/conflict-writes {"count": N} the next N PUTs answer 409 Conflict (and change nothing), as if another
                         writer had been faster
  /_test/offline         {"on": true|false} while on, every API request without an "X-Standin-Test" header is
                         cut off without an answer and open watches are dropped (the API server is away);
                         requests with the header (the test's own) are served
  /_test/expire-events   expires every Event now (as if --event-ttl had passed)
  /_test/expire-continues  {"count": N} forgets every continue token, and the next N continue requests get
                         410 Expired (a list read page by page meets a compaction between its pages)
  /_test/state           (GET) {"rv": N, "compacted": N, "watches": open watch count, "lists_paged": lists
                         answered in more than one page, "auth": last Authorization header seen,
                         "connections": TCP connections accepted so far}
"""

import base64
import bisect
import calendar
import hashlib
import json
import os
import re
import select
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PATH_RE = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?(?P<status>/status)?$")

# The resources discovery lists: (group/version, resource, kind, namespaced, short names, has /status, the
# top-level fields besides apiVersion, kind and metadata). Any other resource name is still stored and served
# (as a namespaced collection), just not discovered and not checked for unknown fields.
RESOURCES = [
    ("v1", "namespaces", "Namespace", False, ["ns"], True, "spec status"),
    ("v1", "nodes", "Node", False, ["no"], True, "spec status"),
    ("v1", "services", "Service", True, ["svc"], True, "spec status"),
    ("v1", "endpoints", "Endpoints", True, ["ep"], False, "subsets"),
    ("v1", "pods", "Pod", True, ["po"], True, "spec status"),
    ("v1", "configmaps", "ConfigMap", True, ["cm"], False, "data binaryData immutable"),
    ("v1", "secrets", "Secret", True, [], False, "data stringData type immutable"),
    ("v1", "serviceaccounts", "ServiceAccount", True, ["sa"], False,
     "secrets imagePullSecrets automountServiceAccountToken"),
    ("v1", "events", "Event", True, ["ev"], False,
     "involvedObject reason message source firstTimestamp lastTimestamp count type eventTime series action related "
     "reportingComponent reportingInstance"),
    ("apps/v1", "daemonsets", "DaemonSet", True, ["ds"], True, "spec status"),
    ("apps/v1", "deployments", "Deployment", True, ["deploy"], True, "spec status"),
    ("apps/v1", "replicasets", "ReplicaSet", True, ["rs"], True, "spec status"),
    ("apps/v1", "statefulsets", "StatefulSet", True, ["sts"], True, "spec status"),
    ("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False, [], False, "rules aggregationRule"),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False, [], False,
     "subjects roleRef"),
    ("rbac.authorization.k8s.io/v1", "roles", "Role", True, [], False, "rules"),
    ("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True, [], False, "subjects roleRef"),
    ("coordination.k8s.io/v1", "leases", "Lease", True, [], False, "spec"),
    ("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", True, [], False, "addressType endpoints ports"),
    ("events.k8s.io/v1", "events", "Event", True, ["ev"], False,
     "eventTime series reportingController reportingInstance action reason regarding related note type "
     "deprecatedSource deprecatedFirstTimestamp deprecatedLastTimestamp deprecatedCount"),
]
KINDS = {r[1]: r[2] for r in RESOURCES}
TOP_FIELDS = {(r[0], r[1]): {"apiVersion", "kind", "metadata"} | set(r[6].split()) for r in RESOURCES}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
# Objects whose metadata.generation counts changes of .spec (the workload controllers' observedGeneration).
GENERATION_RESOURCES = {"daemonsets", "deployments", "replicasets", "statefulsets"}
EXEC_HOOK = None  # --exec-hook PROGRAM
EXEC_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/exec$")
POD_LOGS = None  # --pod-logs DIR
LOG_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log$")
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
KUBE_MINOR = 32  # --kubernetes-version 1.N: what /version says and which fields exist (appArmorProfile: 30)


class Store:
    def __init__(self):
        self.cond = threading.Condition()
        self.rv = 0
        self.compacted = 0
        self.objects = {}  # (apiVersion, resource) -> {(ns, name): obj}
        self.log = []  # (rv, apiVersion, resource, ns, type, obj), in rv order
        self.log_rvs = []  # the rv of each log entry, for bisect: a watch reads only what is new to it
        self.drop_gen = 0
        self.stall_gen = 0
        self.throttle = 0  # the next N API requests answer 429 with Retry-After: retry_after
        self.retry_after = 1
        self.truncate_gen = 0
        self.garbage = []  # (gen, line)
        self.block_watches = False
        self.gone_as_http = False
        self.garbage_lists = 0
        self.continues = {}  # continue token -> (rv, the list's remaining items)
        self.expire_continues = 0  # the next N continue requests get 410
        self.lists_paged = 0  # lists answered in more than one page (for tests)
        self.garbage_writes = 0
        self.offline = False
        self.conflict_writes = 0
        self.watches = 0
        self.connections = 0  # TCP connections accepted (a client that reuses connections opens few)
        self.h2_connections = 0  # of those, HTTP/2 (--h2)
        self.h2_streams = 0  # requests made on them
        self.last_auth = ""
        self.client_cn = ""

    def bump(self):
        self.rv += 1
        return self.rv

    def record(self, api, resource, ns, typ, obj):
        if COMMIT_LOG:
            with open(COMMIT_LOG, "a") as f:
                f.write("%.6f %s %s %s/%s %d\n" % (time.time(), typ, resource, ns, obj["metadata"]["name"], self.rv))
        self.log.append((self.rv, api, resource, ns, typ, json.loads(json.dumps(obj))))
        self.log_rvs.append(self.rv)
        if len(self.log) > 100000:
            del self.log[:50000]
            del self.log_rvs[:50000]
        self.cond.notify_all()

    def since(self, rv):
        """Log entries newer than rv."""
        return self.log[bisect.bisect_right(self.log_rvs, rv):]


MICRO_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
LEASE_SPEC_FIELDS = {"holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions",
                     "strategy", "preferredHolder"}
INGRESS_FIELDS = {"ip", "hostname", "ipMode", "ports"}


def invalid(what):
    return 422, status(422, "Invalid", what)


def validate(resource, obj):
    """None when the object is valid, else (code, Status) as the API server answers."""
    meta = obj.get("metadata", {})
    for field in ("name", "namespace"):
        v = meta.get(field)
        if v is not None and (not isinstance(v, str) or len(v) > 253 or not DNS_SUBDOMAIN_RE.match(v)):
            return invalid(f"metadata.{field}: Invalid value: {json.dumps(v)}: a lowercase RFC 1123 subdomain")
    if resource == "events" and obj.get("apiVersion", "").startswith("events.k8s.io"):
        if not isinstance(obj.get("eventTime"), str) or not MICRO_TIME_RE.match(obj["eventTime"]):
            return invalid("eventTime: Required value / invalid MicroTime")
        for field in ("reportingController", "reportingInstance"):
            v = obj.get(field)
            if not isinstance(v, str) or not v or len(v) > 128:
                return invalid(f"{field}: Invalid value: must be 1 to 128 characters")
        if obj.get("type") not in ("Normal", "Warning"):
            return invalid("type: Unsupported value")
        if len(obj.get("note", "")) > 1024:
            return invalid("note: Too long: may not be longer than 1024")
        series = obj.get("series")
        if series is not None:
            if not isinstance(series, dict) or not isinstance(series.get("count"), int) or series["count"] < 2:
                return invalid("series.count: Invalid value: should be at least 2")
            if not isinstance(series.get("lastObservedTime"), str) or not MICRO_TIME_RE.match(series["lastObservedTime"]):
                return invalid("series.lastObservedTime: Required value / invalid MicroTime")
    if resource == "leases":
        spec = obj.get("spec", {})
        if not isinstance(spec, dict) or set(spec) - LEASE_SPEC_FIELDS:
            return 400, status(400, "BadRequest", f"strict decoding error: unknown field in spec: {sorted(set(spec) - LEASE_SPEC_FIELDS)}")
        for field in ("renewTime", "acquireTime"):
            v = spec.get(field)
            if v is not None and (not isinstance(v, str) or not MICRO_TIME_RE.match(v)):
                return invalid(f"spec.{field}: invalid MicroTime {json.dumps(v)}")
        d = spec.get("leaseDurationSeconds")
        if d is not None and (not isinstance(d, int) or d <= 0):
            return invalid("spec.leaseDurationSeconds: must be greater than 0")
    if resource == "services":
        lb = obj.get("status", {}).get("loadBalancer", {}) if isinstance(obj.get("status"), dict) else {}
        for entry in (lb.get("ingress") or []) if isinstance(lb, dict) else []:
            if not isinstance(entry, dict) or set(entry) - INGRESS_FIELDS:
                return 400, status(400, "BadRequest", "strict decoding error: unknown field in status.loadBalancer.ingress")
            if entry.get("ipMode") not in (None, "VIP", "Proxy"):
                return invalid("status.loadBalancer.ingress.ipMode: Unsupported value")
    return None


def stored_for_write(api, resource, ns, name, given_rv):
    """(the stored object, None), or (None, (code, Status)): 404 when absent, 409 when given_rv (a write's
    resourceVersion, or a delete's precondition) is not the stored one. Under STORE.cond."""
    old = STORE.objects.setdefault((api, resource), {}).get((ns, name))
    if old is None:
        return None, (404, status(404, "NotFound", f'{resource} "{name}" not found'))
    if given_rv and given_rv != old["metadata"]["resourceVersion"]:
        return None, (409, status(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name}": the '
                                  'object has been modified; please apply your changes to the latest version and '
                                  'try again'))
    return old, None


def default(resource, obj):
    """The API server's defaulting, the part the stand-in's clients see: LoadBalancerIPMode (Kubernetes 1.30+), a
    DaemonSet's update strategy (kubectl rollout status needs its type), a Namespace's phase and name label."""
    if resource == "services" and isinstance(obj.get("status"), dict):
        lb = obj["status"].get("loadBalancer")
        if isinstance(lb, dict):
            for entry in lb.get("ingress") or []:
                if isinstance(entry, dict) and entry.get("ip") and "ipMode" not in entry:
                    entry["ipMode"] = "VIP"
    if resource == "daemonsets" and isinstance(obj.get("spec"), dict):
        strategy = obj["spec"].setdefault("updateStrategy", {})
        if isinstance(strategy, dict) and strategy.setdefault("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("rollingUpdate", {"maxUnavailable": 1, "maxSurge": 0})
        obj["spec"].setdefault("revisionHistoryLimit", 10)
    if resource == "namespaces":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj.setdefault("status", {}).setdefault("phase", "Active")


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return json.loads(json.dumps(patch))
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# Strategic merge patch (a subset of k8s.io/api's patchStrategy/patchMergeKey tags): where the pod spec sits in
# each workload, and the merge key of each list in it; every list not named here is replaced whole.
POD_SPEC_AT = {"pods": ("spec",), "daemonsets": ("spec", "template", "spec"),
               "deployments": ("spec", "template", "spec"), "replicasets": ("spec", "template", "spec"),
               "statefulsets": ("spec", "template", "spec")}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
POD_SPEC_MERGE_KEYS = {"initContainers": "name", "containers": "name", "ephemeralContainers": "name",
                       "volumes": "name", "imagePullSecrets": "name", "hostAliases": "ip",
                       "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
                       "schedulingGates": "name"}
CONTAINER_MERGE_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath",
                        "volumeDevices": "devicePath"}
OTHER_MERGE_KEYS = {("services", ("spec", "ports")): "port", ("serviceaccounts", ("secrets",)): "name"}


class PatchError(Exception):
    pass


def list_merge_key(resource, path):
    """How a strategic merge patch merges the list at path (field names from the object's root): its merge key
    (objects merged by it), "" (scalars merged as a set: metadata.finalizers) or None (replaced whole)."""
    if path == ("metadata", "finalizers"):
        return ""
    if path == ("metadata", "ownerReferences"):
        return "uid"
    pod = POD_SPEC_AT.get(resource)
    if pod and path[:len(pod)] == pod:
        rest = path[len(pod):]
        if len(rest) == 1:
            return POD_SPEC_MERGE_KEYS.get(rest[0])
        if len(rest) == 2 and rest[0] in CONTAINER_LISTS:
            return CONTAINER_MERGE_KEYS.get(rest[1])
    return OTHER_MERGE_KEYS.get((resource, path))


def strategic_merge(resource, target, patch, path=()):
    """A strategic merge patch (map) applied to target; None when the patch says {"$patch": "delete"}. Directives:
    $patch (replace, delete, merge), $retainKeys, $setElementOrder/F, $deleteFromPrimitiveList/F."""
    target = target if isinstance(target, dict) else {}
    directive = patch.get("$patch", "merge")
    if directive == "delete":
        return None
    if directive == "replace":
        return strategic_merge(resource, {}, {k: v for k, v in patch.items() if k != "$patch"}, path)
    if directive != "merge":
        raise PatchError(f"Unknown patch type: {directive}")
    result = dict(target)
    if "$retainKeys" in patch:
        result = {k: v for k, v in result.items() if k in patch["$retainKeys"]}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [x for x in result[field] if x not in v]
        elif v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge(resource, result.get(k), v, path + (k,))
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        elif isinstance(v, list):
            result[k] = merge_list(resource, result.get(k), v, path + (k,))
        else:
            result[k] = v
    for k, order in patch.items():
        field = k.split("/", 1)[1] if k.startswith("$setElementOrder/") else None
        key = list_merge_key(resource, path + (field,)) if field else None
        if key is not None and isinstance(result.get(field), list) and isinstance(order, list):
            result[field] = in_order(result[field], order, key)
    return result


def merge_list(resource, target, patch, path):
    key = list_merge_key(resource, path)
    if key is None:
        return json.loads(json.dumps(patch))
    target = list(target) if isinstance(target, list) else []
    if key == "":
        return target + [x for x in patch if x not in target]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [strategic_merge(resource, {}, item, path) for item in patch if "$patch" not in item]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        at = next((i for i, old in enumerate(target) if isinstance(old, dict) and old.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                del target[at]
        elif at is None:
            target.append(strategic_merge(resource, {}, item, path))
        else:
            target[at] = strategic_merge(resource, target[at], item, path)
    return target


def in_order(items, order, key):
    """items with those $setElementOrder names sorted as it says; the others (the server's own) keep their places."""
    ident = (lambda x: x.get(key) if isinstance(x, dict) else None) if key else (lambda x: x)
    rank = {(o.get(key) if key and isinstance(o, dict) else o): i for i, o in enumerate(order)}
    slots = [i for i, x in enumerate(items) if ident(x) in rank]
    result = list(items)
    for i, x in zip(slots, sorted((items[i] for i in slots), key=lambda x: rank[ident(x)])):
        result[i] = x
    return result


# Strict field validation (fieldValidation=Strict, as kubectl sends by default) knows these fields only: the
# top-level ones of the RESOURCES above, ObjectMeta's, and those of the pod spec's containers and of their
# securityContext; anything deeper is not checked.
META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields"}
CONTAINER_FIELDS = {"name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
                    "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices", "livenessProbe",
                    "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
                    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty"}
SECURITY_CONTEXT_FIELDS = {"capabilities", "privileged", "seLinuxOptions", "windowsOptions", "runAsUser",
                           "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation",
                           "procMount", "seccompProfile"}


def unknown_fields(api, resource, obj):
    """(the map, its key, the path as kube-apiserver names it) of every field the API server would not know."""
    known = TOP_FIELDS.get((api, resource))
    if known is None:
        return []
    found = [(obj, k, k) for k in obj if k not in known]
    if isinstance(obj.get("metadata"), dict):
        found += [(obj["metadata"], k, "metadata." + k) for k in obj["metadata"] if k not in META_FIELDS]
    spec, at = obj, POD_SPEC_AT.get(resource, ())
    for field in at:
        spec = spec.get(field) if isinstance(spec, dict) else None
    if not at or not isinstance(spec, dict):
        return found
    security = SECURITY_CONTEXT_FIELDS | ({"appArmorProfile"} if KUBE_MINOR >= 30 else set())
    for field in CONTAINER_LISTS:
        containers = spec.get(field)
        for i, c in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(c, dict):
                continue
            where = f"{'.'.join(at)}.{field}[{i}]"
            fields = CONTAINER_FIELDS | ({"targetContainerName"} if field == "ephemeralContainers" else set())
            found += [(c, k, f"{where}.{k}") for k in c if k not in fields]
            if isinstance(c.get("securityContext"), dict):
                found += [(c["securityContext"], k, f"{where}.securityContext.{k}") for k in c["securityContext"]
                          if k not in security]
    return found


def field_validation(api, resource, obj, q):
    """The fieldValidation query parameter applied to obj: (None, warnings), unknown fields dropped for Warn and
    Ignore; or ((400, Status), []) for Strict. Without the parameter nothing is checked or dropped (kube-apiserver
    would Warn: the stand-in keeps what its older clients stored)."""
    mode = q.get("fieldValidation", [""])[0]
    if not mode:
        return None, []
    if mode not in ("Strict", "Warn", "Ignore"):
        return (400, status(400, "BadRequest", f"fieldValidation: Unsupported value: {json.dumps(mode)}")), []
    found = unknown_fields(api, resource, obj)
    if found and mode == "Strict":
        kind, version = KINDS.get(resource, resource), api.split("/")[-1]
        return (400, status(400, "BadRequest", f'{kind} in version "{version}" cannot be handled as a {kind}: '
                            "strict decoding error: " + ", ".join(f'unknown field "{p}"' for _, _, p in found))), []
    for where, key, _ in found:
        where.pop(key, None)
    return None, [f'unknown field "{p}"' for _, _, p in found] if mode == "Warn" else []

def without_rv(obj):
    o = json.loads(json.dumps(obj))
    o.get("metadata", {}).pop("resourceVersion", None)
    return o


EVENT_TTL = 3600.0
EVENT_WRITTEN = {}  # (api, ns, name) -> time of the Event's last write


def expire_events(now=None, everything=False):
    """Deletes the Events whose TTL passed (under STORE.cond)."""
    now = time.time() if now is None else now
    for (api, resource), coll in STORE.objects.items():
        if resource != "events":
            continue
        for (ns, name) in list(coll):
            written = EVENT_WRITTEN.get((api, ns, name), now)
            if everything or now - written >= EVENT_TTL:
                old = coll.pop((ns, name))
                EVENT_WRITTEN.pop((api, ns, name), None)
                old["metadata"]["resourceVersion"] = str(STORE.bump())
                STORE.record(api, resource, ns, "DELETED", old)


def group_versions():
    """{group/version: [its RESOURCES]}, in the table's order."""
    gvs = {}
    for r in RESOURCES:
        gvs.setdefault(r[0], []).append(r)
    return gvs


def discovery(path):
    """The unaggregated discovery documents (/api, /apis, /api/v1, /apis/GROUP[/VERSION]), or None. kubectl asks
    for the aggregated form (apidiscovery.k8s.io/v2) by its Accept header and falls back to these when the answer
    is plain application/json."""
    gvs = group_versions()
    groups = {}
    for gv in gvs:
        if "/" in gv:
            g, v = gv.split("/")
            groups.setdefault(g, []).append({"groupVersion": gv, "version": v})
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": vs, "preferredVersion": vs[0]} for g, vs in groups.items()]}
    gv = "v1" if path == "/api/v1" else path[len("/apis/"):] if path.startswith("/apis/") else None
    if gv in groups:
        return {"kind": "APIGroup", "apiVersion": "v1", "name": gv, "versions": groups[gv],
                "preferredVersion": groups[gv][0]}
    if gv not in gvs:
        return None
    resources = []
    for _, name, kind, namespaced, short, has_status, _ in gvs[gv]:
        resources.append({"name": name, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                          "verbs": VERBS, "shortNames": short})
        if has_status:
            resources.append({"name": name + "/status", "singularName": "", "namespaced": namespaced,
                              "kind": kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def openapi_v3(path):
    """The OpenAPI v3 index (/openapi/v3) and per group/version documents, or None. A document lists only the
    PATCH operation of each resource with its fieldValidation parameter: all kubectl looks for to decide that the
    server validates fields (it then sends fieldValidation=Strict instead of validating with a schema itself), and
    no schemas (kubectl computes its strategic merge patches from its compiled-in types)."""
    gvs = group_versions()
    docs = {("api/" if gv == "v1" else "apis/") + gv: gv for gv in gvs}
    if path == "/openapi/v3":
        return {"paths": {p: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (p, hashlib.sha256(
            json.dumps(openapi_v3("/openapi/v3/" + p)).encode()).hexdigest()[:16].upper())} for p in docs}}
    gv = docs.get(path[len("/openapi/v3/"):]) if path.startswith("/openapi/v3/") else None
    if gv is None:
        return None
    group, version = gv.split("/") if "/" in gv else ("", gv)
    paths = {}
    for _, name, kind, namespaced, _, _, _ in gvs[gv]:
        at = "/" + ("api/" if gv == "v1" else "apis/") + gv + ("/namespaces/{namespace}/" if namespaced else "/")
        paths[at + name + "/{name}"] = {"patch": {
            "operationId": f"patch{kind}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": f"v1.{KUBE_MINOR}.0"}, "paths": paths,
            "components": {"schemas": {}}}


def age(timestamp):
    """A creationTimestamp as kubectl's AGE column writes it (the Table's cells are strings)."""
    try:
        seconds = int(time.time() - calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return "<unknown>"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return "%d%s" % (seconds // size, unit)
    return "%ds" % max(seconds, 0)


POD_COLUMNS = [("Name", "string", "name", 0), ("Ready", "string", "", 0), ("Status", "string", "", 0),
               ("Restarts", "string", "", 0), ("Age", "string", "", 0), ("IP", "string", "", 1),
               ("Node", "string", "", 1), ("Nominated Node", "string", "", 1), ("Readiness Gates", "string", "", 1)]


def pod_table(pods, list_meta):
    """The meta.k8s.io/v1 Table of a pod list, with kube-apiserver's pod columns (priority 1: -o wide's)."""
    rows = []
    for pod in pods:
        meta, spec, st = pod["metadata"], pod.get("spec", {}), pod.get("status", {})
        statuses = st.get("containerStatuses", [])
        ready = sum(1 for c in statuses if c.get("ready"))
        restarts = sum(c.get("restartCount", 0) for c in statuses)
        phase = "Terminating" if meta.get("deletionTimestamp") else st.get("phase", "Pending")
        cells = [meta["name"], "%d/%d" % (ready, len(spec.get("containers", []))), phase, str(restarts),
                 age(meta.get("creationTimestamp")), st.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
                 st.get("nominatedNodeName") or "<none>", "<none>"]
        partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        rows.append({"cells": cells, "object": partial})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": [{"name": n, "type": t, "format": f, "description": n, "priority": p}
                                  for n, t, f, p in POD_COLUMNS],
            "rows": rows}


def version_info():
    return {"major": "1", "minor": str(KUBE_MINOR), "gitVersion": f"v1.{KUBE_MINOR}.0", "platform": "linux/amd64",
            "gitCommit": "apiserver-standin", "gitTreeState": "clean", "buildDate": "2024-01-01T00:00:00Z",
            "goVersion": "go1.23", "compiler": "gc"}

NAMESPACE_CLEANUP_DELAY = 1.0  # seconds from a Namespace's DELETE to its removal (the namespace controller's work)


def remove_namespace(name, uid):
    """The namespace controller's end result: every object in the Namespace deleted, then the Namespace."""
    with STORE.cond:
        namespace = STORE.objects.get(("v1", "namespaces"), {}).get((None, name))
        if not namespace or namespace["metadata"]["uid"] != uid:
            return
        for (api, resource), coll in STORE.objects.items():
            for key in [k for k in coll if k[0] == name]:
                old = coll.pop(key)
                EVENT_WRITTEN.pop((api, name, key[1]), None)
                old["metadata"]["resourceVersion"] = str(STORE.bump())
                STORE.record(api, resource, name, "DELETED", old)
        del STORE.objects[("v1", "namespaces")][(None, name)]
        namespace["metadata"]["resourceVersion"] = str(STORE.bump())
        STORE.record("v1", "namespaces", None, "DELETED", namespace)

STORE = Store()
BOOKMARK_INTERVAL = 60.0  # kube-apiserver sends a bookmark about once a minute on a quiet watch
TOKEN = None
REQUEST_LOG = None
COMMIT_LOG = None


# The field labels a fieldSelector may name: every resource's, and the pods' spec.nodeName (kube-apiserver's pod
# field set has more; this one finds a node's pod, as docs/metal3.md's check does).
FIELD_LABELS = ("metadata.name", "metadata.namespace")
RESOURCE_FIELD_LABELS = {"pods": ("spec.nodeName",)}


def selector(q, resource):
    """The labelSelector (equality terms only) and fieldSelector (FIELD_LABELS and the resource's, = or == or !=,
    as kubectl's waits use) of a query; ValueError for another field."""
    labels = {}
    for term in q.get("labelSelector", [""])[0].split(","):
        if "=" in term:
            k, v = term.split("=", 1)
            labels[k.strip()] = v.strip()
    fields = []
    for term in q.get("fieldSelector", [""])[0].split(","):
        m = re.match(r"^\s*([^=!\s]+)\s*(!=|==|=)\s*(.*?)\s*$", term)
        if not term.strip():
            continue
        if not m or m.group(1) not in FIELD_LABELS + RESOURCE_FIELD_LABELS.get(resource, ()):
            raise ValueError(f"field label not supported: {term.split('=')[0].rstrip('!')}")
        fields.append((tuple(m.group(1).split(".")), m.group(2) == "!=", m.group(3)))
    return labels, fields


def matches(obj, terms):
    labels, fields = terms
    have = (obj.get("metadata") or {}).get("labels") or {}
    return isinstance(have, dict) and all(have.get(k) == v for k, v in labels.items()) and \
        all((((obj.get(part) or {}).get(key) or "") == v) != negated for (part, key), negated, v in fields)


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without TCP_NODELAY each answer waits for a delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        if not self.server.internal:
            with STORE.cond:
                STORE.connections += 1

    def send_json(self, code, obj, warnings=()):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for w in warnings:
            self.send_header("Warning", "299 - " + json.dumps(w))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        return json.loads(raw)

    def route(self):
        u = urlparse(self.path)
        m = PATH_RE.match(u.path)
        if not m:
            return None, u
        api = "v1" if m.group("core") else m.group("group") + "/" + m.group("version")
        return (api, m.group("resource"), m.group("ns"), m.group("name"), bool(m.group("status"))), u

    def authorized(self):
        if REQUEST_LOG and not self.headers.get("X-Standin-Test"):
            with STORE.cond:
                with open(REQUEST_LOG, "a") as f:
                    f.write("%s %s\tua=%s\n" % (self.command, self.path, self.headers.get("User-Agent", "")))
        with STORE.cond:
            expire_events()
            offline = STORE.offline and not self.headers.get("X-Standin-Test")
            STORE.last_auth = self.headers.get("Authorization", "")
            try:
                peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
            except ValueError:
                peer = None
            if peer:
                STORE.client_cn = dict(x[0] for x in peer.get("subject", ())).get("commonName", "")
        if offline:
            self.abrupt_close()
            return False
        with STORE.cond:
            throttled = STORE.throttle > 0 and not self.headers.get("X-Standin-Test")
            if throttled:
                STORE.throttle -= 1
        if throttled:
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            data = (json.dumps(status(429, "TooManyRequests", "too many requests, please try again later")) +
                    "\n").encode()
            self.send_response(429)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", str(STORE.retry_after))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return False
        if TOKEN is None or self.headers.get("Authorization") == "Bearer " + TOKEN:
            return True
        self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        return False

    # --- test control ---
    def control(self, method):
        u = urlparse(self.path)
        op = u.path[len("/_test/"):]
        try:
            args = self.body() if method == "POST" else {}
        except ValueError:
            args = {}
        with STORE.cond:
            if op == "state":
                res = {"rv": STORE.rv, "compacted": STORE.compacted, "watches": STORE.watches, "lists_paged": STORE.lists_paged,
                       "auth": STORE.last_auth, "connections": STORE.connections, "client_cn": STORE.client_cn,
                       "h2_connections": STORE.h2_connections, "h2_streams": STORE.h2_streams}
            elif op == "compact":
                STORE.compacted = int(args.get("rv", STORE.rv))
                STORE.log = STORE.since(STORE.compacted)
                STORE.log_rvs = [e[0] for e in STORE.log]
                res = {"compacted": STORE.compacted}
            elif op == "drop-watches":
                STORE.drop_gen += 1
                res = {}
            elif op == "throttle":
                STORE.throttle = int(args.get("count", 1))
                STORE.retry_after = int(args.get("retry_after", 1))
                res = {}
            elif op == "stall-watches":
                STORE.stall_gen += 1
                res = {}
            elif op == "truncate":
                STORE.truncate_gen += 1
                res = {}
            elif op == "garbage":
                STORE.garbage.append((len(STORE.garbage) + 1, args.get("line", "{this is not json")))
                res = {}
            elif op == "gone-as-http":
                STORE.gone_as_http = bool(args.get("on", True))
                res = {"on": STORE.gone_as_http}
            elif op == "conflict-writes":
                STORE.conflict_writes = int(args.get("count", 1))
                res = {}
            elif op == "offline":
                STORE.offline = bool(args.get("on", True))
                if STORE.offline:
                    STORE.drop_gen += 1
                res = {"on": STORE.offline}
            elif op == "garbage-writes":
                STORE.garbage_writes = int(args.get("count", 1))
                res = {}
            elif op == "garbage-list":
                STORE.garbage_lists = int(args.get("count", 1))
                res = {}
            elif op == "expire-continues":
                STORE.continues.clear()
                STORE.expire_continues = int(args.get("count", 0))
                res = {}
            elif op == "expire-events":
                expire_events(everything=True)
                res = {}
            elif op == "block-watches":
                STORE.block_watches = bool(args.get("on", True))
                res = {"on": STORE.block_watches}
            else:
                self.send_json(404, status(404, "NotFound", "unknown test operation " + op))
                return
            STORE.cond.notify_all()
        res["ok"] = True
        self.send_json(200, res)

    # --- API ---
    def websocket_frame(self, opcode, payload):
        """One unmasked server frame (RFC 6455 5.2), FIN set."""
        n = len(payload)
        if n < 126:
            head = bytes([0x80 | opcode, n])
        elif n < 65536:
            head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
        self.wfile.write(head + payload)
        self.wfile.flush()

    def pod_container(self, m, q):
        """The container of pod m that request q names (?container=, else the pod's first), as the API server
        checks it for exec and logs: None after answering 404 (no such pod) or 400 (no such container)."""
        with STORE.cond:
            pod = STORE.objects.get(("v1", "pods"), {}).get((m["ns"], m["name"]))
        if pod is None:
            self.send_json(404, status(404, "NotFound", f'pods "{m["name"]}" not found'))
            return None
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = q.get("container", containers[:1])[0] if containers else ""
        if container not in containers:
            self.send_json(400, status(400, "BadRequest", f"container {container} is not valid for pod {m['name']}"))
            return None
        return container

    def exec_in_pod(self, m):
        """kubectl exec over a WebSocket (see --exec-hook)."""
        q = parse_qs(urlparse(self.path).query)
        asked = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        protocol = next((p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in asked), None)
        key = self.headers.get("Sec-WebSocket-Key")
        # The pod and container first, as the API server checks them before any upgrade: kubectl's SPDY fallback
        # then gets the same answer.
        container = self.pod_container(m, q)
        if container is None:
            return
        if self.headers.get("Upgrade", "").lower() != "websocket" or not key or not protocol:
            return self.send_json(400, status(400, "BadRequest", "exec: only WebSocket (v4/v5.channel.k8s.io) is served"))
        if any(q.get(f, ["false"])[0] in ("1", "true") for f in ("stdin", "tty")) or not q.get("command"):
            return self.send_json(400, status(400, "BadRequest", "exec: a command, without stdin or tty, is served"))
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.wfile.flush()
        run = subprocess.run([EXEC_HOOK, m["ns"], m["name"], container] + q["command"], capture_output=True,
                             timeout=60)
        for channel, data in ((1, run.stdout), (2, run.stderr)):
            if data:
                self.websocket_frame(0x2, bytes([channel]) + data)
        if run.returncode == 0:
            result = {"metadata": {}, "status": "Success"}
        else:
            result = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                      "message": f"command terminated with non-zero exit code: {run.returncode}",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(run.returncode)}]}}
        self.websocket_frame(0x2, b"\x03" + json.dumps(result).encode())
        self.websocket_frame(0x8, (1000).to_bytes(2, "big"))
        self.close_connection = True

    def pod_log(self, m):
        """kubectl logs (see --pod-logs)."""
        q = parse_qs(urlparse(self.path).query)
        container = self.pod_container(m, q)
        if container is None:
            return
        if any(q.get(f, ["false"])[0] in ("1", "true") for f in ("follow", "previous")):
            return self.send_json(400, status(400, "BadRequest", "logs: follow and previous are not served"))
        try:
            with open(os.path.join(POD_LOGS, "%s_%s_%s.log" % (m["ns"], m["name"], container)), "rb") as f:
                lines = f.read().splitlines(keepends=True)
        except FileNotFoundError:
            return self.send_json(400, status(400, "BadRequest", f'container "{container}" in pod "{m["name"]}" '
                                              "is waiting to start"))
        tail = int(q.get("tailLines", ["-1"])[0])
        data = b"".join(lines[-tail:] if tail >= 0 else lines) if tail != 0 else b""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/_test/"):
            return self.control("GET")
        if not self.authorized():
            return
        exec_path = EXEC_HOOK and EXEC_RE.match(urlparse(self.path).path)
        if exec_path:
            return self.exec_in_pod(exec_path)
        log_path = POD_LOGS and LOG_RE.match(urlparse(self.path).path)
        if log_path:
            return self.pod_log(log_path)
        r, u = self.route()
        if not r:
            if u.path == "/version":
                return self.send_json(200, version_info())
            doc = discovery(u.path.rstrip("/")) or openapi_v3(u.path.rstrip("/"))
            if doc:
                return self.send_json(200, doc)
            return self.send_json(404, status(404, "NotFound", "no such path " + u.path))
        api, resource, ns, name, _ = r
        q = parse_qs(u.query)
        try:
            terms = selector(q, resource)
        except ValueError as e:
            return self.send_json(400, status(400, "BadRequest", str(e)))
        if name:
            with STORE.cond:
                obj = STORE.objects.get((api, resource), {}).get((ns, name))
            if obj is None:
                return self.send_json(404, status(404, "NotFound", f'{resource} "{name}" not found'))
            return self.send_json(200, obj)
        if q.get("watch", ["0"])[0] in ("1", "true"):
            return self.watch(api, resource, ns, q, terms)
        with STORE.cond:
            if STORE.garbage_lists > 0:
                STORE.garbage_lists -= 1
                data = b'{"kind": "ServiceList", "items": [{"metadata": '
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            token = q.get("continue", [""])[0]
            if token:
                page = STORE.continues.pop(token, None)
                if STORE.expire_continues > 0:
                    STORE.expire_continues -= 1
                    page = None
                if page is None or page[0] < STORE.compacted:
                    return self.send_json(410, status(410, "Expired", "The provided continue parameter is too old "
                                                      "to display a consistent list result. You can start a new "
                                                      "list without the continue parameter."))
                rv, items = page
            else:
                items = [o for (ons, _), o in sorted(STORE.objects.get((api, resource), {}).items())
                         if (ns is None or ons == ns) and matches(o, terms)]
                rv = STORE.rv
            try:
                limit = int(q.get("limit", ["0"])[0])
            except ValueError:
                return self.send_json(400, status(400, "BadRequest", "limit must be an integer"))
            meta = {"resourceVersion": str(rv)}
            if 0 < limit < len(items):
                items, rest = items[:limit], items[limit:]
                token = uuid.uuid4().hex
                STORE.continues[token] = (rv, rest)
                meta.update({"continue": token, "remainingItemCount": len(rest)})
                if "continue" not in q:
                    STORE.lists_paged += 1
        if resource == "pods" and "as=Table;v=v1;g=meta.k8s.io" in self.headers.get("Accept", "").replace(" ", ""):
            return self.send_json(200, pod_table(items, meta))
        self.send_json(200, {"kind": KINDS.get(resource, resource.capitalize()) + "List", "apiVersion": api,
                             "metadata": meta, "items": items})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def peer_closed(self):
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def abrupt_close(self):
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def watch(self, api, resource, ns, q, terms):
        rv_param = q.get("resourceVersion", [""])[0]
        bookmarks = q.get("allowWatchBookmarks", ["false"])[0] in ("1", "true")
        timeout = float(q.get("timeoutSeconds", ["1800"])[0])
        with STORE.cond:
            if STORE.block_watches:
                return self.send_json(503, status(503, "ServiceUnavailable", "watches blocked by test"))
            try:
                since = int(rv_param) if rv_param not in ("", "0") else None
            except ValueError:
                return self.send_json(400, status(400, "BadRequest", "invalid resourceVersion"))
            expired = since is not None and since < STORE.compacted
            if expired and STORE.gone_as_http:
                return self.send_json(410, status(410, "Expired", f"too old resource version: {since}"))
            initial = []
            if since is None:
                initial = [("ADDED", o) for (ons, _), o in sorted(STORE.objects.get((api, resource), {}).items())
                           if (ns is None or ons == ns) and matches(o, terms)]
                since = STORE.rv
            drop_gen, trunc_gen, garbage_seen = STORE.drop_gen, STORE.truncate_gen, len(STORE.garbage)
            stall_gen = STORE.stall_gen
            STORE.watches += 1
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if expired:
                self.chunk((json.dumps({"type": "ERROR", "object": status(
                    410, "Expired", f"too old resource version: {since} ({STORE.compacted})")}) + "\n").encode())
                self.wfile.write(b"0\r\n\r\n")
                return
            for typ, o in initial:
                self.chunk((json.dumps({"type": typ, "object": o}) + "\n").encode())
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + BOOKMARK_INTERVAL
            while True:
                if self.peer_closed():
                    self.close_connection = True
                    return
                with STORE.cond:
                    stalled = STORE.stall_gen != stall_gen
                if stalled:
                    # Stuck: the connection stays open, nothing more is sent (no event, no bookmark, no end).
                    time.sleep(0.1)
                    continue
                with STORE.cond:
                    # Wait only when nothing arrived while this thread was busy writing: a notify it missed
                    # must not cost a whole wait.
                    if not (STORE.log_rvs and STORE.log_rvs[-1] > since) and STORE.drop_gen == drop_gen \
                            and STORE.truncate_gen == trunc_gen and len(STORE.garbage) == garbage_seen:
                        STORE.cond.wait(0.05)
                    if STORE.stall_gen != stall_gen:
                        continue  # stalled while it waited: what arrived meanwhile stays unsent
                    events = [e for e in STORE.since(since) if e[1] == api and e[2] == resource
                              and (ns is None or e[3] == ns) and matches(e[5], terms)]
                    if STORE.log and STORE.log[-1][0] > since:
                        since = STORE.log[-1][0]
                    drop = STORE.drop_gen != drop_gen or (STORE.offline and not self.headers.get("X-Standin-Test"))
                    trunc = STORE.truncate_gen != trunc_gen
                    garbage = [line for _, line in STORE.garbage[garbage_seen:]]
                    garbage_seen = len(STORE.garbage)
                    current = STORE.rv
                for e in events:
                    self.chunk((json.dumps({"type": e[4], "object": e[5]}) + "\n").encode())
                for line in garbage:
                    self.chunk((line + "\n").encode())
                if trunc:
                    half = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "half"}}})
                    self.chunk(half[: len(half) // 2].encode())
                    return self.abrupt_close()
                if drop:
                    return self.abrupt_close()
                now = time.monotonic()
                if bookmarks and now >= next_bookmark:
                    next_bookmark = now + BOOKMARK_INTERVAL
                    self.chunk((json.dumps({"type": "BOOKMARK", "object": {
                        "kind": KINDS.get(resource, "Object"), "apiVersion": api,
                        "metadata": {"resourceVersion": str(current)}}}) + "\n").encode())
                if now >= deadline:
                    self.wfile.write(b"0\r\n\r\n")
                    return
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            with STORE.cond:
                STORE.watches -= 1

    def garbage_write(self):
        """Answers a write with 200 and a malformed body when the test asked for that."""
        with STORE.cond:
            if STORE.garbage_writes <= 0:
                return False
            STORE.garbage_writes -= 1
        self.body()
        data = b'{"apiVersion": "v1", "metadata": ['
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return True

    def do_POST(self):
        if self.path.startswith("/_test/"):
            return self.control("POST")
        if not self.authorized():
            return
        exec_path = EXEC_HOOK and EXEC_RE.match(urlparse(self.path).path)
        if exec_path:
            return self.exec_in_pod(exec_path)
        if self.garbage_write():
            return
        r, u = self.route()
        if not r or r[3]:
            return self.send_json(405, status(405, "MethodNotAllowed", "POST only on collections"))
        api, resource, ns, _, _ = r
        try:
            obj = self.body()
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", "body is not JSON"))
        if not isinstance(obj, dict):
            return self.send_json(400, status(400, "BadRequest", "body is not an object"))
        refusal, warnings = field_validation(api, resource, obj, parse_qs(u.query))
        if refusal:
            return self.send_json(*refusal)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            else:
                return self.send_json(422, status(422, "Invalid", "metadata.name: Required value"))
        name = meta["name"]
        if meta.get("resourceVersion"):
            return self.send_json(500, status(500, "InternalError",
                                              "resourceVersion should not be set on objects to be created"))
        bad = validate(resource, obj)
        if bad:
            return self.send_json(*bad)
        default(resource, obj)
        with STORE.cond:
            coll = STORE.objects.setdefault((api, resource), {})
            if (ns, name) in coll:
                return self.send_json(409, status(409, "AlreadyExists", f'{resource} "{name}" already exists'))
            namespace = STORE.objects.get(("v1", "namespaces"), {}).get((None, ns))
            if namespace and namespace["metadata"].get("deletionTimestamp"):
                return self.send_json(403, status(403, "Forbidden", f'{resource} "{name}" is forbidden: unable to '
                                                  f'create new content in namespace {ns} because it is being '
                                                  'terminated'))
            if resource == "events":
                EVENT_WRITTEN[(api, ns, name)] = time.time()
            meta["resourceVersion"] = str(STORE.bump())
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if resource in GENERATION_RESOURCES:
                meta["generation"] = 1
            if ns:
                meta["namespace"] = ns
            obj.setdefault("apiVersion", api)
            obj.setdefault("kind", KINDS.get(resource, resource.capitalize()))
            coll[(ns, name)] = obj
            STORE.record(api, resource, ns, "ADDED", obj)
        self.send_json(201, obj, warnings)

    def do_PUT(self):
        if not self.authorized() or self.garbage_write():
            return
        with STORE.cond:
            conflict = STORE.conflict_writes > 0
            if conflict:
                STORE.conflict_writes -= 1
        if conflict:
            self.body()
            return self.send_json(409, status(409, "Conflict", "the object has been modified (injected by the test)"))
        r, u = self.route()
        if not r or not r[3]:
            return self.send_json(405, status(405, "MethodNotAllowed", "PUT only on objects"))
        api, resource, ns, name, is_status = r
        try:
            obj = self.body()
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", "body is not JSON"))
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return self.send_json(400, status(400, "BadRequest", "body is not an object with metadata"))
        if obj["metadata"].get("name", name) != name:
            return self.send_json(400, status(400, "BadRequest", "metadata.name does not match the path"))
        refusal, warnings = field_validation(api, resource, obj, parse_qs(u.query))
        if refusal:
            return self.send_json(*refusal)
        with STORE.cond:
            old, refusal = stored_for_write(api, resource, ns, name, obj["metadata"].get("resourceVersion"))
            if refusal:
                return self.send_json(*refusal)
            if is_status:
                new = json.loads(json.dumps(old))
                new["status"] = obj.get("status", {})
            else:
                new = obj
                new["metadata"]["uid"] = old["metadata"]["uid"]
                new["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"]
                if ns:
                    new["metadata"]["namespace"] = ns
                new.setdefault("apiVersion", old.get("apiVersion"))
                new.setdefault("kind", old.get("kind"))
                if "status" in old:
                    new["status"] = old["status"]
            code, answer = self.commit(api, resource, ns, name, old, new)
        self.send_json(code, answer, warnings)

    def commit(self, api, resource, ns, name, old, new):
        """Stores an update (under STORE.cond): validated, defaulted; a no-op keeps the resourceVersion. The server
        owns metadata.generation: one more when .spec changed."""
        new["metadata"]["name"] = name
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        for owned in ("generation", "deletionTimestamp"):
            new["metadata"].pop(owned, None)
            if owned in old["metadata"]:
                new["metadata"][owned] = old["metadata"][owned]
        bad = validate(resource, new)
        if bad:
            return bad
        default(resource, new)
        if resource in GENERATION_RESOURCES and new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
        if without_rv(new) == without_rv(old):
            return 200, old
        new["metadata"]["resourceVersion"] = str(STORE.bump())
        STORE.objects[(api, resource)][(ns, name)] = new
        if resource == "events":
            EVENT_WRITTEN[(api, ns, name)] = time.time()
        STORE.record(api, resource, ns, "MODIFIED", new)
        return 200, new

    def do_PATCH(self):
        if not self.authorized() or self.garbage_write():
            return
        r, u = self.route()
        if not r or not r[3]:
            return self.send_json(405, status(405, "MethodNotAllowed", "PATCH only on objects"))
        api, resource, ns, name, is_status = r
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            patch = self.body()
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", "body is not JSON"))
        if kind not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return self.send_json(415, status(415, "UnsupportedMediaType",
                                              f"the body of the request was in an unknown format - accepted media "
                                              f"types include: application/merge-patch+json, "
                                              f"application/strategic-merge-patch+json (got {kind!r})"))
        if not isinstance(patch, dict):
            return self.send_json(400, status(400, "BadRequest", "a merge patch must be an object"))
        with STORE.cond:
            old, refusal = stored_for_write(api, resource, ns, name, (patch.get("metadata") or {}).get("resourceVersion"))
            if refusal:
                return self.send_json(*refusal)
            if kind == "application/merge-patch+json":
                patched = merge_patch(json.loads(json.dumps(old)), patch)
            else:
                try:
                    patched = strategic_merge(resource, json.loads(json.dumps(old)), patch) or {}
                except PatchError as e:
                    return self.send_json(400, status(400, "BadRequest", str(e)))
            refusal, warnings = field_validation(api, resource, patched, parse_qs(u.query))
            if refusal:
                return self.send_json(*refusal)
            if is_status:
                new = json.loads(json.dumps(old))
                if "status" in patched:
                    new["status"] = patched["status"]
                else:
                    new.pop("status", None)
            else:
                new = patched
                new.setdefault("metadata", {})
                for keep in ("uid", "creationTimestamp", "namespace"):
                    if keep in old["metadata"]:
                        new["metadata"][keep] = old["metadata"][keep]
                if "status" in old:
                    new["status"] = old["status"]
            code, answer = self.commit(api, resource, ns, name, old, new)
        self.send_json(code, answer, warnings)

    def do_DELETE(self):
        """Removes the object (a DeleteOptions' propagationPolicy is accepted; nothing is owned, so there is nothing
        to collect). A Namespace is first marked (deletionTimestamp, phase Terminating) and removed with everything
        in it NAMESPACE_CLEANUP_DELAY later, as the namespace controller does."""
        if not self.authorized():
            return
        r, u = self.route()
        if not r or not r[3]:
            return self.send_json(405, status(405, "MethodNotAllowed", "DELETE only on objects"))
        api, resource, ns, name, _ = r
        try:
            options = self.body()
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", "body is not JSON"))
        want_rv = ((options or {}).get("preconditions") or {}).get("resourceVersion")
        with STORE.cond:
            old, refusal = stored_for_write(api, resource, ns, name, want_rv)
            if refusal:
                return self.send_json(*refusal)
            if (api, resource) == ("v1", "namespaces"):
                if not old["metadata"].get("deletionTimestamp"):
                    old = json.loads(json.dumps(old))
                    old["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    old.setdefault("status", {})["phase"] = "Terminating"
                    old["metadata"]["resourceVersion"] = str(STORE.bump())
                    STORE.objects[(api, resource)][(ns, name)] = old
                    STORE.record(api, resource, ns, "MODIFIED", old)
                    threading.Timer(NAMESPACE_CLEANUP_DELAY, remove_namespace,
                                    args=(name, old["metadata"]["uid"])).start()
                return self.send_json(200, old)
            old = STORE.objects[(api, resource)].pop((ns, name))
            old["metadata"]["resourceVersion"] = str(STORE.bump())
            STORE.record(api, resource, ns, "DELETED", old)
        self.send_json(200, old)


class H2Connection:
    """One client connection that chose HTTP/2: every stream is forwarded to the internal HTTP/1.1 port and its
    answer streamed back. One thread reads frames; one thread per stream forwards it."""

    # Not forwarded either way: HTTP/1.1 connection headers (RFC 9113 8.2.2).
    HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}

    def __init__(self, sock, internal_port):
        import h2.config
        import h2.connection
        self.sock = sock
        self.internal_port = internal_port
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False,
                                                                         header_encoding="utf-8"))
        self.lock = threading.Condition()
        self.requests = {}  # stream id -> (headers, body bytearray)
        self.reset = set()  # streams the client reset
        self.closed = False

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def run(self):
        import h2.events
        with STORE.cond:
            STORE.h2_connections += 1
        with self.lock:
            self.conn.initiate_connection()
            self.flush()
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                with self.lock:
                    events = self.conn.receive_data(data)
                    for ev in events:
                        if isinstance(ev, h2.events.RequestReceived):
                            self.requests[ev.stream_id] = (dict(ev.headers), bytearray())
                        elif isinstance(ev, h2.events.DataReceived):
                            self.requests[ev.stream_id][1].extend(ev.data)
                            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                        elif isinstance(ev, h2.events.StreamEnded):
                            headers, body = self.requests.pop(ev.stream_id)
                            threading.Thread(target=self.forward, args=(ev.stream_id, headers, bytes(body)),
                                             daemon=True).start()
                        elif isinstance(ev, h2.events.StreamReset):
                            self.reset.add(ev.stream_id)
                        elif isinstance(ev, h2.events.ConnectionTerminated):
                            self.closed = True
                    self.flush()
                    self.lock.notify_all()
                if self.closed:
                    break
        except (OSError, ssl.SSLError):
            pass
        finally:
            with self.lock:
                self.closed = True
                self.lock.notify_all()
            try:
                self.sock.close()
            except OSError:
                pass

    def send(self, stream_id, fn):
        """Runs fn(conn) and sends what it queued; False when the stream or connection is gone."""
        import h2.exceptions
        with self.lock:
            if self.closed or stream_id in self.reset:
                return False
            try:
                fn(self.conn)
                self.flush()
            except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError, OSError):
                return False
            return True

    def send_body(self, stream_id, data):
        """DATA frames within the flow-control windows; waits for WINDOW_UPDATE when they are exhausted."""
        import h2.exceptions
        while data:
            with self.lock:
                while True:
                    if self.closed or stream_id in self.reset:
                        return False
                    try:
                        window = min(self.conn.local_flow_control_window(stream_id),
                                     self.conn.max_outbound_frame_size)
                    except h2.exceptions.StreamClosedError:
                        return False
                    if window > 0:
                        break
                    self.lock.wait(1)
                chunk, data = data[:window], data[window:]
                try:
                    self.conn.send_data(stream_id, chunk)
                    self.flush()
                except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError, OSError):
                    return False
        return True

    def forward(self, stream_id, headers, body):
        import http.client
        with STORE.cond:
            STORE.h2_streams += 1
        method, path = headers.get(":method", "GET"), headers.get(":path", "/")
        out = {k: v for k, v in headers.items() if not k.startswith(":") and k not in self.HOP}
        out["host"] = headers.get(":authority", "localhost")
        backend = http.client.HTTPConnection("127.0.0.1", self.internal_port)
        try:
            backend.request(method, path, body=body or None, headers=out)
            resp = backend.getresponse()
        except OSError:
            self.send(stream_id, lambda c: c.reset_stream(stream_id))
            backend.close()
            return
        answer = [(":status", str(resp.status))] + [(k.lower(), v) for k, v in resp.getheaders()
                                                    if k.lower() not in self.HOP and k.lower() != "content-length"]
        if not self.send(stream_id, lambda c: c.send_headers(stream_id, answer)):
            backend.close()
            return
        # Streamed as it comes: a watch's events reach the client one by one, not at the end.
        while True:
            try:
                chunk = resp.read1(65536)
            except (OSError, http.client.HTTPException):
                self.send(stream_id, lambda c: c.reset_stream(stream_id))
                break
            if not chunk:
                self.send(stream_id, lambda c: c.end_stream(stream_id))
                break
            if not self.send_body(stream_id, chunk):
                break  # the client reset the stream (a watch it stopped) or went away
        backend.close()


class StandInServer(ThreadingHTTPServer):
    """The stand-in's listener; with --h2, a connection that negotiated "h2" is served by H2Connection."""
    daemon_threads = True
    internal = False
    h2_port = None  # the internal HTTP/1.1 port the HTTP/2 streams are forwarded to

    def finish_request(self, request, client_address):
        if self.h2_port and getattr(request, "selected_alpn_protocol", lambda: None)() == "h2":
            H2Connection(request, self.h2_port).run()
            return
        super().finish_request(request, client_address)


class InternalServer(ThreadingHTTPServer):
    daemon_threads = True
    internal = True


def main():
    global BOOKMARK_INTERVAL, TOKEN, REQUEST_LOG, COMMIT_LOG, EVENT_TTL, KUBE_MINOR, EXEC_HOOK, POD_LOGS
    client_ca = None
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    port = int(args[0])
    tls = None
    h2_front = False
    address = "127.0.0.1"
    i = 1
    while i < len(args):
        if args[i] == "--bookmark-interval":
            BOOKMARK_INTERVAL = float(args[i + 1])
            i += 2
        elif args[i] == "--initial-rv":
            STORE.rv = STORE.compacted = int(args[i + 1])
            i += 2
        elif args[i] == "--commit-log":
            COMMIT_LOG = args[i + 1]
            i += 2
        elif args[i] == "--request-log":
            REQUEST_LOG = args[i + 1]
            i += 2
        elif args[i] == "--address":
            address = args[i + 1]
            i += 2
        elif args[i] == "--tls":
            tls = (args[i + 1], args[i + 2])
            i += 3
        elif args[i] == "--client-ca":
            client_ca = args[i + 1]
            i += 2
        elif args[i] == "--event-ttl":
            EVENT_TTL = float(args[i + 1])
            i += 2
        elif args[i] == "--token":
            TOKEN = args[i + 1]
            i += 2
        elif args[i] == "--kubernetes-version":
            KUBE_MINOR = int(args[i + 1].lstrip("v").split(".")[1])
            i += 2
        elif args[i] == "--exec-hook":
            EXEC_HOOK = args[i + 1]
            i += 2
        elif args[i] == "--pod-logs":
            POD_LOGS = args[i + 1]
            i += 2
        elif args[i] == "--h2":
            h2_front = True
            i += 1
        else:
            print("unknown argument " + args[i], file=sys.stderr)
            sys.exit(2)
    if h2_front and not tls:
        print("--h2 needs --tls (HTTP/2 is offered by ALPN)", file=sys.stderr)
        sys.exit(2)
    server = StandInServer((address, port), Handler)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        if client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(client_ca)
        if h2_front:
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            internal = InternalServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=internal.serve_forever, daemon=True).start()
            server.h2_port = internal.server_address[1]
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
