"""The Django admin shows agent workspaces and their contexts and changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.unchanged import kept
from workspaces.tests.factories import WorkspaceContextFactory

pytestmark = pytest.mark.django_db


def test_workspaces_and_contexts_are_listed_but_not_added_changed_or_deleted(
    admin_client: Client,
) -> None:
    context = WorkspaceContextFactory.create(context_id="ctx-listed")
    workspace = context.workspace

    workspaces = admin_client.get("/admin/workspaces/agentworkspace/")
    contexts = admin_client.get("/admin/workspaces/workspacecontext/")

    assert workspaces.status_code == 200
    assert workspace.agent_type in workspaces.content.decode()
    assert contexts.status_code == 200
    assert "ctx-listed" in contexts.content.decode()
    change = f"/admin/workspaces/agentworkspace/{workspace.pk}/change/"
    delete = f"/admin/workspaces/workspacecontext/{context.pk}/delete/"
    with kept():
        assert admin_client.get("/admin/workspaces/agentworkspace/add/").status_code == 403
        assert admin_client.post(change, {"agent_type": "renamed"}).status_code == 403
        assert admin_client.post(delete, {"post": "yes"}).status_code == 403
