from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Cross-cutting pieces every app uses: audit log, API clients, process heartbeats."""

    name = "contextsvc.core"
    label = "core"
    verbose_name = "Context Service"

    def ready(self) -> None:
        # Registers the bearer-token scheme with drf-spectacular.
        from contextsvc.core import schema  # noqa: F401
