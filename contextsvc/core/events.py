"""The one place live events leave the service: channel-layer groups, after commit.

Browsers subscribe to groups (``allocations``, ``allocation.<id>``, ``approvals``) through
the dashboard's WebSocket consumers; a change that rolls back never announces anything.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

ALLOCATIONS = "allocations"
APPROVALS = "approvals"


def allocation_group(allocation_id: int) -> str:
    return f"allocation.{allocation_id}"


def _send(groups: tuple[str, ...], event: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": "live.event", "event": event})
        except Exception:  # a lost live event must never fail the change
            logger.exception("could not publish %s to %s", event.get("type"), group)


def publish(*groups: str, event_type: str, data: dict[str, Any]) -> None:
    """Announce ``event_type`` to ``groups`` once the current transaction commits."""
    event = {"type": event_type, "data": data}
    transaction.on_commit(lambda: _send(groups, event))
