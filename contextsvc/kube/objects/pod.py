"""Pods, as a Sandbox makes them: whether one is scheduled and ready, and which Pods
count for an allocation. (What a sandbox Pod must not do is ``hardening``'s.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contextsvc.kube.objects.fields import condition, metadata_of
from contextsvc.kube.objects.kinds import SANDBOX, AnyObject


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    ready = condition(pod, "Ready")
    return bool(
        ready is not None
        and ready.get("status") == "True"
        and (pod.get("metadata") or {}).get("deletionTimestamp") is None
    )


def pod_is_scheduled(pod: Mapping[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return bool(scheduled is not None and scheduled.get("status") == "True") or bool(
        (pod.get("spec") or {}).get("nodeName")
    )


def is_sandbox_pod(pod: Mapping[str, Any]) -> bool:
    """Made by a Sandbox (the agent-sandbox controller owns every Pod of ours). The pool
    label alone is not enough: anyone who may label a Pod could otherwise add to an
    allocation's ready count, or keep its name taken for ever."""
    return any(
        ref.get("kind") == SANDBOX.kind
        and str(ref.get("apiVersion", "")).split("/")[0] == SANDBOX.group
        for ref in metadata_of(pod).get("ownerReferences") or []
    )


def sandbox_pods_among(pods: Iterable[AnyObject]) -> list[AnyObject]:
    """The Pods a Sandbox made (``is_sandbox_pod``): the only ones that count for an
    allocation, wherever Pods are found by the pool label."""
    return [pod for pod in pods if is_sandbox_pod(pod)]
