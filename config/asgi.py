"""ASGI entry point: HTTP through Django (see contextsvc.httpbridge), WebSockets through
Channels."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Django must be set up before anything imports models (the WebSocket routes do).
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from contextsvc.httpbridge import ThreadedWSGI  # noqa: E402

http_app = ThreadedWSGI(get_wsgi_application(), threads=settings.CS_WEB_THREADS)

from urllib.parse import parse_qs  # noqa: E402

from channels.routing import URLRouter  # noqa: E402

from allocations.routing import async_http_urlpatterns as pool_waits  # noqa: E402
from approvals.routing import long_poll_urlpatterns as approval_waits  # noqa: E402

waiting_app = URLRouter([*approval_waits, *pool_waits])
WAITING_COLLECTIONS = ("/v1/approvals/", "/v1/sandbox-pools/")


def waits(scope: dict[str, Any]) -> bool:
    """Requests that wait for something to happen: a long-poll (``GET …/{id}?wait=N``)
    of an approval or a pool, or the pools' change stream (``GET /v1/sandbox-pools?watch=1``)."""
    if scope["method"] != "GET":
        return False
    path: str = scope["path"]
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if path.startswith(WAITING_COLLECTIONS) and path.count("/") == 3:
        return "wait" in query
    return path == "/v1/sandbox-pools" and query.get("watch", [""])[0] in ("1", "true")


async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """What waits, waits in async code on the event loop, holding no thread; everything else
    goes to Django on the thread pool."""
    if waits(scope):
        await waiting_app(scope, receive, send)
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
