"""The one place live events leave the service: channel-layer groups, after commit.

Browsers subscribe to groups (``allocations``, ``allocation.<id>``, ``approvals``,
``approval-page.<id>``, and a team's ``allocations.team-<id>`` and ``approvals.team-<id>``)
through the dashboard's WebSocket consumers; a change that rolls
back never announces anything.

Sending happens on one long-lived event loop per process, fed by a queue: the caller (a
request thread, a task, the watcher) never waits for Redis, the channel layer keeps its
Redis connections across sends (``async_to_sync`` per send would open new ones each
time), and events leave in the order they were committed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

ALLOCATIONS = "allocations"
APPROVALS = "approvals"


def team_group(group: str, team_id: int | None) -> str:
    """``group``'s events about one team's rows, which a person who reaches only that team
    listens to (``group`` itself carries every team's, for who sees every team). A row
    always has a team; were it None, the group would be one nobody listens to."""
    return f"{group}.team-{team_id}"


def allocation_group(allocation_id: int) -> str:
    return f"allocation.{allocation_id}"


def approval_page_group(request_id: object) -> str:
    """A request's own dashboard page (not the agents waiting on it: approvals/live.py)."""
    return f"approval-page.{request_id}"


Message = tuple[tuple[str, ...], dict[str, Any]]


class _Sender:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queue: asyncio.Queue[Message] | None = None

    def _start(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue[Message]]:
        # A forked child (a Celery worker process) must not reuse its parent's loop thread.
        with self.lock:
            if self.loop is None or self.queue is None or self.pid != os.getpid():
                loop = asyncio.new_event_loop()
                queue: asyncio.Queue[Message] = asyncio.Queue()
                threading.Thread(
                    target=self._run, args=(loop, queue), name="live-events", daemon=True
                ).start()
                self.loop, self.queue, self.pid = loop, queue, os.getpid()
            return self.loop, self.queue

    def _run(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Message]) -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._drain(queue))

    async def _drain(self, queue: asyncio.Queue[Message]) -> None:
        layer = get_channel_layer()
        while True:
            groups, event = await queue.get()
            if layer is None:
                continue
            for group in groups:
                # Once more after a failure: a connection pooled before Redis restarted
                # fails its first command, and the retry reconnects.
                for attempt in (1, 2):
                    try:
                        await layer.group_send(group, {"type": "live.event", "event": event})
                        break
                    except Exception:  # a lost live event must never stop the next ones
                        if attempt == 2:
                            logger.exception("could not publish %s to %s", event.get("type"), group)

    def send(self, groups: tuple[str, ...], event: dict[str, Any]) -> None:
        loop, queue = self._start()
        loop.call_soon_threadsafe(queue.put_nowait, (groups, event))


_sender = _Sender()


def publish(*groups: str, event_type: str, data: dict[str, Any]) -> None:
    """Announce ``event_type`` to ``groups`` once the current transaction commits."""
    event = {"type": event_type, "data": data}
    transaction.on_commit(lambda: _sender.send(groups, event))
