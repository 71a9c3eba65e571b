"""``manage.py profile``: an agent type's profile from its settings.json and sources.json
files, as they are kept beside the agent's code (seed 001).

manage.py profile load python-data-agent --settings settings.json --sources sources.json
manage.py profile load python-data-agent --settings settings.json \\
    --context-workspace '/srv/agent-workspace/${CONTEXT_ID}'

A new profile runs on the built-in runtime (``--image``); an existing one keeps everything
but its rules, its sources and (when given) its context workspace. The files are checked
as the API checks them, and a refused one changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsvc.infra.errors import ServiceError
from profiles.models import SandboxProfile
from profiles.services import profile_save

ACTOR = "system:manage.py"


def _document(path: str, what: str) -> dict[str, Any]:
    try:
        loaded = json.loads(Path(path).read_text())
    except OSError as exc:
        raise CommandError(f"cannot read the {what} {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"the {what} {path} is not JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise CommandError(f"the {what} {path} must be a JSON object")
    return loaded


class Command(BaseCommand):
    help = "Load an agent type's profile from its settings.json and sources.json."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        load = sub.add_parser("load", help="create or update a profile from its files")
        load.add_argument("name")
        load.add_argument("--settings", required=True, help="its settings.json (the rules)")
        load.add_argument("--sources", help="its sources.json")
        load.add_argument(
            "--context-workspace",
            help="where its executor keeps contexts, ${CONTEXT_ID} included "
            "(instead of the settings.json's context_workspace)",
        )
        load.add_argument("--image", default=settings.CS_SANDBOX_IMAGE, help="for a new one")

    def handle(self, *args: Any, **options: Any) -> None:
        rules = _document(options["settings"], "settings.json")
        if options["context_workspace"]:
            rules["context_workspace"] = options["context_workspace"]
        values: dict[str, Any] = {"rules": rules}
        if options["sources"]:
            values["sources"] = _document(options["sources"], "sources.json")
        name = options["name"]
        create = not SandboxProfile.objects.filter(name=name).exists()
        if create:
            values.update(source="builtin", image=options["image"])
        try:
            profile_save(name=name, values=values, actor=ACTOR, create=create)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"profile {name} {'created' if create else 'updated'}")
