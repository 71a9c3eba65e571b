"""The one way work is queued and retried.

Services queue a task by name, after their transaction commits (outside a transaction
Django runs the callback at once), so a worker never reads a row that is not there yet and
services never import the tasks that call them: each app's ``queue.py`` names its tasks
and wraps :func:`after_commit`; its ``tasks.py`` registers them under those names and
only hands the id to a service.

A service that wants to be called again later raises :class:`RetryLater`; the task turns
it into Celery's retry (:func:`run`). How long a service keeps trying after trouble is its
:class:`Retry` policy: a number of attempts or a deadline, and no retry at all for a
permanent error (kopf's TemporaryError / PermanentError split)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from celery import Task, current_app
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from contextsvc.infra import locks

T = TypeVar("T")
logger = logging.getLogger(__name__)

# A busy lock means another worker is on the same object right now: look again soon.
LOCK_BUSY_COUNTDOWN = 1.0
MAX_BACKOFF = 30.0


class RetryLater(Exception):
    """The work is not finished and should run again in ``countdown`` seconds."""

    def __init__(self, countdown: float) -> None:
        super().__init__(f"retry in {countdown:g}s")
        self.countdown = countdown


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt + 1`` after a transient failure."""
    return float(min(2**attempt, MAX_BACKOFF))


@dataclass(frozen=True)
class Retry:
    """How long work that meets trouble keeps trying: at most ``attempts`` retries, or
    until ``deadline`` has passed since the work began; a permanent error is not retried
    at all. Every task that retries states its policy as one of these."""

    attempts: int | None = None
    deadline: timedelta | None = None

    def again(
        self, *, transient: bool, attempt: int, since: datetime | None = None
    ) -> RetryLater | None:
        """The retry to raise after failed attempt number ``attempt`` (0 for the first),
        or None: give up, and fail the object with the error."""
        if not transient:
            return None
        if self.attempts is not None and attempt >= self.attempts:
            return None
        if (
            self.deadline is not None
            and since is not None
            and timezone.now() >= since + self.deadline
        ):
            return None
        return RetryLater(backoff(attempt))


def after_commit(task_name: str, *args: Any, countdown: float = 0) -> None:
    transaction.on_commit(lambda: send(task_name, *args, countdown=countdown))


def send(task_name: str, *args: Any, countdown: float = 0) -> bool:
    """Queue a task now (to run ``countdown`` seconds from now). A broker that cannot be
    reached is not the caller's failure: the row that asks for the work is committed, and
    the periodic resync and housekeeping queue again whatever waits too long (so the
    request still answers, never a 500)."""
    try:
        current_app.send_task(task_name, args=args, countdown=countdown or None)
    except (OperationalError, OSError) as exc:
        logger.warning("could not queue %s%r (%s); the resync will", task_name, args, exc)
        return False
    return True


def run(
    task: Task,
    work: Callable[..., T],
    *args: Any,
    lock: tuple[int, int] | None = None,
) -> T:
    """Run a service for a task: under an advisory lock (kind, key) when given, so two
    workers on one object take turns; a busy lock or :class:`RetryLater` retries."""
    try:
        if lock is None:
            return work(*args)
        with locks.try_advisory_lock(*lock) as acquired:
            if not acquired:
                raise RetryLater(LOCK_BUSY_COUNTDOWN)
            return work(*args)
    except RetryLater as later:
        raise task.retry(countdown=later.countdown) from None
