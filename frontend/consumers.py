"""The dashboard's WebSocket: one per page, authenticated by the session, origin-checked
(see config/asgi.py); a snapshot on connect, then typed events."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import User

from contextsvc.core.auth import Role
from contextsvc.core.teams import EVERY_TEAM, Reach, reach_of, sees_every_team
from contextsvc.core.users import has_role
from frontend import live

FORBIDDEN = 4403


class LiveConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]
    reach: Reach | None

    async def connect(self) -> None:
        self.groups_joined = []
        user = self.scope.get("user")
        self.reach = await database_sync_to_async(_watching)(getattr(user, "pk", None))
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.topic = (query.get("topic") or [""])[0]
        self.ids = [int(i) for i in (query.get("ids") or [""])[0].split(",") if i.isdigit()]
        groups = (
            await database_sync_to_async(live.groups_for)(self.topic, self.reach)
            if self.reach is not None
            else []
        )
        if not groups:
            await self.close(code=FORBIDDEN)
            return
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined = groups
        await self.accept()
        await self.send_snapshot()

    async def send_snapshot(self) -> None:
        if self.reach is None:  # refused at connect: nothing to send
            return
        data = await database_sync_to_async(live.snapshot)(self.topic, self.ids, self.reach)
        await self.send_json({"type": "snapshot", "topic": self.topic, "data": data})

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        resync = isinstance(content, dict) and content.get("type") == "resync"
        if resync and await self._still_allowed():
            await self.send_snapshot()

    async def disconnect(self, code: int) -> None:
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def live_event(self, message: dict[str, Any]) -> None:
        if await self._still_allowed():
            await self.send_json(message["event"])

    async def _still_allowed(self) -> bool:
        """The person is looked at again before anything is sent: one demoted,
        deactivated or moved to another team since the socket opened, or narrowed to one
        team because a second team was made, hears nothing more, and the socket closes
        (4403, as at connect; the page's script opens a new one, with the groups it may
        hear now)."""
        user = self.scope.get("user")
        now = await database_sync_to_async(_watching)(getattr(user, "pk", None))
        if now is None or now != self.reach:
            await self.close(code=FORBIDDEN)
            return False
        return True


def _watching(user_id: int | None) -> Reach | None:
    """Whose rows a person may hear of live: every team's (an admin, or anyone while there
    is one team), their own team's, or nothing (None: not a viewer)."""
    if user_id is None:
        return None
    person = User.objects.filter(pk=user_id, is_active=True).first()
    if person is None or not has_role(person, Role.VIEWER):
        return None
    reach = reach_of(person)
    return EVERY_TEAM if sees_every_team(reach) else reach
