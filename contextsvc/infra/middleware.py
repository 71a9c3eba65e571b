"""Request checks that hold for every URL, API and dashboard alike."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from contextsvc.infra.errors import (
    DATABASE_RETRY_AFTER_SECONDS,
    DATABASE_UNAVAILABLE,
    error_json,
    is_database_unavailable,
)

logger = logging.getLogger(__name__)

NUL_IN_URL = "the URL must not contain NUL characters"


def reject_nul_in_url(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A NUL in a path segment or query value would reach PostgreSQL, which refuses it
    with an error the views cannot tell from a fault of ours; no name we serve holds one."""

    def middleware(request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            return error_json(400, "invalid_request", NUL_IN_URL)
        return get_response(request)

    return middleware


API_PREFIXES = ("/v1/", "/api/", "/metrics")


class DatabaseUnavailable:
    """A database outage is a 503 with ``Retry-After`` on every page, not a 500: a caller
    (or a load balancer) can tell "try again" from "we broke". The API's own views get the
    same answer from the exception handler (contextsvc/core/api.py)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_database_unavailable(exception):
            return None
        logger.warning("database unavailable: %s", exception)
        response: HttpResponse
        if request.path.startswith(API_PREFIXES):
            response = error_json(503, "unavailable", DATABASE_UNAVAILABLE)
        else:
            response = HttpResponse(
                "The service's database is unavailable; this page will work again shortly.",
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response
