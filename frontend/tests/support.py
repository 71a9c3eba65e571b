"""Signed-in dashboard clients for the frontend tests."""

from __future__ import annotations

from django.test import Client

from contextsvc.core.users import user_set_role
from tests.support.factories import UserFactory


def client_for(role: str | None, *, csrf: bool = False) -> Client:
    """A browser session of a new person with ``role`` (None: signed in, but no role)."""
    user = UserFactory.create(username=f"user-{role}")
    if role:
        user_set_role(user=user, role=role, actor="user:test")
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client
