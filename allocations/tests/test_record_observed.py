"""The watcher skips the write of an observation that changes nothing, deciding from the row
it read (_changes_nothing). That shortcut must agree with the write it skips, on
every row and observation: checked against the real UPDATE in PostgreSQL."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.observe import Observation, Seen
from allocations.services.observed import _changes_nothing, allocation_observe
from allocations.tests.factories import AllocationFactory

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
