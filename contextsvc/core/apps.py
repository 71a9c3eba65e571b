from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Cross-cutting pieces every app uses: audit log, API clients, process heartbeats."""

    name = "contextsvc.core"
    label = "core"
    verbose_name = "Context Service"

    def ready(self) -> None:
        # Imports of models and of modules that use them wait until the apps are loaded.
        from django.db.models.signals import post_migrate

        # Registers the token schemes with drf-spectacular.
        from contextsvc.core import openapi  # noqa: F401

        post_migrate.connect(_create_role_groups, sender=self)


def _create_role_groups(**kwargs: object) -> None:
    """The viewer, approver and admin groups exist in every database."""
    from contextsvc.core.users import ensure_role_groups

    ensure_role_groups()
