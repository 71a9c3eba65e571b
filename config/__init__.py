"""The wiring at the top of the house: settings, URLs, the ASGI and Celery applications and
the registry of the apps' metrics collectors. Nothing below imports it (.importlinter).

The Celery app is imported here so that ``@shared_task`` binds to it whenever Django
starts (web, watcher, management commands), as Celery's Django guide recommends.
"""

from config.celery import app as celery_app

__all__ = ("celery_app",)
