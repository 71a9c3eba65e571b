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
from allocations.models import ACTIVE_PHASES, Allocation
from allocations.observe import PoolKey
from allocations.resync import snapshot
from contexts.models import ContextResource


class Command(BaseCommand):
    help = "Adopt Kubernetes objects that carry Context Service labels but have no allocation."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report without writing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        known = set(
            Allocation.objects.filter(phase__in=ACTIVE_PHASES).values_list("namespace", "name")
        )
        known_contexts = set(
            ContextResource.objects.exclude(status=ContextResource.Status.DELETED).values_list(
                "namespace", "name"
            )
        )
        cluster = snapshot()
        results: list[tuple[PoolKey, Allocation | ContextResource | adoption.Orphan]] = [
            (key, adoption.adopt(key, pool, dry_run=dry_run))
            for key, pool in sorted(cluster.pools.items())
            if key not in known
        ] + [
            (key, adoption.adopt_context(key, pvc, dry_run=dry_run))
            for key, pvc in sorted(cluster.context_pvcs.items())
            if key not in known_contexts
        ]
        verb = "would adopt" if dry_run else "adopted"
        for (namespace, name), result in results:
            if isinstance(result, adoption.Orphan):
                self.stdout.write(f"orphan  {namespace}/{name}: {result.why}")
                for found in result.objects:
                    self.stdout.write(f"          {found}")
            elif isinstance(result, ContextResource):
                self.stdout.write(f"{verb} context {namespace}/{name}: {result.type}")
            else:
                self.stdout.write(
                    f"{verb} {namespace}/{name}: {result.strategy}, {result.replicas} replica(s)"
                )
        orphans = sum(isinstance(result, adoption.Orphan) for _, result in results)
        self.stdout.write(f"{len(results) - orphans} adopted, {orphans} orphan(s)")
