from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Named contexts"
