"""Test data shared across apps (factory-boy): dashboard people."""

from __future__ import annotations

import factory
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory

PASSWORD = "x" * 16


class UserFactory(DjangoModelFactory[User]):
    """A person who can sign in with ``PASSWORD`` and has no role yet."""

    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"person-{n}")
    password = factory.django.Password(PASSWORD)
