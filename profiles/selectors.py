from __future__ import annotations

from django.db.models import QuerySet

from contextsvc.core.errors import NotFound
from profiles.models import SandboxProfile


def profile_list() -> QuerySet[SandboxProfile]:
    return SandboxProfile.objects.order_by("name")


def profile_get(*, name: str) -> SandboxProfile:
    profile = SandboxProfile.objects.filter(name=name).first()
    if profile is None:
        raise NotFound(f'profile "{name}" not found')
    return profile
