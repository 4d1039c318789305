#!/usr/bin/env python3
"""Static checks of the Kubernetes manifests: k8s/manifests/ (bpfnet), k8s/served-namespace/ (its Role where
Ironic runs) and k8s/examples/ironic/ (the example Ironic behind bpfnet), with python3, PyYAML and kubectl.

    python3 tests/k8s/test_manifests.py                  # the manifests of this checkout
    BPFNET_MANIFEST_DIR=/tmp/copy python3 tests/k8s/test_manifests.py
    BPFNET_LOADER=build/loader/bpfnet-loader python3 tests/k8s/test_manifests.py   # also run the loader's --check

Every manifest parses (no duplicate keys); each file holds exactly the expected objects; the kustomization
lists every manifest and nothing missing, and `kubectl kustomize` renders exactly their objects and the site
values' ConfigMap, in bpfnet's namespace only; the DaemonSet runs on control-plane nodes only, in the host network,
unprivileged with exactly the documented capabilities, with bpffs, NODE_NAME and the health probes; the Ironic
example's namespace enforces the restricted Pod Security Standard and its pods comply; and the RBAC rules
grant exactly the API calls in REQUIRED_API_CALLS.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST_DIR = os.environ.get("BPFNET_MANIFEST_DIR") or os.path.join(HERE, "..", "..", "k8s", "manifests")
SERVED_DIR = os.path.join(MANIFEST_DIR, "..", "served-namespace")
UNINSTALL_DIR = os.path.join(MANIFEST_DIR, "..", "uninstall")
EXAMPLE_DIR = os.path.join(MANIFEST_DIR, "..", "examples", "ironic")
ROOT = os.path.join(HERE, "..", "..")
# A stand-in of baremetal-operator's ironic-deployment (tests/k8s/bmo/README.md).
BMO_DIR = os.path.join(HERE, "bmo")

# The API calls of bpfnet-loader in Kubernetes mode, as (API group, resource, verb): those it makes in every
# namespace (the ClusterRole), those it makes only in the namespaces it serves (a Role in each) and those on
# its Leases, in its own namespace (a Role there). Each must
# be granted exactly: a missing one breaks the loader, an extra one is privilege it does not use.
# KEEP IN SYNC with the requests k8s/controller.cpp, k8s/lease_keeper.cpp and k8s/event_recorder.cpp make.
# tests/e2e/test_kubernetes.sh checks the other direction at run time: every request the loaders sent to the API
# server stand-in is granted by the roles of k8s/examples/ironic, rendered (tests/k8s/check_rbac.py).
CLUSTER_API_CALLS = {
    # Services of loadBalancerClass bpfnet.io/provisioning, all namespaces: list-then-watch.
    ("", "services", "list"),
    ("", "services", "watch"),
    # Where the ready backend runs.
    ("discovery.k8s.io", "endpointslices", "list"),
    ("discovery.k8s.io", "endpointslices", "watch"),
    # Events on Services (refusals also in namespaces not served); a lasting one is bumped (get, patch).
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "get"),
    ("events.k8s.io", "events", "patch"),
}
NAMESPACED_API_CALLS = {
    # status.loadBalancer.ingress, by the owner: a merge patch of that field.
    ("", "services/status", "patch"),
}
LEASE_API_CALLS = {
    # One Lease per service IP in bpfnet-system: watched (by label) to learn who holds what, get after a 409,
    # claimed, renewed and released, deleted when no Service uses the IP any more.
    ("coordination.k8s.io", "leases", "list"),
    ("coordination.k8s.io", "leases", "watch"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "update"),
    ("coordination.k8s.io", "leases", "delete"),
}

# The capabilities of the loader's container (daemonset.yaml says why each is needed).
LOADER_CAPABILITIES = {"NET_ADMIN", "NET_RAW", "SYS_ADMIN"}

# file -> the objects it must hold, as (apiVersion, kind, namespace or None, name), in any order.
EXPECTED_OBJECTS = {
    "namespace.yaml": {("v1", "Namespace", None, "bpfnet-system")},
    "serviceaccount.yaml": {("v1", "ServiceAccount", "bpfnet-system", "bpfnet-loader")},
    "rbac.yaml": {
        ("rbac.authorization.k8s.io/v1", "ClusterRole", None, "bpfnet-loader"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None, "bpfnet-loader"),
        ("rbac.authorization.k8s.io/v1", "Role", "bpfnet-system", "bpfnet-loader-leases"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", "bpfnet-system", "bpfnet-loader-leases"),
    },
    "daemonset.yaml": {("apps/v1", "DaemonSet", "bpfnet-system", "bpfnet-loader")},
    "kustomization.yaml": {("kustomize.config.k8s.io/v1beta1", "Kustomization", None, None)},
}
# The site values (site.env, the ConfigMap bpfnet-site): each is used by the DaemonSet.
SITE_VALUES = {"PROVISIONING_INTERFACE", "PROVISIONING_SUBNET", "ALLOWED_NAMESPACES", "ALLOWED_CIDRS"}
SERVED_ROLE_OBJECTS = {
    ("rbac.authorization.k8s.io/v1", "Role", None, "bpfnet-loader"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", None, "bpfnet-loader"),
}
EXAMPLE_OBJECTS = {
    ("v1", "Namespace", None, "metal3"),
    ("v1", "Service", "metal3", "ironic"),
    ("v1", "ConfigMap", "metal3", "ironic-dhcp-tftp"),
    ("apps/v1", "Deployment", "metal3", "ironic"),
}

# The Service ports of the Ironic example: (name, port, protocol, appProtocol or None).
IRONIC_PORTS = {
    ("ironic-api", 6385, "TCP", None),
    ("images", 6180, "TCP", None),
    ("vmedia-tls", 6183, "TCP", None),
    ("dhcp", 67, "UDP", "dhcp"),
    ("tftp", 69, "UDP", "tftp"),
}

# Pod Security Standards, restricted (Kubernetes 1.25+): volume types allowed, capabilities that may be added,
# safe sysctls.
RESTRICTED_VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                           "projected", "secret"}
RESTRICTED_ADD_CAPS = {"NET_BIND_SERVICE"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one silently)."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(name, directory=MANIFEST_DIR):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=UniqueKeyLoader) if d is not None]


def site_values():
    """site.env as kustomize reads it: KEY=VALUE lines, # comments."""
    values = {}
    with open(os.path.join(MANIFEST_DIR, "site.env"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key] = value
    return values


def render(directory):
    """The objects `kubectl kustomize DIRECTORY` renders (scripts/setup.sh installs Debian's kubernetes-client
    where the machine has no kubectl)."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "no kubectl: scripts/setup.sh installs Debian's kubernetes-client"
    out = subprocess.run([kubectl, "kustomize", directory], check=True, capture_output=True, text=True, timeout=60)
    return [d for d in yaml.safe_load_all(out.stdout) if d]



def one(name, kind, directory=MANIFEST_DIR):
    found = [d for d in load(name, directory) if d.get("kind") == kind]
    if len(found) != 1:
        raise AssertionError("%s: want exactly one %s, found %d" % (name, kind, len(found)))
    return found[0]


def containers(pod_spec):
    return list(pod_spec.get("initContainers") or []) + list(pod_spec.get("containers") or []) + \
        list(pod_spec.get("ephemeralContainers") or [])


class Parse(unittest.TestCase):
    def test_every_manifest_parses_and_holds_the_expected_objects(self):
        files = sorted(f for f in os.listdir(MANIFEST_DIR) if f.endswith((".yaml", ".yml")))
        self.assertEqual(set(files), set(EXPECTED_OBJECTS), "manifest files differ from EXPECTED_OBJECTS")
        for name in files:
            with self.subTest(file=name):
                docs = load(name)
                self.assertTrue(docs, "no document")
                got = set()
                for d in docs:
                    self.assertIsInstance(d, dict)
                    meta = d.get("metadata") or {}
                    got.add((d.get("apiVersion"), d.get("kind"), meta.get("namespace"), meta.get("name")))
                self.assertEqual(len(got), len(docs), "an object appears twice")
                self.assertEqual(got, EXPECTED_OBJECTS[name])

    def test_served_namespace_and_example_hold_the_expected_objects(self):
        self.assertEqual({object_key(d) for d in load("role.yaml", SERVED_DIR)}, SERVED_ROLE_OBJECTS)
        self.assertEqual({object_key(d) for d in load("ironic-example.yaml", EXAMPLE_DIR)}, EXAMPLE_OBJECTS)

    def test_kustomization_lists_every_manifest_and_each_exists(self):
        resources = one("kustomization.yaml", "Kustomization").get("resources") or []
        self.assertEqual(len(resources), len(set(resources)), "a resource is listed twice")
        for r in resources:
            self.assertTrue(os.path.isfile(os.path.join(MANIFEST_DIR, r)), "kustomization resource %s missing" % r)
        self.assertEqual(set(resources), set(EXPECTED_OBJECTS) - {"kustomization.yaml"})


class DaemonSet(unittest.TestCase):
    def setUp(self):
        self.ds = one("daemonset.yaml", "DaemonSet")
        self.pod = self.ds["spec"]["template"]["spec"]
        self.assertEqual(len(self.pod["containers"]), 1)
        self.loader = self.pod["containers"][0]

    def test_selector_matches_template(self):
        labels = self.ds["spec"]["template"]["metadata"]["labels"]
        for k, v in self.ds["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)

    def test_control_plane_nodes_only(self):
        # Control-plane nodes by either label (kubeadm before 1.20 used node-role.kubernetes.io/master), and
        # both taints tolerated; nothing else.
        self.assertNotIn("nodeSelector", self.pod)
        terms = self.pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        roles = {"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}
        self.assertEqual(terms, [{"matchExpressions": [{"key": k, "operator": "Exists"}]} for k in sorted(roles)])
        tolerations = self.pod.get("tolerations") or []
        self.assertEqual(tolerations, [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in sorted(roles)])

    def test_apparmor_for_every_kubernetes_version(self):
        # The field (1.30+) and the annotation (before 1.30) say the same; 1.30+ refuses a pod where they differ.
        field = self.loader["securityContext"]["appArmorProfile"]["type"]
        annotations = self.ds["spec"]["template"]["metadata"].get("annotations") or {}
        annotation = annotations.get("container.apparmor.security.beta.kubernetes.io/" + self.loader["name"])
        self.assertEqual((field, annotation), ("Unconfined", "unconfined"))

    def test_host_network_and_not_privileged(self):
        self.assertIs(self.pod.get("hostNetwork"), True)
        self.assertFalse(self.pod.get("hostPID", False))
        self.assertFalse(self.pod.get("hostIPC", False))
        self.assertEqual(self.pod.get("serviceAccountName"), "bpfnet-loader")
        for c in containers(self.pod):
            sc = c.get("securityContext") or {}
            self.assertIs(sc.get("privileged"), False, c["name"])
            self.assertIs(sc.get("allowPrivilegeEscalation"), False, c["name"])

    def test_capabilities_exactly_the_documented_set(self):
        caps = self.loader["securityContext"]["capabilities"]
        self.assertEqual(caps.get("drop"), ["ALL"])
        added = caps.get("add") or []
        self.assertEqual(len(added), len(set(added)), "a capability is added twice")
        self.assertEqual(set(added), LOADER_CAPABILITIES)

    def test_probes(self):
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = self.loader[probe]["httpGet"]
            self.assertEqual((get.get("path"), get.get("port")), (path, 9394), probe)
            self.assertIn(get.get("scheme", "HTTP"), ("HTTP",), probe)
        self.assertIn("--metrics-address", self.loader["args"])
        self.assertEqual(self.loader["args"][self.loader["args"].index("--metrics-address") + 1], "0.0.0.0:9394")

    def test_node_name_from_downward_api(self):
        env = {e["name"]: e for e in self.loader.get("env") or []}
        self.assertEqual(env["NODE_NAME"].get("valueFrom"), {"fieldRef": {"fieldPath": "spec.nodeName"}})

    def test_site_values_come_from_the_site_config_map(self):
        refs = {}
        for e in self.loader.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
            if ref:
                self.assertEqual(ref["name"], "bpfnet-site", e["name"])
                refs[e["name"]] = ref["key"]
        self.assertEqual(set(refs.values()), SITE_VALUES)
        self.assertEqual(set(site_values()), SITE_VALUES)
        generators = one("kustomization.yaml", "Kustomization")["configMapGenerator"]
        self.assertEqual(generators, [{"name": "bpfnet-site", "namespace": "bpfnet-system", "envs": ["site.env"]}])

    def test_args_reference_defined_env(self):
        defined = {e["name"] for e in self.loader.get("env") or []}
        args = self.loader.get("args") or []
        self.assertIn("--kubernetes", args)
        self.assertIn("$(PROVISIONING_INTERFACE)", args)
        for a in args:
            for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
                self.assertIn(ref, defined, "args use $(%s), which env does not define" % ref)

    def test_loader_accepts_the_args(self):
        """The loader itself parses the DaemonSet's command line (env references resolved as the kubelet would)."""
        loader = os.environ.get("BPFNET_LOADER")
        if not loader:
            self.skipTest("BPFNET_LOADER (the bpfnet-loader binary) not given")
        env, site = {}, site_values()
        for e in self.loader.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
            env[e["name"]] = site[ref["key"]] if ref else e.get("value", "control-plane-1" if "valueFrom" in e else "")
        args = [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], a) for a in self.loader["args"]]
        command = self.loader.get("command") or []
        self.assertEqual(command, ["bpfnet-loader"])
        run = subprocess.run([loader] + args + ["--check"], capture_output=True, text=True, timeout=10)
        self.assertEqual(run.returncode, 0, "bpfnet-loader %s --check: %s" % (" ".join(args), run.stderr))
        self.assertIn("valid", run.stdout)
        # And the check is real: a flag the loader does not know fails it.
        bad = subprocess.run([loader] + args + ["--no-such-flag", "--check"], capture_output=True, text=True, timeout=10)
        self.assertNotEqual(bad.returncode, 0)

    def test_bpffs_mounted(self):
        volumes = {v["name"]: v for v in self.pod.get("volumes") or []}
        mounts = [m for m in self.loader.get("volumeMounts") or [] if m.get("mountPath") == "/sys/fs/bpf"]
        self.assertEqual(len(mounts), 1, "no mount at /sys/fs/bpf")
        self.assertFalse(mounts[0].get("readOnly", False), "pinning needs a writable bpffs")
        self.assertNotEqual(mounts[0].get("mountPropagation"), "Bidirectional", "Bidirectional needs privileged")
        self.assertEqual(volumes[mounts[0]["name"]].get("hostPath", {}).get("path"), "/sys/fs/bpf")
        host_paths = {v["hostPath"]["path"] for v in volumes.values() if "hostPath" in v}
        self.assertEqual(host_paths, {"/sys/fs/bpf"}, "only bpffs comes from the host")

    def test_control_socket_directory_writable(self):
        # The root filesystem is read-only and the loader will not start without its control socket
        # (/run/bpfnet/<interface>.sock, core/control_socket.hpp).
        self.assertTrue(self.loader["securityContext"].get("readOnlyRootFilesystem"))
        volumes = {v["name"]: v for v in self.pod.get("volumes") or []}
        mounts = [m for m in self.loader.get("volumeMounts") or [] if m.get("mountPath") == "/run/bpfnet"]
        self.assertEqual(len(mounts), 1, "no writable mount at /run/bpfnet")
        self.assertFalse(mounts[0].get("readOnly", False))
        self.assertIn("emptyDir", volumes[mounts[0]["name"]])

    def test_rolling_update_and_shutdown(self):
        strategy = self.ds["spec"]["updateStrategy"]
        self.assertEqual(strategy["type"], "RollingUpdate")
        self.assertEqual(strategy["rollingUpdate"]["maxUnavailable"], 1)
        self.assertEqual(strategy["rollingUpdate"].get("maxSurge", 0), 0, "two loaders would share port 9394")
        self.assertIsInstance(self.pod.get("terminationGracePeriodSeconds"), int)
        res = self.loader["resources"]
        self.assertTrue(res.get("requests", {}).get("cpu") and res["requests"].get("memory"))
        self.assertTrue(res.get("limits", {}).get("memory"))

    def test_image(self):
        self.assertEqual(self.loader["image"], "bpfnet/bpfnet-loader:0.1.0")


