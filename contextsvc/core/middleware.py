"""Request checks that hold for every URL, API and dashboard alike."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

NUL_IN_URL = "the URL must not contain NUL characters"


def reject_nul_in_url(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A NUL in a path segment or query value would reach PostgreSQL, which refuses it
    with an error the views cannot tell from a fault of ours; no name we serve holds one."""

    def middleware(request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            return JsonResponse({"error": "invalid_request", "message": NUL_IN_URL}, status=400)
        return get_response(request)

    return middleware
