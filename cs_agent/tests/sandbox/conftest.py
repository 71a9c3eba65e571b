"""The sandbox on its own: the executor runs verdicts the tests write (as the service would
send them), so each probe gets the widest grant a command can have — anywhere in its
context, as a person-approved command the rules could not model. Only the tests of the
agent's own file in a context (test_context_file.py) ask the service."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def data_agent() -> None:
    """The parent directory's profile needs the service; nothing here asks it anything."""
