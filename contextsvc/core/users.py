"""People and their roles: viewer (read everything), approver (viewer + decide approvals),
admin (everything). A role is a Django group; superusers are admins."""

from __future__ import annotations

from django.contrib.auth import password_validation
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q, QuerySet

from contextsvc.core.auth import ROLE_CACHE, Role, user_role
from contextsvc.core.services import audit_record
from contextsvc.infra.errors import InvalidRequest

RANK = {Role.VIEWER: 1, Role.APPROVER: 2, Role.ADMIN: 3}


def ensure_role_groups() -> None:
    for role in Role.ALL:
        Group.objects.get_or_create(name=role)


def has_role(user: object, needed: str) -> bool:
    role = user_role(user)  # type: ignore[arg-type]
    return role is not None and RANK[role] >= RANK[needed]


def people_with_role(needed: str) -> QuerySet[User]:
    """Active people whose role is ``needed`` or above (superusers are admins)."""
    roles = [role for role in Role.ALL if RANK[role] >= RANK[needed]]
    return (
        User.objects.filter(is_active=True)
        .filter(Q(is_superuser=True) | Q(groups__name__in=roles))
        .distinct()
        .order_by("username")
    )


def _checked_email(email: str) -> str:
    email = email.strip()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise InvalidRequest(f"{email!r} is not an e-mail address") from None
    return email


@transaction.atomic
def user_set_email(*, user: User, email: str, actor: str) -> User:
    """Where the service writes to the person (approval requests, escalations)."""
    previous, user.email = user.email, _checked_email(email)
    user.save(update_fields=["email"])
    audit_record(
        actor=actor,
        action="user.email",
        target_type="user",
        target=user.get_username(),
        payload={"from": previous, "to": user.email},
    )
    return user


@transaction.atomic
def user_set_role(*, user: User, role: str, actor: str) -> User:
    if role not in Role.ALL:
        raise InvalidRequest(f"role must be one of {', '.join(Role.ALL)}")
    ensure_role_groups()
    previous = user_role(user)
    user.groups.remove(*Group.objects.filter(name__in=Role.ALL))
    user.groups.add(Group.objects.get(name=role))
    user.__dict__.pop(ROLE_CACHE, None)
    audit_record(
        actor=actor,
        action="user.role",
        target_type="user",
        target=user.get_username(),
        payload={"from": previous, "to": role},
    )
    return user


@transaction.atomic
def user_create(*, username: str, password: str, role: str, actor: str, email: str = "") -> User:
    if User.objects.filter(username=username).exists():
        raise InvalidRequest(f'user "{username}" already exists')
    user = User(username=username, email=_checked_email(email))
    try:
        user.full_clean(exclude=["password"])
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise InvalidRequest(" ".join(exc.messages)) from None
    user.set_password(password)
    user.save()
    audit_record(
        actor=actor,
        action="user.create",
        target_type="user",
        target=username,
        payload={"role": role, "email": user.email},
    )
    return user_set_role(user=user, role=role, actor=actor)


@transaction.atomic
def user_set_active(*, user: User, active: bool, actor: str) -> User:
    user.is_active = active
    user.save(update_fields=["is_active"])
    audit_record(
        actor=actor,
        action="user.activate" if active else "user.deactivate",
        target_type="user",
        target=user.get_username(),
    )
    return user
