"""Readiness pushed instead of polled: two async consumers that hold no thread while they
wait (approvals/consumers.py is the model).

``GET /v1/sandbox-pools/{name}?wait=N``
    Answers as soon as the pool as GET shows it changes (status, ready replicas, message),
    or when ``N`` seconds (at most 60) pass; at once when it is already ``ready`` or
    ``failed`` (nothing more to wait for). The body is exactly GET's.

``GET /v1/sandbox-pools?watch=1[&since=CURSOR][&namespace=NS]``
    A stream of JSON lines (``application/x-ndjson``). Without ``since``: every live pool
    (``{"type": "upsert", "pool": {…}}``), then changes as they happen; a pool that is
    released (or releasing: gone for a v1 caller) is ``{"type": "delete", "name", …}``.
    Every line carries a ``cursor`` (opaque: PostgreSQL snapshot text);
    ``{"type": "bookmark"}`` lines carry it when nothing changes. A client that reconnects
    with ``since=<the last cursor it read>`` gets every change since, once, and nothing it
    already had. The stream ends after ``STREAM_SECONDS``;
    clients reconnect with their cursor.

Both subscribe to the channel layer before they read the database, so a change committed
in between is never missed; when the layer is unavailable they read the database every
second instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any
from urllib.parse import parse_qs

from channels.generic.http import AsyncHttpConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from allocations import selectors, v1
from allocations.models import Allocation
from contextsvc.core import longpoll
from contextsvc.core.models import Scope
from contextsvc.core.teams import Reach
from contextsvc.infra import events
from contextsvc.infra.errors import NotFound

logger = logging.getLogger(__name__)

MAX_WAIT = 60.0
POLL_SECONDS = 1.0
BOOKMARK_SECONDS = 15.0
STREAM_SECONDS = 300.0
READERS = {Scope.READ, Scope.ALLOCATIONS, Scope.ADMIN}
TERMINAL = ("ready", "failed")


def _body(allocation: Allocation, *, phases: bool = False) -> dict[str, Any]:
    return v1.pool_response(allocation, default_namespace=settings.CS_NAMESPACE, phases=phases)


@longpoll.in_thread
def _read(name: str, phases: bool, reach: Reach) -> tuple[int, dict[str, Any]]:
    allocation = selectors.allocation_get_visible(name=name, reach=reach)
    return allocation.pk, _body(allocation, phases=phases)


@longpoll.in_thread
def _changes(
    since: str | None, namespace: str | None, reach: Reach
) -> tuple[list[dict[str, Any]], str]:
    found, cursor = selectors.allocation_changes(since=since, namespace=namespace, reach=reach)
    lines = []
    for allocation in found:
        if selectors.is_visible(allocation):
            lines.append({"type": "upsert", "pool": _body(allocation)})
        else:
            lines.append(
                {"type": "delete", "name": allocation.name, "namespace": allocation.namespace}
            )
    return lines, cursor


async def _next_event(layer: Any, channel: str | None, timeout: float) -> tuple[bool, str | None]:
    """Wait for one message on ``channel`` (or, without a channel layer, for the poll
    interval); (whether one came, the channel — None once the layer failed)."""
    if channel is None:
        await asyncio.sleep(min(timeout, POLL_SECONDS))
        return True, None
    try:
        await asyncio.wait_for(layer.receive(channel), timeout)
    except TimeoutError:
        return False, channel
    except Exception:  # noqa: BLE001 - Redis went away: poll the database
        logger.warning("the channel layer failed; reading the database instead")
        return True, None
    return True, channel


class PoolWaitConsumer(longpoll.WaitConsumer):
    async def answer(self) -> dict[str, Any]:
        caller = await longpoll.authenticate(self.scope, READERS)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        wait = longpoll.wait_seconds(query, MAX_WAIT)
        detail = query.get("detail", [None])[0]
        if detail not in (None, "phases"):
            raise longpoll.Refused(400, "invalid_request", 'detail must be "phases"')
        name = self.scope["url_route"]["kwargs"]["name"]
        try:
            # With the phases, each phase reached is a change that ends the wait.
            return await self._wait(name, wait, phases=detail == "phases", reach=caller.reach)
        except NotFound as exc:
            raise longpoll.Refused(404, "not_found", exc.message) from None

    async def _wait(self, name: str, wait: float, *, phases: bool, reach: Reach) -> dict[str, Any]:
        allocation_id, first = await _read(name, phases, reach)
        if first["status"] in TERMINAL or wait == 0:
            return first
        layer = get_channel_layer()
        channel = await longpoll.subscribe(layer, events.allocation_group(allocation_id))
        try:
            # Read again now that changes reach us: one committed in between is not lost.
            _, state = await _read(name, phases, reach)
            until = time.monotonic() + wait
            while state == first:
                timeout = until - time.monotonic()
                if timeout <= 0:
                    break
                woke, channel = await _next_event(layer, channel, timeout)
                if woke:
                    _, state = await _read(name, phases, reach)
            return state
        finally:
            if channel is not None:
                with contextlib.suppress(Exception):
                    await layer.group_discard(events.allocation_group(allocation_id), channel)


class PoolStreamConsumer(AsyncHttpConsumer):
    channel_layer_alias = None

    async def handle(self, body: bytes) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            caller = await longpoll.authenticate(self.scope, READERS)
            since = _cursor(query)
        except longpoll.Refused as refused:
            await longpoll.send_refusal(self, refused)
            return
        namespace = (query.get("namespace") or [""])[0] or None
        await self.send_headers(
            status=200,
            headers=[
                (b"Content-Type", b"application/x-ndjson"),
                (b"Cache-Control", b"no-store"),
            ],
        )
        layer = get_channel_layer()
        channel = await longpoll.subscribe(layer, events.ALLOCATIONS)
        try:
            await self._stream(layer, channel, since, namespace, caller.reach)
        finally:
            if channel is not None:
                with contextlib.suppress(Exception):
                    await layer.group_discard(events.ALLOCATIONS, channel)
            await self.send_body(b"", more_body=False)

    async def _stream(
        self,
        layer: Any,
        channel: str | None,
        since: str | None,
        namespace: str | None,
        reach: Reach,
    ) -> None:
        sent: dict[str, dict[str, Any]] = {}  # what each pool name last looked like
        ends = time.monotonic() + STREAM_SECONDS
        last_line = time.monotonic()
        while True:
            lines, cursor = await _changes(since, namespace, reach)
            fresh = []
            for line in lines:
                key = line["pool"]["name"] if "pool" in line else line["name"]
                # A row written again with nothing a client sees changed (a reconcile
                # attempt counted) is not news: send a pool only when it looks different.
                if sent.get(key) != line:
                    sent[key] = line
                    fresh.append({**line, "cursor": cursor})
            if fresh or since is None or time.monotonic() - last_line >= BOOKMARK_SECONDS:
                if not fresh:
                    fresh = [{"type": "bookmark", "cursor": cursor}]
                payload = b"".join(longpoll.encode(line) + b"\n" for line in fresh)
                await self.send_body(payload, more_body=True)
                last_line = time.monotonic()
            since = cursor
            remaining = ends - time.monotonic()
            if remaining <= 0:
                return
            timeout = min(remaining, BOOKMARK_SECONDS - (time.monotonic() - last_line))
            woke, channel = await _next_event(layer, channel, max(timeout, 0.01))
            if woke and channel is not None:
                # A burst of changes is read once: take whatever else already arrived.
                with contextlib.suppress(TimeoutError):
                    while True:
                        await asyncio.wait_for(layer.receive(channel), 0.005)


def _cursor(query: dict[str, list[str]]) -> str | None:
    raw = (query.get("since") or [""])[0]
    if raw == "":
        return None
    cursor = selectors.change_cursor(raw)
    if cursor is None:
        raise longpoll.Refused(400, "invalid_request", "since must be a cursor from this stream")
    return cursor
