"""ASGI entry point: HTTP through Django (see contextsvc.httpbridge), WebSockets through
Channels."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextsvc.settings.local")
# Django must be set up before anything imports models (the WebSocket routes do).
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from contextsvc.httpbridge import ThreadedWSGI  # noqa: E402

http_app = ThreadedWSGI(get_wsgi_application(), threads=settings.CS_WEB_THREADS)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from frontend.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
