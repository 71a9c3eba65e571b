"""Fixtures for fault tests: the suite's own PostgreSQL, to restart and stop for real."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from django.db import connection, connections

from contextsvc.devenv.services import Postgres


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


@pytest.fixture
def postgres(django_db_setup: None) -> SuitePostgres:
    server = Postgres()
    if not server.running() or int(connection.settings_dict["PORT"]) != server.port:
        pytest.skip(
            "the suite's database is not the project-local PostgreSQL this test can restart"
        )
    return SuitePostgres(server)
