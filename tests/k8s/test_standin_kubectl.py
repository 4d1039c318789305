#!/usr/bin/env python3
"""The real kubectl against the API server stand-in (tests/k8s/apiserver_standin.py), as docs' walkthroughs run it.

    unshare --net --mount --fork -- sh -c 'ip link set lo up && exec /usr/bin/python3 tests/k8s/test_standin_kubectl.py'

(a private network namespace: the stand-in listens on 127.0.0.1 there only). Each test starts a stand-in of its
own on a free port and a kubeconfig for it, runs kubectl with its defaults (client-side apply, strict field
validation) on copies of the repository's kustomizations and checks what the stand-in stored with its own
requests (X-Standin-Test). Skipped without kubectl.
"""

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(REPO, "tests", "k8s", "apiserver_standin.py")
KUBECTL = shutil.which("kubectl")
NS = "bpfnet-system"
BMO_NS = "baremetal-operator-system"


@unittest.skipIf(KUBECTL is None, "kubectl is not installed")
class StandinKubectl(unittest.TestCase):
    standin_args = ()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="standin-kubectl-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        # The kustomizations refer to each other by relative paths (bmo/with-bpfnet to k8s/metal3): the same
        # layout, edited freely by the tests.
        self.repo = os.path.join(self.dir, "repo")
        shutil.copytree(os.path.join(REPO, "k8s"), os.path.join(self.repo, "k8s"))
        shutil.copytree(os.path.join(REPO, "tests", "k8s", "bmo"), os.path.join(self.repo, "tests", "k8s", "bmo"))
        self.standin = subprocess.Popen([sys.executable, STANDIN, "0", *self.standin_args], stdout=subprocess.PIPE,
                                        text=True)
        self.addCleanup(self.standin.stdout.close)
        self.addCleanup(self.standin.wait)
        self.addCleanup(self.standin.kill)
        line = self.standin.stdout.readline()
        self.assertTrue(line.startswith("listening on "), line)
        self.port = int(line.split()[-1])
        config = os.path.join(self.dir, "kubeconfig")
        with open(config, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "standin",
                            "clusters": [{"name": "standin", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
                            "users": [{"name": "admin", "user": {"token": "unused"}}],
                            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "admin"}}]}, f)
        # HOME: kubectl's discovery and OpenAPI cache (~/.kube/cache) is the test's own.
        self.env = dict(os.environ, KUBECONFIG=config, HOME=self.dir)

    def kubectl(self, *args, ok=True):
        run = subprocess.run([KUBECTL, *args], env=self.env, capture_output=True, text=True, timeout=90,
                             cwd=self.repo)
        if ok:
            self.assertEqual(run.returncode, 0, f"kubectl {' '.join(args)}:\n{run.stdout}{run.stderr}")
        return run

    def api(self, method, path, body=None, content_type="application/json"):
        """(HTTP status, answer) of a request of the test's own (not logged, never throttled)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"X-Standin-Test": "1", "Content-Type": content_type}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        answer = json.loads(resp.read() or b"null")
        conn.close()
        return resp.status, answer

    def get(self, path):
        code, obj = self.api("GET", path)
        self.assertEqual(code, 200, obj)
        return obj

    def absent(self, path):
        code, obj = self.api("GET", path)
        return code == 404

    def daemonset(self):
        return self.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets/bpfnet-loader")

    def edit(self, path, change):
        """Rewrites the YAML document at path (relative to the copied repository) by change(document)."""
        path = os.path.join(self.repo, path)
        with open(path) as f:
            doc = yaml.safe_load(f)
        change(doc)
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)

    def set_status(self, **status):
        code, obj = self.api("PATCH", f"/apis/apps/v1/namespaces/{NS}/daemonsets/bpfnet-loader/status",
                             {"status": status}, "application/merge-patch+json")
        self.assertEqual(code, 200, obj)


class Apply(StandinKubectl):
    def test_first_apply_creates_every_object(self):
        out = self.kubectl("apply", "-k", "k8s/manifests").stdout
        for made in ("namespace/bpfnet-system created", "serviceaccount/bpfnet-loader created",
                     "role.rbac.authorization.k8s.io/bpfnet-loader-leases created",
                     "clusterrole.rbac.authorization.k8s.io/bpfnet-loader created",
                     "rolebinding.rbac.authorization.k8s.io/bpfnet-loader-leases created",
                     "clusterrolebinding.rbac.authorization.k8s.io/bpfnet-loader created",
                     "daemonset.apps/bpfnet-loader created"):
            self.assertIn(made, out)
        rendered = list(yaml.safe_load_all(self.kubectl("kustomize", "k8s/manifests").stdout))
        ds = self.daemonset()
        want = next(d for d in rendered if d["kind"] == "DaemonSet")
        self.assertEqual(ds["spec"]["template"], want["spec"]["template"])
        self.assertEqual(ds["metadata"]["generation"], 1)
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration", ds["metadata"]["annotations"])
        self.assertEqual(self.get(f"/api/v1/namespaces/{NS}")["status"]["phase"], "Active")
        self.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bpfnet-loader")
        # Unchanged input: nothing sent but GETs, nothing bumped.
        rv = self.get("/_test/state")["rv"]
        self.assertEqual(self.kubectl("apply", "-k", "k8s/manifests").stdout.count("unchanged"), len(rendered))
        self.assertEqual(self.get("/_test/state")["rv"], rv)

    def test_second_apply_patches_what_changed(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        first = self.daemonset()
        old_map = first["spec"]["template"]["spec"]["containers"][0]["env"][2]["valueFrom"]["configMapKeyRef"]["name"]

        site = os.path.join(self.repo, "k8s/manifests/site.env")
        with open(site) as f:
            text = f.read()
        with open(site, "w") as f:
            f.write(text.replace("PROVISIONING_INTERFACE=enp2s0", "PROVISIONING_INTERFACE=eth9"))

        def change(ds):
            loader = ds["spec"]["template"]["spec"]["containers"][0]
            loader["image"] = "bpfnet/bpfnet-loader:0.2.0"
            # POD_NAMESPACE removed, ALLOWED_CIDRS moved first.
            loader["env"] = [loader["env"][-1]] + [e for e in loader["env"][:-1] if e["name"] != "POD_NAMESPACE"]
            loader["args"][loader["args"].index("--metrics-address") + 1] = "0.0.0.0:9395"
            del loader["readinessProbe"]
        self.edit("k8s/manifests/daemonset.yaml", change)
        out = self.kubectl("apply", "-k", "k8s/manifests").stdout
        self.assertIn("daemonset.apps/bpfnet-loader configured", out)
        self.assertIn("namespace/bpfnet-system unchanged", out)

        ds = self.daemonset()
        loader = ds["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(loader["image"], "bpfnet/bpfnet-loader:0.2.0")
        self.assertEqual([e["name"] for e in loader["env"]],
                         ["ALLOWED_CIDRS", "NODE_NAME", "PROVISIONING_INTERFACE", "PROVISIONING_SUBNET",
                          "ALLOWED_NAMESPACES"])
        new_map = loader["env"][2]["valueFrom"]["configMapKeyRef"]["name"]
        self.assertNotEqual(new_map, old_map)
        self.assertEqual(self.get(f"/api/v1/namespaces/{NS}/configmaps/{new_map}")["data"]["PROVISIONING_INTERFACE"],
                         "eth9")
        self.assertIn("0.0.0.0:9395", loader["args"])
        self.assertNotIn("readinessProbe", loader)
        # What the patch did not name is still there (a merge patch would have replaced the container list).
        was = first["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(loader["securityContext"], was["securityContext"])
        self.assertEqual(loader["volumeMounts"], was["volumeMounts"])
        self.assertEqual(ds["metadata"]["generation"], 2)
        self.assertEqual(ds["metadata"]["uid"], first["metadata"]["uid"])

    def test_reapply_keeps_container_order_and_others(self):
        self.kubectl("apply", "-k", "tests/k8s/bmo/with-bpfnet")
        path = f"/apis/apps/v1/namespaces/{BMO_NS}/deployments/baremetal-operator-ironic"
        before = self.get(path)
        names = [c["name"] for c in before["spec"]["template"]["spec"]["containers"]]
        self.assertEqual(names, ["ironic", "ironic-dnsmasq", "ironic-log-watch", "ironic-httpd"])
        self.assertEqual(self.get(f"/api/v1/namespaces/{BMO_NS}/services/ironic-provisioning")["spec"]["ports"][0]
                         ["port"], 6385)

        # Another writer's container (as a mutating webhook adds one), then an apply that changes the third.
        code, obj = self.api("PATCH", path, {"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "image": "example/sidecar"}]}}}}, "application/strategic-merge-patch+json")
        self.assertEqual(code, 200, obj)
        with open(os.path.join(self.repo, "tests/k8s/bmo/with-bpfnet/kustomization.yaml"), "a") as f:
            f.write("images:\n  - name: quay.io/metal3-io/ironic\n    newTag: v26.0.0\n")
        self.kubectl("apply", "-k", "tests/k8s/bmo/with-bpfnet")
        containers = self.get(path)["spec"]["template"]["spec"]["containers"]
        self.assertEqual([c["name"] for c in containers], names + ["sidecar"])
        self.assertEqual({c["image"] for c in containers[:4]}, {"quay.io/metal3-io/ironic:v26.0.0"})
        self.assertEqual(containers[1]["securityContext"], before["spec"]["template"]["spec"]["containers"][1]
                         ["securityContext"])
        self.assertEqual(self.get(path)["metadata"]["generation"], 3)


class Commands(StandinKubectl):
    def test_get(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        self.kubectl("apply", "-k", "tests/k8s/bmo/with-bpfnet")
        svc = f"/api/v1/namespaces/{BMO_NS}/services/ironic-provisioning/status"
        code, obj = self.api("PATCH", svc, {"status": {"loadBalancer": {"ingress": [{"ip": "172.22.0.2"}]}}},
                             "application/merge-patch+json")
        self.assertEqual(code, 200, obj)
        self.assertIn("ironic-provisioning", self.kubectl("-n", BMO_NS, "get", "svc").stdout)
        self.assertIn("ironic-provisioning", self.kubectl("get", "svc", "-A").stdout)
        ip = self.kubectl("-n", BMO_NS, "get", "svc", "ironic-provisioning", "-o",
                          "jsonpath={.status.loadBalancer.ingress[0].ip}").stdout
        self.assertEqual(ip, "172.22.0.2")

        self.assertIn("No resources found", self.kubectl("-n", NS, "get", "lease").stderr)
        for node in ("a", "b"):
            code, obj = self.api("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases",
                                 {"metadata": {"name": f"bpfnet-node-{node}"}, "spec": {"holderIdentity": node}})
            self.assertEqual(code, 201, obj)
        self.assertIn("bpfnet-node-a", self.kubectl("-n", NS, "get", "lease").stdout)
        self.assertEqual(self.kubectl("-n", NS, "get", "lease", "--field-selector", "metadata.name!=bpfnet-node-a",
                                      "-o", "name").stdout, "lease.coordination.k8s.io/bpfnet-node-b\n")

        ds = yaml.safe_load(self.kubectl("-n", NS, "get", "daemonset", "bpfnet-loader", "-o", "yaml").stdout)
        self.assertEqual((ds["kind"], ds["metadata"]["name"], ds["metadata"]["generation"]),
                         ("DaemonSet", "bpfnet-loader", 1))
        self.assertEqual(self.kubectl("-n", NS, "get", "ds", "-o", "name").stdout, "daemonset.apps/bpfnet-loader\n")
        self.assertEqual(self.kubectl("get", "ns", "-o", "name").stdout, "namespace/bpfnet-system\n")

    def test_set_image(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        before = self.daemonset()
        self.kubectl("-n", NS, "set", "image", "daemonset/bpfnet-loader", "loader=bpfnet/bpfnet-loader:0.3.0")
        ds = self.daemonset()
        self.assertEqual(ds["spec"]["template"]["spec"]["containers"][0]["image"], "bpfnet/bpfnet-loader:0.3.0")
        # Nothing else changed.
        before["spec"]["template"]["spec"]["containers"][0]["image"] = "bpfnet/bpfnet-loader:0.3.0"
        self.assertEqual(ds["spec"], before["spec"])
        self.assertEqual(ds["metadata"]["generation"], 2)
        # Metadata and status writes leave the generation alone.
        self.kubectl("-n", NS, "annotate", "daemonset/bpfnet-loader", "example.com/note=x")
        self.set_status(observedGeneration=2, desiredNumberScheduled=1)
        self.assertEqual(self.daemonset()["metadata"]["generation"], 2)

    def test_rollout_status_waits_for_the_status(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        self.kubectl("-n", NS, "set", "image", "daemonset/bpfnet-loader", "loader=bpfnet/bpfnet-loader:0.3.0")
        self.set_status(observedGeneration=1, desiredNumberScheduled=2, currentNumberScheduled=2,
                        updatedNumberScheduled=2, numberAvailable=2, numberReady=2)
        rollout = subprocess.Popen([KUBECTL, "-n", NS, "rollout", "status", "daemonset/bpfnet-loader",
                                    "--timeout=60s"], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        self.addCleanup(rollout.wait)
        self.addCleanup(rollout.kill)

        def still_waiting():
            time.sleep(1.5)
            self.assertIsNone(rollout.poll(), rollout.stdout.read() if rollout.poll() is not None else "")
        still_waiting()  # the status is of generation 1
        self.set_status(observedGeneration=2, desiredNumberScheduled=2, currentNumberScheduled=2,
                        updatedNumberScheduled=1, numberAvailable=2, numberReady=2)
        still_waiting()  # one pod of the old template left
        self.set_status(observedGeneration=2, desiredNumberScheduled=2, currentNumberScheduled=2,
                        updatedNumberScheduled=2, numberAvailable=1, numberReady=1)
        still_waiting()  # one new pod not available yet
        self.set_status(observedGeneration=2, desiredNumberScheduled=2, currentNumberScheduled=2,
                        updatedNumberScheduled=2, numberAvailable=2, numberReady=2)
        out, err = rollout.communicate(timeout=20)
        self.assertEqual(rollout.returncode, 0, err)
        self.assertIn('daemon set "bpfnet-loader" successfully rolled out', out)
        self.assertIn("Waiting for daemon set", out)


class Uninstall(StandinKubectl):
    def test_uninstall_walkthrough(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        self.kubectl("apply", "-k", "k8s/served-namespace")
        for node in ("a", "b"):
            code, obj = self.api("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases",
                                 {"metadata": {"name": f"bpfnet-node-{node}"}, "spec": {"holderIdentity": node}})
            self.assertEqual(code, 201, obj)
        self.assertIn("daemonset.apps/bpfnet-loader configured", self.kubectl("apply", "-k", "k8s/uninstall").stdout)
        pod = self.daemonset()["spec"]["template"]["spec"]
        self.assertEqual([c["name"] for c in pod["containers"]], ["done"])
        self.assertEqual([c["name"] for c in pod["initContainers"]], ["loader"])
        self.assertEqual(pod["initContainers"][0]["args"][-1], "--teardown")
        self.assertNotIn("livenessProbe", pod["initContainers"][0])
        self.assertEqual(self.daemonset()["metadata"]["generation"], 2)
        self.set_status(observedGeneration=2, desiredNumberScheduled=1, currentNumberScheduled=1,
                        updatedNumberScheduled=1, numberAvailable=1, numberReady=1)
        self.kubectl("-n", NS, "rollout", "status", "daemonset/bpfnet-loader", "--timeout=60s")

        out = self.kubectl("delete", "-k", "k8s/uninstall").stdout
        self.assertIn('namespace "bpfnet-system" deleted', out)
        self.assertIn('daemonset.apps "bpfnet-loader" deleted', out)
        self.assertTrue(self.absent(f"/api/v1/namespaces/{NS}"))
        self.assertTrue(self.absent("/apis/rbac.authorization.k8s.io/v1/clusterroles/bpfnet-loader"))
        self.assertTrue(self.absent("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bpfnet-loader"))
        for collection in ("/api/v1/serviceaccounts", "/api/v1/configmaps", "/apis/apps/v1/daemonsets",
                           "/apis/coordination.k8s.io/v1/leases"):
            self.assertEqual(self.get(collection)["items"], [], collection)
        self.assertIn("No resources found", self.kubectl("-n", NS, "get", "lease").stderr)
        self.assertEqual(len(self.get("/apis/rbac.authorization.k8s.io/v1/roles")["items"]), 1)
        self.kubectl("delete", "-k", "k8s/served-namespace")
        self.assertEqual(self.get("/apis/rbac.authorization.k8s.io/v1/rolebindings")["items"], [])

    def test_namespace_removed_after_its_content(self):
        self.kubectl("apply", "-k", "k8s/manifests")
        code, obj = self.api("DELETE", f"/api/v1/namespaces/{NS}")
        self.assertEqual((code, obj["status"]["phase"]), (200, "Terminating"))
        # Terminating: its objects are still there, no new ones.
        self.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets/bpfnet-loader")
        code, obj = self.api("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases",
                             {"metadata": {"name": "late"}, "spec": {}})
        self.assertEqual((code, obj["reason"]), (403, "Forbidden"))
        self.kubectl("wait", "--for=delete", f"namespace/{NS}", "--timeout=30s")
        self.assertTrue(self.absent(f"/apis/apps/v1/namespaces/{NS}/daemonsets/bpfnet-loader"))


class Validation(StandinKubectl):
    def write(self, name, doc):
        with open(os.path.join(self.repo, name), "w") as f:
            yaml.safe_dump(doc, f)
        return name

    def test_unknown_fields_refused(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
              "data": {"a": "b"}}
        for bad, field in ((dict(cm, extra=1), "extra"), (dict(cm, metadata=dict(cm["metadata"], colour="red")),
                                                          "metadata.colour")):
            run = self.kubectl("apply", "-f", self.write("bad.yaml", bad), ok=False)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn(f'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
                          f'unknown field "{field}"', run.stderr)
            self.assertTrue(self.absent("/api/v1/namespaces/default/configmaps/c"))
        # Also in a patch, and in a container of a pod template.
        self.kubectl("apply", "-k", "k8s/manifests")
        self.edit("k8s/manifests/daemonset.yaml",
                  lambda d: d["spec"]["template"]["spec"]["containers"][0].update(imagePolicy="Always"))
        run = self.kubectl("apply", "-k", "k8s/manifests", ok=False)
        self.assertIn('strict decoding error: unknown field "spec.template.spec.containers[0].imagePolicy"',
                      run.stderr)
        self.assertNotIn("imagePolicy", json.dumps(self.daemonset()))
        # --validate=false: dropped, as the API server does (kubectl's own annotation keeps what it sent).
        self.kubectl("apply", "--validate=false", "-k", "k8s/manifests")
        ds = self.daemonset()
        self.assertNotIn("imagePolicy", ds["spec"]["template"]["spec"]["containers"][0])
        self.assertIn("imagePolicy", ds["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])


class Before130(StandinKubectl):
    standin_args = ("--kubernetes-version", "1.29")

    def test_apparmor_field_unknown(self):
        run = self.kubectl("apply", "-k", "k8s/manifests", ok=False)
        self.assertIn('DaemonSet in version "v1" cannot be handled as a DaemonSet: strict decoding error: unknown '
                      'field "spec.template.spec.containers[0].securityContext.appArmorProfile"', run.stderr)
        self.assertTrue(self.absent(f"/apis/apps/v1/namespaces/{NS}/daemonsets/bpfnet-loader"))
        self.kubectl("apply", "-k", "k8s/before-1.30")
        self.assertNotIn("appArmorProfile", self.daemonset()["spec"]["template"]["spec"]["containers"][0]
                         ["securityContext"])
        self.assertEqual(json.loads(self.kubectl("version", "-o", "json").stdout)["serverVersion"]["minor"], "29")


class Exec(StandinKubectl):
    """kubectl exec over the WebSocket the stand-in serves with --exec-hook: the hook's arguments, its stdout
    and stderr on their channels, and its exit status as kubectl reports it."""

    def setUp(self):
        hook = os.path.join(tempfile.mkdtemp(prefix="standin-exec-"), "hook.sh")
        self.addCleanup(shutil.rmtree, os.path.dirname(hook), True)
        with open(hook, "w") as f:
            # COMMAND exit-N: the hook exits N.
            f.write('#!/bin/sh\necho "ran in $1/$2 container $3:" "$4" "$5"\necho "to stderr" >&2\n'
                    'case "$4" in exit-*) exit "${4#exit-}" ;; esac\n')
        os.chmod(hook, 0o755)
        self.standin_args = ("--exec-hook", hook)
        super().setUp()
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "bpfnet-loader-abcde", "labels": {"app.kubernetes.io/name": "bpfnet",
                                                                     "app.kubernetes.io/component": "loader"}},
               "spec": {"containers": [{"name": "loader", "image": "bpfnet/bpfnet-loader:0.1.0"}]},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        code, obj = self.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
        self.assertEqual(code, 201, obj)

    def test_exec_runs_the_hook(self):
        run = self.kubectl("-n", NS, "exec", "bpfnet-loader-abcde", "--", "bpfnetctl", "status")
        self.assertEqual(run.stdout, f"ran in {NS}/bpfnet-loader-abcde container loader: bpfnetctl status\n")
        self.assertIn("to stderr", run.stderr)

    def test_exit_code_reported(self):
        run = self.kubectl("-n", NS, "exec", "bpfnet-loader-abcde", "--", "exit-3", ok=False)
        self.assertEqual(run.returncode, 3, run.stderr)

    def test_unknown_container_refused(self):
        run = self.kubectl("-n", NS, "exec", "bpfnet-loader-abcde", "-c", "other", "--", "true", ok=False)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("container other is not valid", run.stderr)


class PodsSeenByKubectl(StandinKubectl):
    """kubectl logs from the files the stand-in serves with --pod-logs, and kubectl get pods -o wide from the pod
    Table: what docs/metal3.md's check step shows an operator."""

    def setUp(self):
        self.logs = tempfile.mkdtemp(prefix="standin-logs-")
        self.addCleanup(shutil.rmtree, self.logs, True)
        self.standin_args = ("--pod-logs", self.logs)
        super().setUp()
        for name, node, ready in (("bpfnet-loader-abcde", "node-a", True), ("bpfnet-loader-fghij", "node-b", False)):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "bpfnet"}},
                   "spec": {"nodeName": node, "containers": [{"name": "loader", "image": "bpfnet/bpfnet-loader:0.1.0"}]},
                   "status": {"phase": "Running", "podIP": "198.18.0.7",
                              "containerStatuses": [{"name": "loader", "ready": ready, "restartCount": 2}]}}
            code, obj = self.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            self.assertEqual(code, 201, obj)
        with open(os.path.join(self.logs, f"{NS}_bpfnet-loader-abcde_loader.log"), "w") as f:
            f.write("".join(f"line {i}\n" for i in range(1, 21)))

    def test_logs_of_a_pod(self):
        self.assertEqual(self.kubectl("-n", NS, "logs", "bpfnet-loader-abcde").stdout,
                         "".join(f"line {i}\n" for i in range(1, 21)))
        self.assertEqual(self.kubectl("-n", NS, "logs", "bpfnet-loader-abcde", "--tail=2").stdout, "line 19\nline 20\n")

    def test_logs_by_selector_with_prefix(self):
        with open(os.path.join(self.logs, f"{NS}_bpfnet-loader-fghij_loader.log"), "w") as f:
            f.write("other node\n")
        run = self.kubectl("-n", NS, "logs", "-l", "app.kubernetes.io/name=bpfnet", "--tail=-1", "--prefix")
        self.assertIn("[pod/bpfnet-loader-abcde/loader] line 1\n", run.stdout)
        self.assertIn("[pod/bpfnet-loader-abcde/loader] line 20\n", run.stdout)
        self.assertIn("[pod/bpfnet-loader-fghij/loader] other node\n", run.stdout)

    def test_logs_of_a_container_not_started(self):
        run = self.kubectl("-n", NS, "logs", "bpfnet-loader-fghij", ok=False)
        self.assertIn('container "loader" in pod "bpfnet-loader-fghij" is waiting to start', run.stderr)

    def test_logs_of_an_unknown_container_refused(self):
        run = self.kubectl("-n", NS, "logs", "bpfnet-loader-abcde", "-c", "other", ok=False)
        self.assertIn("container other is not valid", run.stderr)

    def test_get_pods_wide_shows_the_node(self):
        out = self.kubectl("-n", NS, "get", "pods", "-o", "wide").stdout.splitlines()
        self.assertEqual(out[0].split(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED",
                                          "NODE", "READINESS", "GATES"])
        rows = {line.split()[0]: line.split() for line in out[1:]}
        self.assertEqual(rows["bpfnet-loader-abcde"][1:4], ["1/1", "Running", "2"])
        self.assertEqual(rows["bpfnet-loader-abcde"][5:7], ["198.18.0.7", "node-a"])
        self.assertEqual(rows["bpfnet-loader-fghij"][1], "0/1")
        self.assertEqual(rows["bpfnet-loader-fghij"][6], "node-b")
        # Without -o wide, the priority-1 columns are left out, as kubectl does with a real API server's Table.
        self.assertNotIn("NODE", self.kubectl("-n", NS, "get", "pods").stdout)

    def test_pod_of_a_node_by_field_selector(self):
        self.assertEqual(self.kubectl("-n", NS, "get", "pods", "--field-selector", "spec.nodeName=node-b",
                                      "-o", "name").stdout, "pod/bpfnet-loader-fghij\n")
        run = self.kubectl("-n", NS, "get", "services", "--field-selector", "spec.nodeName=node-b", ok=False)
        self.assertIn('field label not supported: spec.nodeName', run.stderr)


if __name__ == "__main__":
    unittest.main()
