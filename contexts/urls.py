from django.urls import path

from contexts import api

urlpatterns = [
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
