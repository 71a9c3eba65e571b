from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from approvals import selectors, services
from approvals.models import ApprovalRequest, Grant, Status
from contextsvc.core.errors import InvalidRequest, ServiceError
from frontend.access import actor, approver_required, viewer_required
from frontend.forms import DecisionForm

HISTORY = 50


@viewer_required
def approval_queue(request: HttpRequest) -> HttpResponse:
    filters = {key: request.GET.get(key, "").strip() for key in ("status", "agent_type", "context")}
    history = (
        selectors.approval_list(
            status=filters["status"] if filters["status"] in Status.values else None,
            agent_type=filters["agent_type"] or None,
            context_id=filters["context"] or None,
        )
        .exclude(status=Status.PENDING)
        .select_related("grant")[:HISTORY]
    )
    return render(
        request,
        "frontend/approvals.html",
        {
            "pending": ApprovalRequest.objects.filter(status=Status.PENDING).order_by("deadline"),
            "history": history,
            "grants": selectors.grant_list(active=True)[:100],
            "filters": filters,
            "statuses": [s for s in Status.values if s != Status.PENDING],
            "live_topic": "approvals",
        },
    )


@approver_required
@require_POST
def approval_decide(request: HttpRequest, request_id: str) -> HttpResponse:
    form = DecisionForm(request.POST)
    parsed = selectors.parse_request_id(request_id)
    wants_json = request.headers.get("Accept") == "application/json"
    status, code, message = 400, "invalid_request", "invalid decision"
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["decision"] == "approve":
                services.approval_approve(
                    request_id=parsed, actor=actor(request), reason=data["reason"]
                )
            elif data["decision"] == "deny":
                services.approval_deny(
                    request_id=parsed, actor=actor(request), reason=data["reason"]
                )
            else:
                services.approval_approve_similar(
                    request_id=parsed,
                    actor=actor(request),
                    scope=data["scope"] or "context",
                    expires_in_seconds=data["expires_in"],
                    rule=data["rule"] or None,
                    reason=data["reason"],
                )
            status, message = 200, "decided"
        except ServiceError as exc:
            status, code, message = exc.status, exc.code, exc.message
    if wants_json:
        # The API's shapes: the decided request, or the error body.
        if status == 200:
            return JsonResponse(selectors.approval_json(selectors.approval_get(request_id=parsed)))
        return JsonResponse({"error": code, "message": message}, status=status)
    (messages.success if status == 200 else messages.error)(request, message)
    return redirect("frontend:approvals")


@approver_required
def approval_similar(request: HttpRequest, request_id: str) -> JsonResponse:
    found = selectors.approval_get(request_id=selectors.parse_request_id(request_id))
    try:
        similar = services.approval_similar(
            found, rule=request.GET.get("rule"), scope=request.GET.get("scope", "agent_type")
        )
    except InvalidRequest as exc:
        return JsonResponse({"error": exc.code, "message": exc.message}, status=400)
    return JsonResponse(similar)


@approver_required
@require_POST
def grant_revoke(request: HttpRequest, grant_id: int) -> HttpResponse:
    get_object_or_404(Grant, pk=grant_id)
    try:
        services.grant_revoke(grant_id=grant_id, actor=actor(request))
        messages.success(request, "Grant revoked.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("frontend:approvals")
