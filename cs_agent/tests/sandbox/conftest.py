"""The sandbox on its own: the executor runs verdicts the tests write (as the service would
send them), so each probe gets the widest grant a command can have — anywhere in its
context, as a person-approved command the rules could not model. Only the tests of the
agent's own file in a context (test_context_file.py) ask the service."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def data_agent() -> None:
    """The parent directory's profile needs the service; nothing here asks it anything."""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback port of the agent's (the test's) that no run was judged to reach: a probe
    that connects to it would show in ``accept``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    yield server
    server.close()
