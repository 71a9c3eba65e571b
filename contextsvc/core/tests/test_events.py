"""Live events go through the real Redis channel layer, after commit and only after it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from contextsvc.infra.events import publish


class Rollback(Exception):
    pass


async def _receive(channel: str, timeout: float) -> Any:
    return await asyncio.wait_for(get_channel_layer().receive(channel), timeout)


@pytest.mark.django_db(transaction=True)
def test_events_are_sent_after_commit_in_order_and_never_on_rollback() -> None:
    layer = get_channel_layer()
    group = f"test-{uuid.uuid4().hex}"
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group, channel)

    def publish_then_roll_back() -> None:
        with transaction.atomic():
            publish(group, event_type="allocation.changed", data={"n": 0})
            raise Rollback

    with pytest.raises(Rollback):
        publish_then_roll_back()
    for n in (1, 2, 3):
        with transaction.atomic():
            publish(group, event_type="allocation.changed", data={"n": n})

    received = [async_to_sync(_receive)(channel, 5) for _ in range(3)]
    assert received == [
        {"type": "live.event", "event": {"type": "allocation.changed", "data": {"n": n}}}
        for n in (1, 2, 3)
    ]
    with pytest.raises(asyncio.TimeoutError):
        async_to_sync(_receive)(channel, 0.5)
