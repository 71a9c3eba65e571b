from django.urls import path

from profiles import api

urlpatterns = [
    path("profiles", api.ProfileCollectionApi.as_view(), name="profiles"),
    path("profiles/<str:name>", api.ProfileDetailApi.as_view(), name="profile"),
    path(
        "profiles/<str:name>/settings.json",
        api.ProfileSettingsApi.as_view(),
        name="profile-settings",
    ),
    path(
        "profiles/<str:name>/sources.json", api.ProfileSourcesApi.as_view(), name="profile-sources"
    ),
    path("capabilities", api.CapabilitiesApi.as_view(), name="capabilities"),
]
