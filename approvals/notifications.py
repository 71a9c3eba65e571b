"""Approvals that reach people: outbound webhooks (JSON signed with HMAC-SHA256, or the
Slack-compatible format) per agent type, and e-mail to approvers.

Each message is a ``Delivery`` row written in the transaction of the change it tells of
(a new request, an escalation, a decision) and sent by the worker after commit; a failure
that may pass (a timeout, a 5xx, a 429, an SMTP server that is down) is tried again after
``CS_NOTIFY_RETRY_SECONDS``, three times as long each time, ``CS_NOTIFY_MAX_ATTEMPTS``
times in all; one that cannot (a 4xx, a refused address) fails at once. Every try is a
``DeliveryAttempt``: the log the dashboard shows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import smtplib
import time
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import requests
from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from approvals import egress, live, queue
from approvals.links import link_issue, request_url
from approvals.messages import email_message, slack_body, webhook_body
from approvals.models import (
    ApprovalLink,
    ApprovalRequest,
    Delivery,
    DeliveryAttempt,
    NotificationChannel,
    NotificationEvent,
)
from approvals.selectors import channels_for, deliveries_due, events_wanted
from approvals.shapes import approval_json
from contextsvc.core.services import audit_record
from contextsvc.infra import secrets as sealed
from contextsvc.infra.errors import Conflict, InvalidRequest
from contextsvc.infra.queue import RetryLater
from contextsvc.infra.validators import is_dns1123_label

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Context-Service-Signature"
TIMESTAMP_HEADER = "X-Context-Service-Timestamp"
EVENT_HEADER = "X-Context-Service-Event"
DELIVERY_HEADER = "X-Context-Service-Delivery"
SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of generated secrets, not a secret
MAX_URL = 2000
# What a 4xx means for a retry: these may pass; any other 4xx will not.
RETRYABLE_STATUSES = frozenset({408, 425, 429})
LINK_EVENTS = (NotificationEvent.CREATED, NotificationEvent.ESCALATED)


class Retryable(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Undeliverable(Retryable):
    """Will fail however often it is tried."""


# --- Channels ----------------------------------------------------------------------------------


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256 over ``<timestamp>.<body>`` (docs/approvals.md)."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def _check_url(url: str) -> str:
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - read for its ValueError: "http://host:x/", "http://[::1/"
    except ValueError:
        parts = None
    if (
        parts is None
        or len(url) > MAX_URL
        or parts.scheme not in ("http", "https")
        or not parts.hostname
    ):
        raise InvalidRequest(f"url must be an http(s) URL of at most {MAX_URL} characters")
    if parts.username or parts.password or any(char.isspace() for char in url):
        raise InvalidRequest("url must not carry a user name, a password or spaces")
    try:
        egress.check(url, resolve=False)
    except egress.Refused as exc:
        raise InvalidRequest(exc.message) from None
    return url


def _display(url: str) -> str:
    # The path of an incoming webhook is its secret: only the scheme and host are shown.
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…"


def _check_agent_types(agent_types: Iterable[str]) -> list[str]:
    chosen = sorted({item.strip() for item in agent_types if item.strip()})
    if not chosen:
        raise InvalidRequest("agentTypes must name at least one agent type (or '*')")
    bad = [item for item in chosen if item != "*" and not is_dns1123_label(item)]
    if bad:
        raise InvalidRequest(f"agentTypes: {bad[0]!r} is not an agent type name")
    return chosen


def _check_events(events: Iterable[str]) -> list[str]:
    chosen = sorted(set(events))
    wanted = events_wanted()
    if not chosen or any(event not in wanted for event in chosen):
        raise InvalidRequest(f"events must be some of {', '.join(wanted)}")
    return chosen


def channel_create(
    *,
    name: str,
    kind: str,
    url: str,
    agent_types: Iterable[str],
    events: Iterable[str],
    actor: str,
) -> tuple[NotificationChannel, str | None]:
    """A new channel, and its signing secret (webhooks; shown this once, never again)."""
    if not is_dns1123_label(name):
        raise InvalidRequest("name must be a DNS-1123 label (lowercase, digits, '-')")
    if kind not in NotificationChannel.Kind.values:
        raise InvalidRequest(f"kind must be one of {', '.join(NotificationChannel.Kind.values)}")
    url = _check_url(url)
    chosen_types, chosen_events = _check_agent_types(agent_types), _check_events(events)
    secret = (
        SECRET_PREFIX + secrets.token_urlsafe(32)
        if kind == NotificationChannel.Kind.WEBHOOK
        else None
    )
    with transaction.atomic():
        if NotificationChannel.objects.filter(name=name).exists():
            raise Conflict(f'channel "{name}" already exists')
        channel = NotificationChannel.objects.create(
            name=name,
            kind=kind,
            url_sealed=sealed.seal(url),
            url_display=_display(url),
            secret_sealed=sealed.seal(secret) if secret else "",
            agent_types=chosen_types,
            events=chosen_events,
            created_by=actor,
        )
        audit_record(
            actor=actor,
            action="channel.create",
            target_type="channel",
            target=name,
            payload={
                "kind": kind,
                "url": channel.url_display,
                "agent_types": chosen_types,
                "events": chosen_events,
            },
        )
    return channel, secret


def channel_set_enabled(*, channel: NotificationChannel, enabled: bool, actor: str) -> None:
    with transaction.atomic():
        NotificationChannel.objects.filter(pk=channel.pk).update(enabled=enabled)
        audit_record(
            actor=actor,
            action="channel.enable" if enabled else "channel.disable",
            target_type="channel",
            target=channel.name,
        )
    channel.enabled = enabled


def channel_rotate_secret(*, channel: NotificationChannel, actor: str) -> str:
    """A new signing secret (shown once); the old one stops signing at once."""
    if channel.kind != NotificationChannel.Kind.WEBHOOK:
        raise InvalidRequest(f'channel "{channel.name}" is not signed (its URL is its secret)')
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        NotificationChannel.objects.filter(pk=channel.pk).update(secret_sealed=sealed.seal(secret))
        audit_record(
            actor=actor, action="channel.rotate", target_type="channel", target=channel.name
        )
    return secret


def channel_delete(*, channel: NotificationChannel, actor: str) -> None:
    """Its log stays (the deliveries keep the channel's name); pending ones fail."""
    with transaction.atomic():
        NotificationChannel.objects.filter(pk=channel.pk).delete()
        audit_record(
            actor=actor, action="channel.delete", target_type="channel", target=channel.name
        )


def channel_test(*, channel: NotificationChannel, actor: str) -> Delivery:
    """A test message through the channel, logged like any other delivery."""
    with transaction.atomic():
        delivery = _channel_delivery(channel, NotificationEvent.TEST, None, None)
        delivery.save()
        audit_record(
            actor=actor,
            action="channel.test",
            target_type="channel",
            target=channel.name,
            payload={"delivery": str(delivery.pk)},
        )
        queue.deliver(delivery.pk)
    return delivery


# --- Making deliveries ---------------------------------------------------------------------


def _channel_delivery(
    channel: NotificationChannel,
    event: str,
    request: ApprovalRequest | None,
    approval: dict[str, Any] | None,
) -> Delivery:
    delivery_id = uuid.uuid4()
    url = request_url(request.pk) if request is not None else None
    if channel.kind == NotificationChannel.Kind.SLACK:
        body = slack_body(event=event, approval=approval, url=url)
    else:
        body = webhook_body(
            event=event,
            delivery_id=str(delivery_id),
            approval=approval,
            url=url,
            at=timezone.now().isoformat(),
        )
    return Delivery(
        id=delivery_id,
        request=request,
        event=event,
        medium=channel.kind,
        channel=channel,
        target=channel.name,
        address=channel.url_display,
        message={"body": body},
        next_attempt_at=timezone.now(),
    )


def _email_delivery(
    person: User, event: str, request: ApprovalRequest, approval: dict[str, Any]
) -> Delivery:
    links = {
        decision: link_issue(request=request, recipient=person, decision=decision)
        if event in LINK_EVENTS
        else None
        for decision in ApprovalLink.Decision.values
    }
    message = email_message(
        event=event,
        approval=approval,
        url=request_url(request.pk),
        approve_url=links[ApprovalLink.Decision.APPROVE],
        deny_url=links[ApprovalLink.Decision.DENY],
    )
    return Delivery(
        request=request,
        event=event,
        medium=Delivery.Medium.EMAIL,
        recipient=person,
        target=person.get_username(),
        address=person.email,
        message=message,
        next_attempt_at=timezone.now(),
    )


def email_enabled() -> bool:
    return bool(settings.CS_EMAIL_HOST)


def notify(request: ApprovalRequest, event: str, *, people: Iterable[User] = ()) -> list[Delivery]:
    """Tell the channels that want ``event`` for the request's agent type, and e-mail
    ``people`` (never the requester). Inside the transaction of the change; sent after it
    commits."""
    approval = approval_json(request)
    made = [
        _channel_delivery(channel, event, request, approval)
        for channel in channels_for(agent_type=request.agent_type, event=event)
    ]
    if email_enabled():
        made += [
            _email_delivery(person, event, request, approval)
            for person in people
            if person.email and f"user:{person.get_username()}" != request.requested_by
        ]
    Delivery.objects.bulk_create(made)
    for delivery in made:
        queue.deliver(delivery.pk)
    return made


# --- Sending -------------------------------------------------------------------------------


def backoff(attempts: int) -> float:
    """Seconds from try number ``attempts`` (1, 2, …) to the next one."""
    return float(settings.CS_NOTIFY_RETRY_SECONDS) * 3 ** (attempts - 1)


def _post(delivery: Delivery) -> int:
    channel = delivery.channel
    if channel is None:
        raise Undeliverable("the channel was deleted")
    if not channel.enabled:
        raise Undeliverable("the channel is disabled")
    body = json.dumps(delivery.message["body"], separators=(",", ":"), ensure_ascii=False)
    data = body.encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "context-service",
        EVENT_HEADER: delivery.event,
        DELIVERY_HEADER: str(delivery.pk),
        TIMESTAMP_HEADER: timestamp,
    }
    if channel.secret_sealed:
        headers[SIGNATURE_HEADER] = signature(sealed.unseal(channel.secret_sealed), timestamp, data)
    seconds = settings.CS_NOTIFY_TIMEOUT_SECONDS
    url = sealed.unseal(channel.url_sealed)
    try:
        target = egress.check(url)
    except egress.Unresolved as exc:
        raise Retryable(exc.message) from None
    except egress.Refused as exc:
        raise Undeliverable(exc.message) from None
    try:
        # To the address just checked, not to what the name resolves to a moment later.
        with egress.session(target) as session:
            response = session.post(
                url,
                data=data,
                headers=headers,
                timeout=seconds,
                allow_redirects=False,
            )
    except requests.Timeout:
        raise Retryable(f"no answer within {seconds:g} s") from None
    except requests.ConnectionError:
        # Not the exception's text: it names the URL, whose path may be the secret.
        raise Retryable("could not connect") from None
    except requests.RequestException as exc:
        raise Retryable(f"the request failed ({type(exc).__name__})") from None
    code = response.status_code
    if 200 <= code < 300:
        return code
    if code in RETRYABLE_STATUSES or code >= 500:
        raise Retryable(f"answered {code}", code)
    hint = " (redirects are not followed)" if 300 <= code < 400 else ""
    raise Undeliverable(f"answered {code}{hint}", code)


