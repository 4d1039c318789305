#!/usr/bin/env python3
"""The podman flags that give a container what k8s/manifests gives the loader's container on a node.

Renders the manifests (`kubectl kustomize k8s/manifests`), takes the DaemonSet's pod and its loader container,
and prints one `podman run` flag per line: the host network, the user, the capabilities (dropped to none,
then exactly those the DaemonSet adds), no privilege escalation, the read-only root file system, seccomp and
AppArmor, the memory limit, and each volume mount. A field this script does not know how to give refuses to
run (exit 2), so a new security setting in the DaemonSet cannot be left out of the test without notice.

    daemonset_flags.py [--manifests DIR] [--drop CAP]... [--control-dir DIR]

--drop CAP leaves CAP out of what the DaemonSet adds (the test that shows each capability is needed).
--control-dir DIR backs the DaemonSet's emptyDir for the control socket with DIR, so that bpfnetctl outside
the container reaches the socket as `kubectl exec` would inside it.
"""
import argparse
import os
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Fields of the pod and the container that decide nothing podman is asked here (scheduling, probes, the
# Kubernetes-mode arguments and their environment: the test runs the loader's standalone mode from the
# same image; the API server's objects are the Kubernetes suite's).
POD_FIELDS_IGNORED = {"serviceAccountName", "dnsPolicy", "priorityClassName", "affinity", "tolerations",
                      "terminationGracePeriodSeconds", "containers", "volumes", "hostNetwork",
                      "initContainers", "automountServiceAccountToken"}
CONTAINER_FIELDS_IGNORED = {"name", "image", "imagePullPolicy", "args", "command", "env", "ports",
                            "livenessProbe", "readinessProbe", "resources", "securityContext",
                            "volumeMounts"}
SECURITY_FIELDS = {"privileged", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "runAsUser",
                   "runAsNonRoot", "capabilities", "seccompProfile", "appArmorProfile"}


class Refused(Exception):
    pass


def render(manifests):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        raise Refused("kubectl not found (scripts/setup.sh installs it)")
    out = subprocess.run([kubectl, "kustomize", manifests], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    return list(yaml.safe_load_all(out))


def loader_pod(objects):
    sets = [o for o in objects if o and o.get("kind") == "DaemonSet"]
    if len(sets) != 1:
        raise Refused("expected one DaemonSet in the manifests, found %d" % len(sets))
    pod = sets[0]["spec"]["template"]["spec"]
    loaders = [c for c in pod["containers"] if c["name"] == "loader"]
    if len(loaders) != 1:
        raise Refused("expected one container named loader")
    return pod, loaders[0]


def refuse_unknown(what, fields, known):
    unknown = sorted(set(fields) - known)
    if unknown:
        raise Refused("%s: no podman equivalent known for %s (tests/image/daemonset_flags.py)" % (what, unknown))


def security_flags(ctx, dropped):
    refuse_unknown("securityContext", ctx, SECURITY_FIELDS)
    flags = []
    if ctx.get("privileged"):
        flags.append("--privileged")
    if ctx.get("allowPrivilegeEscalation") is False:
        flags.append("--security-opt=no-new-privileges")
    if ctx.get("readOnlyRootFilesystem"):
        # Kubernetes adds no tmpfs to a read-only root; podman would (/tmp, /var/tmp, /run) without the second.
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if "runAsUser" in ctx:
        flags.append("--user=%d" % ctx["runAsUser"])
    caps = ctx.get("capabilities", {})
    refuse_unknown("capabilities", caps, {"drop", "add"})
    if [c.upper() for c in caps.get("drop", [])] != ["ALL"]:
        raise Refused("capabilities.drop is %s, the test expects [ALL]" % caps.get("drop"))
    flags.append("--cap-drop=all")
    added = [c.upper() for c in caps.get("add", [])]
    for cap in dropped:
        if cap not in added:
            raise Refused("--drop %s: the DaemonSet does not add it (it adds %s)" % (cap, added))
    kept = [c for c in added if c not in dropped]
    if kept:
        flags.append("--cap-add=" + ",".join(kept))
    seccomp = ctx.get("seccompProfile", {}).get("type", "RuntimeDefault")
    if seccomp == "Unconfined":
        flags.append("--security-opt=seccomp=unconfined")
    elif seccomp != "RuntimeDefault":
        raise Refused("seccompProfile %s" % seccomp)
    apparmor = ctx.get("appArmorProfile", {}).get("type", "RuntimeDefault")
    if apparmor == "Unconfined":
        flags.append("--security-opt=apparmor=unconfined")
    elif apparmor != "RuntimeDefault":
        raise Refused("appArmorProfile %s" % apparmor)
    return flags


def memory_flag(resources):
    limit = resources.get("limits", {}).get("memory")
    if not limit:
        return []
    units = {"Ki": "k", "Mi": "m", "Gi": "g"}
    for suffix, unit in units.items():
        if limit.endswith(suffix):
            return ["--memory=%s%s" % (limit[: -len(suffix)], unit)]
    raise Refused("memory limit %s" % limit)


def mount_flags(pod, container, control_dir):
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    flags = []
    for mount in container.get("volumeMounts", []):
        refuse_unknown("volumeMount", mount, {"name", "mountPath", "mountPropagation", "readOnly"})
        volume = volumes[mount["name"]]
        options = ["ro"] if mount.get("readOnly") else []
        propagation = mount.get("mountPropagation", "None")
        if propagation == "HostToContainer":
            options.append("rslave")
        elif propagation != "None":
            raise Refused("mountPropagation %s" % propagation)
        if "hostPath" in volume:
            source = volume["hostPath"]["path"]
        elif "emptyDir" in volume:
            if not control_dir:
                raise Refused("emptyDir %s needs --control-dir" % mount["name"])
            source = control_dir
        else:
            raise Refused("volume %s: only hostPath and emptyDir are known" % mount["name"])
        flags.append("--volume=%s:%s%s" % (source, mount["mountPath"], ":" + ",".join(options) if options else ""))
    return flags


def podman_flags(objects, dropped, control_dir):
    pod, container = loader_pod(objects)
    refuse_unknown("pod spec", pod, POD_FIELDS_IGNORED)
    refuse_unknown("loader container", container, CONTAINER_FIELDS_IGNORED)
    if pod.get("securityContext"):
        raise Refused("a pod-level securityContext (the test reads the container's)")
    flags = ["--network=host"] if pod.get("hostNetwork") else []
    flags += security_flags(container.get("securityContext", {}), dropped)
    flags += memory_flag(container.get("resources", {}))
    flags += mount_flags(pod, container, control_dir)
    return flags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", default=os.path.join(ROOT, "k8s", "manifests"))
    parser.add_argument("--drop", action="append", default=[], type=str.upper)
    parser.add_argument("--control-dir")
    parser.add_argument("--list-capabilities", action="store_true",
                        help="print the capabilities the DaemonSet adds, one per line, and nothing else")
    args = parser.parse_args()
    try:
        objects = render(args.manifests)
        if args.list_capabilities:
            _, container = loader_pod(objects)
            for cap in container["securityContext"]["capabilities"]["add"]:
                print(cap.upper())
            return 0
        for flag in podman_flags(objects, args.drop, args.control_dir):
            print(flag)
    except Refused as e:
        print("daemonset_flags.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
