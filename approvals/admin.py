from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from approvals.models import ApprovalRequest, Grant


class ReadOnlyAdmin(admin.ModelAdmin):
    """Decisions, grants and revocations go through the API and the dashboard, which
    audit them; the admin only looks."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "normalised", "agent_type", "context_id", "status", "created_at")
    list_filter = ("status", "kind", "agent_type")
    search_fields = ("normalised", "context_id", "allocation")


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ("rule", "scope", "agent_type", "context_id", "expires_at", "revoked_at")
    list_filter = ("scope", "agent_type")
