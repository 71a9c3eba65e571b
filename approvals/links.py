"""Approve and deny links in e-mails: signed (Django's signing, keyed by the secret key),
one row each so that it is used once, bound to the person it was sent to, and dead at the
request's deadline. A link only opens a confirmation page for that person, signed in; the
decision is the page's POST (services/decisions.py, approval_decide_by_link). Nothing
decides on a GET: mail scanners open links."""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.utils import timezone

from approvals.models import ApprovalLink, ApprovalRequest
from contextsvc.infra.errors import Conflict, Forbidden, NotFound

SALT = "approvals.link"


def request_url(request_id: UUID | str) -> str:
    """The request's page in the dashboard, as people outside it reach it."""
    return f"{settings.CS_PUBLIC_URL}/approvals/{request_id}/"


def link_issue(*, request: ApprovalRequest, recipient: User, decision: str) -> str:
    link = ApprovalLink.objects.create(
        request=request, recipient=recipient, decision=decision, expires_at=request.deadline
    )
    token = signing.dumps(str(link.pk), salt=SALT)
    return f"{request_url(request.pk)}link/{token}/"


def link_open(
    *, token: str, request_id: UUID, user: User, for_update: bool = False
) -> ApprovalLink:
    """The link behind ``token`` if ``user`` may use it now; refusals say why. With
    ``for_update`` the row is locked (inside the transaction that uses it)."""
    try:
        # A link never outlives the longest deadline; the row's expiry is the real one.
        link_id = signing.loads(
            token, salt=SALT, max_age=settings.CS_APPROVAL_MAX_DEADLINE_SECONDS + 60
        )
    except signing.SignatureExpired:
        raise Conflict("this link has expired") from None
    except signing.BadSignature:
        raise NotFound("this link is not valid") from None
    found = ApprovalLink.objects.select_related("recipient", "request").filter(
        pk=link_id, request_id=request_id
    )
    if for_update:
        found = found.select_for_update(of=("self",))
    link = found.first()
    if link is None:
        raise NotFound("this link is not valid")
    if link.recipient_id != user.pk:
        raise Forbidden(
            f"this link was sent to {link.recipient.get_username()}: sign in as them, or "
            "decide from the queue"
        )
    if link.used_at is not None:
        raise Conflict("this link was already used")
    if link.expires_at <= timezone.now():
        raise Conflict("this link has expired")
    return link
