"""Test data for profiles (factory-boy). Rows go straight to the database, without the
checks and the audit entry of ``profiles.services.profile_save``: tests of those call it."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from profiles.models import ProfileSource, SandboxProfile


class SandboxProfileFactory(DjangoModelFactory[SandboxProfile]):
    """An enabled built-in profile; ``rules`` and ``sources`` are its agent type's
    settings.json and sources.json (empty: nothing is decided by a rule)."""

    class Meta:
        model = SandboxProfile

    name = factory.Sequence(lambda n: f"agent-{n}")
    source = ProfileSource.BUILTIN
    image = "busybox:1.36"
    updated_by = "user:test"
