"""SandboxWarmPools and their SandboxTemplates: a platform team's pool read for its
template, relaxations and fence, and the pool (and template) the service owns for a
profile's warmPool, with its size and scale patches.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from contextsvc.kube.objects.blueprint import Blueprint
from contextsvc.kube.objects.fields import annotations_of, labels_of
from contextsvc.kube.objects.hardening import harden
from contextsvc.kube.objects.kinds import SANDBOX_TEMPLATE, SANDBOX_WARM_POOL, Manifest
from contextsvc.kube.objects.labels import LABEL_DOMAIN, MANAGED_BY, MANAGED_BY_LABEL, PROFILE_LABEL
from contextsvc.kube.objects.names import (
    WORKSPACE_MOUNT_PATH,
    WORKSPACE_VOLUME,
    profile_warm_pool_name,
)
from contextsvc.kube.objects.networkpolicy import DNS_EGRESS, peer_rule

# On a SandboxWarmPool, by its owner: restricted Pod Security rules its template may break
# (comma-separated relaxation names, as a profile lists them).
WARM_POOL_RELAXATIONS_ANNOTATION = f"{LABEL_DOMAIN}/relaxations"


def warm_pool_template_name(pool: Mapping[str, Any]) -> str | None:
    name = ((pool.get("spec") or {}).get("sandboxTemplateRef") or {}).get("name")
    return str(name) if name else None


def warm_pool_summary(pool: Mapping[str, Any]) -> dict[str, Any]:
    """What the capabilities page shows of a SandboxWarmPool."""
    spec, status = pool.get("spec") or {}, pool.get("status") or {}
    return {
        "namespace": pool["metadata"]["namespace"],
        "name": pool["metadata"]["name"],
        "template": warm_pool_template_name(pool),
        "replicas": spec.get("replicas", 1),
        "readyReplicas": status.get("readyReplicas", 0),
        # The profile whose warmPool made it (the service owns it), or "" (a platform team's).
        "profile": profile_of_warm_pool(pool),
    }


def profile_of_warm_pool(pool: Mapping[str, Any]) -> str:
    """The profile whose warmPool made the pool (the service owns it), or "" (a platform
    team's own)."""
    labels = labels_of(pool)
    return str(labels.get(PROFILE_LABEL, "")) if labels.get(MANAGED_BY_LABEL) == MANAGED_BY else ""


def warm_pool_relaxations(pool: Mapping[str, Any]) -> frozenset[str]:
    raw = annotations_of(pool).get(WARM_POOL_RELAXATIONS_ANNOTATION, "")
    return frozenset(name.strip() for name in str(raw).split(",") if name.strip())


def template_pod(template: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """(pod spec, pod annotations) of a SandboxTemplate's pod template."""
    pod_template = (template.get("spec") or {}).get("podTemplate") or {}
    return pod_template.get("spec") or {}, (pod_template.get("metadata") or {}).get(
        "annotations"
    ) or {}


def warm_pool_fence(template: Mapping[str, Any]) -> dict[str, list[Manifest]]:
    """The NetworkPolicy rules for a warm-pool allocation's Pods: the template's own
    ``networkPolicy`` rules (its owner's intent) when it has them, DNS out, and nothing else
    — even when the template leaves its Pods unmanaged."""
    policy = (template.get("spec") or {}).get("networkPolicy") or {}
    return {
        "ingress": copy.deepcopy(list(policy.get("ingress") or [])),
        "egress": [DNS_EGRESS, *copy.deepcopy(list(policy.get("egress") or []))],
    }


# --- Warm pools the service owns (a profile's warmPool) -----------------------------------

SCALED_AT_ANNOTATION = f"{LABEL_DOMAIN}/scaled-at"
# The hash of the spec the service last wrote: the API server adds defaults to a stored
# spec, so comparing specs would see a change on every run.
SPEC_HASH_ANNOTATION = f"{LABEL_DOMAIN}/spec-hash"


def spec_hash(spec: Mapping[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def spec_hash_of(obj: Mapping[str, Any]) -> str:
    return str(annotations_of(obj).get(SPEC_HASH_ANNOTATION, ""))


def _profile_labels(profile: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, PROFILE_LABEL: profile}


def profile_template_manifest(profile: str, namespace: str, blueprint: Blueprint) -> Manifest:
    """The profile's hardened blueprint as a SandboxTemplate. A warm Sandbox has no
    workspace PVC (claims carry none): /workspace is scratch space of its own. The
    template's network rules are the profile's, which the fence of each allocation that
    claims from it copies (warm_pool_fence); the controller makes no policy of its own."""
    pod_spec: Manifest = copy.deepcopy(dict(blueprint.pod_spec))
    for container in pod_spec.get("containers") or []:
        container["volumeMounts"] = [
            {"name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_MOUNT_PATH},
            *(container.get("volumeMounts") or []),
        ]
    scratch = {"name": WORKSPACE_VOLUME, "emptyDir": {}}
    pod_spec["volumes"] = [scratch, *(pod_spec.get("volumes") or [])]
    if blueprint.runtime_class:
        pod_spec["runtimeClassName"] = blueprint.runtime_class
    harden(pod_spec, blueprint.relaxations)
    pod_metadata: Manifest = {"labels": dict(blueprint.labels)}
    if blueprint.annotations:
        pod_metadata["annotations"] = dict(blueprint.annotations)
    ingress = [peer_rule(rule, "from") for rule in blueprint.ingress]
    egress = [peer_rule(rule, "to") for rule in blueprint.egress]
    spec: Manifest = {
        "podTemplate": {"metadata": pod_metadata, "spec": pod_spec},
        "networkPolicyManagement": "Unmanaged",
        "networkPolicy": {"ingress": ingress, "egress": egress},
    }
    if blueprint.volume_claim_templates:
        spec["volumeClaimTemplates"] = copy.deepcopy(list(blueprint.volume_claim_templates))
    return {
        "apiVersion": SANDBOX_TEMPLATE.api_version,
        "kind": SANDBOX_TEMPLATE.kind,
        "metadata": {
            "name": profile_warm_pool_name(profile),
            "namespace": namespace,
            "labels": _profile_labels(profile),
            "annotations": {SPEC_HASH_ANNOTATION: spec_hash(spec)},
        },
        "spec": spec,
    }


def profile_warm_pool_manifest(
    profile: str, namespace: str, replicas: int, relaxations: frozenset[str]
) -> Manifest:
    """The profile's SandboxWarmPool. Recreate: when the profile (so the template) changes,
    the controller replaces the unclaimed Sandboxes, so warm capacity is never stale."""
    annotations = {}
    if relaxations:
        # What the profile relaxes, said as a pool owner says it (the allocation-time check
        # of the pool's template accepts these, audited).
        annotations[WARM_POOL_RELAXATIONS_ANNOTATION] = ",".join(sorted(relaxations))
    return {
        "apiVersion": SANDBOX_WARM_POOL.api_version,
        "kind": SANDBOX_WARM_POOL.kind,
        "metadata": {
            "name": profile_warm_pool_name(profile),
            "namespace": namespace,
            "labels": _profile_labels(profile),
            "annotations": annotations,
        },
        "spec": profile_warm_pool_spec(profile, replicas),
    }


def profile_warm_pool_spec(profile: str, replicas: int) -> Manifest:
    return {
        "replicas": replicas,
        "sandboxTemplateRef": {"name": profile_warm_pool_name(profile)},
        "updateStrategy": {"type": "Recreate"},
    }


def warm_pool_replicas(pool: Mapping[str, Any]) -> int:
    return int((pool.get("spec") or {}).get("replicas", 1))


def warm_pool_ready(pool: Mapping[str, Any]) -> int:
    return int((pool.get("status") or {}).get("readyReplicas") or 0)


def warm_pool_scaled_at(pool: Mapping[str, Any]) -> datetime | None:
    """When the service last changed the pool's size (None: never, or not by the service)."""
    raw = annotations_of(pool).get(SCALED_AT_ANNOTATION)
    try:
        return datetime.fromisoformat(str(raw)) if raw else None
    except ValueError:
        return None


def scale_patch(replicas: int) -> Manifest:
    """The scale subresource's body (a merge patch of autoscaling/v1 Scale)."""
    return {"spec": {"replicas": replicas}}


def scaled_at_patch(at: datetime) -> Manifest:
    return {"metadata": {"annotations": {SCALED_AT_ANNOTATION: at.isoformat()}}}
