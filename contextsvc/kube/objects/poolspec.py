"""The desired state of one allocation, as the manifests of its PVCs, Sandboxes, claims
and NetworkPolicy need it: the service turns an allocation row into a ``PoolSpec``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PoolSpec:
    """The desired state of one allocation, as its manifests need it. Its attributes are
    named as the allocation's columns, which the service copies by name
    (allocations/provisioning.pool_spec), and a caller's request is one with what only the
    service keeps (allocations/requests.PoolRequest): a new one is declared here and used
    by a manifest, with no copy step between."""

    name: str
    replicas: int
    strategy: str  # "dedicated" | "shared" | "existing" | "warmpool"
    namespace: str = ""  # "" only in a request: the service's own namespace
    workspace_size: str = ""
    workspace_access_mode: str = ""
    workspace_storage_class: str = ""  # "": the cluster's default class
    claim_name: str = ""
    read_only: bool | None = None
    warm_pool: str = ""
    # Lifecycle: Sandboxes without Pods while suspended; stopped by the controller at
    # shutdown_time (RFC 3339) if the service has not released them by then.
    suspended: bool = False
    shutdown_time: str | None = None
    artifacts_size: str = ""  # "": no artifacts volume
    artifacts_access_mode: str = ""
    artifacts_storage_class: str = ""

    @property
    def artifacts(self) -> ArtifactsSpec | None:
        if not self.artifacts_size:
            return None
        return ArtifactsSpec(
            self.artifacts_size, self.artifacts_access_mode, self.artifacts_storage_class
        )


@dataclass(frozen=True)
class ArtifactsSpec:
    size: str
    access_mode: str
    storage_class: str = ""
