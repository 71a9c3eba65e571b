"""Django's ``flush`` (what pytest-django runs after every test that commits), taking the
locks of every table at once before it truncates them.

The suite's watcher and worker keep writing while a test's namespace is deleted under
them (its Pods go, the pool's readiness drops). TRUNCATE locks its tables one after the
other: holding some, it waited for a table the watcher's transaction held while that
transaction waited for one the TRUNCATE held, and PostgreSQL ended the flush as the
deadlock's victim (the next test then found the last one's rows). Asking for every lock
without waiting (NOWAIT), and asking again a moment later when one is taken, never holds a
lock while it waits: the writers finish their short transactions, the flush gets them all,
and what they write afterwards finds its allocation gone."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.commands import flush
from django.db import OperationalError, connections, transaction

# The sqlstate of "could not obtain lock" (NOWAIT).
LOCK_NOT_AVAILABLE = "55P03"
# A writer's transactions take milliseconds; this only bounds a flush that never gets in.
LOCKS_WAIT_SECONDS = 60.0


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        tables = connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        statement = (
            f"LOCK TABLE {', '.join(connection.ops.quote_name(t) for t in tables)} "
            "IN ACCESS EXCLUSIVE MODE NOWAIT"
        )
        deadline = time.monotonic() + LOCKS_WAIT_SECONDS
        while True:
            try:
                with transaction.atomic(using=database):
                    with connection.cursor() as cursor:
                        cursor.execute(statement)
                    super().handle(**options)
                return
            except OperationalError as exc:
                taken = getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE
                if not taken or time.monotonic() > deadline:
                    raise
            time.sleep(0.05)
