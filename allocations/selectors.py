"""Reads for allocations and contexts: PostgreSQL only, never Kubernetes."""

from __future__ import annotations

from django.db.models import QuerySet

from allocations.models import VISIBLE_PHASES, Allocation, ContextResource, Phase
from contextsvc.core.errors import InvalidRequest, NotFound

V1_STATUS_PHASES = {
    "provisioning": (Phase.REQUESTED, Phase.PROVISIONING),
    "ready": (Phase.READY,),
    "failed": (Phase.FAILED,),
}
VISIBLE_CONTEXT_STATUSES = (
    ContextResource.Status.PROVISIONING,
    ContextResource.Status.READY,
    ContextResource.Status.FAILED,
)


def allocation_get_visible(*, name: str) -> Allocation:
    """The allocation a v1 caller can see under ``name`` (a releasing one is gone for it)."""
    allocation = Allocation.objects.filter(name=name, phase__in=VISIBLE_PHASES).first()
    if allocation is None:
        raise NotFound(f'sandbox pool "{name}" not found')
    return allocation


def allocation_list_visible(
    *, status: str | None = None, namespace: str | None = None
) -> QuerySet[Allocation]:
    queryset = Allocation.objects.filter(phase__in=VISIBLE_PHASES)
    if status:
        if status not in V1_STATUS_PHASES:
            raise InvalidRequest("status must be one of provisioning, ready, failed")
        queryset = queryset.filter(phase__in=V1_STATUS_PHASES[status])
    if namespace:
        queryset = queryset.filter(namespace=namespace)
    return queryset.order_by("name")


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