def _mail(delivery: Delivery) -> None:
    message = delivery.message
    mail = EmailMultiAlternatives(
        subject=message["subject"],
        body=message["text"],
        to=[delivery.address],
        headers={DELIVERY_HEADER: str(delivery.pk)},
    )
    mail.attach_alternative(message["html"], "text/html")
    try:
        mail.send()
    except smtplib.SMTPRecipientsRefused:
        raise Undeliverable(f"the mail server refused {delivery.address}") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise Retryable(f"the mail server failed: {exc}"[:500]) from None


def delivery_attempt(delivery_id: str | UUID) -> str:
    """One try of a delivery that is due, by whichever worker claims it first; raises
    RetryLater with the wait before the next try when it should be tried again."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.CS_NOTIFY_TIMEOUT_SECONDS * 2 + 30)
    # Claimed by moving its next try past this one: a second worker on the same delivery
    # (a re-queued task, the sweep) finds nothing due and leaves it.
    claimed = Delivery.objects.filter(
        pk=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=lease, attempts=F("attempts") + 1)
    if not claimed:
        return "not due"
    delivery = Delivery.objects.select_related("channel").get(pk=delivery_id)
    started = time.monotonic()
    status_code: int | None = None
    error = ""
    try:
        if delivery.medium == Delivery.Medium.EMAIL:
            _mail(delivery)
        else:
            status_code = _post(delivery)
        outcome = DeliveryAttempt.Outcome.DELIVERED
    except Retryable as failed:
        status_code, error = failed.status, str(failed)
        final = isinstance(failed, Undeliverable) or (
            delivery.attempts >= settings.CS_NOTIFY_MAX_ATTEMPTS
        )
        outcome = DeliveryAttempt.Outcome.FAILED if final else DeliveryAttempt.Outcome.RETRY
    wait = backoff(delivery.attempts)
    _record(delivery, outcome, status_code, error, started, wait)
    if outcome == DeliveryAttempt.Outcome.RETRY:
        raise RetryLater(wait)
    return str(outcome)


def _record(
    delivery: Delivery,
    outcome: str,
    status_code: int | None,
    error: str,
    started: float,
    wait: float,
) -> None:
    now = timezone.now()
    changes: dict[str, Any] = {"last_error": error}
    if outcome == DeliveryAttempt.Outcome.DELIVERED:
        changes.update(status=Delivery.Status.DELIVERED, delivered_at=now)
    elif outcome == DeliveryAttempt.Outcome.FAILED:
        changes.update(status=Delivery.Status.FAILED)
    else:
        changes.update(next_attempt_at=now + timedelta(seconds=wait))
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            delivery=delivery,
            outcome=outcome,
            status_code=status_code,
            error=error,
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        Delivery.objects.filter(pk=delivery.pk).update(**changes)
        if delivery.request_id is not None and outcome != DeliveryAttempt.Outcome.RETRY:
            # The card's "notified" line follows: sent, or given up.
            live.announce(ApprovalRequest.objects.get(pk=delivery.request_id), live.CHANGED)
    if outcome == DeliveryAttempt.Outcome.FAILED:
        logger.warning("delivery %s to %s failed: %s", delivery.pk, delivery.target, error)


def deliveries_sweep() -> int:
    """Beat: queue every delivery whose next try is due (each one's own retry is queued by
    its task; this is for a task lost with its worker)."""
    return sum(queue.deliver_now(pk) for pk in deliveries_due(now=timezone.now()))
