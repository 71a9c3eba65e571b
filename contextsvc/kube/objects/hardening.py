"""The hardened defaults (seed 002) every sandbox Pod gets unless its profile relaxes
them, and the same promises read back from a live Pod (``manage.py smoke``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextsvc.kube.objects.kinds import Manifest
from contextsvc.kube.objects.names import WORKSPACE_MOUNT_PATH
from contextsvc.quantity import parse_quantity

DEFAULT_RESOURCES: Mapping[str, Any] = {
    "requests": {"memory": "64Mi", "cpu": "50m"},
    "limits": {"memory": "256Mi"},
}
SANDBOX_UID = 10001
TMP_VOLUME = "tmp"
# The Pod's own /tmp, an emptyDir: scratch space inside the sandbox, not the host's /tmp.
TMP_PATH = "/tmp"  # noqa: S108


class Relaxation:
    """Hardened defaults a profile may switch off, explicitly and visibly."""

    RUN_AS_ROOT = "run-as-root"
    WRITABLE_ROOT_FILESYSTEM = "writable-root-filesystem"
    PRIVILEGE_ESCALATION = "privilege-escalation"
    CAPABILITIES = "keep-capabilities"
    SERVICE_ACCOUNT_TOKEN = "service-account-token"  # noqa: S105 - a name, not a secret
    # Volumes outside Pod Security "restricted"'s list (nfs, iscsi, …).
    ANY_VOLUME_TYPE = "any-volume-type"
    # No default requests and limits for containers that set none.
    UNBOUNDED_RESOURCES = "unbounded-resources"
    ALL = (
        RUN_AS_ROOT,
        WRITABLE_ROOT_FILESYSTEM,
        PRIVILEGE_ESCALATION,
        CAPABILITIES,
        SERVICE_ACCOUNT_TOKEN,
        ANY_VOLUME_TYPE,
        UNBOUNDED_RESOURCES,
    )


def default_resources(container: Manifest) -> None:
    """Fill what a container leaves out with the built-in runtime's requests and limits,
    in place: a sandbox without a memory limit can take its node's memory. A limit is
    never set below the container's own request, nor a request above its own limit."""
    resources: Manifest = container.setdefault("resources", {})
    requests: Manifest = resources.setdefault("requests", {})
    limits: Manifest = resources.setdefault("limits", {})
    for key, default in DEFAULT_RESOURCES["requests"].items():
        if key not in requests:
            limit = limits.get(key)
            requests[key] = (
                limit
                if limit is not None and parse_quantity(limit) < parse_quantity(default)
                else default
            )
    for key, default in DEFAULT_RESOURCES["limits"].items():
        if key not in limits:
            request = requests.get(key)
            limits[key] = (
                request
                if request is not None and parse_quantity(request) > parse_quantity(default)
                else default
            )


def harden(pod_spec: Manifest, relaxations: frozenset[str]) -> None:
    """Apply the hardened defaults (seed 002) in place, except those explicitly relaxed."""
    root = Relaxation.RUN_AS_ROOT in relaxations
    pod_security: Manifest = dict(pod_spec.get("securityContext") or {})
    pod_security["seccompProfile"] = {"type": "RuntimeDefault"}
    if not root:
        pod_security.update(
            runAsNonRoot=True, runAsUser=SANDBOX_UID, runAsGroup=SANDBOX_UID, fsGroup=SANDBOX_UID
        )
    pod_spec["securityContext"] = pod_security
    pod_spec["automountServiceAccountToken"] = Relaxation.SERVICE_ACCOUNT_TOKEN in relaxations
    read_only_root = Relaxation.WRITABLE_ROOT_FILESYSTEM not in relaxations
    for container in list(pod_spec.get("containers") or []) + list(
        pod_spec.get("initContainers") or []
    ):
        if Relaxation.UNBOUNDED_RESOURCES not in relaxations:
            default_resources(container)
        security: Manifest = dict(container.get("securityContext") or {})
        security["allowPrivilegeEscalation"] = Relaxation.PRIVILEGE_ESCALATION in relaxations
        security["readOnlyRootFilesystem"] = read_only_root
        if Relaxation.CAPABILITIES not in relaxations:
            security["capabilities"] = {"drop": ["ALL"]}
        if not root:
            security.update(runAsNonRoot=True, runAsUser=SANDBOX_UID, runAsGroup=SANDBOX_UID)
        else:
            for key in ("runAsNonRoot", "runAsUser", "runAsGroup"):
                security.pop(key, None)
        container["securityContext"] = security
        if read_only_root and not any(
            m.get("mountPath") == TMP_PATH for m in container.get("volumeMounts") or []
        ):
            # A read-only root still needs somewhere to write scratch files.
            container.setdefault("volumeMounts", []).append(
                {"name": TMP_VOLUME, "mountPath": TMP_PATH}
            )
    if read_only_root:
        pod_spec.setdefault("volumes", []).append({"name": TMP_VOLUME, "emptyDir": {}})


# What ``harden`` promises, read back from a live Pod (``manage.py smoke``): each check
# returns what is wrong, or None.


def _pod_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def _pod_security(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("spec") or {}).get("securityContext") or {}


def pod_may_run_as_root(pod: Mapping[str, Any]) -> str | None:
    pod_security = _pod_security(pod)
    for container in _pod_containers(pod):
        security = {**pod_security, **(container.get("securityContext") or {})}
        if security.get("runAsNonRoot") is not True or security.get("runAsUser") in (None, 0):
            return f"container {container['name']} may run as root"
    return None


def pod_root_is_writable(pod: Mapping[str, Any]) -> str | None:
    for container in _pod_containers(pod):
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True:
            return f"container {container['name']} has a writable root filesystem"
    return None


def pod_has_token(pod: Mapping[str, Any]) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("automountServiceAccountToken") is not False:
        return "the service-account token is mounted"
    for container in _pod_containers(pod):
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath", "").startswith("/var/run/secrets/kubernetes.io"):
                return f"container {container['name']} mounts a service-account token"
    return None


def pod_not_locked_down(pod: Mapping[str, Any]) -> str | None:
    seccomp = _pod_security(pod).get("seccompProfile") or {}
    if seccomp.get("type") != "RuntimeDefault":
        return "the pod's seccomp profile is not RuntimeDefault"
    for container in _pod_containers(pod):
        security = container.get("securityContext") or {}
        if security.get("allowPrivilegeEscalation") is not False:
            return f"container {container['name']} allows privilege escalation"
        if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
            return f"container {container['name']} does not drop all capabilities"
    return None


def pod_lacks_workspace(pod: Mapping[str, Any]) -> str | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if not any(
            m.get("mountPath") == WORKSPACE_MOUNT_PATH for m in container.get("volumeMounts") or []
        ):
            return f"container {container['name']} does not mount {WORKSPACE_MOUNT_PATH}"
    return None


HARDENING_CHECKS: list[tuple[str, Callable[[Mapping[str, Any]], str | None]]] = [
    ("runs as non-root", pod_may_run_as_root),
    ("read-only root filesystem", pod_root_is_writable),
    ("no service-account token", pod_has_token),
    ("seccomp, capabilities, privilege escalation locked down", pod_not_locked_down),
    ("workspace mounted at /workspace", pod_lacks_workspace),
]
