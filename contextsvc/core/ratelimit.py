"""A team's request rate: ``Team.max_requests_per_minute`` requests of its API tokens at
once, and then that many a minute; past it, a 429 ``rate_limited`` with ``Retry-After``.

Quotas bound what a team holds; this bounds how fast it asks, so that a runaway loop of
one team's scripts (create, release, create…) cannot take the web processes and the
API server from every other team. The dashboard's people are not counted.

The generic cell rate algorithm, kept in PostgreSQL (``TeamRequestRate``): each request
moves the team's "theoretical arrival time" on by a minute / N, and is refused when that
would put it more than a minute ahead of now. One statement does the test and the move, so
concurrent requests of one team, in every web process, queue on the row and exactly N of a
burst get through. A refused request moves nothing: a caller that keeps retrying is let in
again at the rate. The database's clock is the one clock every web process shares.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django.db import connection
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from contextsvc.core.auth import ApiPrincipal
from contextsvc.infra.errors import RateLimited

WINDOW = timedelta(minutes=1)
QUOTA = "max_requests_per_minute"

# statement_timestamp() is one instant for the whole statement, unlike clock_timestamp().
_TAKE_SQL = """
INSERT INTO core_teamrequestrate AS r (team_id, tat)
VALUES (%(team)s, statement_timestamp() + make_interval(secs => %(step)s))
ON CONFLICT (team_id) DO UPDATE
SET tat = GREATEST(r.tat, statement_timestamp()) + make_interval(secs => %(step)s)
WHERE GREATEST(r.tat, statement_timestamp()) + make_interval(secs => %(step)s)
  <= statement_timestamp() + make_interval(secs => %(window)s)
RETURNING 1
"""
_AHEAD_SQL = """
SELECT EXTRACT(EPOCH FROM tat - statement_timestamp()) FROM core_teamrequestrate
WHERE team_id = %s
"""


def take(*, team_id: int, team_name: str, per_minute: int) -> None:
    """Count one request of the team, or raise ``RateLimited`` (and count nothing) when
    the team has used its rate."""
    window = WINDOW.total_seconds()
    if per_minute <= 0:
        # No wait will do: say who can open it, and send no Retry-After to wait for.
        error = RateLimited(
            f'team "{team_name}" is limited to 0 API requests per minute: its tokens are '
            "refused until an admin raises the rate (the Teams page, or manage.py team "
            f"quota {team_name} --requests-per-minute N)",
            retry_after=None,
        )
        error.details = {"quota": QUOTA, "limit": 0, "inUse": 0, "retryAfter": None}
        raise error
    step = window / per_minute
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL, {"team": team_id, "step": step, "window": window})
        if cursor.fetchone() is not None:
            return
        cursor.execute(_AHEAD_SQL, [team_id])
        row = cursor.fetchone()
    ahead = float(row[0]) if row is not None else window
    # Refused means the bucket is full: the whole rate is in use. The wait is until one
    # more step fits in the window again.
    retry_after = max(1, math.ceil(ahead + step - window))
    error = RateLimited(
        f'team "{team_name}" is limited to {per_minute} API requests per minute; '
        f"{per_minute} used in the last minute, retry in {retry_after} s",
        retry_after=retry_after,
    )
    error.details = {
        "quota": QUOTA,
        "limit": per_minute,
        "inUse": per_minute,
        "retryAfter": retry_after,
    }
    raise error


def take_for(principal: Any) -> None:
    """Count a request of ``principal`` when it is an API client of a team with a rate."""
    if isinstance(principal, ApiPrincipal) and principal.requests_per_minute is not None:
        take(
            team_id=principal.team_id,
            team_name=principal.team_name,
            per_minute=principal.requests_per_minute,
        )


class TeamRateThrottle(BaseThrottle):
    """DRF's throttle hook, after authentication and the scope check: a refused request
    raises ``RateLimited`` itself, so that its body names the limit and the use."""

    def allow_request(self, request: Request, view: Any) -> bool:
        take_for(request.user)
        return True
