"""Sandboxes (agent-sandbox): a direct allocation's Sandbox manifests, their lifecycle
(operating mode, shutdown time) and drift, and what the controller's Ready condition says of
a Sandbox or a claim.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from contextsvc.kube.objects.blueprint import Blueprint
from contextsvc.kube.objects.fields import annotations_of, condition
from contextsvc.kube.objects.hardening import harden
from contextsvc.kube.objects.kinds import SANDBOX, Manifest
from contextsvc.kube.objects.labels import (
    CLAIM_ANNOTATION,
    POOL_LABEL,
    READ_ONLY_ANNOTATION,
    REPLICAS_KEY,
    pool_labels,
)
from contextsvc.kube.objects.names import (
    ARTIFACTS_MOUNT_PATH,
    ARTIFACTS_VOLUME,
    WORKSPACE_MOUNT_PATH,
    WORKSPACE_VOLUME,
    artifacts_pvc_name,
    sandbox_name,
)
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.pvc import workspace_claim_for

# Past an allocation's expiry the service releases it; the Sandboxes stop by themselves
# this much later if the service could not (agent-sandbox's shutdownTime, Retain).
EXPIRY_BACKSTOP = timedelta(minutes=10)


def expiry_backstop(expires_at: datetime) -> str:
    return (expires_at + EXPIRY_BACKSTOP).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sandbox_manifest(spec: PoolSpec, index: int, blueprint: Blueprint) -> Manifest:
    """Sandbox ``index``: the blueprint with the workspace, the pool labels, the topology
    spread and the hardened defaults injected."""
    labels = pool_labels(spec.name)
    annotations = {
        REPLICAS_KEY: str(spec.replicas),
        READ_ONLY_ANNOTATION: "true" if spec.read_only else "false",
    }
    if spec.strategy == "existing" and spec.claim_name:
        annotations[CLAIM_ANNOTATION] = spec.claim_name
    pod_spec: Manifest = copy.deepcopy(dict(blueprint.pod_spec))
    workspace_mount = {
        "name": WORKSPACE_VOLUME,
        "mountPath": WORKSPACE_MOUNT_PATH,
        "readOnly": bool(spec.read_only),
    }
    ours = [dict(workspace_mount)]
    volumes: list[Manifest] = [
        {
            "name": WORKSPACE_VOLUME,
            "persistentVolumeClaim": {
                "claimName": workspace_claim_for(spec, index),
                "readOnly": bool(spec.read_only),
            },
        }
    ]
    if spec.artifacts is not None:
        ours.append({"name": ARTIFACTS_VOLUME, "mountPath": ARTIFACTS_MOUNT_PATH})
        volumes.append(
            {
                "name": ARTIFACTS_VOLUME,
                "persistentVolumeClaim": {"claimName": artifacts_pvc_name(spec.name)},
            }
        )
    for container in pod_spec.get("containers") or []:
        container["volumeMounts"] = [*ours, *(container.get("volumeMounts") or [])]
    pod_spec["volumes"] = [*volumes, *(pod_spec.get("volumes") or [])]
    pod_spec["topologySpreadConstraints"] = [
        *(pod_spec.get("topologySpreadConstraints") or []),
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {POOL_LABEL: spec.name}},
        },
    ]
    if blueprint.runtime_class:
        pod_spec["runtimeClassName"] = blueprint.runtime_class
    harden(pod_spec, blueprint.relaxations)
    pod_metadata: Manifest = {"labels": {**blueprint.labels, **labels}}
    if blueprint.annotations:
        pod_metadata["annotations"] = dict(blueprint.annotations)
    sandbox_spec: Manifest = {"podTemplate": {"metadata": pod_metadata, "spec": pod_spec}}
    sandbox_spec.update(sandbox_lifecycle(spec))
    if blueprint.volume_claim_templates:
        sandbox_spec["volumeClaimTemplates"] = copy.deepcopy(list(blueprint.volume_claim_templates))
    return {
        "apiVersion": SANDBOX.api_version,
        "kind": SANDBOX.kind,
        "metadata": {
            "name": sandbox_name(spec.name, index),
            "namespace": spec.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": sandbox_spec,
    }


def sandbox_lifecycle(spec: PoolSpec) -> Manifest:
    """The Sandbox spec fields the allocation's lifecycle sets (absent: the defaults)."""
    fields: Manifest = {}
    if spec.suspended:
        fields["operatingMode"] = "Suspended"
    if spec.shutdown_time:
        fields["shutdownTime"] = spec.shutdown_time
        fields["shutdownPolicy"] = "Retain"
    return fields


def operating_mode(sandbox: Mapping[str, Any]) -> str:
    return str((sandbox.get("spec") or {}).get("operatingMode") or "Running")


def shutdown_policy(sandbox: Mapping[str, Any]) -> str:
    # The CRD defaults it: a Sandbox made without one reads back with Retain.
    return str((sandbox.get("spec") or {}).get("shutdownPolicy") or "Retain")


def sandbox_drift(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> Manifest | None:
    """A merge patch bringing an existing Sandbox's lifecycle (operating mode, shutdown
    time) and its replicas annotation to what the allocation wants now; None when they
    already are. (Suspend, resume, expiry and scale change nothing else of a Sandbox.)"""
    have, want = existing.get("spec") or {}, desired.get("spec") or {}
    spec_patch: Manifest = {}
    if operating_mode(existing) != operating_mode(desired):
        spec_patch["operatingMode"] = operating_mode(desired)
    if have.get("shutdownTime") != want.get("shutdownTime"):
        spec_patch["shutdownTime"] = want.get("shutdownTime")  # None removes it
    # Compared as the API server defaults it: against the Retain it fills in, "none
    # wanted" is no drift (it was patched on every reconcile, a write each time).
    if shutdown_policy(existing) != shutdown_policy(desired):
        spec_patch["shutdownPolicy"] = shutdown_policy(desired)
    patch: Manifest = {}
    if spec_patch:
        patch["spec"] = spec_patch
    replicas = annotations_of(desired).get(REPLICAS_KEY)
    if annotations_of(existing).get(REPLICAS_KEY) != replicas:
        patch["metadata"] = {"annotations": {REPLICAS_KEY: replicas}}
    return patch or None


# Reasons after which no retry helps (agent-sandbox.md, rule of thumb 2).
TERMINAL_REASONS = frozenset(
    {
        "InvalidMetadata",
        "EnvVarsInjectionRejected",
        "VolumeClaimTemplatesError",
        "ClaimExpired",
        "SandboxExpired",
        "PodFailed",
        "PodSucceeded",
        "MultiplePods",
    }
)


def terminal_failure(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when the object's Ready condition is False for a terminal reason."""
    ready = condition(obj, "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    reason = str(ready.get("reason") or "")
    if reason in TERMINAL_REASONS:
        return reason, str(ready.get("message") or reason)
    return None


# A not-ready Sandbox or Claim on its normal way to Ready says this (no news).
PROGRESS_REASONS = frozenset({"", "DependenciesNotReady"})


def controller_problem(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when the controller reports why the object is not ready and it is
    not the normal wait for the Pod (e.g. ``ReconcilerError``: it cannot create the Pod).
    Terminal reasons are ``terminal_failure``'s."""
    ready = condition(obj, "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    reason = str(ready.get("reason") or "")
    if reason in PROGRESS_REASONS or reason in TERMINAL_REASONS:
        return None
    return reason, str(ready.get("message") or reason)
