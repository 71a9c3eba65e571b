"""The suite's own PostgreSQL, restarted and stopped for real by the fault tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections

from devenv.services import Postgres


class SuitePostgres:
    """The PostgreSQL instance this test run uses (the project-local one ``make test``
    starts), restarted or stopped as an operator or a crash would."""

    def __init__(self, server: Postgres) -> None:
        self.server = server

    def restart(self) -> None:
        self.server.restart()
        # This test process's own connection died with the restart.
        connections.close_all()

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        self.server.stop()
        try:
            yield
        finally:
            self.server.start()
            connections.close_all()


def connect(*, dbname: str | None = None, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A connection of the test's own to the suite's PostgreSQL, beside Django's: the test
    database, or ``dbname``."""
    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=dbname or db["NAME"],
        autocommit=autocommit,
    )
