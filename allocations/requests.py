"""What a caller asks for, as the services take it: a pool (``services/create.allocation_create``)
or a change of one (named contexts have theirs in contexts/requests.py).

The v1 parser (``allocations/v1.py``) makes these from a request body, after the contract's
checks; the dashboard's form goes through the same parser, and commands such as ``smoke``
build them directly. The services never see the HTTP contract itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Artifacts:
    size: str
    access_mode: str
    storage_class: str = ""
    retain: bool = False


@dataclass(frozen=True)
class PoolRequest:
    name: str
    replicas: int
    strategy: str
    size: str = ""
    access_mode: str = ""
    storage_class: str = ""
    claim_name: str = ""
    read_only: bool | None = None
    warm_pool: str = ""
    profile: str = ""
    namespace: str = ""
    # v1 additions: released at this time; an artifacts PVC next to the workspace.
    expires_at: datetime | None = None
    artifacts: Artifacts | None = None


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
