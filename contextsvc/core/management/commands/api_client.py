"""``manage.py api_client``: issue and revoke API tokens for named clients.

manage.py api_client create serverless-harness --scope allocations
manage.py api_client create weather-agent --scope agent --agent-type weather-service
manage.py api_client create research-harness --scope allocations --team research
manage.py api_client token serverless-harness          # another token for it
manage.py api_client revoke cs_AbCdEfG                 # by the prefix shown at issue
manage.py api_client list
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsvc.core import services
from contextsvc.core.models import DEFAULT_TEAM, ApiClient, ApiToken, Scope, Team

ACTOR = "system:manage.py"


class Command(BaseCommand):
    help = "Manage API clients and their bearer tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a client and issue its first token")
        create.add_argument("name")
        create.add_argument(
            "--scope", action="append", dest="scopes", choices=Scope.values, required=True
        )
        create.add_argument(
            "--agent-type",
            action="append",
            dest="agent_types",
            default=[],
            help="for the agent scope: an agent type it may act for (repeat; '*' for any)",
        )
        create.add_argument("--description", default="")
        create.add_argument(
            "--team", default="", help="the team it belongs to (manage.py team; default: default)"
        )
        token = sub.add_parser("token", help="issue another token for a client")
        token.add_argument("name")
        revoke = sub.add_parser("revoke", help="revoke a token by its prefix")
        revoke.add_argument("prefix")
        sub.add_parser("list", help="list clients and their tokens")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            team = None
            if options["team"]:
                team = Team.objects.filter(name=options["team"]).first()
                if team is None:
                    raise CommandError(f"no team named {options['team']!r} (manage.py team create)")
            try:
                client = services.api_client_create(
                    name=options["name"],
                    scopes=options["scopes"],
                    agent_types=options["agent_types"],
                    description=options["description"],
                    actor=ACTOR,
                    team=team,
                )
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
            self._issue(client)
        elif action == "token":
            existing = ApiClient.objects.filter(name=options["name"]).first()
            if existing is None:
                raise CommandError(f"no API client named {options['name']!r}")
            self._issue(existing)
        elif action == "revoke":
            matches = list(ApiToken.objects.filter(prefix=options["prefix"]))
            if len(matches) != 1:
                raise CommandError(f"{len(matches)} tokens have the prefix {options['prefix']!r}")
            services.api_token_revoke(token=matches[0], actor=ACTOR)
            self.stdout.write(f"revoked {matches[0].prefix}… of {matches[0].client.name}")
        else:
            for client in ApiClient.objects.select_related("team").prefetch_related("tokens"):
                state = "active" if client.is_active else "disabled"
                agents = (
                    f" agent types: {', '.join(client.agent_types)}" if client.agent_types else ""
                )
                member = f" team: {client.team.name}" if client.team.name != DEFAULT_TEAM else ""
                self.stdout.write(
                    f"{client.name} ({state}) scopes: {', '.join(client.scopes)}{agents}{member}"
                )
                for token in client.tokens.all():
                    status = "revoked" if token.revoked_at else "active"
                    self.stdout.write(
                        f"  {token.prefix}…  {status}  created {token.created_at:%F %T}"
                    )

    def _issue(self, client: ApiClient) -> None:
        _, raw = services.api_token_issue(client=client, actor=ACTOR)
        self.stdout.write(f"API client {client.name!r} (scopes: {', '.join(client.scopes)})")
        self.stdout.write(f"token: {raw}")
        self.stdout.write("Store it now: it is not shown again. Callers send it as")
        self.stdout.write("  Authorization: Bearer <token>   (contextctl reads $CS_TOKEN)")
