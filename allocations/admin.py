from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from allocations.models import Allocation, AllocationEvent, ContextResource
from contextsvc.core.admin import ReadOnlyAdmin


class AllocationEventInline(admin.TabularInline):
    model = AllocationEvent
    extra = 0
    can_delete = False
    fields = ("at", "kind", "message")
    readonly_fields = fields


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    """Read-only: allocations change through the API and the dashboard, which audit it."""

    list_display = (
        "name",
        "namespace",
        "strategy",
        "phase",
        "ready_replicas",
        "replicas",
        "requester",
        "requested_at",
    )
    list_filter = ("phase", "strategy", "namespace")
    search_fields = ("name",)
    inlines = [AllocationEventInline]


@admin.register(ContextResource)
class ContextResourceAdmin(admin.ModelAdmin):
    list_display = ("name", "namespace", "type", "size", "status", "created_at")
    list_filter = ("status", "type", "namespace")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
