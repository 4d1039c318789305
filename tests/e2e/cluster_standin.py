#!/usr/bin/env python3
"""The rest of a cluster beside the API server stand-in: a kubelet for DaemonSets, one pod slot for a
Deployment, and the EndpointSlice controller, so that a walkthrough's kubectl commands have the effects they
have on a real cluster (tests/e2e/test_metal3_walkthrough.sh).

    cluster_standin.py --api URL --node NAME=NETNS --kubeconfig FILE --runner PROGRAM
                       --pod-slot NODE=IP [--log FILE] [--pod-logs DIR]

What it does, polling the stand-in every 0.3 s (its own requests carry X-Standin-Test, so that the request log
holds the loaders' calls only):
  - DaemonSets (any namespace) run on NODE, the one node of the test: each container of the pod template is
    started by PROGRAM, as `PROGRAM NETNS IMAGE ENVFILE -- COMMAND ARGS...` (ENVFILE: the container's
    environment, one NAME=VALUE per line); init containers first, each to completion (a failed one is retried
    after a back-off, as the kubelet does). The environment is resolved as the kubelet resolves it (value,
    fieldRef spec.nodeName / metadata.namespace / metadata.name, configMapKeyRef, envFrom configMapRef;
    a missing ConfigMap or key keeps the container from starting) and $(VAR) expanded in command and args.
    bpfnet-loader is given --kubeconfig FILE in place of the service account's in-cluster configuration (the
    stand-in speaks plain HTTP on the test's management link). A container whose image is the pause image
    runs nothing. A changed pod template is rolled out: the old pod's containers get SIGTERM and
    terminationGracePeriodSeconds to exit (then SIGKILL), then the new pod starts. A main container that
    exits is restarted after a back-off. Readiness: a readinessProbe httpGet on the node's 127.0.0.1, else
    running. The DaemonSet's status is written as the DaemonSet controller writes it (observedGeneration,
    desired/current/updated/ready/available counts), which `kubectl rollout status` reads, and its pod as a
    Pod object (labels, owner, nodeName, phase, Ready), which `kubectl exec ds/NAME` looks up; the runner gets
    CLUSTER_CONTAINER=POD_CONTAINER to name the container by. A deleted DaemonSet's pod is stopped as above.
    With --pod-logs DIR, each container's output goes to DIR/NAMESPACE_POD_CONTAINER.log (the kubelet's
    /var/log/pods, which the stand-in's --pod-logs serves to `kubectl logs`), the current run's only; without
    it, to the --log file.
  - Deployments: the first one with replicas > 0 and no hostNetwork gets the test's pod (IP on NODE); its
    labels are the template's. No container is run: the test runs the servers in the pod's network namespace
    itself. It is ready once each httpGet readinessProbe of its containers answers on the pod's IP.
  - EndpointSlices: each Service whose selector matches the placed pod (same namespace) gets one slice, as
    the EndpointSlice controller writes it: the pod's address, ready/serving, nodeName, and every Service
    port with the pod's port (a numeric targetPort, or a named one resolved from the containers' ports;
    unresolved names leave the port out, as upstream does). A Service without a matching pod gets a slice
    without endpoints.
"""

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PAUSE_IMAGES = ("registry.k8s.io/pause", "k8s.gcr.io/pause")
POLL_SECONDS = 0.3
BACKOFF_SECONDS = 2.0
INIT_TIMEOUT_SECONDS = 60  # an init container that has not finished by then is killed and retried


class Api:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "X-Standin-Test": "1"})
        try:
            with urllib.request.urlopen(req, timeout=5) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def items(self, path):
        answer = self.call("GET", path)
        return answer.get("items", []) if answer else []


LOG = sys.stderr


def log(what):
    LOG.write("%.3f %s\n" % (time.time(), what))
    LOG.flush()