class IronicExample(unittest.TestCase):
    def setUp(self):
        self.ns = one("ironic-example.yaml", "Namespace", EXAMPLE_DIR)
        self.svc = one("ironic-example.yaml", "Service", EXAMPLE_DIR)
        self.deploy = one("ironic-example.yaml", "Deployment", EXAMPLE_DIR)
        self.pod = self.deploy["spec"]["template"]["spec"]

    def test_namespace_enforces_restricted(self):
        labels = self.ns["metadata"].get("labels") or {}
        self.assertEqual(labels.get("pod-security.kubernetes.io/enforce"), "restricted")
        name = self.ns["metadata"]["name"]
        for d in load("ironic-example.yaml", EXAMPLE_DIR):
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"].get("namespace"), name, d["kind"])

    def test_service(self):
        spec = self.svc["spec"]
        self.assertEqual(spec["type"], "LoadBalancer")
        self.assertEqual(spec["loadBalancerClass"], "bpfnet.io/provisioning")
        self.assertEqual(self.svc["metadata"]["annotations"]["bpfnet.io/ip"], "172.22.0.2")
        got = {(p["name"], p["port"], p.get("protocol", "TCP"), p.get("appProtocol")) for p in spec["ports"]}
        self.assertEqual(got, IRONIC_PORTS)
        labels = self.deploy["spec"]["template"]["metadata"]["labels"]
        for k, v in spec["selector"].items():
            self.assertEqual(labels.get(k), v, "the Service selects no pod of the Deployment")
        # Every Service port has a container listening on it.
        container_ports = {(p["containerPort"], p.get("protocol", "TCP"))
                           for c in containers(self.pod) for p in c.get("ports") or []}
        for name, port, proto, _ in IRONIC_PORTS:
            self.assertIn((port, proto), container_ports, name)

    def test_pods_comply_with_restricted(self):
        pod, psc = self.pod, self.pod.get("securityContext") or {}
        for k in ("hostNetwork", "hostPID", "hostIPC"):
            self.assertFalse(pod.get(k, False), k)
        for v in pod.get("volumes") or []:
            types = set(v) - {"name"}
            self.assertTrue(types <= RESTRICTED_VOLUME_TYPES, "volume %s: %s" % (v["name"], types))
        for s in psc.get("sysctls") or []:
            self.assertIn(s["name"], SAFE_SYSCTLS)
        self.assertNotEqual(psc.get("runAsUser"), 0)
        self.assertIn((psc.get("seccompProfile") or {}).get("type"), (None, "RuntimeDefault", "Localhost"))
        for c in containers(pod):
            with self.subTest(container=c["name"]):
                sc = c.get("securityContext") or {}
                self.assertFalse(sc.get("privileged", False))
                self.assertIs(sc.get("allowPrivilegeEscalation"), False)
                self.assertIs(sc.get("runAsNonRoot", psc.get("runAsNonRoot")), True)
                self.assertNotEqual(sc.get("runAsUser", psc.get("runAsUser")), 0)
                seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
                self.assertIn(seccomp, ("RuntimeDefault", "Localhost"))
                caps = sc.get("capabilities") or {}
                self.assertIn("ALL", caps.get("drop") or [])
                self.assertTrue(set(caps.get("add") or []) <= RESTRICTED_ADD_CAPS, caps.get("add"))
                for p in c.get("ports") or []:
                    self.assertNotIn("hostPort", p)
                self.assertNotIn("procMount", sc)

    def test_every_server_has_a_readiness_probe(self):
        # The service IP follows the ready endpoint: a pod must not be ready before its servers listen.
        for c in containers(self.pod):
            with self.subTest(container=c["name"]):
                probe = c.get("readinessProbe") or {}
                self.assertTrue({"httpGet", "tcpSocket", "exec"} & set(probe), probe)
                udp = [p for p in c.get("ports") or [] if p.get("protocol") == "UDP"]
                if udp:
                    # The port bound in /proc/net/udp, in hex, is the container's port.
                    self.assertIn(":%04X " % udp[0]["containerPort"], probe["exec"]["command"][-1])
                else:
                    port = (probe.get("httpGet") or probe.get("tcpSocket"))["port"]
                    self.assertIn(port, [p["name"] for p in c.get("ports") or []])

    def test_only_dhcp_and_tftp_servers_add_net_bind_service(self):
        adders = {c["name"] for c in containers(self.pod)
                  if "NET_BIND_SERVICE" in ((c.get("securityContext") or {}).get("capabilities") or {}).get("add", [])}
        self.assertEqual(adders, {"kea", "tftp"})


