"""Liveness and readiness endpoints for kubelet probes and load balancers."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from contextsvc.core import capabilities
from contextsvc.kube.client import check_reachable

logger = logging.getLogger(__name__)


# CSRF-exempt: a probe holds no session, and any other method must be the 405 that
# require_GET answers, not the CSRF check's 403 (schemathesis: QUERY /healthz).
@csrf_exempt
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The v1 contract: the process is up. It deliberately checks nothing else."""
    return JsonResponse({"status": "ok"})


def _check_postgres() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_redis() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    finally:
        client.close()


def _check_kubernetes() -> None:
    check_reachable()


CHECKS: dict[str, Callable[[], None]] = {
    "postgres": _check_postgres,
    "redis": _check_redis,
    "kubernetes": _check_kubernetes,
}


@csrf_exempt
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """503 naming every dependency that failed, so an operator sees which one at once."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
            logger.warning("readiness check %s failed: %s", name, exc)
            results[name] = f"error: {type(exc).__name__}: {exc}".splitlines()[0][:300]
        else:
            results[name] = "ok"
    failed = sorted(name for name, result in results.items() if result != "ok")
    if failed:
        return JsonResponse(
            {"status": "unavailable", "failed": failed, "checks": results}, status=503
        )
    # What the cluster lacks switches features off; it does not make the service unready.
    found = capabilities.current()
    features = {
        "sandboxes": found.sandboxes,
        "extensions": found.extensions,
        "missing": list(found.missing),
    }
    return JsonResponse({"status": "ok", "checks": results, "features": features})
