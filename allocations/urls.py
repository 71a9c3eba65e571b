from django.urls import path

from allocations import api

urlpatterns = [
    path("sandbox-pools", api.SandboxPoolCollectionApi.as_view(), name="sandbox-pools"),
    path("sandbox-pools/<str:name>", api.SandboxPoolDetailApi.as_view(), name="sandbox-pool"),
    path(
        "sandbox-pools/<str:name>/suspend",
        api.SandboxPoolSuspendApi.as_view(),
        name="sandbox-pool-suspend",
    ),
    path(
        "sandbox-pools/<str:name>/resume",
        api.SandboxPoolResumeApi.as_view(),
        name="sandbox-pool-resume",
    ),
]
