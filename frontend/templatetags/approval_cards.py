"""What an approval card says of its notifications (the live page's script says the same
from the request's JSON: frontend/static/frontend/live.js, notificationLine)."""

from __future__ import annotations

from django import template

from approvals.models import ApprovalRequest, Delivery

register = template.Library()

STATUS: dict[str, str] = {
    Delivery.Status.DELIVERED: "delivered",
    Delivery.Status.PENDING: "sending",
    Delivery.Status.FAILED: "failed",
}


@register.filter
def notified(request: ApprovalRequest, event: str) -> str:
    """ "alice (e-mail, delivered), ops (webhook, sending)" for one event's deliveries."""
    if not isinstance(request, ApprovalRequest):
        return ""  # the empty card the page's script fills
    sent = sorted(
        (delivery for delivery in request.deliveries.all() if delivery.event == event),
        key=lambda delivery: (delivery.created_at, delivery.target),
    )
    return ", ".join(
        f"{delivery.target} ({delivery.get_medium_display()}, {STATUS[delivery.status]})"
        for delivery in sent
    )
