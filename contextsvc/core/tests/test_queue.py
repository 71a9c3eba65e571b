"""The one way work is queued (contextsvc/core/queue.py): every name a service queues is a
registered task, and a task whose object is locked by another worker retries instead of
running beside it."""

from __future__ import annotations

import pytest
from celery.exceptions import Retry
from django.conf import settings

from allocations import queue as allocation_queue
from approvals import queue as approval_queue
from config.celery import app
from contexts import queue as context_queue
from contextsvc.core import locks, queue
from profiles import queue as profile_queue
from tests.support import postgres
from workspaces import queue as workspace_queue
from workspaces.tasks import expand_workspace
from workspaces.tests.factories import AgentWorkspaceFactory


def _names(module: object) -> set[str]:
    return {
        value
        for key, value in vars(module).items()
        if key.isupper() and isinstance(value, str) and "." in value
    }


def test_every_queued_name_is_a_registered_task_and_every_task_is_named_once() -> None:
    app.loader.import_default_modules()
    registered = {name for name in app.tasks if not name.startswith("celery.")}
    named = (
        _names(allocation_queue)
        | _names(context_queue)
        | _names(workspace_queue)
        | _names(profile_queue)
        | _names(approval_queue)
    )

    assert named <= registered
    # The rest are beat's own (heartbeats, capabilities), the approvals' expiry,
    # escalation, delivery sweep and retention, and the usage meter.
    assert sorted(registered - named) == [
        "approvals.tasks.deliveries_due",
        "approvals.tasks.escalate_due",
        "approvals.tasks.expire_due",
        "approvals.tasks.retention",
        "contextsvc.core.tasks.record_heartbeat",
        "contextsvc.core.tasks.refresh_capabilities",
        "usage.tasks.meter",
    ]
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert beat <= registered


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [queue.backoff(n) for n in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


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
