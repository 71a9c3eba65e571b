#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    if sys.argv[1:2] == ["serve"]:
        # Under ASGI every request may run on another thread, so persistent connections are
        # not reused; the web process pools them instead (CS_DB_POOL=false turns it off).
        os.environ.setdefault("CS_DB_POOL", "true")
    # Django's own manage.py template imports here, after choosing the settings module.
    from django.conf import settings
    from django.core.management import execute_from_command_line

    from contextsvc.env import ConfigError

    try:
        settings.INSTALLED_APPS  # noqa: B018 - load settings now to report errors in one line
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
