"""API clients and tokens, users and roles, the audit log, and the cluster."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.selectors import retention_kept as allocations_kept
from approvals.selectors import retention_kept as approvals_kept
from contextsvc.core import capabilities, services, users
from contextsvc.core.auth import user_role
from contextsvc.core.models import ApiClient, ApiToken
from contextsvc.core.retention import retention_kept as audit_kept
from contextsvc.core.selectors import audit_entries, heartbeat_list_recent
from contextsvc.core.teams import reach_of
from contextsvc.infra.errors import ServiceError
from contextsvc.kube.objects.kinds import (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)
from frontend.access import actor, admin_required, viewer_required
from frontend.forms import ApiClientForm, EmailForm, RoleForm, UserForm
from workspaces import selectors as workspaces


@admin_required
def client_list(request: HttpRequest) -> HttpResponse:
    form = ApiClientForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            client = services.api_client_create(
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                agent_types=form.cleaned_data["agent_types"],
                description=form.cleaned_data["description"],
                actor=actor(request),
                created_by=request.user,  # type: ignore[arg-type]
            )
        except ValidationError as exc:
            form.add_error(None, "; ".join(exc.messages))
        else:
            return _issue(request, client)
    return render(
        request,
        "frontend/clients.html",
        {
            "clients": ApiClient.objects.prefetch_related("tokens").order_by("name"),
            "form": form,
        },
    )


def _issue(request: HttpRequest, client: ApiClient) -> HttpResponse:
    _, raw = services.api_token_issue(client=client, actor=actor(request), created_by=request.user)  # type: ignore[arg-type]
    # Shown once, on this response only; never stored in plain text.
    return render(request, "frontend/token_issued.html", {"client": client, "token": raw})


@admin_required
@require_POST
def client_token(request: HttpRequest, client_id: int) -> HttpResponse:
    return _issue(request, get_object_or_404(ApiClient, pk=client_id))


@admin_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id)
    services.api_token_revoke(token=token, actor=actor(request))
    messages.success(request, f"Token {token.prefix}… of {token.client.name} revoked.")
    return redirect("frontend:clients")


@admin_required
def user_list(request: HttpRequest) -> HttpResponse:
    form = UserForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            users.user_create(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password"],
                role=form.cleaned_data["role"],
                email=form.cleaned_data["email"],
                actor=actor(request),
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"User {form.cleaned_data['username']} created.")
            return redirect("frontend:users")
    people = [
        (person, user_role(person))
        for person in User.objects.prefetch_related("groups").order_by("username")
    ]
    return render(
        request, "frontend/users.html", {"people": people, "form": form, "roles": RoleForm()}
    )


@admin_required
@require_POST
def user_role_change(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(User, pk=user_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        users.user_set_role(user=person, role=form.cleaned_data["role"], actor=actor(request))
        messages.success(request, f"{person.username} is now {form.cleaned_data['role']}.")
    return redirect("frontend:users")


@admin_required
@require_POST
def user_active(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(User, pk=user_id)
    if person == request.user:
        messages.error(request, "You cannot deactivate yourself.")
    else:
        users.user_set_active(user=person, active=not person.is_active, actor=actor(request))
    return redirect("frontend:users")


@admin_required
@require_POST
def user_email(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(User, pk=user_id)
    form = EmailForm(request.POST)
    if form.is_valid():
        try:
            users.user_set_email(
                user=person, email=form.cleaned_data["email"], actor=actor(request)
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, f"{person.username}'s e-mail is now {person.email or 'unset'}."
            )
    return redirect("frontend:users")


@viewer_required
def audit_log(request: HttpRequest) -> HttpResponse:
    filters = {key: request.GET.get(key, "").strip() for key in ("actor", "action", "target")}
    entries = audit_entries(reach=reach_of(request.user))
    if filters["actor"]:
        entries = entries.filter(actor__icontains=filters["actor"])
    if filters["action"]:
        entries = entries.filter(action__startswith=filters["action"])
    if filters["target"]:
        entries = entries.filter(target__icontains=filters["target"])
    page = Paginator(entries, 50).get_page(request.GET.get("page"))
    return render(request, "frontend/audit.html", {"page": page, "filters": filters})


@viewer_required
def cluster(request: HttpRequest) -> HttpResponse:
    found = capabilities.current()
    crds = [
        (kind.crd_name, kind.version, served)
        for kind, served in (
            (SANDBOX, found.sandboxes),
            (SANDBOX_TEMPLATE, found.templates),
            (SANDBOX_WARM_POOL, found.warm_pools),
            (SANDBOX_CLAIM, found.claims),
        )
    ]
    return render(
        request,
        "frontend/cluster.html",
        {
            "caps": found,
            "crds": crds,
            "heartbeats": heartbeat_list_recent(),
            "workspaces": workspaces.workspace_list_live(reach=reach_of(request.user)),
            "namespace": settings.CS_NAMESPACE,
            "allowed_namespaces": settings.CS_ALLOWED_NAMESPACES,
            "retention": [*allocations_kept(), *approvals_kept(), *audit_kept()],
        },
    )
