"""Rows for tests that need an agent workspace or a context in a given state."""

from __future__ import annotations

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from workspaces.models import AgentWorkspace, WorkspaceContext


class AgentWorkspaceFactory(DjangoModelFactory[AgentWorkspace]):
    class Meta:
        model = AgentWorkspace

    agent_type = factory.Sequence(lambda n: f"agent{n}")
    namespace = "default"
    initial_size = "1Gi"
    max_size = "4Gi"
    requested_bytes = 2**30
    created_by = "user:test"


class WorkspaceContextFactory(DjangoModelFactory[WorkspaceContext]):
    class Meta:
        model = WorkspaceContext

    workspace = factory.SubFactory(AgentWorkspaceFactory)
    context_id = factory.Sequence(lambda n: f"ctx-{n}")
    created_at = factory.LazyFunction(timezone.now)
    last_accessed_at = factory.LazyFunction(timezone.now)
    ttl_seconds = 86400
