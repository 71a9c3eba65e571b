"""Context Service: the Django project package.

The Celery app is imported here so that ``@shared_task`` binds to it whenever Django
starts (web, watcher, management commands), as Celery's Django guide recommends.
"""

from contextsvc.celery import app as celery_app

__all__ = ("celery_app",)
