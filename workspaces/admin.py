"""Agent workspaces and their contexts change through the API and housekeeping (the
services write the audit entries); the admin only looks."""

from __future__ import annotations

from django.contrib import admin

from contextsvc.core.admin import ReadOnlyAdmin
from workspaces.models import AgentWorkspace, WorkspaceContext


@admin.register(AgentWorkspace)
class AgentWorkspaceAdmin(ReadOnlyAdmin):
    list_display = (
        "agent_type",
        "namespace",
        "status",
        "requested_bytes",
        "capacity_bytes",
        "usage_bytes",
        "created_at",
    )
    list_filter = ("status", "namespace")
    search_fields = ("agent_type",)


@admin.register(WorkspaceContext)
class WorkspaceContextAdmin(ReadOnlyAdmin):
    list_display = ("context_id", "workspace", "status", "last_accessed_at", "ttl_seconds")
    list_filter = ("status",)
    search_fields = ("context_id",)
