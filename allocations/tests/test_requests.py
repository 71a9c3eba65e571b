"""A pool request's attributes are the allocation's columns and the manifests' spec, by
name: the copies between them (``allocation_create``, ``provisioning.pool_spec``) are by
name, so a misnamed attribute must fail here rather than be dropped on the way."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from allocations.models import Allocation
from allocations.provisioning import pool_spec
from allocations.requests import PoolRequest
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.sandbox import expiry_backstop

COLUMNS = {item.name for item in Allocation._meta.get_fields() if hasattr(item, "column")}


def test_every_attribute_of_a_request_is_a_column_of_the_allocation() -> None:
    request = PoolRequest("a", 2, "dedicated", workspace_size="1Gi")
    assert set(request.columns()) <= COLUMNS
    assert "shutdown_time" not in request.columns()
    # What the request has beyond the manifests' spec is what only the service keeps.
    own = {item.name for item in fields(PoolRequest)} - {item.name for item in fields(PoolSpec)}
    assert own == {"profile_name", "expires_at", "artifacts_retain"}


def test_a_request_reaches_the_manifests_spec_unchanged_through_its_row() -> None:
    expires = datetime(2026, 12, 24, 18, 0, tzinfo=UTC)
    request = PoolRequest(
        "a",
        2,
        "shared",
        namespace="team-a",
        workspace_size="5Gi",
        workspace_access_mode="ReadWriteMany",
        workspace_storage_class="fast",
        profile_name="data",
        expires_at=expires,
        artifacts_size="1Gi",
        artifacts_access_mode="ReadWriteMany",
        artifacts_retain=True,
    )
    # Not saved (the copy is by name only); a team given, so no default is looked up.
    row = Allocation(**request.columns(), team_id=1)
    spec = pool_spec(row)
    assert spec == PoolSpec(
        name="a",
        replicas=2,
        strategy="shared",
        namespace="team-a",
        workspace_size="5Gi",
        workspace_access_mode="ReadWriteMany",
        workspace_storage_class="fast",
        artifacts_size="1Gi",
        artifacts_access_mode="ReadWriteMany",
        shutdown_time=expiry_backstop(expires),
    )
    assert (row.profile_name, row.expires_at, row.artifacts_retain) == ("data", expires, True)
