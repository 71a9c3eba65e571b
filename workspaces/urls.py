from django.urls import path

from workspaces import api

urlpatterns = [
    path("agent-workspaces", api.WorkspaceCollectionApi.as_view(), name="agent-workspaces"),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>",
        api.WorkspaceDetailApi.as_view(),
        name="agent-workspace",
    ),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>/contexts",
        api.WorkspaceContextsApi.as_view(),
        name="agent-workspace-contexts",
    ),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>/usage",
        api.WorkspaceUsageApi.as_view(),
        name="agent-workspace-usage",
    ),
]
