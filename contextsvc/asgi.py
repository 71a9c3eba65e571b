"""ASGI entry point: HTTP through Django (see contextsvc.httpbridge), WebSockets through
Channels."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextsvc.settings.local")
# Django must be set up before anything imports models (the WebSocket routes do).
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from contextsvc.httpbridge import ThreadedWSGI  # noqa: E402

http_app = ThreadedWSGI(get_wsgi_application(), threads=settings.CS_WEB_THREADS)

from channels.routing import URLRouter  # noqa: E402

from approvals.routing import long_poll_urlpatterns  # noqa: E402

long_poll_app = URLRouter(long_poll_urlpatterns)


async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Long-polls (``GET /v1/approvals/{id}?wait=N``) wait in async code on the event loop;
    everything else goes to Django on the thread pool."""
    if (
        scope["method"] == "GET"
        and scope["path"].startswith("/v1/approvals/")
        and b"wait=" in scope.get("query_string", b"")
        and scope["path"].count("/") == 3
    ):
        await long_poll_app(scope, receive, send)
    else:
        await http_app(scope, receive, send)


from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from frontend.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
