"""Beat itself: the real ``celery beat`` with the service's schedule (django-celery-beat's
database scheduler) sends every scheduled task through the real broker to the real worker,
and each does its work — heartbeats, capability detection, approval expiry, escalation and
the delivery sweep, workspace housekeeping, the resync, warm pools and allocation expiry.
Beat runs only for this test: elsewhere in the suite each of these is called directly, and
a beat running throughout would expire, escalate and resync under every other test."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from allocations.models import Allocation, Phase
from allocations.requests import PoolRequest
from allocations.services.create import allocation_create
from allocations.tests.factories import AllocationFactory
from approvals import notifications
from approvals.models import ApprovalRequest, Delivery, Status
from approvals.tests.factories import ApprovalRequestFactory
from config.celery import app as celery_app
from contextsvc.core.models import AuditEntry, ClusterCapabilities, ProcessHeartbeat
from contextsvc.core.services import SERVICE_ACTOR
from contextsvc.core.users import ensure_role_groups, user_set_role
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import SANDBOX_WARM_POOL
from contextsvc.kube.objects.names import profile_warm_pool_name
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient
from tests.support.kube import wait_for_phase
from tests.support.processes import ManagedProcess, celery_argv, child_env, wait_until
from tests.support.receivers import HttpReceiver
from tests.support.workspaces import agent_client, ensure, platform_client, ready
from usage.models import UsageHour
from workspaces.models import WorkspaceContext

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def beat() -> Iterator[ManagedProcess]:
    process = ManagedProcess(
        "celery-beat", celery_argv("beat", "--loglevel=INFO"), child_env()
    ).start()
    try:
        yield process
    finally:
        process.stop()


def test_every_scheduled_task_runs_as_beat_schedules_it(
    namespace: str, webhook_receiver: HttpReceiver, request: pytest.FixtureRequest
) -> None:
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} == {
        "contextsvc.core.tasks.record_heartbeat",
        "contextsvc.core.tasks.refresh_capabilities",
        "approvals.tasks.expire_due",
        "approvals.tasks.escalate_due",
        "approvals.tasks.deliveries_due",
        "workspaces.tasks.housekeeping",
        "allocations.tasks.resync",
        "allocations.tasks.warm_pools",
        "allocations.tasks.expire",
        "allocations.tasks.retention",
        "approvals.tasks.retention",
        "usage.tasks.meter",
    }
    now = timezone.now()
    # Approvals: one past its deadline, one past its escalation time, one message not sent.
    ensure_role_groups()
    user_set_role(user=User.objects.create_user("carol", email="c@example.com"), role="approver",
                  actor="user:test")  # fmt: skip
    SandboxProfileFactory.create(
        name="data-agent",
        approval_policy={"escalateAfter": 0.5, "escalateTo": ["carol"], "email": "none"},
    )
    overdue = ApprovalRequestFactory.create(deadline=now - timedelta(seconds=1))
    # Retention: a request decided and an allocation released longer ago than the policy.
    long_decided = ApprovalRequestFactory.create(
        status=Status.DENIED,
        decided_at=now - timedelta(days=settings.CS_RETENTION_APPROVALS_DAYS + 1),
    )
    long_released = AllocationFactory.create(
        name="long-gone",
        namespace=namespace,
        phase=Phase.RELEASED,
        released_at=now - timedelta(days=settings.CS_RETENTION_RELEASED_DAYS + 1),
    )
    escalating = ApprovalRequestFactory.create(escalate_at=now - timedelta(seconds=1))
    channel, _ = notifications.channel_create(
        name="ops", kind="webhook", url=webhook_receiver.url, agent_types=["*"],
        events=["approval.created"], actor="user:test",
    )  # fmt: skip
    unsent = Delivery.objects.create(
        event="test", medium="webhook", channel=channel, target="ops", address="x",
        message={"body": {"event": "test"}}, next_attempt_at=now - timedelta(minutes=1),
    )  # fmt: skip
    # A workspace context long unused.
    ensure(platform_client(), namespace)
    ready(namespace)
    agent: ApiClient = agent_client()
    agent.post(f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": "old"})
    WorkspaceContext.objects.filter(context_id="old").update(
        last_accessed_at=now - timedelta(days=30), ttl_seconds=60
    )
    # A ready allocation the resync has not looked at, one about to expire, a profile whose
    # warm pool nobody has made yet.
    for name, expires in (("steady", None), ("brief", now + timedelta(seconds=3))):
        allocation_create(
            request=PoolRequest(name, 1, "dedicated", workspace_size="1Gi", workspace_access_mode="ReadWriteOnce",
                                namespace=namespace, expires_at=expires),
            actor="user:test",
        )  # fmt: skip
    wait_for_phase("steady", Phase.READY)
    assert Allocation.objects.get(name="steady").resync_fingerprint == ""
    SandboxProfileFactory.create(
        name="warm-agent", warm_pool_min=1, warm_pool_max=1, warm_pool_namespace=namespace
    )
    ProcessHeartbeat.objects.all().delete()
    ClusterCapabilities.objects.all().delete()
    # The schedule as a beat that last ran an hour ago left it (its own rows, written the
    # way it writes them): on start every task is due, instead of after its interval.
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        ModelEntry.from_entry(name, app=celery_app, **entry)
    PeriodicTask.objects.update(last_run_at=now - timedelta(hours=1))

    started = timezone.now()
    request.getfixturevalue("beat")

    def done() -> dict[str, bool]:
        capabilities = ClusterCapabilities.objects.filter(pk=1).first()
        return {
            "heartbeat": ProcessHeartbeat.objects.filter(kind="worker").exists(),
            "capabilities": capabilities is not None and capabilities.detected_at >= started,
            "expiry": ApprovalRequest.objects.get(pk=overdue.pk).status == Status.EXPIRED,
            "escalation": ApprovalRequest.objects.get(pk=escalating.pk).escalated_at is not None,
            "sweep": Delivery.objects.get(pk=unsent.pk).status == Delivery.Status.DELIVERED,
            "housekeeping": WorkspaceContext.objects.get(context_id="old").status
            == WorkspaceContext.Status.EXPIRING,
            "resync": Allocation.objects.get(name="steady").resync_fingerprint != "",
            "warm pools": kube.get_object(
                SANDBOX_WARM_POOL, namespace, profile_warm_pool_name("warm-agent")
            )
            is not None,
            "allocation expiry": Allocation.objects.get(name="brief").release_requested_at
            is not None,
            "allocation retention": not Allocation.objects.filter(pk=long_released.pk).exists(),
            "approval retention": not ApprovalRequest.objects.filter(pk=long_decided.pk).exists(),
            # The ready allocation's sandbox-seconds so far, in the current hour's row.
            "usage": UsageHour.objects.filter(sandbox_seconds__gt=0).exists(),
        }

    wait_until(lambda: all(done().values()), timeout=60, interval=0.5, message="every task")

    assert all(done().values())
    assert list(
        AuditEntry.objects.filter(
            action__in=["approval.expire", "approval.escalate", "context.expire",
                        "warmpool.create", "allocation.release", "allocation.retention",
                        "approval.retention"]
        ).order_by("action").values_list("actor", "action")
    ) == [
        ("system:expiry", "allocation.release"),
        (SERVICE_ACTOR, "allocation.retention"),
        ("system:approvals", "approval.escalate"),
        ("system:approvals", "approval.expire"),
        (SERVICE_ACTOR, "approval.retention"),
        ("system:workspaces", "context.expire"),
        ("system:warm-pools", "warmpool.create"),
    ]  # fmt: skip
