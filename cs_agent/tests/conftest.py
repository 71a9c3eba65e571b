"""The service side of the cs_agent tests: the real web process (the root conftest's
``web_server``) and the agent type whose rules judge what the client asks about."""

from __future__ import annotations

import pytest

from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory
from tests.support.agents import workspace_root

__all__ = ["workspace_root"]  # the fixture, for every cs_agent test


@pytest.fixture(autouse=True)
def data_agent(kube_cluster: object) -> SandboxProfile:
    # Nothing here decides `pip install`: it waits for a human.
    return SandboxProfileFactory.create(
        name="data-agent",
        rules={"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}},
    )
