from __future__ import annotations

from typing import Any

import yaml
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations import provisioning, v1
from allocations.models import Allocation, Phase, Strategy
from allocations.selectors import allocation_page
from allocations.services import create, lifecycle, release
from contextsvc.core.teams import reach_of, team_id_of
from contextsvc.infra.errors import InvalidRequest, ServiceError, error_json
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import (
    condition,
    conditions_of,
    for_display,
    name_of,
    status_phase,
)
from contextsvc.kube.objects.pod import pod_is_ready
from frontend.access import actor, admin_required, viewer_required
from frontend.forms import AllocationForm
from profiles.models import SandboxProfile

PER_PAGE = 50


@viewer_required
def allocation_list(request: HttpRequest) -> HttpResponse:
    context = _list_context(request)
    return render(
        request,
        "frontend/allocations.html",
        {
            **context,
            "phases": Phase.choices,
            "strategies": Strategy.choices,
            "live_topic": "allocations",
            "live_ids": ",".join(str(row.pk) for row in context["rows"]),
        },
    )


@viewer_required
def allocation_rows(request: HttpRequest) -> HttpResponse:
    """The list's table alone, for the same filters and page: what the list fetches when an
    allocation is made, or changes phase (it may now match the filters, or no longer)."""
    return render(request, "frontend/_allocation_table.html", _list_context(request))


def _list_context(request: HttpRequest) -> dict[str, Any]:
    filters = {
        key: request.GET.get(key, "").strip() for key in ("phase", "strategy", "namespace", "q")
    }
    try:
        page_number = max(int(request.GET.get("page", "1")), 1)
    except ValueError:
        page_number = 1
    rows, total = allocation_page(
        reach=reach_of(request.user),
        phase=filters["phase"],
        strategy=filters["strategy"],
        namespace=filters["namespace"],
        text=filters["q"],
        page=page_number,
        per_page=PER_PAGE,
    )
    return {
        "rows": rows,
        "total": total,
        "page": page_number,
        "pages": max((total + PER_PAGE - 1) // PER_PAGE, 1),
        "filters": filters,
    }


def _reached(request: HttpRequest, allocation_id: int) -> Allocation:
    """The allocation, when the person reaches its team (a 404 otherwise, as the API)."""
    return get_object_or_404(
        reach_of(request.user).narrow(Allocation.objects.all()), pk=allocation_id
    )


@viewer_required
def allocation_detail(request: HttpRequest, allocation_id: int) -> HttpResponse:
    allocation = _reached(request, allocation_id)
    return render(
        request,
        "frontend/allocation_detail.html",
        {
            "allocation": allocation,
            "events": allocation.events.all(),
            "response": v1.pool_response(allocation, default_namespace=allocation.namespace),
            "blueprint_yaml": yaml.safe_dump(allocation.blueprint, sort_keys=False)
            if allocation.blueprint
            else "",
            "live_topic": f"allocation:{allocation.pk}",
        },
    )


@viewer_required
def allocation_timeline(request: HttpRequest, allocation_id: int) -> HttpResponse:
    allocation = _reached(request, allocation_id)
    return render(request, "frontend/_timeline.html", {"events": allocation.events.all()})


CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")


def _summary(kind: str, obj: dict[str, Any]) -> str:
    phase = status_phase(obj) or "Pending"
    if kind == "PersistentVolumeClaim":
        return phase
    if kind == "Pod":
        ready = pod_is_ready(obj)
        return f"{phase}{', ready' if ready else ''}"
    if kind == "NetworkPolicy":
        return "in force"  # (it has no status: the network plugin enforces it)
    ready_condition = condition(obj, "Ready")
    if ready_condition is None:
        return "no Ready condition yet"
    return f"Ready={ready_condition.get('status')} ({ready_condition.get('reason') or '—'})"


@viewer_required
def allocation_objects(request: HttpRequest, allocation_id: int) -> JsonResponse:
    """The Kubernetes objects the allocation owns, fetched by the page after it loaded (the
    page itself never waits on Kubernetes)."""
    allocation = _reached(request, allocation_id)
    try:
        owned = provisioning.owned(allocation)
    except kube.KubeError as exc:
        # The error body, and no objects (the page's script lists what it is given).
        return error_json(502, "internal_error", exc.message, extra={"objects": []})
    items = []
    for kind, found in owned.found.items():
        for obj in found:
            items.append(
                {
                    "kind": kind.kind,
                    "name": name_of(obj),
                    "status": _summary(kind.kind, obj),
                    "conditions": [
                        {key: str(c.get(key) or "") for key in CONDITION_FIELDS}
                        for c in conditions_of(obj)
                    ],
                    "yaml": yaml.safe_dump(for_display(obj), sort_keys=False),
                }
            )
    return JsonResponse({"objects": items})


@admin_required
def allocation_create(request: HttpRequest) -> HttpResponse:
    profiles = SandboxProfile.objects.filter(enabled=True).order_by("name")
    form = AllocationForm(request.POST or None, profiles=profiles)
    if request.method == "POST" and form.is_valid():
        try:
            # The same parser and rules as the API, so the form refuses exactly what it does.
            pool = v1.parse_pool_request(form.v1_body())
            created = create.allocation_create(
                request=pool, actor=actor(request), team_id=team_id_of(request.user)
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            for warning in created.warnings:
                messages.warning(request, warning)
            messages.success(request, f"Allocation {pool.name} requested.")
            return redirect("frontend:allocation", allocation_id=created.allocation.pk)
    return render(request, "frontend/allocation_form.html", {"form": form})


@admin_required
@require_POST
def allocation_release(request: HttpRequest, allocation_id: int) -> HttpResponse:
    allocation = _reached(request, allocation_id)
    try:
        release.allocation_release(
            name=allocation.name, actor=actor(request), reach=reach_of(request.user)
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Release of {allocation.name} requested.")
    return redirect("frontend:allocation", allocation_id=allocation.pk)


@admin_required
@require_POST
def allocation_lifecycle(request: HttpRequest, allocation_id: int, action: str) -> HttpResponse:
    """The detail page's lifecycle buttons: the same services as the API."""
    allocation = _reached(request, allocation_id)
    who, reach = actor(request), reach_of(request.user)
    try:
        if action == "suspend":
            lifecycle.allocation_suspend(name=allocation.name, actor=who, reach=reach)
            done = f"{allocation.name} is being suspended."
        elif action == "resume":
            lifecycle.allocation_resume(name=allocation.name, actor=who, reach=reach)
            done = f"{allocation.name} is being resumed."
        elif action == "scale":
            update = v1.parse_pool_update({"replicas": _integer(request.POST.get("replicas"))})
            lifecycle.allocation_update(name=allocation.name, update=update, actor=who, reach=reach)
            done = f"{allocation.name} is being scaled to {update.replicas}."
        elif action == "extend":
            hours = _integer(request.POST.get("hours"))
            if hours is None or not 1 <= hours <= 720:
                raise InvalidRequest("extend by 1 to 720 hours")
            update = v1.parse_pool_update({"ttlSeconds": hours * 3600})
            lifecycle.allocation_update(name=allocation.name, update=update, actor=who, reach=reach)
            done = f"{allocation.name} now expires in {hours} hour(s)."
        else:
            raise InvalidRequest(f"unknown action {action!r}")
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done)
    return redirect("frontend:allocation", allocation_id=allocation.pk)


def _integer(raw: str | None) -> int | None:
    try:
        return int(raw or "")
    except ValueError:
        return None
