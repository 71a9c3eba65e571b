from __future__ import annotations

from django.db import models


class ProcessHeartbeat(models.Model):
    """The last time a background process (worker, beat, watcher) proved it was alive.

    Rows are written by the processes themselves; the dashboard and ``/readyz`` read them
    to say which background processes are running, which is otherwise invisible.
    """

    class Kind(models.TextChoices):
        WORKER = "worker", "Celery worker"
        WATCHER = "watcher", "Watcher"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "hostname", "pid"], name="heartbeat_unique")
        ]
        ordering = ["kind", "hostname", "pid"]

    def __str__(self) -> str:
        return f"{self.kind} {self.hostname}:{self.pid}"
