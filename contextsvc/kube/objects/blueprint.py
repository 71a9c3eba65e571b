"""What runs in each Sandbox before the workspace is injected (a ``Blueprint``): the
built-in runtime, a built-in profile, or a copy of a SandboxTemplate's pod template; and
why a blueprint may not be used.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextsvc.kube.objects.hardening import DEFAULT_RESOURCES, TMP_VOLUME
from contextsvc.kube.objects.kinds import Manifest
from contextsvc.kube.objects.labels import LABEL_DOMAIN, MANAGED_BY_LABEL
from contextsvc.kube.objects.names import (
    ARTIFACTS_MOUNT_PATH,
    ARTIFACTS_VOLUME,
    WORKSPACE_MOUNT_PATH,
    WORKSPACE_VOLUME,
)

SANDBOX_CONTAINER = "sandbox"
BUILTIN_COMMAND = ["/bin/sh", "-c", "mkdir -p /workspace && exec sleep infinity"]


@dataclass(frozen=True)
class Blueprint:
    """What runs in each direct Sandbox, before the workspace is injected: the built-in
    runtime, a built-in profile, or a copy of a SandboxTemplate's pod template."""

    pod_spec: Mapping[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    volume_claim_templates: Sequence[Mapping[str, Any]] = ()
    relaxations: frozenset[str] = frozenset()
    runtime_class: str | None = None
    # Network rules in the profile form ({"cidr"|"namespace", "ports", "protocol"}).
    ingress: Sequence[Mapping[str, Any]] = ()
    egress: Sequence[Mapping[str, Any]] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "podSpec": copy.deepcopy(dict(self.pod_spec)),
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "volumeClaimTemplates": copy.deepcopy(list(self.volume_claim_templates)),
            "relaxations": sorted(self.relaxations),
            "runtimeClass": self.runtime_class,
            "ingress": copy.deepcopy(list(self.ingress)),
            "egress": copy.deepcopy(list(self.egress)),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Blueprint:
        return cls(
            pod_spec=copy.deepcopy(dict(data["podSpec"])),
            labels=dict(data.get("labels") or {}),
            annotations=dict(data.get("annotations") or {}),
            volume_claim_templates=copy.deepcopy(list(data.get("volumeClaimTemplates") or [])),
            relaxations=frozenset(data.get("relaxations") or ()),
            runtime_class=data.get("runtimeClass"),
            ingress=copy.deepcopy(list(data.get("ingress") or [])),
            egress=copy.deepcopy(list(data.get("egress") or [])),
        )


def builtin_blueprint(
    *,
    image: str,
    service_account: str | None = None,
    command: Sequence[str] = tuple(BUILTIN_COMMAND),
    args: Sequence[str] = (),
    env: Sequence[Mapping[str, Any]] = (),
    resources: Mapping[str, Any] = DEFAULT_RESOURCES,
    volumes: Sequence[Mapping[str, Any]] = (),
    volume_mounts: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    relaxations: frozenset[str] = frozenset(),
    runtime_class: str | None = None,
    ingress: Sequence[Mapping[str, Any]] = (),
    egress: Sequence[Mapping[str, Any]] = (),
) -> Blueprint:
    """The v1 built-in runtime (one container named ``sandbox``), or a built-in profile."""
    container: Manifest = {
        "name": SANDBOX_CONTAINER,
        "image": image,
        "command": list(command),
        "workingDir": WORKSPACE_MOUNT_PATH,
        "resources": copy.deepcopy(dict(resources)),
    }
    if args:
        container["args"] = list(args)
    if env:
        container["env"] = [dict(item) for item in env]
    if volume_mounts:
        container["volumeMounts"] = [dict(item) for item in volume_mounts]
    pod_spec: Manifest = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = [dict(item) for item in volumes]
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    return Blueprint(
        pod_spec=pod_spec,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        relaxations=relaxations,
        runtime_class=runtime_class,
        ingress=ingress,
        egress=egress,
    )


def template_blueprint(
    template: Mapping[str, Any],
    *,
    relaxations: frozenset[str] = frozenset(),
    runtime_class: str | None = None,
    ingress: Sequence[Mapping[str, Any]] = (),
    egress: Sequence[Mapping[str, Any]] = (),
) -> Blueprint:
    """Copy a SandboxTemplate's blueprint (pod template and volume claim templates).

    The template's own ``networkPolicy`` is not copied: a direct allocation's traffic is
    governed by the NetworkPolicy Context Service creates for it from the profile."""
    spec = template.get("spec") or {}
    pod_template = spec.get("podTemplate") or {}
    metadata = pod_template.get("metadata") or {}
    pod_spec = copy.deepcopy(pod_template.get("spec") or {})
    return Blueprint(
        pod_spec=pod_spec,
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        volume_claim_templates=copy.deepcopy(list(spec.get("volumeClaimTemplates") or [])),
        relaxations=relaxations,
        runtime_class=runtime_class or pod_spec.get("runtimeClassName"),
        ingress=ingress,
        egress=egress,
    )


def _reserved_label(key: str) -> bool:
    return key == MANAGED_BY_LABEL or key.split("/", 1)[0] == LABEL_DOMAIN


def _reserved_mount(path: object) -> str | None:
    """What of ours a mount at ``path`` would cover: "workspace", "artifacts" or None."""
    text = str(path or "").rstrip("/")
    for reserved, what in (
        (WORKSPACE_MOUNT_PATH, "workspace"),
        (ARTIFACTS_MOUNT_PATH, "artifacts"),
    ):
        if text == reserved or text.startswith(reserved + "/"):
            return what
    return None


# Which part of a pod a problem is about: profiles report it under the field that sets it.
PART_LABELS, PART_VOLUMES, PART_MOUNTS, PART_POD = "labels", "volumes", "mounts", "pod"
Problem = tuple[str, str]  # (part, message)


def blueprint_problems(blueprint: Blueprint) -> list[Problem]:
    """Why a blueprint may not be used: the workspace and the pool labels are ours. (What
    it may not do to the node is ``podsecurity``'s table.)"""
    problems: list[Problem] = []
    for key in blueprint.labels:
        if _reserved_label(key):
            problems.append(
                (
                    PART_LABELS,
                    f'pod label "{key}" is set by Context Service and cannot be overridden',
                )
            )
    spec = blueprint.pod_spec
    containers = list(spec.get("containers") or [])
    if not containers:
        problems.append((PART_POD, "the pod template has no containers"))
    for volume in spec.get("volumes") or []:
        if volume.get("name") in (WORKSPACE_VOLUME, ARTIFACTS_VOLUME, TMP_VOLUME):
            problems.append(
                (PART_VOLUMES, f'volume "{volume.get("name")}" is reserved for Context Service')
            )
    for claim in blueprint.volume_claim_templates:
        if (claim.get("metadata") or {}).get("name") == WORKSPACE_VOLUME:
            problems.append(
                (PART_VOLUMES, f'volume claim template "{WORKSPACE_VOLUME}" is reserved')
            )
    for container in containers + list(spec.get("initContainers") or []):
        for mount in container.get("volumeMounts") or []:
            covered = _reserved_mount(mount.get("mountPath"))
            if covered is not None:
                goes = "goes" if covered == "workspace" else "go"
                problems.append(
                    (
                        PART_MOUNTS,
                        f'container "{container.get("name")}" mounts "{mount.get("name")}" at '
                        f"{mount.get('mountPath')}, where the allocation's {covered} {goes}",
                    )
                )
    return problems
