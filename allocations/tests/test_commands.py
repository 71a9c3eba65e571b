"""``manage.py smoke`` on the live test cluster: every check passes for the hardened
defaults, and a relaxed profile is caught."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from allocations.models import Allocation, Phase
from profiles.services import profile_save

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]

CHECKS = [
    "PASS  allocation becomes ready",
    "PASS  one Pod carries the pool label",
    "PASS  runs as non-root",
    "PASS  read-only root filesystem",
    "PASS  no service-account token",
    "PASS  seccomp, capabilities, privilege escalation locked down",
    "PASS  workspace mounted at /workspace",
    "PASS  NetworkPolicy present",
    "PASS  release deletes everything",
]


def test_smoke_passes_for_the_built_in_runtime(namespace: str) -> None:
    out = StringIO()

    call_command("smoke", "--namespace", namespace, "--timeout", "60", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"allocated {namespace}/smoke-")
    assert lines[0].endswith("(built-in runtime)")
    assert lines[1:] == [*CHECKS, "all checks passed"]
    assert list(Allocation.objects.values_list("phase", flat=True)) == [Phase.RELEASED]


def test_smoke_catches_a_relaxed_profile(namespace: str) -> None:
    profile_save(
        name="loose",
        create=True,
        actor="user:test",
        values={
            "source": "builtin",
            "image": "busybox:1.36",
            "relaxations": ["writable-root-filesystem", "service-account-token"],
        },
    )
    out = StringIO()

    with pytest.raises(CommandError, match=r"^2 check\(s\) failed$"):
        call_command(
            "smoke", "--namespace", namespace, "--profile", "loose", "--timeout", "60", stdout=out
        )

    lines = out.getvalue().splitlines()
    assert (
        "FAIL  read-only root filesystem: container sandbox has a writable root filesystem" in lines
    )
    assert "FAIL  no service-account token: the service-account token is mounted" in lines
    assert "PASS  runs as non-root" in lines
    assert "PASS  release deletes everything" in lines
