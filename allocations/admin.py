from __future__ import annotations

from django.contrib import admin

from allocations.models import Allocation, AllocationEvent
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
