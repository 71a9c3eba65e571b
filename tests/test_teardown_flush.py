"""The suite's own flush (tests/teardown/), which pytest-django runs after every test that
commits, while the watcher and the worker may still be writing."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection, connections

from tests.support import postgres
from tests.support.factories import UserFactory
from tests.support.processes import wait_until


@pytest.mark.django_db(transaction=True)
def test_the_flush_gives_way_to_a_writer_instead_of_deadlocking_with_it() -> None:
    """A writer holds the last table the flush truncates and then asks for the first: a
    TRUNCATE holding the first while waiting for the last is a deadlock, and PostgreSQL
    ends one of the two (Django's own flush failed this way). The suite's flush holds
    nothing while it waits, so the writer gets both and commits, and the flush then
    empties every table."""
    UserFactory.create(username="kept-until-flushed")
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    first, last = (connection.ops.quote_name(table) for table in (tables[0], tables[-1]))
    db = settings.DATABASES["default"]
    writer = postgres.connect()
    failures: list[BaseException] = []

    def flush() -> None:
        try:
            call_command("flush", interactive=False, verbosity=0)
        except BaseException as exc:  # noqa: BLE001 - reported to the test's thread
            failures.append(exc)
        finally:
            connections.close_all()

    flushing = threading.Thread(target=flush)
    try:
        writer.execute(f"LOCK TABLE {last} IN ROW EXCLUSIVE MODE")
        flushing.start()

        def flush_tried() -> bool:
            # The flush's session has asked for its locks (its last statement, waiting or
            # not). Read from the test's own connection: in the writer's transaction the
            # activity view would stay as its first read saw it.
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> %s"
                    " AND (query LIKE 'LOCK TABLE%%' OR query LIKE 'TRUNCATE%%')",
                    (db["NAME"], writer.info.backend_pid),
                )
                return bool(cursor.fetchone()[0])

        wait_until(flush_tried, timeout=30, message="the flush to ask for its locks")
        # What a writer's transaction does next: a table the flush would already hold.
        writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE")
        writer.commit()
    finally:
        writer.close()
        flushing.join(timeout=60)

    assert (flushing.is_alive(), failures) == (False, [])
    assert User.objects.count() == 0
