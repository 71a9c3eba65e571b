"""The profile form, shared by the Django admin and the dashboard: it checks a profile
exactly as the service will before saving (profiles.services.profile_problems)."""

from __future__ import annotations

from typing import Any

from django import forms

from profiles import services
from profiles.models import SandboxProfile


class SandboxProfileForm(forms.ModelForm):
    class Meta:
        model = SandboxProfile
        fields = ("name", *services.FIELDS)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        candidate = SandboxProfile(
            **{
                field.name: cleaned.get(field.name, getattr(self.instance, field.name))
                for field in SandboxProfile._meta.concrete_fields
                if field.name not in ("id", "created_at", "updated_at")
            }
        )
        for field, messages in services.profile_problems(candidate).items():
            target = field if field in self.fields else None
            for message in messages:
                self.add_error(target, message if target else f"{field}: {message}")
        return cleaned
