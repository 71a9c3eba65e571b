"""Reads for named contexts: PostgreSQL only, never Kubernetes."""

from __future__ import annotations

from django.db.models import QuerySet

from contexts.models import ContextResource
from contextsvc.core.errors import NotFound

VISIBLE_CONTEXT_STATUSES = (
    ContextResource.Status.PROVISIONING,
    ContextResource.Status.READY,
    ContextResource.Status.FAILED,
)


def context_get_visible(*, namespace: str, name: str) -> ContextResource:
    context = ContextResource.objects.filter(
        namespace=namespace, name=name, status__in=VISIBLE_CONTEXT_STATUSES
    ).first()
    if context is None:
        raise NotFound(f'context "{name}" not found in namespace "{namespace}"')
    return context


def context_list_visible(*, namespace: str) -> QuerySet[ContextResource]:
    return ContextResource.objects.filter(
        namespace=namespace, status__in=VISIBLE_CONTEXT_STATUSES
    ).order_by("name")
