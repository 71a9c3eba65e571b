"""A team's request rate (contextsvc/core/ratelimit.py), through the real web process: a
burst of 8 concurrent callers gets exactly the rate through and 429s for the rest, with
Retry-After; a refused request changes nothing; a changed rate or a moved client takes
effect at once although the token is cached; teams without a rate write nothing."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection

from allocations.tests.test_consumers import pool
from contextsvc.core import ratelimit, services
from contextsvc.core.models import ApiClient, AuditEntry, Team, TeamRequestRate
from contextsvc.core.tests.test_tokencache import cache_listening
from contextsvc.infra.errors import RateLimited
from frontend.tests.support import client_for
from tests.support.api import issue_token
from tests.support.processes import wait_until
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


def call(
    url: str, method: str, path: str, token: str, body: Any = None
) -> tuple[int, str | None, Any]:
    """(status, its Retry-After header, its JSON body)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, response.getheader("Retry-After"), json.loads(raw) if raw else None
    finally:
        connection.close()


def team(name: str, per_minute: int | None) -> Team:
    made = services.team_create(name=name, actor="system:test")
    return services.team_set_quotas(
        team=made, actor="system:test", max_requests_per_minute=per_minute
    )


def refusal(name: str, limit: int, retry_after: int) -> dict[str, Any]:
    return {
        "error": "rate_limited",
        "message": f'team "{name}" is limited to {limit} API requests per minute; '
        f"{limit} used in the last minute, retry in {retry_after} s",
        "quota": "max_requests_per_minute",
        "limit": limit,
        "inUse": limit,
        "retryAfter": retry_after,
    }


