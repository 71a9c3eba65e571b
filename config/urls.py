from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from config import metrics
from contextsvc import health
from contextsvc.infra.openapi import ApiDocsView

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("v1/", include("allocations.urls")),
    path("v1/", include("contexts.urls")),
    path("v1/", include("workspaces.urls")),
    path("v1/", include("profiles.urls")),
    path("v1/", include("approvals.urls")),
    path("admin/", admin.site.urls),
    path("", include("frontend.urls")),
]

handler400 = "contextsvc.errorviews.bad_request"
handler404 = "contextsvc.errorviews.not_found"
handler500 = "contextsvc.errorviews.internal_error"