def expand(text, env):
    """$(VAR) as the kubelet expands it in command and args: $$ is a literal $, an unknown VAR stays."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and ")" in text[i + 2:]:
            end = text.index(")", i + 2)
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


class NotReady(Exception):
    """A container cannot start yet (CreateContainerConfigError): retried."""


def container_env(api, container, namespace, pod_name, node):
    env = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        if ref:
            cm = api.call("GET", "/api/v1/namespaces/%s/configmaps/%s" % (namespace, ref["name"]))
            if cm is None:
                raise NotReady("configmap %s not found" % ref["name"])
            prefix = source.get("prefix", "")
            env.update({prefix + k: v for k, v in cm.get("data", {}).items()})
    for entry in container.get("env", []):
        name = entry["name"]
        if "value" in entry:
            env[name] = expand(entry["value"], env)
            continue
        source = entry.get("valueFrom", {})
        if "fieldRef" in source:
            field = source["fieldRef"]["fieldPath"]
            values = {"spec.nodeName": node, "metadata.namespace": namespace, "metadata.name": pod_name}
            if field not in values:
                raise NotReady("fieldRef %s is not given by this stand-in" % field)
            env[name] = values[field]
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            cm = api.call("GET", "/api/v1/namespaces/%s/configmaps/%s" % (namespace, ref["name"]))
            if cm is None or ref["key"] not in cm.get("data", {}):
                raise NotReady("configmap key %s/%s not found" % (ref["name"], ref["key"]))
            env[name] = cm["data"][ref["key"]]
        else:
            raise NotReady("env %s: a source this stand-in does not give" % name)
    return env


def is_pause(image):
    return image.startswith(PAUSE_IMAGES)


class Node:
    def __init__(self, name, netns, kubeconfig, runner, pod_logs):
        self.name, self.netns, self.kubeconfig, self.runner = name, netns, kubeconfig, runner
        self.pod_logs = pod_logs

    def start(self, api, container, namespace, pod_name, grace):
        """The container's process (None for the pause image); grace: its pod's terminationGracePeriodSeconds."""
        if is_pause(container["image"]):
            return None
        env = container_env(api, container, namespace, pod_name, self.name)
        command = [expand(a, env) for a in container.get("command", [])]
        args = [expand(a, env) for a in container.get("args", [])]
        if not command:
            raise NotReady("container %s has no command (the image's entrypoint is not known here)"
                           % container["name"])
        if os.path.basename(command[0]) == "bpfnet-loader":
            args += ["--kubeconfig", self.kubeconfig]
        fd, envfile = tempfile.mkstemp(prefix="env-", suffix=".list")
        with os.fdopen(fd, "w") as f:
            f.writelines("%s=%s\n" % kv for kv in env.items())
        log("start %s/%s container %s image %s: %s" % (namespace, pod_name, container["name"], container["image"],
                                                      " ".join(command + args)))
        output = LOG
        if self.pod_logs:
            output = open(os.path.join(self.pod_logs, "%s_%s_%s.log" % (namespace, pod_name, container["name"])), "w")
        # CLUSTER_CONTAINER: which pod's container this is, for the runner to name it (kubectl exec finds it so).
        try:
            return subprocess.Popen([self.runner, self.netns, container["image"], envfile, "--"] + command + args,
                                    stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                    env=dict(os.environ, CLUSTER_CONTAINER="%s_%s" % (pod_name, container["name"]),
                                             CLUSTER_STOP_GRACE=str(grace)))
        finally:
            if output is not LOG:
                output.close()

    def http_ok(self, host, port, path):
        return subprocess.run(["ip", "netns", "exec", self.netns, "curl", "-sf", "--max-time", "1", "-o",
                               "/dev/null", "http://%s:%s%s" % (host, port, path)]).returncode == 0


def running(proc):
    """A started container still running (the pause image's None counts: nothing to run)."""
    return proc is not False and (proc is None or proc.poll() is None)


def terminate(proc):
    """SIGTERM to a container's runner, which stops the container (with the grace it was given at start)."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)


def wait_stopped(proc, grace):
    """Waits for a terminated runner, and kills its whole process group only if it outlives the grace."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.wait(timeout=grace + 10)
    except subprocess.TimeoutExpired:
        log("runner %d still running %.0f s after SIGTERM: killed" % (proc.pid, grace + 10))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def template_hash(template):
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


class DaemonPod:
    """The pod of one DaemonSet on the node: its template, its init containers' progress, its processes."""

    def __init__(self, ds):
        self.template = ds["spec"]["template"]
        self.hash = template_hash(self.template)
        self.namespace = ds["metadata"]["namespace"]
        self.name = "%s-%s" % (ds["metadata"]["name"], self.hash[:5])
        self.inits_done = 0
        self.procs = {}  # container name -> Popen or None (pause)
        self.retry_at = 0.0
        self.published = None  # the Pod object last written
        self.restarts = {}  # container name -> times restarted

    def spec(self):
        return self.template.get("spec", {})

    def step(self, api, node):
        """Moves the pod on: the next init container, or the main containers (restarted when they exit)."""
        now = time.monotonic()
        if now < self.retry_at:
            return
        try:
            inits = self.spec().get("initContainers", [])
            while self.inits_done < len(inits):
                proc = node.start(api, inits[self.inits_done], self.namespace, self.name, self.grace())
                try:
                    rc = proc.wait(timeout=INIT_TIMEOUT_SECONDS) if proc else 0
                except subprocess.TimeoutExpired:
                    log("%s init container %s still running after %d s: killed" %
                        (self.name, inits[self.inits_done]["name"], INIT_TIMEOUT_SECONDS))
                    terminate(proc)
                    wait_stopped(proc, 1)
                    rc = -1
                log("%s init container %s exited %d" % (self.name, inits[self.inits_done]["name"], rc))
                if rc != 0:
                    self.retry_at = now + BACKOFF_SECONDS
                    return
                self.inits_done += 1
            for container in self.spec().get("containers", []):
                proc = self.procs.get(container["name"], False)
                if not running(proc):
                    if proc:
                        log("%s container %s exited %d: restarting" % (self.name, container["name"], proc.returncode))
                        self.restarts[container["name"]] = self.restarts.get(container["name"], 0) + 1
                    self.procs[container["name"]] = node.start(api, container, self.namespace, self.name,
                                                               self.grace())
        except NotReady as e:
            log("%s not started: %s" % (self.name, e))
            self.retry_at = now + BACKOFF_SECONDS

    def ready(self, node):
        if self.inits_done < len(self.spec().get("initContainers", [])):
            return False
        for container in self.spec().get("containers", []):
            if not running(self.procs.get(container["name"], False)):
                return False
            probe = (container.get("readinessProbe") or {}).get("httpGet")
            if probe and not node.http_ok("127.0.0.1", probe["port"], probe.get("path", "/")):
                return False
        return True

    def publish(self, api, ds, node, ready):
        """The Pod object, as the kubelet reports it (kubectl exec and get pods read it); written on change."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": self.name, "namespace": self.namespace,
                            "labels": self.template.get("metadata", {}).get("labels", {}),
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "controller": True,
                                                 "name": ds["metadata"]["name"], "uid": ds["metadata"]["uid"]}]},
               "spec": dict(self.spec(), nodeName=node.name),
               "status": {"phase": "Running" if self.inits_done >= len(self.spec().get("initContainers", []))
                          else "Pending",
                          "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                          "containerStatuses": [{"name": c["name"], "image": c["image"],
                                                 "ready": ready and running(self.procs.get(c["name"], False)),
                                                 "restartCount": self.restarts.get(c["name"], 0)}
                                                for c in self.spec().get("containers", [])]}}
        if pod == self.published:
            return
        path = "/api/v1/namespaces/%s/pods" % self.namespace
        # Created once; replaced (object, then status) on change, or when an earlier pod of the template left it.
        created = False
        if self.published is None:
            try:
                api.call("POST", path, pod)
                created = True
            except urllib.error.HTTPError as e:
                if e.code != 409:
                    raise
        if not created:
            api.call("PUT", "%s/%s" % (path, self.name), pod)
            api.call("PUT", "%s/%s/status" % (path, self.name), pod)
        self.published = pod

    def unpublish(self, api):
        if self.published is not None:
            api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (self.namespace, self.name))
            self.published = None

    def grace(self):
        return self.spec().get("terminationGracePeriodSeconds", 30)

    def stop(self, grace=None):
        """SIGTERM to each container's runner, which stops it (the runner's grace, the pod's); grace here: how long
        to wait for that (default the pod's)."""
        if grace is None:
            grace = self.grace()
        for proc in self.procs.values():
            terminate(proc)
        for proc in self.procs.values():
            wait_stopped(proc, grace)
        log("%s stopped" % self.name)


def daemonset_status(ds, ready):
    """The DaemonSet controller's status for the one node, whose pod is of the current template (kubelet() replaces
    any other before it writes this)."""
    available = 1 if ready else 0
    return {"observedGeneration": ds["metadata"].get("generation", 1), "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1, "updatedNumberScheduled": 1, "numberReady": available,
            "numberAvailable": available, "numberUnavailable": 1 - available, "numberMisscheduled": 0}


def kubelet(api, node, pods):
    """One pass over the DaemonSets: start, roll, stop, and the status of each."""
    seen = set()
    for ds in api.items("/apis/apps/v1/daemonsets"):
        key = (ds["metadata"]["namespace"], ds["metadata"]["name"])
        seen.add(key)
        pod = pods.get(key)
        if pod and pod.hash != template_hash(ds["spec"]["template"]):
            log("%s/%s: template changed, rolling" % key)
            pod.stop()
            pod.unpublish(api)
            pod = None
        if pod is None:
            pod = pods[key] = DaemonPod(ds)
        pod.step(api, node)
        ready = pod.ready(node)
        pod.publish(api, ds, node, ready)
        status = daemonset_status(ds, ready)
        if ds.get("status") != status:
            api.call("PUT", "/apis/apps/v1/namespaces/%s/daemonsets/%s/status" % key,
                     {"metadata": {"name": key[1]}, "status": status})
    for key in [k for k in pods if k not in seen]:
        log("%s/%s deleted" % key)
        pod = pods.pop(key)
        pod.stop()
        pod.unpublish(api)


def placed_pod(api, node, slot_ip):
    """The Deployment pod in the slot: (namespace, labels, containers, ready), or None."""
    for dep in api.items("/apis/apps/v1/deployments"):
        spec = dep.get("spec", {})
        pod_spec = spec.get("template", {}).get("spec", {})
        if spec.get("replicas", 1) < 1 or pod_spec.get("hostNetwork"):
            continue
        containers = pod_spec.get("containers", [])
        ready = True
        for container in containers:
            probe = (container.get("readinessProbe") or {}).get("httpGet")
            if probe and not node.http_ok(slot_ip, probe["port"], probe.get("path", "/")):
                ready = False
        return dep["metadata"]["namespace"], spec["template"]["metadata"].get("labels", {}), containers, ready
    return None


def slice_ports(service, containers):
    named = {p["name"]: p["containerPort"] for c in containers for p in c.get("ports", []) if "name" in p}
    ports = []
    for port in service["spec"].get("ports", []):
        target = port.get("targetPort", port["port"])
        number = named.get(target) if isinstance(target, str) else target
        if number is None:
            continue
        entry = {"name": port.get("name", ""), "protocol": port.get("protocol", "TCP"), "port": number}
        if "appProtocol" in port:
            entry["appProtocol"] = port["appProtocol"]
        ports.append(entry)
    return ports


def endpoint_slices(api, node, slot_ip, slices):
    pod = placed_pod(api, node, slot_ip)
    for service in api.items("/api/v1/services"):
        ns, name = service["metadata"]["namespace"], service["metadata"]["name"]
        selector = service["spec"].get("selector")
        if not selector:
            continue
        endpoints, ports = [], []
        if pod and pod[0] == ns and all(pod[1].get(k) == v for k, v in selector.items()):
            endpoints = [{"addresses": [slot_ip], "nodeName": node.name,
                          "conditions": {"ready": pod[3], "serving": pod[3], "terminating": False}}]
            ports = slice_ports(service, pod[2])
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name + "-standin", "namespace": ns,
                             "labels": {"kubernetes.io/service-name": name}},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
        if slices.get((ns, name)) == body:
            continue
        path = "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns
        if api.call("PUT", "%s/%s-standin" % (path, name), body) is None:
            api.call("POST", path, body)
        slices[(ns, name)] = body
        log("endpointslice %s/%s: %s" % (ns, name, json.dumps(endpoints)))


def main():
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True)
    parser.add_argument("--node", required=True, help="NAME=NETNS")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--pod-slot", required=True, help="the Deployment pod's IP (on the node)")
    parser.add_argument("--log")
    parser.add_argument("--pod-logs", help="the directory of the containers' logs")
    a = parser.parse_args()
    if a.log:
        LOG = open(a.log, "a")
    name, netns = a.node.split("=", 1)
    node, api = Node(name, netns, a.kubeconfig, a.runner, a.pod_logs), Api(a.api)
    pods, slices = {}, {}
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    log("cluster stand-in: node %s (netns %s), pod slot %s" % (name, netns, a.pod_slot))
    while running[0]:
        try:
            kubelet(api, node, pods)
            endpoint_slices(api, node, a.pod_slot, slices)
        except (OSError, urllib.error.URLError, ValueError, KeyError) as e:
            log("pass failed: %r" % e)
        time.sleep(POLL_SECONDS)
    # The test's cleanup kills this process 2 s after its SIGTERM: each container gets SIGTERM at once (the loader
    # exits within a second, and `podman run --rm` removes its container), not one grace period after another;
    # what remains, the test removes.
    for pod in pods.values():
        pod.stop(grace=1.5)


if __name__ == "__main__":
    main()
