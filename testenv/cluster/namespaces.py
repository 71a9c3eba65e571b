"""Test namespaces: created, deleted, and thrown away after a test with everything the
service watches or makes in them.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from testenv.cluster.client import Kubeconfig, api_for, create_if_absent
from testenv.cluster.instance import EXTENSIONS_GROUP, SANDBOX_GROUP


def create_namespace(
    name: str | None = None, *, kubeconfig: Kubeconfig = None, prefix: str = "test"
) -> str:
    """Create namespace ``name`` (or ``<prefix>-<random>``); an existing one is fine.

    ``kubeconfig`` defaults to this repo's test cluster. Returns the name.
    """

    name = name or f"{prefix}-{secrets.token_hex(4)}"
    body = {"metadata": {"name": name, "labels": {"context.rossoctl.io/testenv": "true"}}}
    with api_for(kubeconfig) as api:
        create_if_absent(k8s.CoreV1Api(api).create_namespace, body)
    return name


def delete_namespace(name: str, *, kubeconfig: Kubeconfig = None, wait: float = 0.0) -> None:
    """Delete a namespace; with ``wait`` > 0, wait up to that many seconds until it is gone.

    The namespace controller deletes its contents (kwok finishes Pod deletion at once).
    """

    with api_for(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                core.read_namespace(name)
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise
            time.sleep(0.1)
        if wait > 0:
            raise TimeoutError(f"namespace {name} was still there {wait:g} s after its deletion")


# Long enough for the namespace controller to delete a test's Sandboxes, claims, PVCs and
# Pods (kwok ends Pods at once); far shorter than a test's own timeout.
CONTENT_DELETE_WAIT = 60.0
# What a test's namespace holds that the service watches or makes (with Pods and PVCs).
CUSTOM_CONTENT = (
    (SANDBOX_GROUP, "v1beta1", "sandboxes"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxclaims"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxwarmpools"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxtemplates"),
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("batch", "v1", "jobs"),
)


def namespace_content(
    name: str, *, kubeconfig: Kubeconfig = None, delete: bool = False
) -> list[str]:
    """ "kind/name" of every object of the kinds above still in the namespace; with
    ``delete``, each kind's objects are deleted first (at once: no grace period)."""
    left: list[str] = []
    immediately = k8s.V1DeleteOptions(grace_period_seconds=0, propagation_policy="Background")
    with api_for(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        custom = k8s.CustomObjectsApi(api)
        # Claims and Sandboxes before their Pods and PVCs: what owns goes first.
        for group, version, plural in CUSTOM_CONTENT:
            if delete:
                custom.delete_collection_namespaced_custom_object(
                    group, version, name, plural, body=immediately
                )
            listed: dict[str, Any] = custom.list_namespaced_custom_object(  # type: ignore[assignment]
                group, version, name, plural
            )
            left += [f"{plural}/{item['metadata']['name']}" for item in listed["items"]]
        if delete:
            core.delete_collection_namespaced_pod(name, body=immediately)
            core.delete_collection_namespaced_persistent_volume_claim(name, body=immediately)
        for plural, items in (
            ("pods", core.list_namespaced_pod(name).items),
            ("persistentvolumeclaims", core.list_namespaced_persistent_volume_claim(name).items),
        ):
            left += [f"{plural}/{item.metadata.name if item.metadata else '?'}" for item in items]
    return left


@contextlib.contextmanager
def throwaway_namespace(prefix: str = "test", *, kubeconfig: Kubeconfig = None) -> Iterator[str]:
    """A uniquely named namespace for the ``with`` block, deleted after it; everything the
    service watches or makes there is deleted at once too, and the block ends once that is
    gone (so that none of it is still being deleted, watched and recorded while the next
    test runs). Left to the namespace controller, the content would take about ten seconds:
    it waits five before it starts, and again between passes; the empty namespace it
    removes some seconds later, which nothing watches."""
    name = create_namespace(kubeconfig=kubeconfig, prefix=prefix)
    try:
        yield name
    finally:
        # Terminating first: nothing new can be made there (a reconcile still running would
        # make again what is deleted), then the content, at once.
        delete_namespace(name, kubeconfig=kubeconfig)
        deadline = time.monotonic() + CONTENT_DELETE_WAIT
        left = namespace_content(name, kubeconfig=kubeconfig, delete=True)
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"namespace {name} still holds {', '.join(left[:5])} "
                    f"{CONTENT_DELETE_WAIT:g} s after its deletion"
                )
            time.sleep(0.1)
            left = namespace_content(name, kubeconfig=kubeconfig)
