"""The sandbox on its own: no service, no cluster. The executor runs verdicts the tests
write (as the service would send them), so each probe gets the widest grant a command can
have — anywhere in its context, as a person-approved command the rules could not model."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def data_agent() -> None:
    """The parent directory's profile needs the service; nothing here asks it anything."""
