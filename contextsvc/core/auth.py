"""Who is calling: bearer tokens for API clients, roles for people, and the scopes both map to.

Every API view declares the scope it needs; a token carries its client's scopes and a
logged-in person gets the scopes of their role (viewer, approver, admin).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from contextsvc.core.models import ApiToken, Scope
from contextsvc.infra import tokencache
from contextsvc.infra.errors import Forbidden

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
    team_id: int
    scopes: frozenset[str] = field(default_factory=frozenset)
    agent_types: frozenset[str] = field(default_factory=frozenset)
    # The team's name and request rate (Team.max_requests_per_minute; None: no limit), read
    # with the token so that a request of an unlimited team costs nothing more.
    team_name: str = ""
    requests_per_minute: int | None = None
    is_authenticated: bool = True
    is_active: bool = True

    @property
    def actor(self) -> str:
        return f"api:{self.name}"


ROLE_CACHE = "_cs_role"


def user_role(user: AbstractBaseUser | AnonymousUser) -> str | None:
    """The person's role, looked up once per user object (a page asks several times: the
    view's check, the menu, the buttons); ``user_set_role`` drops the cached value."""
    if isinstance(user, ApiPrincipal) or not user.is_authenticated:
        # Roles are for people; an API client has scopes (and its principal is immutable).
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
    """A token was sent but is malformed, unknown, expired or revoked, or the request carries
    two different tokens."""


# contextctl sends ``X-SH-Auth: <token>`` (the header the Go service's gateway checked);
# scripts send ``Authorization: Bearer <token>``. Both carry the same API-client tokens.
SH_AUTH_HEADER = "X-SH-Auth"


def _bearer_credentials(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer`` value; None for another scheme."""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    credentials = credentials.strip()
    if not credentials or " " in credentials:
        raise InvalidCredentials("malformed bearer token")
    return credentials


def _sh_auth_credentials(value: str) -> str:
    credentials = value.strip()
    if not credentials or " " in credentials:
        raise InvalidCredentials(f"malformed {SH_AUTH_HEADER} token (send the token alone)")
    return credentials


def request_token(*, authorization: str, sh_auth: str) -> str | None:
    """The one token a request carries, from either header; None when it carries none.

    Both headers may be sent (a gateway in front may add one), but then they must carry the
    same token: two different credentials in one request are refused rather than one of
    them picked, so that no header order decides who the caller is."""
    bearer = _bearer_credentials(authorization) if authorization else None
    if not sh_auth:
        return bearer
    token = _sh_auth_credentials(sh_auth)
    if authorization and bearer != token:
        raise InvalidCredentials(f"Authorization and {SH_AUTH_HEADER} carry different credentials")
    return token


# Every API request runs this: written out once rather than compiled by the ORM on each
# request, which cost more than running it (docs/performance.md, "Where a GET's time goes").
_CREDENTIAL_SQL = """
SELECT t.id, t.last_used_at, t.expires_at, c.id, c.name, c.team_id, c.scopes::text,
  c.agent_types::text, m.name, m.max_requests_per_minute
FROM core_apitoken t JOIN core_apiclient c ON c.id = t.client_id
  JOIN core_team m ON m.id = c.team_id
WHERE t.token_hash = %s AND t.revoked_at IS NULL AND c.is_active
  AND (t.expires_at IS NULL OR t.expires_at > %s)
"""


def principal_from_token(token: str) -> tuple[ApiPrincipal, ApiToken]:
    digest = hash_token(token)
    now = timezone.now()
    cache = token_cache()
    generation = cache.generation() if cache is not None else None
    entry = cache.get(digest) if cache is not None and generation is not None else None
    if entry is None:
        with connection.cursor() as cursor:
            cursor.execute(_CREDENTIAL_SQL, [digest, now])
            row = cursor.fetchone()
        if row is None:
            raise InvalidCredentials("invalid or revoked token")
        token_id, last_used_at, expires_at, client_id, name, team_id, *rights = row
        scopes, agent_types, team_name, requests_per_minute = rights
        entry = tokencache.Entry(
            ApiPrincipal(
                client_id=client_id,
                name=name,
                team_id=team_id,
                scopes=frozenset(json.loads(scopes)),
                agent_types=frozenset(json.loads(agent_types)),
                team_name=team_name,
                requests_per_minute=requests_per_minute,
            ),
            token_id,
            client_id,
            expires_at,
            last_used_at,
        )
    elif entry.expires_at is not None and entry.expires_at <= now:
        raise InvalidCredentials("invalid or revoked token")
    if entry.last_used_at is None or now - entry.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=entry.token_id).update(last_used_at=now)
        entry = dataclasses.replace(entry, last_used_at=now)
    if cache is not None and generation is not None:
        cache.put(digest, entry, generation)
    return entry.principal, ApiToken(
        pk=entry.token_id, client_id=entry.client_id, last_used_at=entry.last_used_at
    )


_cache: tokencache.TokenCache | None = None


def token_cache() -> tokencache.TokenCache | None:
    """This process's token cache (the web process's, CS_TOKEN_CACHE), or None."""
    global _cache
    if _cache is None and settings.CS_TOKEN_CACHE:
        database = settings.DATABASES["default"]
        _cache = tokencache.TokenCache(
            {
                "dbname": database["NAME"],
                "user": database["USER"],
                "password": database["PASSWORD"],
                "host": database["HOST"],
                "port": database["PORT"],
                "connect_timeout": database["OPTIONS"].get("connect_timeout", 5),
                "keepalives": 1,
                "keepalives_idle": 5,
                "keepalives_interval": 2,
                "keepalives_count": 2,
            }
        )
    return _cache


def principal_from_headers(
    *, authorization: str, sh_auth: str
) -> tuple[ApiPrincipal, ApiToken] | None:
    """The API client a request's headers name; None when they carry no token at all."""
    token = request_token(authorization=authorization, sh_auth=sh_auth)
    return principal_from_token(token) if token is not None else None


class BearerTokenAuthentication(BaseAuthentication):
    """API-client tokens: ``Authorization: Bearer cs_…`` (scripts, curl) or
    ``X-SH-Auth: cs_…`` (contextctl, Serverless Harness)."""

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiToken] | None:
        try:
            return principal_from_headers(
                authorization=request.META.get("HTTP_AUTHORIZATION", ""),
                sh_auth=request.META.get("HTTP_X_SH_AUTH", ""),
            )
        except InvalidCredentials as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="context-service"'


class ScopeRequired(BasePermission):
    """Writes need the view's ``write_scope`` (or one of its ``write_scopes``); reads need
    one of its ``read_scopes``, or the
    right to write (whoever may change something may also look at it). ``admin`` may do
    everything."""

    message = "this credential lacks the scope this endpoint needs"

    def has_permission(self, request: Request, view: Any) -> bool:
        scopes = principal_scopes(request.user)
        write_scopes = getattr(view, "write_scopes", (getattr(view, "write_scope", Scope.ADMIN),))
        if Scope.ADMIN in scopes or scopes & set(write_scopes):
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
