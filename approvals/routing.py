"""HTTP routes served by async consumers instead of Django's (blocking) handler."""

from __future__ import annotations

from django.urls import re_path

from approvals.consumers import ApprovalWaitConsumer

long_poll_urlpatterns = [
    re_path(r"^v1/approvals/(?P<request_id>[^/]+)$", ApprovalWaitConsumer.as_asgi()),
]
