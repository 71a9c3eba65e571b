"""The suite's own PostgreSQL, restarted and stopped for real by the fault tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

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