def grants(role):
    granted = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, "resourceNames and the like are not expected"
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    assert "*" not in (g, r, v), "wildcard in %s" % rule
                    granted.add((g, r, v))
    return granted


def object_key(d):
    return (d.get("apiVersion"), d.get("kind"), d["metadata"].get("namespace"), d["metadata"]["name"])


class Kustomize(unittest.TestCase):
    """What `kubectl apply -k` applies, rendered by kubectl: k8s/manifests (bpfnet and nothing else),
    k8s/served-namespace and k8s/examples/ironic."""

    def test_renders_every_object_of_every_listed_file_and_the_site_values(self):
        rendered = render(MANIFEST_DIR)
        site = [d for d in rendered if d["kind"] == "ConfigMap"]
        self.assertEqual(len(site), 1)
        generated = site[0]["metadata"]["name"]
        self.assertTrue(generated.startswith("bpfnet-site-"), generated)  # hashed: a change rolls the DaemonSet
        self.assertEqual(site[0]["data"], site_values())
        got = {object_key(d): d for d in rendered if d["kind"] != "ConfigMap"}
        listed = yaml.safe_load(open(os.path.join(MANIFEST_DIR, "kustomization.yaml")))["resources"]
        want = {}
        for name in listed:
            for d in load(name):
                want[object_key(d)] = d
        self.assertEqual(set(got), set(want))
        for k, d in want.items():
            # The only change: the DaemonSet's references to the ConfigMap carry its generated name.
            text = yaml.safe_dump(got[k]).replace(generated, "bpfnet-site")
            self.assertEqual(yaml.safe_load(text), d, "kustomize changed %s" % (k,))
        # Every manifest file but the kustomization itself is listed.
        files = {f for f in os.listdir(MANIFEST_DIR) if f.endswith(".yaml") and f != "kustomization.yaml"}
        self.assertEqual(files, set(listed))

    def test_bpfnet_changes_no_other_namespace(self):
        for d in render(MANIFEST_DIR):
            meta = d["metadata"]
            if d["kind"] == "Namespace":
                self.assertEqual(meta["name"], "bpfnet-system")
            elif d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(meta.get("namespace"), "bpfnet-system", object_key(d))

    def test_served_namespace_is_the_stock_ironic_namespace(self):
        # baremetal-operator's ironic-deployment runs Ironic in baremetal-operator-system: the default of both
        # site.env and k8s/served-namespace, so the two applied unchanged fit each other.
        allowed = set(site_values()["ALLOWED_NAMESPACES"].split(","))
        self.assertEqual(allowed, {"baremetal-operator-system"})
        self.assertEqual({d["metadata"].get("namespace") for d in render(SERVED_DIR)}, allowed)

    def test_example_serves_its_namespace_with_the_role_there(self):
        rendered = render(EXAMPLE_DIR)
        site = [d for d in rendered if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("bpfnet-site")]
        self.assertEqual(len(site), 1)
        allowed = set(site[0]["data"]["ALLOWED_NAMESPACES"].split(","))
        roles = {d["metadata"]["namespace"] for d in rendered if d["kind"] == "Role" and d["metadata"]["name"] == "bpfnet-loader"}
        self.assertEqual(roles, allowed)
        self.assertEqual(roles, {one("ironic-example.yaml", "Namespace", EXAMPLE_DIR)["metadata"]["name"]})
        # bpfnet's own objects are the base's.
        base = {object_key(d) for d in render(MANIFEST_DIR) if d["kind"] != "ConfigMap"}
        self.assertTrue(base <= {object_key(d) for d in rendered})


