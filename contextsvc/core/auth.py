"""Who is calling: bearer tokens for API clients, roles for people, and the scopes both map to.

Every API view declares the scope it needs; a token carries its client's scopes and a
logged-in person gets the scopes of their role (viewer, approver, admin).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from contextsvc.core.errors import Forbidden
from contextsvc.core.models import ApiToken, Scope

TOKEN_PREFIX = "cs_"  # noqa: S105 - a marker that makes leaked tokens greppable
PREFIX_SHOWN = 10
# Writing last_used_at on every request would turn each GET into a write; a minute's
# resolution is enough to tell live tokens from dead ones.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class Role:
    VIEWER = "viewer"
    APPROVER = "approver"
    ADMIN = "admin"
    ALL = (VIEWER, APPROVER, ADMIN)


ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.VIEWER: frozenset({Scope.READ}),
    Role.APPROVER: frozenset({Scope.READ, Scope.APPROVER}),
    Role.ADMIN: frozenset(Scope.values),
}


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class ApiPrincipal:
    """``request.user`` for a token-authenticated request."""

    client_id: int
    name: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    agent_types: frozenset[str] = field(default_factory=frozenset)
    is_authenticated: bool = True
    is_active: bool = True

    @property
    def actor(self) -> str:
        return f"api:{self.name}"


ROLE_CACHE = "_cs_role"


def user_role(user: AbstractBaseUser | AnonymousUser) -> str | None:
    """The person's role, looked up once per user object (a page asks several times: the
    view's check, the menu, the buttons); ``user_set_role`` drops the cached value."""
    if not user.is_authenticated:
        return None
    if getattr(user, "is_superuser", False):
        return Role.ADMIN
    if hasattr(user, ROLE_CACHE):
        cached: str | None = getattr(user, ROLE_CACHE)
        return cached
    groups = getattr(user, "groups", None)
    names = set(groups.values_list("name", flat=True)) if groups is not None else set()
    role = next((r for r in (Role.ADMIN, Role.APPROVER, Role.VIEWER) if r in names), None)
    setattr(user, ROLE_CACHE, role)
    return role


def principal_scopes(principal: Any) -> frozenset[str]:
    if isinstance(principal, ApiPrincipal):
        return principal.scopes
    if principal is None or not getattr(principal, "is_authenticated", False):
        return frozenset()
    role = user_role(principal)
    return ROLE_SCOPES[role] if role else frozenset()


def actor_of(principal: Any) -> str:
    """How the audit log names whoever made a change."""
    if isinstance(principal, ApiPrincipal):
        return principal.actor
    return f"user:{principal.get_username()}"


class InvalidCredentials(Exception):
    """A bearer token was sent but is malformed, unknown, expired or revoked."""


def principal_from_header(header: str) -> tuple[ApiPrincipal, ApiToken] | None:
    """The principal of an ``Authorization`` header value; None when it is not a bearer
    token at all (another scheme)."""
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    credentials = credentials.strip()
    if not credentials or " " in credentials:
        raise InvalidCredentials("malformed bearer token")
    token = (
        ApiToken.objects.select_related("client").filter(token_hash=hash_token(credentials)).first()
    )
    now = timezone.now()
    if (
        token is None
        or token.revoked_at is not None
        or (token.expires_at is not None and token.expires_at <= now)
        or not token.client.is_active
    ):
        raise InvalidCredentials("invalid or revoked token")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    principal = ApiPrincipal(
        client_id=token.client_id,
        name=token.client.name,
        scopes=frozenset(token.client.scopes),
        agent_types=frozenset(token.client.agent_types),
    )
    return principal, token


class BearerTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer cs_…`` as ``contextctl`` sends it with ``$CS_TOKEN``."""

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        try:
            return principal_from_header(header)
        except InvalidCredentials as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="context-service"'


class ScopeRequired(BasePermission):
    """Writes need the view's ``write_scope``; reads need one of its ``read_scopes``, or the
    right to write (whoever may change something may also look at it). ``admin`` may do
    everything."""

    message = "this credential lacks the scope this endpoint needs"

    def has_permission(self, request: Request, view: Any) -> bool:
        scopes = principal_scopes(request.user)
        write_scope = getattr(view, "write_scope", Scope.ADMIN)
        if Scope.ADMIN in scopes or write_scope in scopes:
            return True
        if request.method in SAFE_METHODS:
            return bool(scopes & set(getattr(view, "read_scopes", (Scope.READ,))))
        return False


ANY_AGENT_TYPE = "*"


def check_agent_type(principal: Any, agent_type: str) -> None:
    """An API client speaks only for the agent types it was issued for; admins and the
    dashboard's people for any. Fails closed: a client with none listed speaks for none."""
    if not isinstance(principal, ApiPrincipal) or Scope.ADMIN in principal.scopes:
        return
    if ANY_AGENT_TYPE in principal.agent_types or agent_type in principal.agent_types:
        return
    raise Forbidden(f'API client "{principal.name}" may not act for agent type "{agent_type}"')
