"""What a caller asks for, as the services take it: a pool (``services.allocation_create``)
or a named context (``services.context_create``).

The v1 parser (``allocations/v1.py``) makes these from a request body, after the contract's
checks; the dashboard's form goes through the same parser, and commands such as ``smoke``
build them directly. The services never see the HTTP contract itself.
"""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class ContextRequest:
    name: str
    namespace: str
    type: str
    size: str
    access_mode: str
    storage_class: str
