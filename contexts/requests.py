"""What a caller asks for, as the services take it: a named context
(``services.context_create``). The v1 parser (``contexts/v1.py``) makes it from a request
body, after the contract's checks; the services never see the HTTP contract itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContextRequest:
    name: str
    namespace: str
    type: str
    size: str
    access_mode: str
    storage_class: str
