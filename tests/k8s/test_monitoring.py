#!/usr/bin/env python3
"""Checks the optional monitoring component k8s/monitoring (python3, PyYAML, kubectl and promtool).

    python3 tests/k8s/test_monitoring.py

Rendered with k8s/manifests by `kubectl kustomize`, its Service selects the loader's pods on their metrics
port and its ServiceMonitor selects that Service; its PrometheusRule passes `promtool check rules`, and
`promtool test rules` (tests/k8s/monitoring_rules_test.yaml) shows each alert firing on the series that
should raise it and silent on healthy ones; every metric the rules use is one the loader exports.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
MONITORING = os.path.join(TOP, "k8s", "monitoring")
# Where the loader declares its metric families (core/metrics.cpp, k8s/metrics.cpp).
METRIC_SOURCES = [os.path.join(TOP, "core", "metrics.cpp"), os.path.join(TOP, "k8s", "metrics.cpp")]


def tool(name):
    path = shutil.which(name)
    assert path, "no %s: scripts/setup.sh installs it" % name
    return path


def rendered_with_manifests():
    """k8s/manifests with the monitoring component, as a user's kustomization would combine them."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                            "resources": [os.path.relpath(os.path.join(TOP, "k8s", "manifests"), d)],
                            "components": [os.path.relpath(MONITORING, d)]}, f)
        out = subprocess.run([tool("kubectl"), "kustomize", d], check=True, capture_output=True, text=True,
                             timeout=60)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def only(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, "want one %s, found %d" % (kind, len(found))
    return found[0]


def rule_groups():
    with open(os.path.join(MONITORING, "rules.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["spec"]


class Objects(unittest.TestCase):
    def setUp(self):
        self.docs = rendered_with_manifests()

    def test_service_selects_the_loaders_metrics_port(self):
        svc = only(self.docs, "Service")
        pod = only(self.docs, "DaemonSet")["spec"]["template"]
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(pod["metadata"]["labels"].get(k), v)
        named = {p["name"]: p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or []}
        port = svc["spec"]["ports"][0]
        self.assertEqual((port["port"], named.get(port["targetPort"])), (9394, 9394))
        self.assertEqual(svc["spec"].get("clusterIP"), "None")

    def test_service_monitor_selects_the_service(self):
        svc, monitor = only(self.docs, "Service"), only(self.docs, "ServiceMonitor")
        for k, v in monitor["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(svc["metadata"]["labels"].get(k), v)
        self.assertEqual([e["port"] for e in monitor["spec"]["endpoints"]], [svc["spec"]["ports"][0]["name"]])
        self.assertEqual(monitor["metadata"]["namespace"], svc["metadata"]["namespace"])

    def test_everything_in_bpfnets_namespace(self):
        for d in self.docs:
            if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(d["metadata"].get("namespace"), "bpfnet-system", d["kind"])


class Rules(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.rules = os.path.join(self.dir.name, "rules.yaml")
        with open(self.rules, "w") as f:
            yaml.safe_dump(rule_groups(), f)

    def tearDown(self):
        self.dir.cleanup()

    def test_promtool_checks_the_rules(self):
        run = subprocess.run([tool("promtool"), "check", "rules", self.rules], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_each_alert_fires_when_it_should_and_not_otherwise(self):
        with open(os.path.join(HERE, "monitoring_rules_test.yaml"), encoding="utf-8") as f:
            tests = yaml.safe_load(f)
        tests["rule_files"] = [self.rules]
        path = os.path.join(self.dir.name, "test.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(tests, f)
        run = subprocess.run([tool("promtool"), "test", "rules", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        # Every alert is tested firing at least once.
        alerts = {r["alert"] for g in rule_groups()["groups"] for r in g["rules"]}
        fired = {t["alertname"] for case in tests["tests"] for t in case["alert_rule_test"] if t["exp_alerts"]}
        self.assertEqual(alerts - fired, set(), "alerts never shown firing")

    def test_every_metric_used_is_exported(self):
        exported = set()
        for path in METRIC_SOURCES:
            with open(path, encoding="utf-8") as f:
                exported |= set(re.findall(r'"(bpfnet_[a-z0-9_]+)"', f.read()))
        for group in rule_groups()["groups"]:
            for rule in group["rules"]:
                for metric in re.findall(r"\bbpfnet_[a-z0-9_]+", rule["expr"]):
                    self.assertIn(metric, exported, rule["alert"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
