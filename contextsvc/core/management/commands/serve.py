"""``manage.py serve``: the ASGI web process (HTTP, REST API and WebSockets) under uvicorn."""

from __future__ import annotations

from typing import Any

import uvicorn
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Serve HTTP and WebSockets with uvicorn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT to listen on")
        parser.add_argument("--workers", type=int, default=1)
        parser.add_argument("--access-log", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        host, sep, port = str(options["bind"]).rpartition(":")
        if not sep or not port.isdigit():
            raise CommandError(f"--bind must be HOST:PORT, got {options['bind']!r}")
        uvicorn.run(
            "config.asgi:application",
            host=host.strip("[]"),
            port=int(port),
            workers=options["workers"],
            access_log=options["access_log"],
            proxy_headers=True,
            # Django handles lifespan itself; uvicorn's probe only logs a warning.
            lifespan="off",
            log_config=None,
        )