class BmoComponent(unittest.TestCase):
    """k8s/metal3/ironic-deployment over a stand-in of baremetal-operator's ironic-deployment
    (tests/k8s/bmo: its namespace, name prefix, labels, containers and ConfigMap), as docs/metal3.md has a user
    add it: the Service of bpfnet's class, the pods on the pod network, ironic-image told what to advertise."""

    WITH_BPFNET = os.path.join(BMO_DIR, "with-bpfnet")

    def setUp(self):
        self.rendered = render(self.WITH_BPFNET)
        self.by_kind = {}
        for d in self.rendered:
            self.by_kind.setdefault(d["kind"], []).append(d)
        [self.deployment] = self.by_kind["Deployment"]
        [self.config] = self.by_kind["ConfigMap"]
        [self.service] = self.by_kind["Service"]
        self.pod = self.deployment["spec"]["template"]["spec"]

    def test_everything_in_bmos_namespace_and_the_deployment_keeps_its_name(self):
        for d in self.rendered:
            self.assertEqual(d["metadata"]["namespace"], "baremetal-operator-system", object_key(d))
        self.assertEqual(self.deployment["metadata"]["name"], "baremetal-operator-ironic")
        self.assertEqual(self.service["metadata"]["name"], "ironic-provisioning")

    def test_service_of_bpfnets_class_selects_the_ironic_pods(self):
        spec = self.service["spec"]
        self.assertEqual((spec["type"], spec["loadBalancerClass"]), ("LoadBalancer", "bpfnet.io/provisioning"))
        labels = self.deployment["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(spec["selector"], {"name": "ironic"})
        self.assertTrue(all(labels.get(k) == v for k, v in spec["selector"].items()))
        ports = {(p["protocol"], p["port"]): p for p in spec["ports"]}
        self.assertEqual(set(ports), {("TCP", 6385), ("TCP", 6180), ("TCP", 6183), ("UDP", 67), ("UDP", 69)})
        self.assertEqual(ports[("UDP", 67)].get("appProtocol"), "dhcp")
        self.assertEqual(ports[("UDP", 69)].get("appProtocol"), "tftp")
        # The pods declare no container ports: every target is a number.
        self.assertTrue(all(isinstance(p["targetPort"], int) for p in spec["ports"]))

    def test_one_place_for_the_provisioning_ip(self):
        data = self.config["data"]
        self.assertEqual(self.service["metadata"]["annotations"]["bpfnet.io/ip"], data["IRONIC_IP"])
        self.assertEqual(data["IRONIC_IP"], "172.22.0.2")
        # ironic-image waits for PROVISIONING_IP on an interface; the service IP is on none.
        self.assertNotIn("PROVISIONING_IP", data)
        self.assertEqual(data["PROVISIONING_INTERFACE"], "eth0")
        # A relayed range names its netmask (docs/ironic-pod.md); the site's other values are kept.
        self.assertEqual(data["DHCP_RANGE"], "172.22.0.10,172.22.0.100,255.255.255.0")
        self.assertEqual(data["IRONIC_ENDPOINT"], "http://172.22.0.2:6385/v1/")
        for c in self.pod["containers"]:
            refs = [e["configMapRef"]["name"] for e in c.get("envFrom", [])]
            self.assertEqual(refs, [self.config["metadata"]["name"]], c["name"])

    def test_another_ip_reaches_the_service(self):
        # The replacement, not the placeholder in service.yaml: a site with another IP gets it in the Service.
        [service] = [d for d in self.render_component("IRONIC_IP=198.18.0.9") if d["kind"] == "Service"]
        self.assertEqual(service["metadata"]["annotations"]["bpfnet.io/ip"], "198.18.0.9")

    def render_component(self, *literals):
        """BMO's default ironic-deployment with the component and, if any, the site's literals."""
        with tempfile.TemporaryDirectory() as tmp:
            # kustomize takes relative paths only.
            kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                             "namespace": "baremetal-operator-system",
                             "resources": [os.path.relpath(os.path.join(BMO_DIR, "default"), tmp)],
                             "components": [os.path.relpath(os.path.join(ROOT, "k8s", "metal3", "ironic-deployment"), tmp)]}
            if literals:
                kustomization["configMapGenerator"] = [{"name": "ironic-bmo-configmap", "behavior": "merge",
                                                        "literals": list(literals)}]
            with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
                yaml.safe_dump(kustomization, f)
            return render(tmp)

    def test_pods_on_the_pod_network(self):
        self.assertIs(self.pod["hostNetwork"], False)
        self.assertEqual(self.pod["dnsPolicy"], "ClusterFirst")
        for c in containers(self.pod):
            self.assertFalse(any("hostPort" in p for p in c.get("ports", [])), c["name"])
        self.assertNotIn("ironic-endpoint-keepalived", [c["name"] for c in containers(self.pod)])

    def test_ironic_probed_on_its_own_address(self):
        # ironic-image's probe scripts call IRONIC_IP from inside the pod, which bpfnet does not carry.
        [ironic] = [c for c in self.pod["containers"] if c["name"] == "ironic"]
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(ironic[probe]["httpGet"], {"path": "/", "port": 6385}, probe)
            self.assertNotIn("exec", ironic[probe], probe)
        # The other containers' probes are untouched (they call 127.0.0.1 or read sockets).
        [httpd] = [c for c in self.pod["containers"] if c["name"] == "ironic-httpd"]
        self.assertIn("exec", httpd["readinessProbe"])

    def test_without_an_ironic_ip_nothing_renders(self):
        # Nothing half-applied: the component over BMO's default alone (no IRONIC_IP) is refused by kustomize.
        with self.assertRaises(subprocess.CalledProcessError) as refused:
            self.render_component()
        self.assertIn("IRONIC_IP", refused.exception.stderr)


