from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models, transaction
from django.db.models import ForeignObjectRel
from django.utils import timezone

from contextsvc.core.auth import PREFIX_SHOWN, generate_token, hash_token
from contextsvc.core.limits import LIMITS
from contextsvc.core.models import (
    DEFAULT_TEAM,
    ApiClient,
    ApiToken,
    AuditEntry,
    ProcessHeartbeat,
    Scope,
    Team,
    TeamMember,
)
from contextsvc.core.teams import MEMBERSHIP_CACHE
from contextsvc.infra.validators import is_dns1123_label

HEARTBEAT_RETENTION = timedelta(days=1)


# The service itself in the audit log (a reconcile, a release's last step, artifacts kept
# as a context): one name for every app that acts on its own.
SERVICE_ACTOR = "system:context-service"


def audit_record(
    *,
    actor: str,
    action: str,
    target_type: str,
    target: str,
    payload: dict[str, Any] | None = None,
    team_id: int | None = None,
) -> AuditEntry:
    """Append one audit entry. Call it inside the transaction that makes the change.
    ``team_id`` is the team whose object changed; without one the entry is the platform's
    (profiles, teams, clients, people, channels), shown only to who reaches every team."""
    return AuditEntry.objects.create(
        actor=actor,
        action=action,
        target_type=target_type,
        target=target,
        payload=payload or {},
        team_id=team_id,
    )


def heartbeat_record(
    *,
    kind: str,
    hostname: str | None = None,
    pid: int | None = None,
    group: str = "",
    shards: Iterable[int] = (),
) -> ProcessHeartbeat:
    """Upsert this process's heartbeat and forget processes silent for a day."""
    now = timezone.now()
    held = {"group": group, "shards": sorted(shards)}
    heartbeat, _ = ProcessHeartbeat.objects.update_or_create(
        kind=kind,
        hostname=hostname or socket.gethostname(),
        pid=pid if pid is not None else os.getpid(),
        defaults={"last_seen": now, **held},
        create_defaults={"last_seen": now, "started_at": now, **held},
    )
    ProcessHeartbeat.objects.filter(last_seen__lt=now - HEARTBEAT_RETENTION).delete()
    return heartbeat


def _check_scopes(scopes: Iterable[str]) -> list[str]:
    chosen = sorted(set(scopes))
    unknown = [scope for scope in chosen if scope not in Scope.values]
    if unknown:
        raise ValidationError(
            {"scopes": f"unknown scope {unknown[0]!r}; choose from {', '.join(Scope.values)}"}
        )
    if not chosen:
        raise ValidationError({"scopes": "an API client needs at least one scope"})
    return chosen


@transaction.atomic
def _check_agent_types(scopes: list[str], agent_types: Iterable[str]) -> list[str]:
    chosen = sorted({item.strip() for item in agent_types if item.strip()})
    if Scope.AGENT in scopes and not chosen:
        raise ValidationError(
            {"agent_types": "an agent client needs the agent types it may act for (or '*')"}
        )
    bad = [item for item in chosen if item != "*" and not is_dns1123_label(item)]
    if bad:
        raise ValidationError({"agent_types": f"{bad[0]!r} is not an agent type name"})
    return chosen


def api_client_create(
    *,
    name: str,
    scopes: Iterable[str],
    agent_types: Iterable[str] = (),
    description: str = "",
    actor: str,
    created_by: User | None = None,
    team: Team | None = None,
) -> ApiClient:
    """A client of ``team`` (the default team without one)."""
    checked = _check_scopes(scopes)
    client = ApiClient(
        name=name,
        description=description,
        scopes=checked,
        agent_types=_check_agent_types(checked, agent_types),
        created_by=created_by,
        **({"team": team} if team is not None else {}),
    )
    client.full_clean()
    client.save()
    audit_record(
        actor=actor,
        action="api_client.create",
        target_type="api_client",
        target=name,
        payload={
            "scopes": client.scopes,
            "agent_types": client.agent_types,
            "description": description,
            "team": client.team.name,
        },
    )
    return client


