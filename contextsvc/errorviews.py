"""Error pages: JSON under the API prefixes (callers parse the v1 error body), HTML elsewhere."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.views.defaults import page_not_found, server_error

from contextsvc.infra.errors import error_json

API_PREFIXES = ("/v1/", "/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return error_json(404, "not_found", "no such endpoint")
    return page_not_found(request, exception)


def internal_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return error_json(500, "internal_error", "internal server error")
    return server_error(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    # A BadRequest of ours says what is wrong in words written for the reader; Django's
    # own (SuspiciousOperation and its kin) stay "bad request".
    said = str(exception) if type(exception) is BadRequest else ""
    if request.path.startswith(API_PREFIXES):
        return error_json(400, "invalid_request", said or "bad request")
    text = f"Bad request: {said}" if said else "Bad request"
    return HttpResponse(text, status=400, content_type="text/plain; charset=utf-8")
