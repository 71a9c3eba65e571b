"""What a caller asks for, as the services take it: a pool (``services/create.allocation_create``)
or a change of one (named contexts have theirs in contexts/requests.py).

The v1 parser (``allocations/v1.py``) makes these from a request body, after the contract's
checks; the dashboard's form goes through the same parser, and commands such as ``smoke``
build them directly. The services never see the HTTP contract itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from contextsvc.kube.objects.poolspec import PoolSpec


@dataclass(frozen=True)
class PoolRequest(PoolSpec):
    """A pool as the caller asked for it: what its manifests need (``PoolSpec``, declared
    once there) and what only the service keeps. Its attributes are named as the
    allocation's columns, into which ``allocation_create`` copies them by name: a new one is
    declared here, or in ``PoolSpec`` when the cluster sees it, and as a column, with no copy
    step between."""

    profile_name: str = ""
    # v1 additions: released at this time; an artifacts volume kept after release.
    expires_at: datetime | None = None
    artifacts_retain: bool = False

    def columns(self) -> dict[str, Any]:
        """The allocation's columns (a manifest's backstop, ``shutdown_time``, is worked out
        from ``expires_at`` when it is made)."""
        return {name: value for name, value in asdict(self).items() if name != "shutdown_time"}


ARTIFACTS_SHARED_MESSAGE = (
    "artifacts.accessMode must be ReadWriteMany with more than one replica (every sandbox "
    "mounts the one artifacts volume)"
)

# A change of expiry: none asked for, or the new value (None removes the expiry).
KEEP = object()


@dataclass(frozen=True)
class PoolUpdate:
    """``PATCH /v1/sandbox-pools/{name}``: what to change; None / KEEP leave it as it is."""

    replicas: int | None = None
    expires_at: object = KEEP  # datetime | None | KEEP