def test_a_burst_gets_exactly_the_rate_through(web_server: str) -> None:
    busy = team("busy", 5)
    token = issue_token("busy-harness", ["allocations"], team=busy)
    other = issue_token("default-harness", ["allocations"])
    barrier = threading.Barrier(8)
    answers: list[tuple[int, str | None, Any]] = []

    def list_pools() -> None:
        barrier.wait()
        answers.append(call(web_server, "GET", "/v1/sandbox-pools", token))

    callers = [threading.Thread(target=list_pools) for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    assert sorted(status for status, _, _ in answers) == [200] * 5 + [429] * 3
    for status, retry_after, body in answers:
        if status == 200:
            assert (retry_after, body) == (None, {"items": []})
            continue
        # A step is 12 s (a minute / 5): the wait is what is left of it, in whole seconds.
        assert retry_after is not None
        assert 1 <= int(retry_after) <= 12
        assert body == refusal("busy", 5, int(retry_after))
    # Another team (without a rate) is not held up by it, and no rate row is ever written
    # for a team without one.
    assert [call(web_server, "GET", "/v1/sandbox-pools", other)[0] for _ in range(8)] == [200] * 8
    assert list(TeamRequestRate.objects.values_list("team__name", flat=True)) == ["busy"]


def test_a_refused_request_changes_nothing(web_server: str, namespace: str) -> None:
    scarce = team("scarce", 1)
    token = issue_token("scarce-harness", ["allocations"], team=scarce)
    assert call(web_server, "GET", "/v1/sandbox-pools", token)[0] == 200

    with kept(namespace):
        status, retry_after, body = call(
            web_server, "POST", "/v1/sandbox-pools", token, pool("refused", namespace)
        )
        assert (status, body) == (429, refusal("scarce", 1, int(retry_after or 0)))
        # A long-poll is counted like any other request, and answered the same way.
        status, retry_after, body = call(
            web_server, "GET", "/v1/sandbox-pools/refused?wait=5", token
        )
        assert (status, body) == (429, refusal("scarce", 1, int(retry_after or 0)))
        assert 1 <= int(retry_after or 0) <= 60


def test_a_changed_rate_and_a_moved_client_take_effect_at_once(web_server: str) -> None:
    metered = team("metered", None)
    token = issue_token("mover", ["allocations"], team=metered)
    assert [call(web_server, "GET", "/v1/sandbox-pools", token)[0] for _ in range(3)] == [200] * 3
    wait_until(cache_listening, timeout=10, message="the web process's token cache")

    # The token is cached with its team's rate (none): setting one empties the cache.
    services.team_set_quotas(team=metered, actor="system:test", max_requests_per_minute=1)
    wait_until(
        lambda: call(web_server, "GET", "/v1/sandbox-pools", token)[0] == 429,
        timeout=5,
        message="the rate set on the token's team",
    )

    # Moved to a team without a rate, the same cached token is that team's at once.
    free = team("free", None)
    client = services.api_client_set_team(
        client=ApiClient.objects.get(name="mover"), team=free, actor="system:test"
    )
    assert client.team_id == free.pk
    wait_until(
        lambda: call(web_server, "GET", "/v1/sandbox-pools", token)[0] == 200,
        timeout=5,
        message="the client's new team",
    )
    assert [call(web_server, "GET", "/v1/sandbox-pools", token)[0] for _ in range(5)] == [200] * 5
    assert AuditEntry.objects.filter(action="api_client.team", target="mover").count() == 1


def ahead_by(team_id: int, seconds: float) -> None:
    """Put the team's rate ``seconds`` ahead of the database's clock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO core_teamrequestrate (team_id, tat)"
            " VALUES (%s, statement_timestamp() + make_interval(secs => %s))",
            [team_id, seconds],
        )


def test_a_request_passes_while_a_step_fits_in_the_minute() -> None:
    limited = team("stepped", 5)  # a step of 12 s
    ahead_by(limited.pk, 47)  # 47 + 12 ≤ 60: let through, now 59 s ahead
    ratelimit.take(team_id=limited.pk, team_name="stepped", per_minute=5)
    before = TeamRequestRate.objects.get(pk=limited.pk).tat

    with pytest.raises(RateLimited) as refused:  # 59 + 12 > 60
        ratelimit.take(team_id=limited.pk, team_name="stepped", per_minute=5)

    # 59 s ahead, minus the moment since: 11 s until a step of 12 fits in the minute again.
    expected = refusal("stepped", 5, 11)
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        429,
        expected.pop("error"),
        expected.pop("message"),
    )
    assert (refused.value.retry_after, refused.value.details) == (11, expected)
    assert TeamRequestRate.objects.get(pk=limited.pk).tat == before


CLOSED = (
    'team "closed" is limited to 0 API requests per minute: its tokens are refused until an '
    "admin raises the rate (the Teams page, or manage.py team quota closed "
    "--requests-per-minute N)"
)


def test_a_rate_of_zero_lets_nothing_through_and_writes_nothing(web_server: str) -> None:
    """Issue 45: it said "retry in 60 s", when nothing passes until an admin acts."""
    closed = team("closed", 0)
    token = issue_token("closed-harness", ["allocations"], team=closed)

    with pytest.raises(RateLimited) as refused:
        ratelimit.take(team_id=closed.pk, team_name="closed", per_minute=0)
    answers = [
        call(web_server, "GET", "/v1/sandbox-pools", token),
        call(web_server, "GET", "/v1/sandbox-pools/x?wait=1", token),
        call(web_server, "GET", "/v1/sandbox-pools?watch=1", token),
    ]

    assert (refused.value.retry_after, refused.value.message) == (None, CLOSED)
    body = {
        "error": "rate_limited",
        "message": CLOSED,
        "quota": "max_requests_per_minute",
        "limit": 0,
        "inUse": 0,
        "retryAfter": None,
    }
    assert answers == [(429, None, body)] * 3
    assert not TeamRequestRate.objects.exists()


def test_the_change_streams_429_says_when_to_come_back(web_server: str) -> None:
    """Issue 45: the stream's 429 had ``retryAfter`` in its body and no Retry-After."""
    scarce = team("streamy", 1)
    token = issue_token("streamy-harness", ["allocations"], team=scarce)
    assert call(web_server, "GET", "/v1/sandbox-pools", token)[0] == 200

    status, retry_after, body = call(web_server, "GET", "/v1/sandbox-pools?watch=1", token)

    assert retry_after is not None
    assert (status, body) == (429, refusal("streamy", 1, int(retry_after)))
    assert 1 <= int(retry_after) <= 60


def test_the_dashboards_people_are_not_counted() -> None:
    viewer = client_for("viewer")
    counted = team("counted", 1)
    services.person_set_team(
        user=User.objects.get(username="user-viewer"), team=counted, actor="system:test"
    )
    # A person's session may read the API; a person's team's rate does not apply to it.
    assert [viewer.get("/v1/sandbox-pools").status_code for _ in range(3)] == [200] * 3
    assert not TeamRequestRate.objects.exists()
