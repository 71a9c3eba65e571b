"""Reads for agent workspaces and their contexts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.utils import timezone

from contextsvc.core.teams import EVERY_TEAM, Reach
from contextsvc.infra.errors import NotFound
from workspaces.models import AgentWorkspace, WorkspaceContext

LIVE = (
    AgentWorkspace.Status.PROVISIONING,
    AgentWorkspace.Status.READY,
    AgentWorkspace.Status.FAILED,
)


def workspace_list_live(namespace: str | None = None, *, reach: Reach) -> QuerySet[AgentWorkspace]:
    """Live workspaces (of one namespace, when given; those ``reach`` allows), each with
    ``active_contexts`` counted (one query)."""
    found = reach.narrow(AgentWorkspace.objects.filter(status__in=LIVE))
    if namespace:
        found = found.filter(namespace=namespace)
    return found.annotate(
        active_contexts=Count("contexts", filter=Q(contexts__status=WorkspaceContext.Status.ACTIVE))
    ).order_by("namespace", "agent_type")


def workspace_not_found(namespace: str, agent_type: str) -> NotFound:
    return NotFound(f'no workspace for agent "{agent_type}" in namespace "{namespace}"')


def workspace_get(*, namespace: str, agent_type: str, reach: Reach) -> AgentWorkspace:
    """The live workspace a caller reaches (another team's was never there)."""
    found = reach.narrow(
        AgentWorkspace.objects.filter(namespace=namespace, agent_type=agent_type, status__in=LIVE)
    ).first()
    if found is None:
        raise workspace_not_found(namespace, agent_type)
    return found


def contexts_due(now: Any = None) -> QuerySet[WorkspaceContext]:
    """Active contexts not touched within their TTL."""
    now = now or timezone.now()
    return (
        WorkspaceContext.objects.filter(status=WorkspaceContext.Status.ACTIVE)
        .annotate(
            expires=ExpressionWrapper(
                F("last_accessed_at") + F("ttl_seconds") * timedelta(seconds=1),
                output_field=DurationField(),
            )
        )
        .select_related("workspace")
    ).filter(expires__lte=now)


def contexts_active() -> QuerySet[WorkspaceContext]:
    return WorkspaceContext.objects.filter(status=WorkspaceContext.Status.ACTIVE).select_related(
        "workspace"
    )


def workspace_live_for(*, namespace: str, agent_type: str) -> AgentWorkspace | None:
    """The agent type's live shared workspace in ``namespace``, with ``active_contexts``."""
    return workspace_list_live(namespace, reach=EVERY_TEAM).filter(agent_type=agent_type).first()


def workspace_storage(team_id: int) -> int:
    """The bytes the team's live agent workspaces' PVCs request now, grown ones at their
    grown size (the workspaces' part of its storage quota)."""
    found = AgentWorkspace.objects.filter(team_id=team_id, status__in=LIVE).aggregate(
        storage=Sum("requested_bytes")
    )
    return int(found["storage"] or 0)
