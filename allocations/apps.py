from django.apps import AppConfig


class AllocationsConfig(AppConfig):
    name = "allocations"
    verbose_name = "Allocations"

    def ready(self) -> None:
        from allocations.selectors import allocation_storage
        from contextsvc.core.teams import storage_counter

        storage_counter(self.name, allocation_storage)
