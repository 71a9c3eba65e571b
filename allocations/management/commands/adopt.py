"""``manage.py adopt``: turn objects with our labels but no row into allocations and
named contexts.

Objects made by the earlier Go Context Service (or left by a crash) are inferred back into
allocations from the v1 names and annotations; what cannot be understood is listed as an
orphan. Nothing is deleted. ``--dry-run`` only reports.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from allocations import adoption
from allocations.models import ACTIVE_PHASES, Allocation, ContextResource
from allocations.resync import snapshot


class Command(BaseCommand):
    help = "Adopt Kubernetes objects that carry Context Service labels but have no allocation."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report without writing")

    def handle(self, *args: Any, **options: Any) -> None:
        known = set(
            Allocation.objects.filter(phase__in=ACTIVE_PHASES).values_list("namespace", "name")
        )
        cluster = snapshot()
        adopted = orphans = 0
        for key, pool in sorted(cluster.pools.items()):
            if key in known:
                continue
            result = adoption.adopt(key, pool, dry_run=options["dry_run"])
            if isinstance(result, adoption.Orphan):
                orphans += 1
                self.stdout.write(f"orphan  {key[0]}/{key[1]}: {result.why}")
                for name in result.objects:
                    self.stdout.write(f"          {name}")
            else:
                adopted += 1
                verb = "would adopt" if options["dry_run"] else "adopted"
                self.stdout.write(
                    f"{verb} {key[0]}/{key[1]}: {result.strategy}, {result.replicas} replica(s)"
                )
        known_contexts = set(
            ContextResource.objects.exclude(status=ContextResource.Status.DELETED).values_list(
                "namespace", "name"
            )
        )
        for key, pvc in sorted(cluster.context_pvcs.items()):
            if key in known_contexts:
                continue
            context = adoption.adopt_context(key, pvc, dry_run=options["dry_run"])
            if isinstance(context, adoption.Orphan):
                orphans += 1
                self.stdout.write(f"orphan  {key[0]}/{key[1]}: {context.why}")
            else:
                adopted += 1
                verb = "would adopt" if options["dry_run"] else "adopted"
                self.stdout.write(f"{verb} context {key[0]}/{key[1]}: {context.type}")
        self.stdout.write(f"{adopted} adopted, {orphans} orphan(s)")
