"""Decisions, grants and revocations go through the API and the dashboard, which audit
them; the admin only looks."""

from __future__ import annotations

from django.contrib import admin

from approvals.models import ApprovalRequest, Grant
from contextsvc.core.admin import ReadOnlyAdmin


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "normalised", "agent_type", "context_id", "status", "created_at")
    list_filter = ("status", "kind", "agent_type")
    search_fields = ("normalised", "context_id", "allocation")


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ("rule", "scope", "agent_type", "context_id", "expires_at", "revoked_at")
    list_filter = ("scope", "agent_type")
