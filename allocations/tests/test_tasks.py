"""The reconcile task retries Kubernetes errors only when retrying can help, and only
until the reconcile deadline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.tasks import reconcile_allocation
from allocations.tests.factories import AllocationFactory
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import builtin_blueprint

pytestmark = pytest.mark.cluster


@pytest.fixture
def unreachable_api(tmp_path: Path, kube_cluster: Any) -> Iterator[None]:
    """Point this process's Kubernetes client at a closed loopback port."""
    import os

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "dead",
        "clusters": [
            {
                "name": "dead",
                "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
            }
        ],
        "users": [{"name": "dead", "user": {"token": "x"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "dead"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    previous = os.environ["KUBECONFIG"]
    os.environ["KUBECONFIG"] = str(path)
    kube.reset_api_client()
    yield
    os.environ["KUBECONFIG"] = previous
    kube.reset_api_client()


def _requested(namespace: str, age_seconds: float) -> Allocation:
    allocation = AllocationFactory.create(
        name="offline",
        namespace=namespace,
        blueprint=builtin_blueprint(image="busybox:1.36").to_json(),
    )
    Allocation.objects.filter(pk=allocation.pk).update(
        requested_at=timezone.now() - timedelta(seconds=age_seconds)
    )
    allocation.refresh_from_db()
    return allocation


@pytest.mark.django_db
@pytest.mark.usefixtures("unreachable_api")
def test_transient_errors_are_retried_within_the_deadline() -> None:
    allocation = _requested("team1", age_seconds=0)

    with pytest.raises(Retry):
        reconcile_allocation.run(allocation.pk)

    allocation.refresh_from_db()
    assert allocation.phase == Phase.REQUESTED
    assert allocation.reconcile_attempts == 1
    retry = allocation.events.get(kind=AllocationEvent.Kind.RETRY)
    assert retry.message.startswith("creating NetworkPolicy team1/offline-sandboxes: ")
    assert "Connection refused" in retry.message


@pytest.mark.django_db
@pytest.mark.usefixtures("unreachable_api")
def test_transient_errors_past_the_deadline_fail_the_allocation(settings: Any) -> None:
    allocation = _requested("team1", age_seconds=settings.CS_RECONCILE_DEADLINE_SECONDS + 1)

    assert reconcile_allocation.run(allocation.pk) == "failed"

    allocation.refresh_from_db()
    assert allocation.phase == Phase.FAILED
    assert allocation.reason == "DeadlineExceeded"
    assert allocation.message.startswith("creating NetworkPolicy team1/offline-sandboxes: ")
