from django.urls import path

from allocations import api

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
]