class IrsoComponent(unittest.TestCase):
    """k8s/metal3/irso over an Ironic resource of the Ironic Standalone Operator (tests/k8s/irso), as
    docs/metal3.md has a user add it: the Service of bpfnet's class over IrSO's pods, the pods on the pod
    network, the provisioning IP in one place."""

    def setUp(self):
        rendered = render(os.path.join(HERE, "irso"))
        [self.service] = [d for d in rendered if d["kind"] == "Service"]
        [self.ironic] = [d for d in rendered if d["kind"] == "Ironic"]

    def test_service_selects_the_pods_irso_labels_with_the_resources_name(self):
        spec = self.service["spec"]
        self.assertEqual((spec["type"], spec["loadBalancerClass"]), ("LoadBalancer", "bpfnet.io/provisioning"))
        self.assertEqual(spec["selector"], {"ironic.metal3.io/ironic": self.ironic["metadata"]["name"]})
        self.assertEqual(self.service["metadata"]["namespace"], self.ironic["metadata"]["namespace"])

    def test_named_target_ports_of_irsos_containers(self):
        targets = {p["port"]: p["targetPort"] for p in self.service["spec"]["ports"]}
        self.assertEqual(targets, {6385: "ironic-api", 6180: "image-svc", 6183: "image-svc-tls"})
        networking = self.ironic["spec"]["networking"]
        self.assertEqual((networking["apiPort"], networking["imageServerPort"], networking["imageServerTLSPort"]),
                         (6385, 6180, 6183))

    def test_pod_network_without_dhcp_and_one_place_for_the_ip(self):
        networking = self.ironic["spec"]["networking"]
        self.assertIs(networking["disableHostNetwork"], True)
        # IrSO refuses DHCP, ipAddress and keepalived with disableHostNetwork (docs/metal3.md).
        for refused in ("dhcp", "ipAddress", "ipAddressManager", "keepalived"):
            self.assertNotIn(refused, networking)
        self.assertEqual(self.service["metadata"]["annotations"]["bpfnet.io/ip"], networking["externalIP"])


