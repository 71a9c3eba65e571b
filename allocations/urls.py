from django.urls import path

from allocations import api, workspace_api

urlpatterns = [
    path("sandbox-pools", api.SandboxPoolCollectionApi.as_view(), name="sandbox-pools"),
    path("sandbox-pools/<str:name>", api.SandboxPoolDetailApi.as_view(), name="sandbox-pool"),
    path("contexts", api.ContextCreateApi.as_view(), name="contexts-create"),
    path(
        "namespaces/<str:namespace>/contexts",
        api.ContextCollectionApi.as_view(),
        name="contexts",
    ),
    path(
        "namespaces/<str:namespace>/contexts/<str:name>",
        api.ContextDetailApi.as_view(),
        name="context",
    ),
    path(
        "agent-workspaces", workspace_api.WorkspaceCollectionApi.as_view(), name="agent-workspaces"
    ),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>",
        workspace_api.WorkspaceDetailApi.as_view(),
        name="agent-workspace",
    ),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>/contexts",
        workspace_api.WorkspaceContextsApi.as_view(),
        name="agent-workspace-contexts",
    ),
    path(
        "agent-workspaces/<str:namespace>/<str:agent_type>/usage",
        workspace_api.WorkspaceUsageApi.as_view(),
        name="agent-workspace-usage",
    ),
]
