from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from frontend.views import (
    admin_pages,
    allocations,
    analytics,
    approvals,
    notifications,
    overview,
    profiles,
    teams,
    usage,
)

app_name = "frontend"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("allocations/", allocations.allocation_list, name="allocations"),
    path("allocations/rows/", allocations.allocation_rows, name="allocation-rows"),
    path("allocations/new/", allocations.allocation_create, name="allocation-new"),
    path("allocations/<int:allocation_id>/", allocations.allocation_detail, name="allocation"),
    path(
        "allocations/<int:allocation_id>/objects/",
        allocations.allocation_objects,
        name="allocation-objects",
    ),
    path(
        "allocations/<int:allocation_id>/timeline/",
        allocations.allocation_timeline,
        name="allocation-timeline",
    ),
    path(
        "allocations/<int:allocation_id>/release/",
        allocations.allocation_release,
        name="allocation-release",
    ),
    re_path(
        r"^allocations/(?P<allocation_id>[0-9]+)/(?P<action>suspend|resume|scale|extend)/$",
        allocations.allocation_lifecycle,
        name="allocation-lifecycle",
    ),
    path("approvals/", approvals.approval_queue, name="approvals"),
    path("approvals/analytics/", analytics.approval_analytics, name="approval-analytics"),
    path("notifications/", notifications.channel_list, name="notifications"),
    re_path(
        r"^notifications/(?P<channel_id>[0-9]+)/(?P<action>enable|disable|rotate|delete|test)/$",
        notifications.channel_action,
        name="channel-action",
    ),
    path("approvals/<str:request_id>/", approvals.approval_detail, name="approval"),
    path("approvals/<str:request_id>/body/", approvals.approval_detail_body, name="approval-body"),
    path("approvals/<str:request_id>/decide/", approvals.approval_decide, name="approval-decide"),
    path(
        "approvals/<str:request_id>/similar/", approvals.approval_similar, name="approval-similar"
    ),
    path(
        "approvals/<str:request_id>/edit-check/",
        approvals.approval_edit_check,
        name="approval-edit-check",
    ),
    path(
        "approvals/<str:request_id>/link/<str:token>/",
        approvals.approval_link,
        name="approval-link",
    ),
    path("grants/<int:grant_id>/revoke/", approvals.grant_revoke, name="grant-revoke"),
    path("profiles/", profiles.profile_list, name="profiles"),
    path("profiles/new/", profiles.profile_edit, name="profile-new"),
    path("profiles/<str:name>/", profiles.profile_detail, name="profile"),
    path("profiles/<str:name>/edit/", profiles.profile_edit, name="profile-edit"),
    path(
        "profiles/<str:name>/<str:document>.json",
        profiles.profile_document,
        name="profile-document",
    ),
    path(
        "profiles/<str:name>/<str:document>/import/",
        profiles.profile_document_import,
        name="profile-import",
    ),
    path("clients/", admin_pages.client_list, name="clients"),
    path("clients/<int:client_id>/token/", admin_pages.client_token, name="client-token"),
    path("tokens/<int:token_id>/revoke/", admin_pages.token_revoke, name="token-revoke"),
    path("users/", admin_pages.user_list, name="users"),
    path("teams/", teams.team_list, name="teams"),
    path("usage/", usage.usage_page, name="usage"),
    path("usage.csv", usage.usage_csv, name="usage-csv"),
    path("teams/<int:team_id>/quotas/", teams.team_quotas, name="team-quotas"),
    path("teams/<int:team_id>/delete/", teams.team_delete, name="team-delete"),
    path("teams/move/", teams.team_move, name="team-move"),
    path("users/<int:user_id>/role/", admin_pages.user_role_change, name="user-role"),
    path("users/<int:user_id>/active/", admin_pages.user_active, name="user-active"),
    path("users/<int:user_id>/email/", admin_pages.user_email, name="user-email"),
    path("audit/", admin_pages.audit_log, name="audit"),
    path("cluster/", admin_pages.cluster, name="cluster"),
]