class BeforeKubernetes130(unittest.TestCase):
    """k8s/before-1.30: k8s/manifests for API servers that do not know securityContext.appArmorProfile
    (added in Kubernetes 1.30): the same objects, the field removed, the annotation that says the same kept."""

    def test_the_manifests_without_the_field(self):
        base = {object_key(d): d for d in render(MANIFEST_DIR)}
        old = {object_key(d): d for d in render(os.path.join(ROOT, "k8s", "before-1.30"))}
        self.assertEqual(set(old), set(base))
        for key, d in base.items():
            if d["kind"] != "DaemonSet":
                self.assertEqual(old[key], d, key)
                continue
            pod = old[key]["spec"]["template"]
            [loader] = pod["spec"]["containers"]
            self.assertNotIn("appArmorProfile", loader["securityContext"])
            self.assertEqual(pod["metadata"]["annotations"]["container.apparmor.security.beta.kubernetes.io/loader"],
                             "unconfined")
            # Nothing else changed.
            del base[key]["spec"]["template"]["spec"]["containers"][0]["securityContext"]["appArmorProfile"]
            self.assertEqual(old[key], base[key])

    def test_no_field_newer_than_the_oldest_version_claimed(self):
        # Fields of the objects the manifests create that Kubernetes added after 1.24, the oldest version
        # docs/kubernetes.md claims, by the release that added them (the API reference's "added in"): none may
        # appear in what k8s/before-1.30 renders. A schema of 1.24 is not available offline; this list is the
        # check, and a new field in the manifests must be added here with its release (a container's
        # restartPolicy, 1.28, is left out: the pod's has the same name and is as old as Kubernetes).
        newer = {"appArmorProfile": "1.30", "trafficDistribution": "1.30", "ipMode": "1.29",
                 "resizePolicy": "1.27", "sleep": "1.29", "hostUsers": "1.25",
                 "schedulingGates": "1.26", "resourceClaims": "1.26", "matchLabelKeys": "1.27",
                 "stopSignal": "1.33", "recursiveReadOnly": "1.30", "supplementalGroupsPolicy": "1.31",
                 "seLinuxChangePolicy": "1.32"}

        def keys(node):
            if isinstance(node, dict):
                for k, v in node.items():
                    yield k
                    yield from keys(v)
            elif isinstance(node, list):
                for v in node:
                    yield from keys(v)

        for d in render(os.path.join(ROOT, "k8s", "before-1.30")):
            found = sorted(set(keys(d)) & set(newer))
            self.assertEqual(found, [], "%s uses %s" % (object_key(d), {k: newer[k] for k in found}))


