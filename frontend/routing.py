"""WebSocket routes served by Channels (see ``contextsvc.asgi``)."""

from __future__ import annotations

from django.urls import path

from frontend.consumers import LiveConsumer

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
