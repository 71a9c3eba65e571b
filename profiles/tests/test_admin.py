"""The Django admin validates profiles like the API does and records who changed them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextsvc.core.models import AuditEntry
from profiles.models import SandboxProfile
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]


@pytest.fixture
def admin_client(kube_cluster: object) -> Client:
    user = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


def form(**overrides: str) -> dict[str, str]:
    data = {
        "name": "admin-made",
        "description": "",
        "enabled": "on",
        "source": "builtin",
        "image": "busybox:1.36",
        "command": "[]",
        "args": "[]",
        "env": "[]",
        "resources": "{}",
        "pod_labels": "{}",
        "volumes": "[]",
        "volume_mounts": "[]",
        "template_namespace": "",
        "template_name": "",
        "isolation": "default",
        "executor_isolation": "namespaces",
        "relaxations": "[]",
        "egress": "[]",
        "ingress": "[]",
        "rules": "{}",
        "sources": "{}",
    }
    data.update(overrides)
    return data


def test_admin_refuses_a_profile_that_mounts_the_workspace(admin_client: Client) -> None:
    with kept():
        response = admin_client.post(
            "/admin/profiles/sandboxprofile/add/",
            form(
                volumes='[{"name": "data", "emptyDir": {}}]',
                volume_mounts='[{"name": "data", "mountPath": "/workspace"}]',
            ),
        )

    assert response.status_code == 200
    assert "where the allocation&#x27;s workspace goes" in response.content.decode()


def test_admin_saves_through_the_service(admin_client: Client) -> None:
    response = admin_client.post("/admin/profiles/sandboxprofile/add/", form())

    assert response.status_code == 302
    profile = SandboxProfile.objects.get()
    assert (profile.name, profile.image, profile.updated_by) == (
        "admin-made",
        "busybox:1.36",
        "user:root",
    )
    assert (
        AuditEntry.objects.filter(
            action="profile.create", actor="user:root", target="admin-made"
        ).count()
        == 1
    )