class Uninstall(unittest.TestCase):
    """k8s/uninstall: k8s/manifests with the DaemonSet's loader run once per node with --teardown."""

    def test_the_loader_runs_once_with_its_own_flags_and_teardown(self):
        base = {object_key(d): d for d in render(MANIFEST_DIR)}
        teardown = {object_key(d): d for d in render(UNINSTALL_DIR)}
        self.assertEqual(set(teardown), set(base), "the same objects, so that delete -k removes them all")
        key = ("apps/v1", "DaemonSet", "bpfnet-system", "bpfnet-loader")
        for k in base:
            if k != key:
                self.assertEqual(teardown[k], base[k], k)
        pod, loader_pod = teardown[key]["spec"]["template"], base[key]["spec"]["template"]
        self.assertEqual(pod["metadata"], loader_pod["metadata"])
        spec, loader_spec = dict(pod["spec"]), dict(loader_pod["spec"])
        init, containers = spec.pop("initContainers"), spec.pop("containers")
        loader = loader_spec.pop("containers")[0]
        self.assertEqual(spec, loader_spec, "the same nodes, host network, volumes and account")
        self.assertEqual(len(init), 1)
        want = {k: v for k, v in loader.items() if k not in ("livenessProbe", "readinessProbe", "ports")}
        want["args"] = loader["args"] + ["--teardown"]
        self.assertEqual(init[0], want)
        # Then nothing runs: a pause container keeps the pod finished.
        self.assertEqual([c["image"] for c in containers], ["registry.k8s.io/pause:3.9"])
        self.assertEqual(containers[0]["securityContext"]["capabilities"], {"drop": ["ALL"]})

    def test_the_loader_accepts_the_teardown_flags(self):
        loader = os.environ.get("BPFNET_LOADER")
        if not loader:
            self.skipTest("BPFNET_LOADER (the bpfnet-loader binary) not given")
        ds = [d for d in render(UNINSTALL_DIR) if d["kind"] == "DaemonSet"][0]
        init = ds["spec"]["template"]["spec"]["initContainers"][0]
        env, site = {}, site_values()
        for e in init.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
            env[e["name"]] = site[ref["key"]] if ref else e.get("value", "control-plane-1" if "valueFrom" in e else "")
        args = [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], a) for a in init["args"]]
        run = subprocess.run([loader] + args + ["--check"], capture_output=True, text=True, timeout=10)
        self.assertEqual(run.returncode, 0, "bpfnet-loader %s --check: %s" % (" ".join(args), run.stderr))


