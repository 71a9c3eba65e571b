"""The change stream's cursor (selectors.allocation_changes): a resumed read gets every
change its cursor did not see, once, however long another transaction on the same server
stays open. Transaction ids are server-wide, so a test transaction in another database
(pytest-xdist's other worker) is such a transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from allocations import selectors
from allocations.models import Phase
from allocations.tests.factories import AllocationFactory
from contextsvc.core.teams import EVERY_TEAM

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def other() -> Iterator[Any]:
    """A second connection to the same server, with a transaction open."""
    other = connection.get_new_connection(connection.get_connection_params())
    other.autocommit = False
    try:
        yield other
    finally:
        other.rollback()
        other.close()


def changes(since: str | None) -> tuple[list[str], str]:
    found, cursor = selectors.allocation_changes(since=since, reach=EVERY_TEAM)
    return [allocation.name for allocation in found], cursor


def test_an_unchanged_row_is_not_read_again_while_an_older_transaction_stays_open(
    other: Any,
) -> None:
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id()")  # holds an id, as a test transaction does
    AllocationFactory.create(name="before", phase=Phase.READY)

    assert changes(None)[0] == ["before"]
    _, cursor = changes(None)
    assert changes(cursor)[0] == []

    AllocationFactory.create(name="after", phase=Phase.READY)
    names, later = changes(cursor)
    assert names == ["after"]
    assert changes(later)[0] == []


def test_a_write_in_flight_when_the_cursor_was_taken_comes_after_it_commits(other: Any) -> None:
    AllocationFactory.create(name="before", phase=Phase.READY, message="")
    with other.cursor() as cursor:
        cursor.execute("UPDATE allocations_allocation SET message = 'moved' WHERE name = 'before'")
    names, cursor_taken = changes(None)
    assert names == ["before"]  # as it was: the update is not committed
    assert changes(cursor_taken)[0] == []

    other.commit()
    found, _ = selectors.allocation_changes(since=cursor_taken, reach=EVERY_TEAM)
    assert [(allocation.name, allocation.message) for allocation in found] == [("before", "moved")]


@pytest.mark.parametrize(
    ("raw", "cursor"),
    [
        ("812", "812:812:"),  # an earlier stream's cursor: every id before 812 seen
        ("812:820:", "812:820:"),
        ("812:820:812,815", "812:820:812,815"),
        ("812:812:", "812:812:"),
    ],
)
def test_a_cursor_sent_back_is_read_as_a_snapshot(raw: str, cursor: str) -> None:
    assert selectors.change_cursor(raw) == cursor


@pytest.mark.parametrize(
    "raw",
    [
        "x1",
        "",
        "820:812:",  # xmin after xmax
        "812:820:821",  # an id past xmax
        "812:820:811",  # an id before xmin
        "812:820:815,813",  # not ascending
        "812:820:813,813",
        "0:0:",
        "812:820:,",
        "812:820",
        "1" * 20,
        "-1:2:",
    ],
)
def test_what_is_not_a_cursor_is_refused(raw: str) -> None:
    assert selectors.change_cursor(raw) is None
