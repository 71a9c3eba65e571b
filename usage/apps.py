from django.apps import AppConfig


class UsageConfig(AppConfig):
    """What each team used: sandbox-seconds, storage GiB-hours and approvals decided, by
    hour, computed from the allocations' and requests' own lifecycles."""

    name = "usage"
    default_auto_field = "django.db.models.BigAutoField"
