"""approvals/risk.py: what a waiting operation touches in its sandbox's topology, as the
reviewer's card says it (the level is the rule engine's, rules/tests/test_risk.py)."""

from __future__ import annotations

from typing import Any

import pytest

from allocations.models import Phase, Strategy
from allocations.tests.factories import AllocationFactory
from approvals.models import ApprovalRequest
from approvals.services.check import approval_check
from workspaces.tests.factories import AgentWorkspaceFactory, WorkspaceContextFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("data_agent")]


def notes_of(operation: dict[str, str], **where: Any) -> tuple[str, list[str]]:
    result = approval_check(
        operation=operation,
        context_id="ctx-1",
        agent_type="data-agent",
        actor="api:agent-1",
        **where,
    )
    assert result.request is not None
    stored = ApprovalRequest.objects.get(pk=result.request.pk)
    return stored.risk, stored.risk_notes


def shell(command: str) -> dict[str, str]:
    return {"kind": "shell", "command": command}


def test_a_write_in_a_shared_workspace_names_how_many_sandboxes_mount_it() -> None:
    AllocationFactory.create(name="pool-a", replicas=3, strategy=Strategy.SHARED, phase=Phase.READY)

    assert notes_of(shell("echo hi > out.txt"), allocation="pool-a", namespace="default") == (
        "medium",
        ["writes to the shared ReadWriteMany workspace of pool pool-a, mounted by 3 sandboxes"],
    )
    # Without a write it can see, it still says where the command runs.
    assert notes_of(shell("make build"), allocation="pool-a") == (
        "medium",
        ["runs in pool pool-a, whose workspace is one volume mounted by 3 sandboxes"],
    )


def test_a_caller_owned_pvc_is_named_and_a_read_only_one_says_writes_fail() -> None:
    AllocationFactory.create(
        name="pool-rw", replicas=2, strategy=Strategy.EXISTING, claim_name="team-data",
        read_only=False, phase=Phase.READY,
    )  # fmt: skip
    AllocationFactory.create(
        name="pool-ro", replicas=1, strategy=Strategy.EXISTING, claim_name="ref-data",
        read_only=True, phase=Phase.READY,
    )  # fmt: skip

    assert notes_of(shell("echo hi > out.txt"), allocation="pool-rw")[1] == [
        "targets the caller-owned PVC team-data, mounted read-write by 2 sandboxes (it "
        "outlives the allocation)"
    ]
    assert notes_of(shell("echo hi > out.txt"), allocation="pool-ro")[1] == [
        "targets the caller-owned PVC ref-data, mounted read-only by 1 sandbox: writes to "
        "/workspace fail"
    ]


def test_writes_outside_the_context_and_hosts_are_noted_first() -> None:
    AllocationFactory.create(
        name="pool-d", replicas=2, strategy=Strategy.DEDICATED, phase=Phase.READY
    )

    assert notes_of(shell("cp a.txt /tmp/b.txt && echo x > c.txt"), allocation="pool-d") == (
        "high",
        [
            "writes outside the context's directory: /tmp/b.txt",
            "writes to this sandbox's own ReadWriteOnce workspace (pool pool-d has one per "
            "sandbox, 2 sandboxes)",
        ],
    )
    assert notes_of({"kind": "network", "host": "pypi.org"}) == (
        "high",
        ["reaches pypi.org over the network"],
    )


def test_retained_artifacts_and_the_agent_types_shared_volume() -> None:
    AllocationFactory.create(
        name="pool-b", replicas=1, strategy=Strategy.SHARED, artifacts_size="1Gi",
        artifacts_retain=True, phase=Phase.READY,
    )  # fmt: skip
    shared = AgentWorkspaceFactory.create(agent_type="data-agent", namespace="default")
    WorkspaceContextFactory.create_batch(2, workspace=shared)

    assert notes_of(
        shell("echo x > /artifacts/report.txt && echo y > notes.txt"), allocation="pool-b"
    )[1] == [
        "writes to the shared ReadWriteMany workspace of pool pool-b, mounted by 1 sandbox",
        "writes to /artifacts (kept after release as context pool-b-artifacts)",
        "writes to the context's directory on the agent type's shared ReadWriteMany volume "
        f"{shared.pvc_name} (2 active contexts)",
    ]


def test_an_allocation_the_service_does_not_hold_is_said_so() -> None:
    AllocationFactory.create(name="pool-old", phase=Phase.RELEASED)
    AllocationFactory.create(name="pool-elsewhere", namespace="team-b", phase=Phase.READY)

    for name, namespace in (("pool-old", ""), ("ghost", ""), ("pool-elsewhere", "default")):
        assert notes_of(shell("pip install x"), allocation=name, namespace=namespace)[1] == [
            f'names allocation "{name}", which is not an active allocation of this service'
        ]
