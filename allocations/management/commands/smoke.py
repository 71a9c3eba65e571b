"""``manage.py smoke``: the hardened-sandbox smoke check (seed 002), on a live cluster.

Creates a one-replica allocation with a chosen profile (or the default runtime), waits for
it to become ready (the worker and the watcher must be running), checks the Pod it produced
and its NetworkPolicy, releases it, and prints one PASS/FAIL line per check. Exits 1 when
any check fails.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from allocations import services
from allocations.models import Allocation, Phase
from allocations.v1 import PoolRequest
from contextsvc.core.errors import ServiceError
from contextsvc.kube import client as kube
from contextsvc.kube import objects

ACTOR = "system:smoke"


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.get("spec") or {}
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def _non_root(pod: dict[str, Any]) -> str | None:
    pod_security = (pod.get("spec") or {}).get("securityContext") or {}
    for container in _containers(pod):
        security = {**pod_security, **(container.get("securityContext") or {})}
        if security.get("runAsNonRoot") is not True or security.get("runAsUser") in (None, 0):
            return f"container {container['name']} may run as root"
    return None


def _read_only_root(pod: dict[str, Any]) -> str | None:
    for container in _containers(pod):
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True:
            return f"container {container['name']} has a writable root filesystem"
    return None


def _no_token(pod: dict[str, Any]) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("automountServiceAccountToken") is not False:
        return "the service-account token is mounted"
    for container in _containers(pod):
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath", "").startswith("/var/run/secrets/kubernetes.io"):
                return f"container {container['name']} mounts a service-account token"
    return None


def _locked_down(pod: dict[str, Any]) -> str | None:
    seccomp = ((pod.get("spec") or {}).get("securityContext") or {}).get("seccompProfile") or {}
    if seccomp.get("type") != "RuntimeDefault":
        return "the pod's seccomp profile is not RuntimeDefault"
    for container in _containers(pod):
        security = container.get("securityContext") or {}
        if security.get("allowPrivilegeEscalation") is not False:
            return f"container {container['name']} allows privilege escalation"
        if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
            return f"container {container['name']} does not drop all capabilities"
    return None


def _workspace(pod: dict[str, Any]) -> str | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if not any(m.get("mountPath") == "/workspace" for m in container.get("volumeMounts") or []):
            return f"container {container['name']} does not mount /workspace"
    return None


POD_CHECKS: list[tuple[str, Callable[[dict[str, Any]], str | None]]] = [
    ("runs as non-root", _non_root),
    ("read-only root filesystem", _read_only_root),
    ("no service-account token", _no_token),
    ("seccomp, capabilities, privilege escalation locked down", _locked_down),
    ("workspace mounted at /workspace", _workspace),
]


class Command(BaseCommand):
    help = "Allocate one hardened sandbox, verify its Pod and NetworkPolicy, release it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profile", default="", help="profile name (default: the default)")
        parser.add_argument("--namespace", default="", help=f"default {settings.CS_NAMESPACE}")
        parser.add_argument("--size", default="1Gi")
        parser.add_argument("--timeout", type=float, default=120.0)

    def handle(self, *args: Any, **options: Any) -> None:
        self.failures = 0
        name = f"smoke-{secrets.token_hex(3)}"
        request = PoolRequest(
            name,
            1,
            "dedicated",
            size=options["size"],
            access_mode="ReadWriteOnce",
            profile=options["profile"],
            namespace=options["namespace"],
        )
        try:
            allocation = services.allocation_create(request=request, actor=ACTOR).allocation
        except ServiceError as exc:
            raise CommandError(f"cannot allocate: {exc.message}") from None
        runtime = allocation.profile_name or "built-in runtime"
        self.stdout.write(f"allocated {allocation.namespace}/{name} ({runtime})")
        try:
            ready = self._wait(name, Phase.READY, options["timeout"])
            self._report(
                "allocation becomes ready",
                None if ready else f"not ready after {options['timeout']:.0f}s",
            )
            pods = kube.list_objects(objects.POD, allocation.namespace, objects.pool_selector(name))
            self._report(
                "one Pod carries the pool label", None if len(pods) == 1 else f"{len(pods)} Pods"
            )
            for label, check in POD_CHECKS:
                self._report(label, check(pods[0]) if pods else "no Pod to check")
            policy = kube.get_object(
                objects.NETWORK_POLICY, allocation.namespace, objects.network_policy_name(name)
            )
            self._report(
                "NetworkPolicy present", None if policy else "no NetworkPolicy for the pool"
            )
        finally:
            services.allocation_release(name=name, actor=ACTOR)
            released = self._wait(name, Phase.RELEASED, options["timeout"])
            self._report("release deletes everything", None if released else "objects remain")
        if self.failures:
            raise CommandError(f"{self.failures} check(s) failed")
        self.stdout.write("all checks passed")

    def _report(self, check: str, problem: str | None) -> None:
        if problem is None:
            self.stdout.write(f"PASS  {check}")
        else:
            self.failures += 1
            self.stdout.write(f"FAIL  {check}: {problem}")

    def _wait(self, name: str, phase: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = (
                Allocation.objects.filter(name=name)
                .order_by("-id")
                .values_list("phase", flat=True)
                .first()
            )
            if found == phase:
                return True
            if found == Phase.FAILED and phase != Phase.FAILED:
                return False
            time.sleep(0.5)
        return False
