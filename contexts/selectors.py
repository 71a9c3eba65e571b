"""Reads for named contexts: PostgreSQL only, never Kubernetes."""

from __future__ import annotations

from django.db.models import QuerySet

from contexts.models import ContextResource
from contextsvc.core.teams import Reach
from contextsvc.infra.errors import NotFound
from contextsvc.quantity import parse_quantity

VISIBLE_CONTEXT_STATUSES = (
    ContextResource.Status.PROVISIONING,
    ContextResource.Status.READY,
    ContextResource.Status.FAILED,
)


def context_not_found(namespace: str, name: str) -> NotFound:
    return NotFound(f'context "{name}" not found in namespace "{namespace}"')


def context_get_visible(*, namespace: str, name: str, reach: Reach) -> ContextResource:
    """The context a caller sees (another team's was never there)."""
    context = reach.narrow(
        ContextResource.objects.filter(
            namespace=namespace, name=name, status__in=VISIBLE_CONTEXT_STATUSES
        )
    ).first()
    if context is None:
        raise context_not_found(namespace, name)
    return context


def context_list_visible(*, namespace: str, reach: Reach) -> QuerySet[ContextResource]:
    return reach.narrow(
        ContextResource.objects.filter(namespace=namespace, status__in=VISIBLE_CONTEXT_STATUSES)
    ).order_by("name")


def context_storage(team_id: int) -> int:
    """The bytes the team's named contexts' PVCs request, until they are deleted (the
    contexts' part of its storage quota)."""
    sizes = (
        ContextResource.objects.filter(team_id=team_id)
        .exclude(status=ContextResource.Status.DELETED)
        .values_list("size", flat=True)
    )
    return sum(int(parse_quantity(size)) for size in sizes)
