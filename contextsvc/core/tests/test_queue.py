"""The one way work is queued (contextsvc/infra/queue.py): every name a service queues is a
registered task, and a task whose object is locked by another worker retries instead of
running beside it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery.exceptions import Retry
from django.conf import settings
from django.utils import timezone

from allocations import queue as allocation_queue
from approvals import queue as approval_queue
from config.celery import app
from contexts import queue as context_queue
from contextsvc.core import queue as core_queue
from contextsvc.infra import locks, queue
from profiles import queue as profile_queue
from tests.support import postgres
from usage import queue as usage_queue
from workspaces import queue as workspace_queue
from workspaces.tasks import expand_workspace
from workspaces.tests.factories import AgentWorkspaceFactory


def _names(module: object) -> set[str]:
    return {
        value
        for key, value in vars(module).items()
        if key.isupper() and isinstance(value, str) and "." in value
    }


def test_every_task_is_named_once_by_its_apps_constant_and_beat_names_only_those() -> None:
    app.loader.import_default_modules()
    registered = {name for name in app.tasks if not name.startswith("celery.")}
    named = (
        _names(allocation_queue)
        | _names(context_queue)
        | _names(workspace_queue)
        | _names(profile_queue)
        | _names(approval_queue)
        | _names(usage_queue)
        | _names(core_queue)
    )

    assert named == registered
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert beat == {
        core_queue.RECORD_HEARTBEAT,
        core_queue.REFRESH_CAPABILITIES,
        approval_queue.EXPIRE_DUE,
        approval_queue.ESCALATE_DUE,
        approval_queue.DELIVERIES_DUE,
        approval_queue.RETENTION,
        workspace_queue.HOUSEKEEPING,
        allocation_queue.RESYNC,
        allocation_queue.WARM_POOLS,
        allocation_queue.EXPIRE,
        allocation_queue.RETENTION,
        usage_queue.METER,
    }


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [queue.backoff(n) for n in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def countdowns(policy: queue.Retry, *, transient: bool = True, **since: Any) -> list[float | None]:
    """What the policy answers after each of the first six failed attempts."""
    answers = [policy.again(transient=transient, attempt=n, **since) for n in range(6)]
    return [answer.countdown if answer is not None else None for answer in answers]


def test_a_retry_policy_counts_attempts_or_a_deadline_and_never_retries_a_permanent_error() -> None:
    assert countdowns(queue.Retry(attempts=3)) == [1.0, 2.0, 4.0, None, None, None]
    assert countdowns(queue.Retry()) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert countdowns(queue.Retry(), transient=False) == [None] * 6
    deadline = queue.Retry(deadline=timedelta(minutes=5))
    assert countdowns(deadline, since=timezone.now() - timedelta(minutes=4)) == [
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        30.0,
    ]
    assert countdowns(deadline, since=timezone.now() - timedelta(minutes=6)) == [None] * 6


@pytest.mark.django_db(transaction=True)
def test_a_task_whose_object_is_locked_elsewhere_retries_and_changes_nothing() -> None:
    workspace = AgentWorkspaceFactory.create(usage_bytes=2**30)
    other = postgres.connect(autocommit=True)
    try:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (locks.WORKSPACE, workspace.pk))
        with pytest.raises(Retry):
            expand_workspace.run(workspace.pk)
    finally:
        other.close()

    workspace.refresh_from_db()
    assert (workspace.requested_bytes, workspace.expansion_note) == (2**30, "")
