"""``manage.py watch``: the watcher process (one active instance; others stand by)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from django.core.management.base import BaseCommand

from allocations import watcher


class Command(BaseCommand):
    help = "List and watch managed Kubernetes objects and record their observed state."

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: stop.set())
        sys.exit(watcher.run(stop))
