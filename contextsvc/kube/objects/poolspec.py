"""The desired state of one allocation, as the manifests of its PVCs, Sandboxes, claims
and NetworkPolicy need it: the service turns an allocation row into a ``PoolSpec``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PoolSpec:
    """The desired state of one allocation, as its manifests need it."""

    name: str
    namespace: str
    replicas: int
    strategy: str  # "dedicated" | "shared" | "existing" | "warmpool"
    size: str = ""
    access_mode: str = ""
    storage_class: str | None = None
    claim_name: str | None = None
    read_only: bool = False
    warm_pool: str | None = None
    # Lifecycle: Sandboxes without Pods while suspended; stopped by the controller at
    # shutdown_time (RFC 3339) if the service has not released them by then.
    suspended: bool = False
    shutdown_time: str | None = None
    artifacts: ArtifactsSpec | None = None


@dataclass(frozen=True)
class ArtifactsSpec:
    size: str
    access_mode: str
    storage_class: str | None = None
