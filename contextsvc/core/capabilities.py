"""What the cluster can do: which agent-sandbox CRDs it serves, which RuntimeClasses exist.

Detected by the worker at start and every minute (beat), stored in PostgreSQL, and read by
the web process, which never waits on Kubernetes for that. When no detection is recent
the reader detects itself, so a fresh install answers correctly from its first request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from contextsvc.core.models import ClusterCapabilities
from contextsvc.infra import namespaces
from contextsvc.kube import client as kube
from contextsvc.kube.objects.claim import (
    KNOWN_RELEASES,
    RELEASE_V05,
    release_of_claim_schema,
)
from contextsvc.kube.objects.fields import object_key
from contextsvc.kube.objects.kinds import (
    AGENT_SANDBOX_VERSION,
    EXTENSIONS_GROUP,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_GROUP,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)
from contextsvc.kube.objects.warmpool import warm_pool_summary

STALE_AFTER = timedelta(minutes=5)


@dataclass(frozen=True)
class Capabilities:
    sandboxes: bool = False
    templates: bool = False
    warm_pools: bool = False
    claims: bool = False
    runtime_classes: tuple[str, ...] = ()
    # What the dashboard shows and the profile form offers (extensions only).
    template_list: tuple[str, ...] = ()  # "namespace/name"
    warm_pool_list: tuple[dict[str, Any], ...] = ()
    error: str = ""
    detected_at: str = ""
    missing: tuple[str, ...] = field(default=())
    # The agent-sandbox release line, from the claim's schema ("" when the extensions are
    # not installed): see ``release_note``.
    release: str = ""

    @property
    def extensions(self) -> bool:
        return self.templates and self.warm_pools and self.claims

    def core_problem(self) -> str | None:
        if self.sandboxes:
            return None
        if self.error:
            return f"cannot tell whether the cluster serves Sandboxes: {self.error}"
        return (
            f"the cluster does not serve {SANDBOX.crd_name}/{SANDBOX.version}: "
            "install the agent-sandbox CRDs and controller"
        )

    def extensions_problem(self) -> str | None:
        if self.extensions:
            return None
        missing = [
            f"{kind.crd_name}/{kind.version}"
            for kind, served in (
                (SANDBOX_TEMPLATE, self.templates),
                (SANDBOX_WARM_POOL, self.warm_pools),
                (SANDBOX_CLAIM, self.claims),
            )
            if not served
        ]
        return (
            "the agent-sandbox extensions are not installed in this cluster (missing "
            f"{', '.join(missing)}); run the controller with --extensions and apply its CRDs"
        )

    def release_note(self) -> str:
        """What the cluster page says of the agent-sandbox release."""
        known = ", ".join(KNOWN_RELEASES)
        if self.release == RELEASE_V05:
            return (
                f"agent-sandbox {RELEASE_V05} (its SandboxClaim has no status.sandbox."
                f"serviceFQDN): supported; known to work: {known}. v1.0 drops v1alpha1 and "
                "the conversion webhook."
            )
        if self.release:
            return f"agent-sandbox {self.release}: known to work: {known}."
        return f"agent-sandbox release unknown (no SandboxClaim schema); known to work: {known}."

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extensions"] = self.extensions
        data["runtime_classes"] = list(self.runtime_classes)
        data["missing"] = list(self.missing)
        data["template_list"] = list(self.template_list)
        data["warm_pool_list"] = [dict(pool) for pool in self.warm_pool_list]
        return data


def detect() -> Capabilities:
    try:
        core = kube.served_resources(SANDBOX_GROUP, AGENT_SANDBOX_VERSION) or set()
        extensions = kube.served_resources(EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION) or set()
        runtime_classes = tuple(kube.list_runtime_classes())
        release = (
            release_of_claim_schema(kube.openapi_schemas(EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION))
            if SANDBOX_CLAIM.plural in extensions
            else ""
        )
        templates: list[dict[str, Any]] = []
        pools: list[dict[str, Any]] = []
        for namespace in namespaces.scopes():
            if SANDBOX_TEMPLATE.plural in extensions:
                templates += kube.list_objects(SANDBOX_TEMPLATE, namespace)
            if SANDBOX_WARM_POOL.plural in extensions:
                pools += kube.list_objects(SANDBOX_WARM_POOL, namespace)
    except kube.KubeError as exc:
        return Capabilities(error=exc.message, detected_at=timezone.now().isoformat())
    found = {
        "sandboxes": SANDBOX.plural in core,
        "templates": SANDBOX_TEMPLATE.plural in extensions,
        "warm_pools": SANDBOX_WARM_POOL.plural in extensions,
        "claims": SANDBOX_CLAIM.plural in extensions,
    }
    kinds = {
        "sandboxes": SANDBOX,
        "templates": SANDBOX_TEMPLATE,
        "warm_pools": SANDBOX_WARM_POOL,
        "claims": SANDBOX_CLAIM,
    }
    return Capabilities(
        sandboxes=found["sandboxes"],
        templates=found["templates"],
        warm_pools=found["warm_pools"],
        claims=found["claims"],
        runtime_classes=runtime_classes,
        missing=tuple(kinds[key].crd_name for key, served in found.items() if not served),
        template_list=tuple(sorted("/".join(object_key(template)) for template in templates)),
        warm_pool_list=tuple(warm_pool_summary(pool) for pool in sorted(pools, key=object_key)),
        detected_at=timezone.now().isoformat(),
        release=release,
    )


def refresh() -> Capabilities:
    found = detect()
    ClusterCapabilities.objects.update_or_create(
        pk=1, defaults={"data": found.as_dict(), "detected_at": timezone.now()}
    )
    return found


def current(*, max_age: timedelta = STALE_AFTER) -> Capabilities:
    row = ClusterCapabilities.objects.filter(pk=1).first()
    if row is None or timezone.now() - row.detected_at > max_age or row.data.get("error"):
        return refresh()
    data = dict(row.data)
    data.pop("extensions", None)
    data["runtime_classes"] = tuple(data.get("runtime_classes") or ())
    data["missing"] = tuple(data.get("missing") or ())
    data["template_list"] = tuple(data.get("template_list") or ())
    data["warm_pool_list"] = tuple(data.get("warm_pool_list") or ())
    return Capabilities(**data)
