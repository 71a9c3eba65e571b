from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from contexts.models import ContextResource


@admin.register(ContextResource)
class ContextResourceAdmin(admin.ModelAdmin):
    list_display = ("name", "namespace", "type", "size", "status", "created_at")
    list_filter = ("status", "type", "namespace")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
