"""The demo the local stack seeds: the service's default namespace with a hardened
SandboxTemplate and a warm pool of 2.
"""

from __future__ import annotations

import copy
from typing import Any

from kubernetes import client as k8s

from contextsvc.kube.objects.hardening import harden
from testenv.cluster.client import Kubeconfig, api_for, create_if_absent
from testenv.cluster.instance import EXTENSIONS_GROUP

DEMO_NAMESPACE = "serverless-harness"


def seed_demo(kubeconfig: Kubeconfig = None, namespace: str = DEMO_NAMESPACE) -> None:
    """The service's default namespace with a demo SandboxTemplate and a warm pool of 2.

    Idempotent: existing objects are left as they are.
    """

    template = demo_template("demo")
    pool = {
        "apiVersion": f"{EXTENSIONS_GROUP}/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": "demo"},
        "spec": {"replicas": 2, "sandboxTemplateRef": {"name": "demo"}},
    }
    with api_for(kubeconfig) as api:
        create_if_absent(k8s.CoreV1Api(api).create_namespace, {"metadata": {"name": namespace}})
        custom = k8s.CustomObjectsApi(api)
        for plural, body in (("sandboxtemplates", template), ("sandboxwarmpools", pool)):
            create_if_absent(
                custom.create_namespaced_custom_object,
                EXTENSIONS_GROUP,
                "v1beta1",
                namespace,
                plural,
                body,
            )


def demo_template(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A minimal SandboxTemplate (busybox; kwok never pulls the image), hardened as a
    profile's own warm pool is (objects.hardening.harden): the service refuses to hand out claims
    of an unhardened template, and the demo pool is the first one a newcomer tries."""
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]
    }
    harden(pod_spec, frozenset())
    return {
        "apiVersion": f"{EXTENSIONS_GROUP}/v1beta1",
        "kind": "SandboxTemplate",
        "metadata": {"name": name},
        "spec": {
            "podTemplate": {
                "metadata": {"labels": copy.deepcopy(labels or {"app": "demo-sandbox"})},
                "spec": pod_spec,
            },
            # No CNI here anyway; Unmanaged keeps the template free of a NetworkPolicy.
            "networkPolicyManagement": "Unmanaged",
        },
    }
