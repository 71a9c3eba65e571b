"""The Kubernetes objects the cluster needs before anything uses it: the agent-sandbox CRDs
(reduced to v1beta1), the fake kwok nodes, the StorageClasses of the fake provisioner, and
the agent-sandbox controller's namespace and ConfigMap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from testenv import build
from testenv.cluster.client import create_if_absent
from testenv.cluster.instance import (
    ALLOWED_LABEL_DOMAINS,
    FIXED_STORAGE_CLASS,
    NODE_ANNOTATION,
    NODE_COUNT,
    NODE_IP_PREFIX,
    POD_CIDR,
    PROVISIONER_NAME,
    SANDBOX_CONFIGMAP,
    SANDBOX_NAMESPACE,
    STORAGE_CLASS,
    ClusterError,
)

# libyaml's loader when PyYAML has it: the CRDs are large (seconds with the pure-Python one).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def sandbox_crds() -> list[dict[str, Any]]:
    """The four agent-sandbox CRDs from the pinned module, reduced to v1beta1.

    The shipped CRDs also serve the deprecated v1alpha1 and convert between the two with
    a webhook in the controller. We run the controller without its webhook, so conversion
    is dropped and only v1beta1 is served and stored (the controller itself speaks v1beta1).
    """
    crd_dir = build.module_dir("sigs.k8s.io/agent-sandbox", build.AGENT_SANDBOX_VERSION)
    crds = []
    for path in sorted((crd_dir / "k8s" / "crds").glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
        spec = crd["spec"]
        spec["versions"] = [v for v in spec["versions"] if v["name"] == "v1beta1"]
        if len(spec["versions"]) != 1:
            raise ClusterError(f"{path.name} has no v1beta1 version")
        spec["versions"][0]["served"] = True
        spec["versions"][0]["storage"] = True
        spec.pop("conversion", None)
        crds.append(crd)
    return crds


def crds_file() -> Path:
    """The stripped CRDs, cached next to the binaries (reading the module is slowish)."""
    # The name says what was done to the CRDs; change it when sandbox_crds() changes.
    path = build.cache_dir() / "crds" / f"agent-sandbox-{build.AGENT_SANDBOX_VERSION}-v1beta1.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sandbox_crds()))
        tmp.replace(path)
    return path


def apply_crds(api: Any) -> list[str]:

    ext = k8s.ApiextensionsV1Api(api)
    names = []
    for crd in json.loads(crds_file().read_text()):
        names.append(crd["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise
    return names


def crds_established(api: Any, names: list[str]) -> bool:

    ext = k8s.ApiextensionsV1Api(api)
    for name in names:
        crd = ext.read_custom_resource_definition(name)
        conditions = (crd.status.conditions if crd.status else None) or []
        if not any(c.type == "Established" and c.status == "True" for c in conditions):
            return False
    return True


def _node_name(i: int) -> str:
    return f"kwok-node-{i}"


def create_nodes(api: Any) -> None:
    """Fake nodes, annotated so kwok manages them; each with its own pod CIDR and IP."""

    core = k8s.CoreV1Api(api)
    for i in range(1, NODE_COUNT + 1):
        name = _node_name(i)
        pod_cidr = POD_CIDR.replace(".0.0/16", f".{i}.0/24")
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                },
            },
            "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        }
        create_if_absent(core.create_node, node)
        # Addresses set before kwok starts are kept by kwok's node-initialize stage.
        addresses = {
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": f"{NODE_IP_PREFIX}{i}"},
                    {"type": "Hostname", "address": name},
                ]
            }
        }
        core.patch_node_status(name, addresses)


def nodes_ready(api: Any) -> bool:

    nodes: list[Any] = k8s.CoreV1Api(api).list_node().items
    ready = [
        n
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
    ]
    return len(ready) >= NODE_COUNT


def _storage_classes() -> list[dict[str, Any]]:
    def storage_class(name: str, expandable: bool, default: bool) -> dict[str, Any]:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "annotations": annotations},
            "provisioner": PROVISIONER_NAME,
            "reclaimPolicy": "Delete",
            # Immediate: PVCs bind without waiting for a Pod (the provisioner does not
            # need to know the node, and kwok nodes have no topology).
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": expandable,
        }

    # One class serves both ReadWriteOnce and ReadWriteMany (the fake provisioner accepts
    # any access mode); the second exists to test classes that cannot expand.
    return [
        storage_class(STORAGE_CLASS, expandable=True, default=True),
        storage_class(FIXED_STORAGE_CLASS, expandable=False, default=False),
    ]


def setup_objects(api: Any) -> None:

    core = k8s.CoreV1Api(api)
    storage = k8s.StorageV1Api(api)
    for sc in _storage_classes():
        create_if_absent(storage.create_storage_class, sc)
    create_if_absent(core.create_namespace, {"metadata": {"name": SANDBOX_NAMESPACE}})
    create_if_absent(
        core.create_namespaced_config_map,
        SANDBOX_NAMESPACE,
        {
            "metadata": {"name": SANDBOX_CONFIGMAP, "namespace": SANDBOX_NAMESPACE},
            "data": {"allowed-label-domains": ",".join(ALLOWED_LABEL_DOMAINS)},
        },
    )
