"""Notification channels (admins) and the delivery log (everyone who may look)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from approvals import notifications, selectors
from approvals.models import Delivery, NotificationChannel
from contextsvc.core.auth import Role
from contextsvc.core.users import has_role
from contextsvc.infra.errors import ServiceError, error_json
from frontend.access import actor, admin_required, viewer_required, wants_json
from frontend.forms import ChannelForm


@viewer_required
def channel_list(request: HttpRequest) -> HttpResponse:
    form = ChannelForm(request.POST or None)
    if request.method == "POST":
        if not has_role(request.user, Role.ADMIN):
            raise PermissionDenied("this needs the admin role")
        if form.is_valid():
            try:
                channel, secret = notifications.channel_create(
                    name=form.cleaned_data["name"],
                    kind=form.cleaned_data["kind"],
                    url=form.cleaned_data["url"],
                    agent_types=form.cleaned_data["agent_types"],
                    events=form.cleaned_data["events"],
                    actor=actor(request),
                )
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                return _secret_shown(request, channel, secret)
        if wants_json(request):
            # A script posting the form gets the API's refusal, not the page re-rendered.
            return error_json(400, "invalid_request", _form_problem(form))
    status = request.GET.get("status", "")
    return render(
        request,
        "frontend/notifications.html",
        {
            "channels": NotificationChannel.objects.order_by("name"),
            "deliveries": selectors.delivery_list(
                status=status if status in Delivery.Status.values else None
            ),
            "status": status,
            "statuses": Delivery.Status.values,
            "form": form,
            "email_host": settings.CS_EMAIL_HOST,
            "public_url": settings.CS_PUBLIC_URL,
        },
    )


def _form_problem(form: ChannelForm) -> str:
    """The form's first problem as the API words one: ``field: message``."""
    for field, errors in form.errors.items():
        prefix = "" if field == "__all__" else f"{field}: "
        return prefix + str(errors[0])
    return "invalid channel"


def _secret_shown(
    request: HttpRequest, channel: NotificationChannel, secret: str | None
) -> HttpResponse:
    # Shown on this response only; stored encrypted, never shown again.
    return render(request, "frontend/channel_secret.html", {"channel": channel, "secret": secret})


@admin_required
@require_POST
def channel_action(request: HttpRequest, channel_id: int, action: str) -> HttpResponse:
    channel = get_object_or_404(NotificationChannel, pk=channel_id)
    try:
        if action in ("enable", "disable"):
            notifications.channel_set_enabled(
                channel=channel, enabled=action == "enable", actor=actor(request)
            )
            messages.success(request, f"Channel {channel.name} {action}d.")
        elif action == "rotate":
            secret = notifications.channel_rotate_secret(channel=channel, actor=actor(request))
            return _secret_shown(request, channel, secret)
        elif action == "delete":
            notifications.channel_delete(channel=channel, actor=actor(request))
            messages.success(request, f"Channel {channel.name} deleted.")
        else:
            notifications.channel_test(channel=channel, actor=actor(request))
            messages.success(request, f"A test message to {channel.name} is on its way.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("frontend:notifications")
