from django.contrib import admin

from contextsvc.core.models import ProcessHeartbeat


@admin.register(ProcessHeartbeat)
class ProcessHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("kind", "hostname", "pid", "started_at", "last_seen")
    list_filter = ("kind",)
    readonly_fields = ("kind", "hostname", "pid", "started_at", "last_seen")
