from django.urls import path

from approvals import api

urlpatterns = [
    path("approvals", api.ApprovalCollectionApi.as_view(), name="approvals"),
    path("approvals/<str:request_id>", api.ApprovalDetailApi.as_view(), name="approval"),
    path(
        "approvals/<str:request_id>/decision",
        api.ApprovalDecisionApi.as_view(),
        name="approval-decide",
    ),
    path(
        "approvals/<str:request_id>/cancel", api.ApprovalCancelApi.as_view(), name="approval-cancel"
    ),
    path(
        "approvals/<str:request_id>/similar",
        api.ApprovalSimilarApi.as_view(),
        name="approval-similar",
    ),
    path("runs", api.RunCollectionApi.as_view(), name="runs"),
    path("runs/<str:run_id>", api.RunDetailApi.as_view(), name="run"),
    path("grants", api.GrantCollectionApi.as_view(), name="grants"),
    path("grants/<int:grant_id>", api.GrantDetailApi.as_view(), name="grant"),
]
