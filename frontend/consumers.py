"""The dashboard's WebSocket: one per page, authenticated by the session, origin-checked
(see config/asgi.py); a snapshot on connect, then typed events."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import User

from contextsvc.core.auth import Role
from contextsvc.core.teams import reach_of, sees_every_team
from contextsvc.core.users import has_role
from frontend import live

FORBIDDEN = 4403


class LiveConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]

    async def connect(self) -> None:
        self.groups_joined = []
        user = self.scope.get("user")
        allowed = await database_sync_to_async(_may_watch)(getattr(user, "pk", None))
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.topic = (query.get("topic") or [""])[0]
        self.ids = [int(i) for i in (query.get("ids") or [""])[0].split(",") if i.isdigit()]
        groups = live.groups_for(self.topic)
        if not allowed or not groups:
            await self.close(code=FORBIDDEN)
            return
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined = groups
        await self.accept()
        await self.send_snapshot()

    async def send_snapshot(self) -> None:
        data = await database_sync_to_async(live.snapshot)(self.topic, self.ids)
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
        """The person is looked at again before anything is sent: one demoted or
        deactivated since the socket opened hears nothing more, and the socket closes
        (4403, as at connect)."""
        user = self.scope.get("user")
        allowed = await database_sync_to_async(_may_watch)(getattr(user, "pk", None))
        if not allowed:
            await self.close(code=FORBIDDEN)
        return allowed


def _may_watch(user_id: int | None) -> bool:
    """A viewer, who reaches every team's objects: an admin, or anyone while there is one
    team. The live events go to every watcher of a page, whatever the team of the row they
    carry, so a person limited to one team of several gets the pages (narrowed to the team)
    without live updates, rather than other teams' rows."""
    if user_id is None:
        return False
    person = User.objects.filter(pk=user_id, is_active=True).first()
    if person is None or not has_role(person, Role.VIEWER):
        return False
    return sees_every_team(reach_of(person))
