"""``/metrics`` in the Prometheus text format, computed from PostgreSQL at scrape time, so
every web replica answers the same and nothing is lost when a process restarts. Histograms
and counters count every row ever recorded: retention folds what the rows it removes count
for into tallies first (contextsvc/core/tallies.py), so they only grow, as Prometheus'
``rate()`` and ``histogram_quantile()`` expect.

Each app's ``metrics.py`` holds its own series; ``COLLECTORS`` is the registry of them.
Needs a bearer token with the ``metrics`` scope (Prometheus: ``authorization: credentials``),
or ``admin``; ``read`` while the installation has one team, since the series name every
team's objects.
"""

from __future__ import annotations

import functools

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from allocations.metrics import AllocationCollector
from allocations.selectors import retention_kept as allocations_kept
from approvals.metrics import ApprovalCollector
from approvals.selectors import retention_kept as approvals_kept
from contextsvc.core.auth import SH_AUTH_HEADER, InvalidCredentials, principal_from_headers
from contextsvc.core.metrics import RetentionCollector
from contextsvc.core.models import Scope
from contextsvc.core.retention import retention_kept as audit_kept
from contextsvc.core.teams import reach_of, sees_every_team
from contextsvc.infra.errors import error_json
from usage.metrics import UsageCollector
from workspaces.metrics import WorkspaceCollector

COLLECTORS = (
    WorkspaceCollector,
    AllocationCollector,
    ApprovalCollector,
    UsageCollector,
    functools.partial(RetentionCollector, allocations_kept, approvals_kept, audit_kept),
)


NOT_A_TEAMS = (
    "/metrics describes every team; with more than one team it takes a token with the "
    "metrics or admin scope (a team's own objects are read through the API)"
)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    try:
        found = principal_from_headers(
            authorization=request.headers.get("Authorization", ""),
            sh_auth=request.headers.get(SH_AUTH_HEADER, ""),
        )
    except InvalidCredentials as exc:
        return _unauthorized(str(exc))
    if found is None:
        return _unauthorized("a token with the read scope is required")
    principal = found[0]
    if not principal.scopes & {Scope.READ, Scope.ADMIN, Scope.METRICS}:
        return error_json(403, "forbidden", "this credential lacks the scope this endpoint needs")
    if Scope.METRICS not in principal.scopes and not sees_every_team(reach_of(principal)):
        # The series name every team's agents, teams and pools.
        return error_json(403, "forbidden", NOT_A_TEAMS)
    registry = CollectorRegistry()
    for collector in COLLECTORS:
        registry.register(collector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _unauthorized(message: str) -> JsonResponse:
    response = error_json(401, "unauthorized", message)
    response["WWW-Authenticate"] = 'Bearer realm="context-service"'
    return response
