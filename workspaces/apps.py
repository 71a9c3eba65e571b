from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Agent workspaces"

    def ready(self) -> None:
        from contextsvc.core.teams import storage_counter
        from contextsvc.infra import volumes
        from contextsvc.kube.objects.pvc import agent_workspace_key
        from workspaces.selectors import workspace_storage
        from workspaces.services import resync_workspaces, workspace_pvc_observed

        storage_counter(self.name, workspace_storage)
        volumes.registry.register(
            volumes.VolumeKind(
                name="agent-workspace",
                key=agent_workspace_key,
                record=workspace_pvc_observed,
                resync=resync_workspaces,
            )
        )
