from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Named contexts"

    def ready(self) -> None:
        from contexts.selectors import context_storage
        from contextsvc.core.teams import storage_counter

        storage_counter(self.name, context_storage)
