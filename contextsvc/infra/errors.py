"""Domain errors. Services raise these; one exception handler turns them into HTTP."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from psycopg_pool import PoolTimeout

from contextsvc.kube.client import KubeError


class ServiceError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        # Extra fields for the error body, e.g. every problem of an invalid profile.
        self.details: dict[str, object] = {}


class InvalidRequest(ServiceError):
    status = 400
    code = "invalid_request"


class Forbidden(ServiceError):
    """The credential is valid but may not do this (beyond its scopes)."""

    status = 403
    code = "forbidden"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class AlreadyExists(ServiceError):
    status = 409
    code = "already_exists"


class Conflict(ServiceError):
    """The target changed state: a second or stale decision, a release of a released pool."""

    status = 409
    code = "conflict"


class RateLimited(ServiceError):
    """Too many requests for now; ``retry_after`` (whole seconds) is sent as Retry-After.
    None: no wait will do (a rate of 0 lets nothing through until an admin raises it)."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(ServiceError):
    """A dependency the request needs is missing (e.g. the cluster lacks a CRD)."""

    status = 503
    code = "unavailable"


class KubernetesFailure(ServiceError):
    status = 500
    code = "internal_error"


# --- The error body ------------------------------------------------------------------------
# One shape for every error the service answers, wherever it is made (the API's exception
# handler, the long-poll consumers, the error pages under /v1/, the dashboard's JSON answers):
# {"error": CODE, "message": TEXT}, plus the details an error carries.


def error_body(
    code: str, message: str, details: Mapping[str, object] | None = None
) -> dict[str, Any]:
    return {"error": code, "message": message, **(details or {})}


def service_error_body(exc: ServiceError) -> dict[str, Any]:
    return error_body(exc.code, exc.message, exc.details)


def error_json(
    status: int, code: str, message: str, *, extra: Mapping[str, object] | None = None
) -> JsonResponse:
    """The error body as a plain Django response (views outside DRF)."""
    return JsonResponse(error_body(code, message, extra), status=status)


def service_error_json(exc: ServiceError, *, status: int | None = None) -> JsonResponse:
    return JsonResponse(service_error_body(exc), status=status or exc.status)


@contextmanager
def cluster_call() -> Iterator[None]:
    """Around a Kubernetes call a request waits on: a failure the service cannot
    classify further is the cluster's message as a 500 (as the Go service answered)."""
    try:
        yield
    except KubeError as exc:
        raise kubernetes_failure(exc) from exc


def kubernetes_failure(exc: KubeError) -> KubernetesFailure:
    return KubernetesFailure(exc.message)


DATABASE_UNAVAILABLE = "the database is unavailable; retry shortly"
# Long enough for a restarted PostgreSQL or a failover, short enough to retry soon.
DATABASE_RETRY_AFTER_SECONDS = 5


def is_database_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached (down, restarting, the pool has no connection for us)
    as opposed to a query of ours failing."""
    return isinstance(exc, OperationalError | InterfaceError | PoolTimeout)
