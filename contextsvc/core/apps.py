from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    """Cross-cutting pieces every app uses: audit log, API clients, process heartbeats."""

    name = "contextsvc.core"
    label = "core"
    verbose_name = "Context Service"

    def ready(self) -> None:
        # Registers the token schemes with drf-spectacular; imported here because it
        # imports auth views, whose models can only load once the apps are.
        from contextsvc.infra import openapi  # noqa: F401

        post_migrate.connect(_create_role_groups, sender=self)
        post_migrate.connect(_create_default_team, sender=self)


def _create_role_groups(**kwargs: object) -> None:
    """The viewer, approver and admin groups exist in every database."""
    # Imported here: users imports auth models, which cannot load while apps.py does.
    from contextsvc.core.users import ensure_role_groups

    ensure_role_groups()


def _create_default_team(**kwargs: object) -> None:
    """The default team exists in every database (a test's flush removes it; migration
    0009 made it first)."""
    from contextsvc.core.models import default_team_pk

    default_team_pk()