class Rbac(unittest.TestCase):
    def setUp(self):
        self.cluster_role = one("rbac.yaml", "ClusterRole")
        self.cluster_binding = one("rbac.yaml", "ClusterRoleBinding")
        self.role = one("role.yaml", "Role", SERVED_DIR)
        self.binding = one("role.yaml", "RoleBinding", SERVED_DIR)
        self.lease_role = one("rbac.yaml", "Role")
        self.lease_binding = one("rbac.yaml", "RoleBinding")
        sa = one("serviceaccount.yaml", "ServiceAccount")["metadata"]
        self.subjects = [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]

    def test_cluster_role_is_exactly_the_calls_made_everywhere(self):
        granted = grants(self.cluster_role)
        self.assertEqual(granted - CLUSTER_API_CALLS, set(), "granted but not used")
        self.assertEqual(CLUSTER_API_CALLS - granted, set(), "used but not granted")
        self.assertNotIn("aggregationRule", self.cluster_role)
        # Nothing written cluster-wide but Events: no Lease of kube-system or kube-node-lease is writable.
        for g, r, v in granted:
            if v not in ("get", "list", "watch"):
                self.assertEqual((g, r), ("events.k8s.io", "events"))

    def test_role_is_exactly_the_calls_made_where_services_are_served(self):
        granted = grants(self.role)
        self.assertEqual(granted - NAMESPACED_API_CALLS, set(), "granted but not used")
        self.assertEqual(NAMESPACED_API_CALLS - granted, set(), "used but not granted")

    def test_lease_role_is_exactly_the_lease_calls_in_the_loaders_namespace(self):
        granted = grants(self.lease_role)
        self.assertEqual(granted - LEASE_API_CALLS, set(), "granted but not used")
        self.assertEqual(LEASE_API_CALLS - granted, set(), "used but not granted")
        # The loader's Lease namespace is its pod's (POD_NAMESPACE from the downward API): the Role's.
        env = one("daemonset.yaml", "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["env"]
        pod_ns = [e for e in env if e["name"] == "POD_NAMESPACE"]
        self.assertEqual(pod_ns, [{"name": "POD_NAMESPACE",
                                   "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}])
        self.assertEqual(self.lease_role["metadata"]["namespace"], one("daemonset.yaml", "DaemonSet")["metadata"]["namespace"])
        self.assertEqual(self.lease_binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                         "name": self.lease_role["metadata"]["name"]})
        self.assertEqual(self.lease_binding["metadata"]["namespace"], self.lease_role["metadata"]["namespace"])
        self.assertEqual(self.lease_binding["subjects"], self.subjects)

    def test_bindings(self):
        self.assertEqual(self.cluster_binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                                           "kind": "ClusterRole",
                                                           "name": self.cluster_role["metadata"]["name"]})
        self.assertEqual(self.cluster_binding["subjects"], self.subjects)
        self.assertEqual(self.binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                   "name": self.role["metadata"]["name"]})
        self.assertEqual(self.binding["metadata"].get("namespace"), self.role["metadata"].get("namespace"))
        self.assertEqual(self.binding["subjects"], self.subjects)


if __name__ == "__main__":
    unittest.main(verbosity=1)
