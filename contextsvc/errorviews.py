"""Error pages: JSON under the API prefixes (callers parse the v1 error body), HTML elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found, server_error

API_PREFIXES = ("/v1/", "/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return JsonResponse({"error": "not_found", "message": "no such endpoint"}, status=404)
    return page_not_found(request, exception)


def internal_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return JsonResponse(
            {"error": "internal_error", "message": "internal server error"}, status=500
        )
    return server_error(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return JsonResponse({"error": "invalid_request", "message": "bad request"}, status=400)
    return HttpResponse("Bad request", status=400, content_type="text/plain")
