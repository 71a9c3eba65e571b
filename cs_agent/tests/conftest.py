"""The service side of the cs_agent tests: the real web process (the root conftest's
``web_server``) and the agent type whose rules judge what the client asks about."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory


@pytest.fixture(autouse=True)
def data_agent(kube_cluster: object) -> SandboxProfile:
    # Nothing here decides `pip install`: it waits for a human.
    return SandboxProfileFactory.create(
        name="data-agent",
        rules={"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}},
    )


@pytest.fixture
def workspace_root() -> Iterator[Path]:
    """The agent's /workspace for one test. Not under /tmp: the sandbox mounts a /tmp of
    its own over it (and the executor refuses a workspace there)."""
    root = Path(tempfile.mkdtemp(prefix="cs-workspace-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)
