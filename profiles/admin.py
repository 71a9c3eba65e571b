from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from profiles import services
from profiles.forms import SandboxProfileForm
from profiles.models import SandboxProfile


@admin.register(SandboxProfile)
class SandboxProfileAdmin(admin.ModelAdmin):
    form = SandboxProfileForm
    list_display = ("name", "source", "enabled", "is_default", "isolation", "updated_at")
    list_filter = ("source", "enabled", "isolation")
    search_fields = ("name", "description")

    def save_model(
        self, request: HttpRequest, obj: SandboxProfile, form: Any, change: bool
    ) -> None:
        # Through the service: one default at a time, and an audit entry with the admin's name.
        values = {field: getattr(obj, field) for field in services.FIELDS}
        saved = services.profile_save(
            name=obj.name,
            values=values,
            actor=f"user:{request.user.get_username()}",
            create=not change,
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: SandboxProfile) -> None:
        services.profile_delete(name=obj.name, actor=f"user:{request.user.get_username()}")
