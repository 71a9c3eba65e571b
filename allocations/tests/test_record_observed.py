"""The watcher skips the write of an observation that changes nothing, deciding from the row
it read (_changes_nothing). That shortcut must agree with the write it skips, on
every row and observation: checked against the real UPDATE in PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allocations.models import Allocation, AllocationEvent, Phase, Strategy
from allocations.observe import Observation, PoolObjects, Seen
from allocations.selectors import seen_of
from allocations.services.observed import (
    Recorded,
    _changes_nothing,
    allocation_observe,
    allocation_record_observed,
)
from allocations.tests.factories import AllocationFactory
from allocations.tests.test_observe import claim
from contextsvc.infra import events

REASONS = st.sampled_from(["", "Unschedulable", "ImagePullBackOff"])
MESSAGES = st.sampled_from(["", "0/4 nodes are available", "Back-off pulling image"])
PROBLEMS = st.one_of(st.none(), st.tuples(REASONS.filter(bool), MESSAGES))


@pytest.mark.django_db
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    phase=st.sampled_from([Phase.REQUESTED, Phase.PROVISIONING, Phase.READY]),
    replicas=st.integers(1, 3),
    ready_replicas=st.integers(0, 3),
    reason=REASONS,
    message=MESSAGES,
    ready=st.integers(0, 3),
    problem=PROBLEMS,
)
def test_the_skipped_write_is_exactly_the_write_that_changes_nothing(
    phase: str,
    replicas: int,
    ready_replicas: int,
    reason: str,
    message: str,
    ready: int,
    problem: tuple[str, str] | None,
) -> None:
    allocation = AllocationFactory.create(
        phase=phase,
        replicas=replicas,
        ready_replicas=ready_replicas,
        reason=reason,
        message=message,
    )
    seen = Seen(replicas=replicas, ready_replicas=ready_replicas, reason=reason, message=message)
    observation = Observation(ready=ready, problem=problem)
    before = AllocationEvent.objects.filter(allocation=allocation).count()

    skipped = _changes_nothing(phase, seen, observation)
    written = allocation_observe(allocation_id=allocation.pk, observation=observation)

    assert skipped is not written
    if skipped:
        row = Allocation.objects.get(pk=allocation.pk)
        assert (row.phase, row.ready_replicas, row.reason, row.message) == (
            phase,
            ready_replicas,
            reason,
            message,
        )
        assert AllocationEvent.objects.filter(allocation=allocation).count() == before


def test_a_failure_is_never_skipped() -> None:
    seen = Seen(replicas=1, ready_replicas=1, reason="", message="")
    failed = Observation(ready=1, failure=("PodFailed", "the Pod exited 1"))

    assert _changes_nothing(Phase.READY, seen, failed) is False


@pytest.mark.django_db
def test_a_scale_down_never_counts_more_ready_replicas_than_wanted() -> None:
    """Issue 32: scaling 3 → 1, the timeline said "3/1 replicas ready", then "2/1", while
    the Sandboxes past the new count waited for the prune."""
    allocation = AllocationFactory.create(phase=Phase.READY, replicas=1, ready_replicas=1)

    written = allocation_observe(
        allocation_id=allocation.pk, observation=Observation(ready=3, problem=None)
    )

    allocation.refresh_from_db()
    assert written is False
    assert (allocation.phase, allocation.ready_replicas) == (Phase.READY, 1)
    assert not AllocationEvent.objects.filter(allocation=allocation).exists()
    assert _changes_nothing(
        Phase.READY, Seen(replicas=1, ready_replicas=1, reason="", message=""),
        Observation(ready=3, problem=None),
    ) is True  # fmt: skip


@pytest.mark.django_db
def test_a_claim_bound_and_ready_in_one_event_is_one_change_announced_once(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """A caller waiting on ``?wait`` wakes at the first announcement; announced with its
    milestone first, it woke to a row not yet ready and waited for the second."""
    allocation = AllocationFactory.create(
        strategy=Strategy.WARMPOOL, warm_pool="warm", phase=Phase.PROVISIONING, replicas=1
    )
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(events._sender, "send", lambda groups, event: sent.append(event))
    bound_and_ready = PoolObjects(
        claims=[claim(f"{allocation.name}-0", ready="True", sandbox="w1")]
    )

    with django_capture_on_commit_callbacks(execute=True):
        recorded = allocation_record_observed(
            allocation_id=allocation.pk,
            phase=allocation.phase,
            strategy=allocation.strategy,
            requested_at=allocation.requested_at,
            pool=bound_and_ready,
            seen=seen_of(allocation),
        )

    allocation.refresh_from_db()
    assert recorded == Recorded.CHANGED
    assert (allocation.phase, allocation.ready_replicas, allocation.warm_claims) == (
        Phase.READY,
        1,
        1,
    )
    assert allocation.claims_bound_at is not None
    assert [(event["type"], event["data"]["phase"]) for event in sent] == [
        ("allocation.changed", "ready")
    ]
    assert list(
        AllocationEvent.objects.filter(allocation=allocation).values_list("kind", flat=True)
    ) == [AllocationEvent.Kind.CLAIMS_BOUND, AllocationEvent.Kind.READY]
