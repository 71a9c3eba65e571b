"""Decisions, grants and revocations go through the API and the dashboard, which audit
them; the admin only looks."""

from __future__ import annotations

from django.contrib import admin

from approvals.models import ApprovalRequest, Delivery, Grant, NotificationChannel
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


@admin.register(NotificationChannel)
class NotificationChannelAdmin(ReadOnlyAdmin):
    # The sealed URL and secret are never shown: only what the dashboard shows.
    list_display = ("name", "kind", "url_display", "enabled", "created_by", "created_at")
    fields = ("name", "kind", "url_display", "agent_types", "events", "enabled", "created_by")


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event", "medium", "target", "status", "attempts")
    list_filter = ("status", "medium", "event")
    exclude = ("message",)  # an e-mail's body holds its recipient's approve and deny links
