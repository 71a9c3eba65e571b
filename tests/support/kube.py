"""Test-side Kubernetes helpers: set up and inspect objects directly, the way a caller's
platform (or the old Go service) would have made them."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from allocations.models import Allocation
from allocations.resync import resync_all
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import condition
from contextsvc.kube.objects.kinds import (
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
    ApiKind,
)
from contextsvc.kube.objects.labels import managed_pool_selector, pool_selector
from testenv import ClusterHandle
from tests.support.processes import wait_until

# Fixtures are made with the cluster admin's rights, as the caller's platform would make
# them, so they go around the service's declared access list (contextsvc/kube/access.py),
# which covers what the service itself may do.


def admin_create(kind: ApiKind, body: dict[str, Any]) -> dict[str, Any]:
    namespace = body["metadata"].get("namespace")
    created: dict[str, Any] = kube._call("POST", kube._path(kind, namespace), body=body)
    return created


@dataclass
class KubeCalls:
    """The Kubernetes API calls a process made: ``log`` holds ("sent" or "answered",
    method, path) in the order they happened; ``sent`` the calls in the order sent."""

    log: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def sent(self) -> list[tuple[str, str]]:
        return [(method, path) for what, method, path in self.log if what == "sent"]


@contextlib.contextmanager
def kube_calls() -> Iterator[KubeCalls]:
    """Every Kubernetes API call this process makes meanwhile: each is passed through to
    the API server unchanged, only recorded."""
    calls = KubeCalls()
    real = kube._call

    def recorded(method: str, path: str, **kwargs: Any) -> Any:
        calls.log.append(("sent", method, path))  # list.append is atomic: threads may call
        try:
            return real(method, path, **kwargs)
        finally:
            calls.log.append(("answered", method, path))

    with mock.patch.object(kube, "_call", recorded):
        yield calls


def admin_delete(kind: ApiKind, namespace: str, name: str) -> None:
    kube._call("DELETE", kube._path(kind, namespace, name))


def admin_patch(kind: ApiKind, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch, as the object's owner would make it."""
    patched: dict[str, Any] = kube._call(
        "PATCH",
        kube._path(kind, namespace, name),
        body=patch,
        content_type="application/merge-patch+json",
    )
    return patched


def admin_patch_status(kind: ApiKind, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Write an object's status, as its controller would."""
    kube._call(
        "PATCH",
        kube._path(kind, namespace, name) + "/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


def make_pvc(
    namespace: str,
    name: str,
    *,
    modes: list[str],
    size: str = "1Gi",
    labels: dict[str, str] | None = None,
    storage_class: str = "standard",
) -> dict[str, Any]:
    return admin_create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "accessModes": modes,
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": size}},
            },
        },
    )


def make_template(
    namespace: str, name: str, pod_template: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    return admin_create(
        SANDBOX_TEMPLATE,
        {
            "apiVersion": SANDBOX_TEMPLATE.api_version,
            "kind": "SandboxTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"podTemplate": pod_template, **spec},
        },
    )


# A warm pool's template as a platform team following docs/profiles.md writes it: the Pod
# Security "restricted" level (the service refuses to hand out less without a relaxation).
HARDENED_POD_SPEC: dict[str, Any] = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "containers": [
        {
            "name": "sandbox",
            "image": "busybox:1.36",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
}


def make_warm_pool(
    namespace: str,
    name: str,
    replicas: int = 2,
    *,
    pod_spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    wait: bool = True,
) -> None:
    make_template(
        namespace,
        f"{name}-template",
        {"spec": pod_spec or HARDENED_POD_SPEC},
        networkPolicyManagement="Unmanaged",
    )
    admin_create(
        SANDBOX_WARM_POOL,
        {
            "apiVersion": SANDBOX_WARM_POOL.api_version,
            "kind": "SandboxWarmPool",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
            "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": f"{name}-template"}},
        },
    )
    if wait:
        wait_for_warm_pool(namespace, name, replicas)


def wait_for_warm_pool(namespace: str, name: str, replicas: int) -> None:
    """Until the warm pool holds ``replicas`` ready Sandboxes of its own, and says so. After
    a claim adopts one of them (it then belongs to the claim) the pool makes another: until
    that is done and ready, the namespace's objects keep changing."""

    def warm() -> bool:
        pool = kube.get_object(SANDBOX_WARM_POOL, namespace, name) or {}
        owned = [
            sandbox
            for sandbox in kube.list_objects(SANDBOX, namespace)
            if any(
                owner.get("kind") == "SandboxWarmPool" and owner.get("name") == name
                for owner in sandbox["metadata"].get("ownerReferences") or []
            )
        ]
        return (
            (pool.get("status") or {}).get("readyReplicas") == replicas
            and len(owned) == replicas
            and all(
                (condition(sandbox, "Ready") or {}).get("status") == "True" for sandbox in owned
            )
        )

    wait_until(warm, timeout=60, interval=0.2, message=f"warm pool {name} to have {replicas} ready")


def names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["metadata"]["name"] for item in items)


def pool_objects(namespace: str, pool: str) -> dict[str, list[str]]:
    managed = managed_pool_selector(pool)
    return {
        "sandboxes": names(kube.list_objects(SANDBOX, namespace, managed)),
        "claims": names(kube.list_objects(SANDBOX_CLAIM, namespace, managed)),
        "pvcs": names(kube.list_objects(PVC, namespace, managed)),
        "pods": names(kube.list_objects(POD, namespace, pool_selector(pool))),
    }


NOTHING: dict[str, list[str]] = {"sandboxes": [], "claims": [], "pvcs": [], "pods": []}


def wait_for_phase(name: str, phase: str, *, timeout: float = 60) -> Allocation:
    def reached() -> Allocation | None:
        allocation = Allocation.objects.filter(name=name).order_by("-id").first()
        if allocation is not None and allocation.phase == phase:
            return allocation
        return None

    found = wait_until(reached, timeout=timeout, interval=0.1, message=f"{name} to be {phase}")
    assert isinstance(found, Allocation)
    return found


def resync_until_settled(*, timeout: float = 30) -> None:
    """Resync until a cycle skips every allocation it checks. Just after ready the
    controllers may still write to an allocation's objects (a Sandbox's status, a PVC's
    binding annotations), each write a new resourceVersion the next cycle looks at."""

    def settled() -> bool:
        report = resync_all(adopt=False)
        return report.unchanged == report.checked

    wait_until(settled, timeout=timeout, interval=0.2, message="a resync that finds nothing new")


@contextlib.contextmanager
def frozen_apiserver(cluster: ClusterHandle) -> Iterator[None]:
    """The test cluster's API server stopped (SIGSTOP) for the block: connections are
    accepted by the kernel but never answered, as with a hung or overloaded server."""
    pid = cluster.state.pids["kube-apiserver"]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
