"""What an approval card says of its notifications (the live page's script says the same
from the request's JSON: frontend/static/frontend/live.js, notificationLine)."""

from __future__ import annotations

from django import template

from approvals.models import ApprovalRequest, Delivery
from approvals.selectors import approval_version

register = template.Library()

STATUS: dict[str, str] = {
    Delivery.Status.DELIVERED: "delivered",
    Delivery.Status.PENDING: "sending",
    Delivery.Status.FAILED: "failed",
}


def _sent(request: object, event: str) -> list[Delivery]:
    if not isinstance(request, ApprovalRequest):
        return []  # the empty card the page's script fills
    return sorted(
        (delivery for delivery in request.deliveries.all() if delivery.event == event),
        key=lambda delivery: (delivery.created_at, delivery.target),
    )


@register.filter
def notified(request: ApprovalRequest, event: str) -> str:
    """ "alice (E-mail, delivered), ops (Webhook, sending)": to whom one event's messages
    went, and how each fared."""
    return ", ".join(
        f"{delivery.target} ({delivery.get_medium_display()}, {STATUS[delivery.status]})"
        for delivery in _sent(request, event)
    )


@register.filter
def notified_at(request: ApprovalRequest, event: str) -> str:
    """When one event's messages were made ("12:01:05 UTC"), or ""."""
    sent = _sent(request, event)
    return f"{sent[0].created_at:%H:%M:%S} UTC" if sent else ""


@register.filter
def version(request: object) -> str:
    """The version a decision on this card decides (approvals.selectors.approval_version);
    empty for the empty card the page's script fills."""
    return approval_version(request) if isinstance(request, ApprovalRequest) else ""
