from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Agent workspaces"

    def ready(self) -> None:
        from contextsvc.core.teams import storage_counter
        from workspaces.selectors import workspace_storage

        storage_counter(self.name, workspace_storage)
