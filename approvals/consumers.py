"""``GET /v1/approvals/{id}?wait=N``: the agent's long-poll, as an async consumer.

It subscribes to the request's channel-layer group before it reads the request, so a
decision committed in between is never missed, then waits — without holding a thread —
until the decision's event arrives, the request's deadline passes, or ``wait`` seconds are
up, and answers with the request as ``GET /v1/approvals/{id}`` shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs
from uuid import UUID

from channels.layers import get_channel_layer
from django.utils import timezone

from approvals import access, live, selectors, shapes
from contextsvc.core import longpoll
from contextsvc.core.models import Scope
from contextsvc.core.teams import Reach
from contextsvc.infra.errors import NotFound

logger = logging.getLogger(__name__)

MAX_WAIT = 60.0
# How often a long-poll reads the database while the channel layer is unavailable.
POLL_SECONDS = 1.0
READERS = {Scope.READ, Scope.AGENT, Scope.APPROVER, Scope.ADMIN}
# Waking a little after the deadline makes sure the request reads as expired (as of the
# service's clock) rather than waiting for beat's expiry event.
DEADLINE_GRACE = 0.05


@longpoll.in_thread
def _read(request_id: UUID, requested_by: str | None, reach: Reach) -> dict[str, Any]:
    # Only a read: past its deadline the request reads as expired before beat's task has
    # written it (selectors.approval_as_read).
    return shapes.approval_json(
        selectors.approval_get(request_id=request_id, requested_by=requested_by, reach=reach)
    )


class ApprovalWaitConsumer(longpoll.WaitConsumer):
    async def answer(self) -> dict[str, Any]:
        caller = await longpoll.authenticate(self.scope, READERS)
        own_only = access.own_requests_only(actor=caller.actor, scopes=caller.scopes)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        wait = longpoll.wait_seconds(query, MAX_WAIT)
        try:
            request_id = selectors.parse_request_id(self.scope["url_route"]["kwargs"]["request_id"])
            return await self._wait(request_id, own_only, caller.reach, wait)
        except NotFound as exc:
            raise longpoll.Refused(404, "not_found", exc.message) from None

    async def _wait(
        self, request_id: UUID, own_only: str | None, reach: Reach, wait: float
    ) -> dict[str, Any]:
        layer = get_channel_layer()
        group = live.request_group(request_id)
        channel = await longpoll.subscribe(layer, group)
        try:
            state = await _read(request_id, own_only, reach)
            until = time.monotonic() + wait
            while state["status"] == "pending":
                to_deadline = (
                    datetime.fromisoformat(state["deadline"]) - timezone.now()
                ).total_seconds() + DEADLINE_GRACE
                timeout = min(until - time.monotonic(), to_deadline)
                if timeout <= 0:
                    break
                message = None
                if channel is None:
                    # No channel layer: the decision is in the database; look again soon.
                    await asyncio.sleep(min(timeout, POLL_SECONDS))
                else:
                    try:
                        with contextlib.suppress(TimeoutError):
                            message = await asyncio.wait_for(layer.receive(channel), timeout)
                    except Exception:  # noqa: BLE001 - Redis went away: poll the database
                        logger.warning("the channel layer failed; polling approval %s", request_id)
                        channel = None
                event = (message or {}).get("event") or {}
                if event.get("type") == "approval.decided" and event["data"]["id"] == state["id"]:
                    # The event carries the request as the API shows it: no second read.
                    return dict(event["data"])
                state = await _read(request_id, own_only, reach)
                if time.monotonic() >= until:
                    break
            return state
        finally:
            if channel is not None:
                with contextlib.suppress(Exception):
                    await layer.group_discard(group, channel)
