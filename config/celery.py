"""The Celery application: ``celery -A config worker`` / ``celery -A config beat``."""

from __future__ import annotations

import os
import sys

from celery import Celery
from celery.signals import worker_ready
from django.conf import settings

from contextsvc.env import ConfigError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("contextsvc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _report_at_start(**kwargs: object) -> None:
    """Show a new worker on the dashboard at once, not at beat's next heartbeat."""
    # Imported here: this module is loaded before Django's apps (config/__init__.py).
    from contextsvc.core.models import ProcessHeartbeat
    from contextsvc.core.services import heartbeat_record

    heartbeat_record(kind=ProcessHeartbeat.Kind.WORKER)


def _fail_fast_on_bad_configuration() -> None:
    """Turn a configuration error into one line naming the variable, not a traceback."""
    try:
        settings.INSTALLED_APPS  # noqa: B018 - forces the settings module to load
    except ConfigError as exc:
        sys.exit(f"error: {exc}")


def _started_by_celery_command() -> bool:
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    from_module = main_spec is not None and main_spec.name.split(".")[0] == "celery"
    return from_module or os.path.basename(sys.argv[0]) == "celery"


# Only the celery command line needs this: Django processes validate settings themselves,
# and doing it on every import would recurse while the settings package is loading.
if _started_by_celery_command():
    _fail_fast_on_bad_configuration()
