"""HTTP routes served by async consumers instead of Django's (blocking) handler."""

from __future__ import annotations

from django.urls import re_path

from allocations.consumers import PoolStreamConsumer, PoolWaitConsumer

async_http_urlpatterns = [
    re_path(r"^v1/sandbox-pools/(?P<name>[^/]+)$", PoolWaitConsumer.as_asgi()),
    re_path(r"^v1/sandbox-pools$", PoolStreamConsumer.as_asgi()),
]