@transaction.atomic
def api_client_update(
    *,
    client: ApiClient,
    scopes: Iterable[str],
    description: str,
    is_active: bool,
    actor: str,
    agent_types: Iterable[str] | None = None,
) -> ApiClient:
    client.scopes = _check_scopes(scopes)
    client.agent_types = _check_agent_types(
        client.scopes, client.agent_types if agent_types is None else agent_types
    )
    client.description = description
    client.is_active = is_active
    client.full_clean()
    client.save()
    audit_record(
        actor=actor,
        action="api_client.update",
        target_type="api_client",
        target=client.name,
        payload={
            "scopes": client.scopes,
            "agent_types": client.agent_types,
            "is_active": is_active,
        },
    )
    return client


@transaction.atomic
def api_token_issue(
    *,
    client: ApiClient,
    actor: str,
    created_by: User | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its plain text, which is never stored or shown again."""
    raw = generate_token()
    token = ApiToken.objects.create(
        client=client,
        token_hash=hash_token(raw),
        prefix=raw[:PREFIX_SHOWN],
        created_by=created_by,
        expires_at=expires_at,
    )
    audit_record(
        actor=actor,
        action="api_token.issue",
        target_type="api_client",
        target=client.name,
        payload={"token_id": token.pk, "prefix": token.prefix},
    )
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: str) -> ApiToken:
    locked = ApiToken.objects.select_for_update().get(pk=token.pk)
    if locked.revoked_at is not None:
        return locked
    locked.revoked_at = timezone.now()
    locked.save(update_fields=["revoked_at"])
    audit_record(
        actor=actor,
        action="api_token.revoke",
        target_type="api_client",
        target=locked.client.name,
        payload={"token_id": locked.pk, "prefix": locked.prefix},
    )
    return locked


# --- Teams ------------------------------------------------------------------------------------

QUOTA_FIELDS = tuple(limit.field for limit in LIMITS)


def _quota_payload(team: Team) -> dict[str, int | None]:
    return {field: getattr(team, field) for field in QUOTA_FIELDS}


def validation_problems(error: ValidationError) -> str:
    """A ValidationError in a line, each message with the field it is about, unless the
    message already names it ("name 'X' is not valid…")."""
    if not hasattr(error, "error_dict"):
        return "; ".join(error.messages)
    said = []
    for field, messages in error.message_dict.items():
        for message in messages:
            named = field == NON_FIELD_ERRORS or message.startswith((f"{field} ", "team "))
            said.append(message if named else f"{field}: {message}")
    return "; ".join(said)


TEAM_NAME_RULE = (
    "a team name is 1 to 63 lowercase letters, digits and hyphens, starting with a letter "
    "and not ending with a hyphen"
)
MAX_DESCRIPTION = Team._meta.get_field("description").max_length


def check_team_name(name: str) -> None:
    """Teams are named as Kubernetes names its objects (one spelling per team: no ``ALPHA``
    beside ``alpha``)."""
    if not (is_dns1123_label(name) and name[:1].isalpha()):
        shown = name if len(name) <= 70 else f"{name[:67]}…"
        raise ValidationError({"name": f"name {shown!r} is not valid: {TEAM_NAME_RULE}"})


@transaction.atomic
def team_create(*, name: str, description: str = "", actor: str) -> Team:
    check_team_name(name)
    if MAX_DESCRIPTION is not None and len(description) > MAX_DESCRIPTION:
        said = f"description is {len(description)} characters; at most {MAX_DESCRIPTION}"
        raise ValidationError({"description": said})
    if Team.objects.filter(name=name).exists():
        raise ValidationError({"name": f'team "{name}" already exists'})
    team = Team(name=name, description=description)
    team.full_clean()
    team.save()
    audit_record(
        actor=actor,
        action="team.create",
        target_type="team",
        target=name,
        payload={"description": description},
    )
    return team


@transaction.atomic
def team_delete(*, team: Team, actor: str) -> None:
    """Remove a team that holds nothing and never did (a typo, a team made too early). One
    with members, objects or history is refused, naming what it has: nothing is lost, and
    its people and clients are moved first."""
    locked = Team.objects.select_for_update().get(pk=team.pk)
    if locked.name == DEFAULT_TEAM:
        raise ValidationError(
            {"name": f'team "{DEFAULT_TEAM}" cannot be deleted: whoever has no other team is in it'}
        )
    held = [
        f"{count} {model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural}"
        for model, count in _team_references(locked)
    ]
    if held:
        raise ValidationError(
            {"name": f'team "{locked.name}" still has {", ".join(held)}: move or remove them first'}
        )
    locked.delete()
    audit_record(actor=actor, action="team.delete", target_type="team", target=locked.name)


def _team_references(team: Team) -> list[tuple[Any, int]]:
    """(model, rows) of every row whose key protects the team, over every app (the audit
    log's among them): found through the relations, so this layer knows none of those
    models. A row that goes with the team (its request rate) is not one."""
    found = []
    for relation in Team._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ForeignObjectRel) or relation.on_delete is not models.PROTECT:
            continue  # not another model's key pointing here, or one that goes with the team
        model = relation.related_model
        count = model._default_manager.filter(**{relation.field.name: team}).count()
        if count:
            found.append((model, count))
    return sorted(found, key=lambda item: item[0]._meta.label)


@transaction.atomic
def team_set_quotas(*, team: Team, actor: str, **limits: int | None) -> Team:
    """Set some of the team's limits (``max_live_sandboxes=10``; None removes one). A
    lowered limit refuses what would add to the use, and never takes back what is held."""
    unknown = sorted(set(limits) - set(QUOTA_FIELDS))
    if unknown:
        raise ValidationError({unknown[0]: f"unknown quota; choose from {', '.join(QUOTA_FIELDS)}"})
    locked = Team.objects.select_for_update().get(pk=team.pk)
    before = _quota_payload(locked)
    for field, value in limits.items():
        if value is not None and value < 0:
            raise ValidationError({field: "a limit is a whole number of 0 or more"})
        setattr(locked, field, value)
    locked.full_clean()
    locked.save()
    _audit_team_change(locked, "team.quotas", before, _quota_payload(locked), actor)
    return locked


@transaction.atomic
def team_set_namespaces(*, team: Team, namespaces: Iterable[str], actor: str) -> Team:
    """The namespaces the team may make objects in (none: every managed one). Objects made
    before stay where they are."""
    chosen = sorted({name.strip() for name in namespaces if name.strip()})
    bad = [name for name in chosen if not is_dns1123_label(name)]
    if bad:
        raise ValidationError({"namespaces": f"{bad[0]!r} is not a namespace name"})
    locked = Team.objects.select_for_update().get(pk=team.pk)
    before, locked.namespaces = locked.namespaces, chosen
    locked.save(update_fields=["namespaces"])
    _audit_team_change(locked, "team.namespaces", before, chosen, actor)
    return locked


def _audit_team_change(team: Team, action: str, before: Any, after: Any, actor: str) -> None:
    """A team's setting changed from ``before`` to ``after`` (nothing when it did not)."""
    if after != before:
        audit_record(
            actor=actor,
            action=action,
            target_type="team",
            target=team.name,
            payload={"from": before, "to": after},
        )


@transaction.atomic
def api_client_set_team(*, client: ApiClient, team: Team, actor: str) -> ApiClient:
    """Move a client to another team: from its next request it reaches that team's objects
    (a web process's token cache hears of the change from the database trigger of migration
    0006). What it made before stays with the team it was made for."""
    previous = client.team.name
    client.team = team
    client.save(update_fields=["team"])
    audit_record(
        actor=actor,
        action="api_client.team",
        target_type="api_client",
        target=client.name,
        payload={"from": previous, "to": team.name},
    )
    return client


@transaction.atomic
def person_set_team(*, user: User, team: Team, actor: str) -> TeamMember:
    """Move a person to another team (one with no membership is in the default team)."""
    member = TeamMember.objects.select_for_update().filter(user=user).first()
    previous = member.team.name if member is not None else DEFAULT_TEAM
    if member is None:
        member = TeamMember(user=user, team=team)
    member.team = team
    member.save()
    # The membership is cached on the user object (teams.team_id_of).
    user.__dict__.pop(MEMBERSHIP_CACHE, None)
    audit_record(
        actor=actor,
        action="user.team",
        target_type="user",
        target=user.get_username(),
        payload={"from": previous, "to": team.name},
    )
    return member
