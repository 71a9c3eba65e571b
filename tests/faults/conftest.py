"""Fixtures for fault tests: the suite's own PostgreSQL, to restart and stop for real."""

from __future__ import annotations

import pytest
from django.db import connection

from devenv.services import Postgres
from tests.support.postgres import SuitePostgres


@pytest.fixture
def postgres(django_db_setup: None) -> SuitePostgres:
    server = Postgres()
    if not server.running() or int(connection.settings_dict["PORT"]) != server.port:
        pytest.skip(
            "the suite's database is not the project-local PostgreSQL this test can restart"
        )
    return SuitePostgres(server)
