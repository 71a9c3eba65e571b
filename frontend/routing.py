"""WebSocket routes served by Channels (see ``config.asgi``)."""

from __future__ import annotations

from django.urls import path

from frontend.consumers import LiveConsumer

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
