"""The Teams page (admins): each team's limits beside what it holds, and who is in it;
make a team, set its limits, move an API client or a person into it. The same services as
``manage.py team``."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.selectors import team_use
from approvals.selectors import approvals_pending_count
from contextsvc.core import services
from contextsvc.core.limits import LIMITS, limits_shown
from contextsvc.core.models import DEFAULT_TEAM, ApiClient, Team
from contextsvc.quantity import format_bytes
from frontend.access import actor, admin_required
from frontend.forms import MoveForm, QuotaForm, TeamForm


def _row(team: Team) -> dict[str, Any]:
    use = team_use(team_id=team.pk)
    return {
        "team": team,
        "limits": limits_shown(team),
        "namespaces": ", ".join(team.namespaces) or "every managed namespace",
        "use": {
            "live allocations": use.allocations,
            "live sandboxes": use.sandboxes,
            "storage": format_bytes(use.storage),
            "pending approvals": approvals_pending_count(team_id=team.pk),
        },
        # One holding anything is refused, saying what (services.team_delete).
        "deletable": team.name != DEFAULT_TEAM,
        "form": QuotaForm(
            prefix=f"team-{team.pk}",
            initial={
                limit.name: "" if (value := limit.of(team)) is None else value for limit in LIMITS
            },
        ),
    }


@admin_required
def team_list(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_create(
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                actor=actor(request),
            )
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
        else:
            messages.success(request, f"Team {team.name} created, with no limits.")
            return redirect("frontend:teams")
    teams = Team.objects.prefetch_related("api_clients", "members__user")
    return render(
        request,
        "frontend/teams.html",
        {"rows": [_row(team) for team in teams], "form": form, "move": MoveForm()},
    )


@admin_required
@require_POST
def team_quotas(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    form = QuotaForm(request.POST, prefix=f"team-{team.pk}")
    limits = form.limits() if form.is_valid() else {}
    if form.errors:
        problems = "; ".join(
            f"{name}: {' '.join(str(error) for error in errors)}"
            for name, errors in form.errors.items()
        )
        messages.error(request, f"Limits of {team.name} not changed: {problems}")
    else:
        team = services.team_set_quotas(team=team, actor=actor(request), **limits)
        messages.success(request, f"{team.name}: {limits_shown(team)}.")
    return redirect("frontend:teams")


@admin_required
@require_POST
def team_delete(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    try:
        services.team_delete(team=team, actor=actor(request))
    except ValidationError as exc:
        messages.error(request, f"Team {team.name} not deleted: {' '.join(exc.messages)}")
    else:
        messages.success(request, f"Team {team.name} deleted.")
    return redirect("frontend:teams")


@admin_required
@require_POST
def team_move(request: HttpRequest) -> HttpResponse:
    form = MoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Name the member and the team.")
        return redirect("frontend:teams")
    data = form.cleaned_data
    team = Team.objects.filter(name=data["team"]).first()
    who = data["member"]
    if team is None:
        messages.error(request, f"No team named {data['team']}.")
    elif data["kind"] == "client":
        client = ApiClient.objects.filter(name=who).first()
        if client is None:
            messages.error(request, f"No API client named {who}.")
        else:
            services.api_client_set_team(client=client, team=team, actor=actor(request))
            messages.success(request, f"API client {who} is in team {team.name}.")
    else:
        user = User.objects.filter(username=who).first()
        if user is None:
            messages.error(request, f"No person named {who}.")
        else:
            services.person_set_team(user=user, team=team, actor=actor(request))
            messages.success(request, f"{who} is in team {team.name}.")
    return redirect("frontend:teams")
