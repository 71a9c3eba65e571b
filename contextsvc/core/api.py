"""API plumbing shared by every app: the error body, the exception handler, base views."""

from __future__ import annotations

import logging
from typing import Any

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from contextsvc.core.auth import BearerTokenAuthentication, ScopeRequired
from contextsvc.infra.errors import (
    DATABASE_RETRY_AFTER_SECONDS,
    DATABASE_UNAVAILABLE,
    RateLimited,
    ServiceError,
    error_body,
    is_database_unavailable,
    service_error_body,
)

logger = logging.getLogger(__name__)


def error_response(status_code: int, code: str, message: str) -> Response:
    return Response(error_body(code, message), status=status_code)


_DRF_CODES: dict[type[exceptions.APIException], tuple[int, str]] = {
    exceptions.NotAuthenticated: (401, "unauthorized"),
    exceptions.AuthenticationFailed: (401, "unauthorized"),
    exceptions.PermissionDenied: (403, "forbidden"),
    exceptions.NotFound: (404, "not_found"),
    exceptions.MethodNotAllowed: (405, "method_not_allowed"),
    exceptions.NotAcceptable: (406, "not_acceptable"),
    exceptions.UnsupportedMediaType: (415, "unsupported_media_type"),
    exceptions.Throttled: (429, "throttled"),
    exceptions.ParseError: (400, "invalid_request"),
    exceptions.ValidationError: (400, "invalid_request"),
}


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key == "non_field_errors" else f"{key}: {inner}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error leaves as ``{"error": CODE, "message": TEXT}``."""
    if isinstance(exc, ServiceError):
        if exc.status >= 500:
            # 503 is a known state of the cluster (a missing CRD), not a fault of ours.
            log = logger.warning if exc.status == 503 else logger.error
            log("request failed: %s", exc.message)
        response = Response(service_error_body(exc), status=exc.status)
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, Http404):
        return error_response(404, "not_found", "not found")
    if is_database_unavailable(exc):
        logger.warning("database unavailable: %s", exc)
        response = error_response(503, "unavailable", DATABASE_UNAVAILABLE)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response
    for exc_type, (status_code, code) in _DRF_CODES.items():
        if isinstance(exc, exc_type):
            response = error_response(status_code, code, _first_message(exc.detail))
            if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
                response["WWW-Authenticate"] = 'Bearer realm="context-service"'
            wait = getattr(exc, "wait", None)
            if isinstance(exc, exceptions.Throttled) and wait is not None:
                response["Retry-After"] = str(int(wait))
            return response
    logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
    return error_response(
        status.HTTP_500_INTERNAL_SERVER_ERROR, "internal_error", "internal server error"
    )


class ServiceAPIView(APIView):
    # Base for every API view: API-client tokens or a dashboard session, scopes per view.
    # (A comment, not a docstring: the OpenAPI document takes a view's docstring as its
    # operations' description, and subclasses would inherit this one.)

    # Sessions let a logged-in admin use the browsable docs; DRF enforces CSRF for them.
    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [ScopeRequired]
    read_scopes: tuple[str, ...] = ("read",)
    write_scope: str = "admin"
