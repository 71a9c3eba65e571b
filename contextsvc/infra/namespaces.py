"""Which namespaces the service manages (``CS_ALLOWED_NAMESPACES``; ``*`` means all).

Everything the service creates, lists or watches is in these namespaces, so its RBAC can
be a RoleBinding in each of them (docs/operations.md)."""

from __future__ import annotations

from django.conf import settings

from contextsvc.infra.errors import InvalidRequest


def managed_namespaces() -> list[str] | None:
    """The managed namespaces, sorted; None when every namespace is."""
    allowed = list(settings.CS_ALLOWED_NAMESPACES)
    return None if "*" in allowed else sorted(set(allowed))


def group() -> str:
    """The namespace group this installation's processes serve, as a name ("" for every
    namespace): watchers of different groups share a database without excluding each
    other, each recording its own namespaces (allocations/watcher.py)."""
    managed = managed_namespaces()
    return "" if managed is None else ",".join(managed)


def scopes() -> list[str | None]:
    """What to pass to a list or watch call for each managed namespace (None: all)."""
    managed = managed_namespaces()
    return [None] if managed is None else [*managed]


def check_managed(namespace: str) -> str:
    managed = managed_namespaces()
    if managed is not None and namespace not in managed:
        raise InvalidRequest(f'namespace "{namespace}" is not managed by this service')
    return namespace


def check_requested(namespace: str) -> str:
    """The namespace a request names (the service's own, CS_NAMESPACE, when it names
    none), once it is one the service manages."""
    return check_managed(namespace or settings.CS_NAMESPACE)
