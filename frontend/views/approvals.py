from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from approvals import contract, links, selectors, shapes
from approvals.models import ApprovalRequest, Grant, Status
from approvals.services import decisions, grants
from contextsvc.core.teams import reach_of
from contextsvc.infra.errors import (
    InvalidRequest,
    NotFound,
    ServiceError,
    error_json,
    service_error_json,
)
from frontend.access import actor, approver_required, viewer_required, wants_json
from frontend.forms import decision_body, edited_operation

HISTORY = 50


@viewer_required
def approval_queue(request: HttpRequest) -> HttpResponse:
    filters = {key: request.GET.get(key, "").strip() for key in ("status", "agent_type", "context")}
    history = (
        selectors.approval_list(
            reach=reach_of(request.user),
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
            "pending": selectors.approval_list_pending(reach=reach_of(request.user)),
            "history": history,
            "grants": selectors.grant_list(reach=reach_of(request.user), active=True)[:100],
            "filters": filters,
            "statuses": [s for s in Status.values if s != Status.PENDING],
            "live_topic": "approvals",
        },
    )


@viewer_required
def approval_detail(request: HttpRequest, request_id: str) -> HttpResponse:
    """One request: what was asked, how the rules saw it, who was told, who decided (and
    any edit), and what ran."""
    context = _detail_context(request, request_id)
    return render(
        request,
        "frontend/approval_detail.html",
        {**context, "live_topic": f"approval:{context['request'].pk}"},
    )


@viewer_required
def approval_detail_body(request: HttpRequest, request_id: str) -> HttpResponse:
    """The page's content alone: what the page fetches when its request changes."""
    return render(
        request, "frontend/_approval_detail_body.html", _detail_context(request, request_id)
    )


def _reached(request: HttpRequest, request_id: str) -> ApprovalRequest:
    """The request, when the person reaches its team; a 404 page otherwise (an unknown or
    malformed id too), as the API answers."""
    try:
        return selectors.approval_get(
            request_id=selectors.parse_request_id(request_id), reach=reach_of(request.user)
        )
    except NotFound as exc:
        raise Http404(exc.message) from None


def _detail_context(request: HttpRequest, request_id: str) -> dict[str, Any]:
    found = _reached(request, request_id)
    return {
        "request": found,
        "run": selectors.run_of_request(request=found),
        "deliveries": found.deliveries.order_by("created_at", "target"),
    }


@approver_required
@require_POST
def approval_decide(request: HttpRequest, request_id: str) -> HttpResponse:
    parsed = selectors.parse_request_id(request_id)
    decided = None
    try:
        asked = selectors.approval_get(request_id=parsed, reach=reach_of(request.user))
        decision = contract.parse_decision(decision_body(request.POST, asked.operation))
        decided = decisions.approval_decide(
            request_id=parsed, actor=actor(request), via="dashboard", **decision.arguments()
        )
        status, message = (
            200,
            ("approved: it needs another approver" if decided.status == "pending" else "decided"),
        )
    except ServiceError as exc:
        status, code, message = exc.status, exc.code, exc.message
    if wants_json(request):
        # The API's shapes: the decided request, or the error body.
        if decided is not None:
            return JsonResponse(shapes.approval_json(decided))
        return error_json(status, code, message)
    (messages.success if status == 200 else messages.error)(request, message)
    return redirect("frontend:approvals")


@approver_required
@require_POST
def approval_edit_check(request: HttpRequest, request_id: str) -> JsonResponse:
    """The rules' judgement of an edit as the reviewer types it (nothing is written)."""
    try:
        asked = selectors.approval_get(
            request_id=selectors.parse_request_id(request_id), reach=reach_of(request.user)
        )
        edit = decisions.approval_edit_check(
            request_id=asked.pk, operation=edited_operation(request.POST, asked.operation)
        )
    except ServiceError as exc:
        return service_error_json(exc)
    return JsonResponse(edit)


@approver_required
def approval_similar(request: HttpRequest, request_id: str) -> JsonResponse:
    found = _reached(request, request_id)
    try:
        similar = grants.approval_similar(
            found, rule=request.GET.get("rule"), scope=request.GET.get("scope", "agent_type")
        )
    except InvalidRequest as exc:
        return service_error_json(exc, status=400)
    return JsonResponse(similar)


@approver_required
def approval_link(request: HttpRequest, request_id: str, token: str) -> HttpResponse:
    """An e-mail's approve or deny link: the person it was sent to, signed in (the
    decorator sends anyone else to the login page first), confirms here. A GET only
    shows; the decision is the POST."""
    parsed = selectors.parse_request_id(request_id)
    try:
        link = links.link_open(token=token, request_id=parsed, user=request.user)  # type: ignore[arg-type]
    except ServiceError as exc:
        return render(
            request,
            "frontend/approval_link.html",
            {"problem": exc.message, "request_id": parsed},
            status=exc.status,
        )
    if request.method == "POST":
        try:
            decided = decisions.approval_decide_by_link(
                token=token,
                request_id=parsed,
                user=request.user,  # type: ignore[arg-type]
                reason=contract.REASON.check(request.POST.get("reason", "").strip()),
                version=contract.DECISION["version"].check(request.POST.get("version") or None),
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            done = (
                "approved: it needs another approver"
                if decided.status == "pending"
                else decided.status
            )
            messages.success(request, f"Request {decided.pk}: {done}.")
        return redirect("frontend:approval", request_id=str(parsed))
    return render(request, "frontend/approval_link.html", {"link": link, "request": link.request})


@approver_required
@require_POST
def grant_revoke(request: HttpRequest, grant_id: int) -> HttpResponse:
    get_object_or_404(Grant, pk=grant_id)
    try:
        grants.grant_revoke(grant_id=grant_id, actor=actor(request), reach=reach_of(request.user))
        messages.success(request, "Grant revoked.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("frontend:approvals")
