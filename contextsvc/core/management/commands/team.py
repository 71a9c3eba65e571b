"""``manage.py team``: teams, their quotas, and who belongs to them.

manage.py team create research --description "Research agents"
manage.py team quota research --live-sandboxes 40 --storage 500Gi --pending-approvals 20
manage.py team quota research --live-sandboxes none          # no limit
manage.py team namespaces research team-research team-shared  # where it may make objects
manage.py team namespaces research                           # anywhere managed again
manage.py team client research research-harness              # move an API client
manage.py team person research alice                         # move a person
manage.py team list
manage.py team delete research                               # only one that holds nothing
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsvc.core import services
from contextsvc.core.limits import LIMITS, NO_LIMIT, Limit, limits_shown
from contextsvc.core.models import ApiClient, Team

ACTOR = "system:manage.py"


def _limit(limit: Limit, text: str) -> int | None:
    flag = f"--{limit.name.replace('_', '-')}"
    if not text.strip():
        raise CommandError(f"{flag} needs a value: a limit, or {NO_LIMIT!r} to remove it")
    try:
        return limit.parse(text)
    except ValueError as exc:
        raise CommandError(f"{flag} {exc}") from None


def _team(name: str) -> Team:
    team = Team.objects.filter(name=name).first()
    if team is None:
        raise CommandError(f"no team named {name!r} (manage.py team create {name})")
    return team


class Command(BaseCommand):
    help = "Manage teams: their quotas, API clients and people."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a team (no limits until set)")
        create.add_argument("name")
        create.add_argument("--description", default="")
        quota = sub.add_parser("quota", help="set a team's limits ('none' removes one)")
        quota.add_argument("name")
        for limit in LIMITS:
            quota.add_argument(f"--{limit.name.replace('_', '-')}", dest=limit.name, default=None)
        where = sub.add_parser(
            "namespaces", help="the namespaces a team may make objects in (none: every one)"
        )
        where.add_argument("name")
        where.add_argument("namespaces", nargs="*")
        client = sub.add_parser("client", help="move an API client to a team")
        client.add_argument("name")
        client.add_argument("client")
        person = sub.add_parser("person", help="move a person to a team")
        person.add_argument("name")
        person.add_argument("username")
        sub.add_parser("list", help="list teams with their limits and members")
        delete = sub.add_parser("delete", help="delete a team that holds nothing and never did")
        delete.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "create":
                team = services.team_create(
                    name=options["name"], description=options["description"], actor=ACTOR
                )
                self.stdout.write(f"team {team.name!r} created (no limits)")
            elif action == "quota":
                limits = {
                    limit.field: _limit(limit, options[limit.name])
                    for limit in LIMITS
                    if options[limit.name] is not None
                }
                if not limits:
                    raise CommandError("name at least one limit to set")
                team = services.team_set_quotas(team=_team(options["name"]), actor=ACTOR, **limits)
                self.stdout.write(f"{team.name}: {limits_shown(team)}")
            elif action == "namespaces":
                team = services.team_set_namespaces(
                    team=_team(options["name"]), namespaces=options["namespaces"], actor=ACTOR
                )
                self.stdout.write(f"{team.name}: {_where(team)}")
            elif action == "client":
                found = ApiClient.objects.filter(name=options["client"]).first()
                if found is None:
                    raise CommandError(f"no API client named {options['client']!r}")
                services.api_client_set_team(client=found, team=_team(options["name"]), actor=ACTOR)
                self.stdout.write(f"API client {found.name!r} is in team {options['name']!r}")
            elif action == "delete":
                services.team_delete(team=_team(options["name"]), actor=ACTOR)
                self.stdout.write(f"team {options['name']!r} deleted")
            elif action == "person":
                user = User.objects.filter(username=options["username"]).first()
                if user is None:
                    raise CommandError(f"no person named {options['username']!r}")
                services.person_set_team(user=user, team=_team(options["name"]), actor=ACTOR)
                self.stdout.write(f"{user.username} is in team {options['name']!r}")
            else:
                for team in Team.objects.prefetch_related("api_clients", "members__user"):
                    clients = ", ".join(c.name for c in team.api_clients.all()) or "none"
                    people = ", ".join(m.user.username for m in team.members.all()) or "none"
                    self.stdout.write(f"{team.name}: {limits_shown(team)}")
                    if team.namespaces:
                        self.stdout.write(f"  {_where(team)}")
                    self.stdout.write(f"  API clients: {clients}")
                    self.stdout.write(f"  people: {people}")
        except ValidationError as exc:
            raise CommandError(services.validation_problems(exc)) from None


def _where(team: Team) -> str:
    if not team.namespaces:
        return "every managed namespace"
    return f"namespaces {', '.join(team.namespaces)}"
