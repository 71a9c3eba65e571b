from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Named contexts"

    def ready(self) -> None:
        from contexts.resync import resync_contexts
        from contexts.selectors import context_storage
        from contexts.services import VOLUME_KIND, context_pvc_observed
        from contextsvc.core.teams import storage_counter
        from contextsvc.infra import volumes
        from contextsvc.kube.objects.pvc import context_key

        storage_counter(self.name, context_storage)
        volumes.registry.register(
            volumes.VolumeKind(
                name=VOLUME_KIND,
                key=context_key,
                record=context_pvc_observed,
                resync=resync_contexts,
            )
        )
