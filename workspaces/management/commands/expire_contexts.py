"""``manage.py expire_contexts [--dry-run]``: clean up workspace contexts past their TTL.

Beat does the same every minute (workspaces.tasks.housekeeping); this command
is for running it by hand, and ``--dry-run`` lists what would go without touching anything.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workspaces import services as workspaces


class Command(BaseCommand):
    help = "Start cleanup Jobs for workspace contexts whose TTL has passed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="only list what would go")

    def handle(self, *args: Any, **options: Any) -> None:
        due = workspaces.contexts_expire(dry_run=options["dry_run"])
        verb = "would clean up" if options["dry_run"] else "cleaning up"
        for context in due:
            self.stdout.write(
                f"{verb} {context.workspace}/{context.context_id} "
                f"(last used {context.last_accessed_at:%Y-%m-%d %H:%M} UTC, "
                f"{context.disk_usage_bytes} bytes)"
            )
        if not options["dry_run"]:
            finished = workspaces.cleanup_jobs_observe()
            self.stdout.write(f"{finished} earlier cleanup(s) finished")
        self.stdout.write(f"{len(due)} context(s) past their TTL")
