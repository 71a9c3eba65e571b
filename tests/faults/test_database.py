"""PostgreSQL restarted or down while the service runs: callers get 200 again at once after
a restart, a fast 503 with Retry-After while it is down (never a 500), /readyz says so, and
the watcher reconnects and takes its lock again instead of exiting."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from allocations.models import Phase
from contextsvc.core.users import ensure_role_groups, user_set_role
from tests.support.api import ApiClient, issue_token
from tests.support.kube import wait_for_phase
from tests.support.postgres import SuitePostgres
from tests.support.processes import ManagedProcess, wait_until, web_process

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


def call(url: str, token: str | None = None, cookie: str = "") -> tuple[int, Message, Any]:
    """(status, headers — looked up without regard to case —, the decoded body)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if cookie:
        headers["Cookie"] = cookie
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, head, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, head, raw = error.code, error.headers, error.read()
    try:
        body = json.loads(raw)
    except ValueError:
        body = raw.decode()
    return status, head, body


UNAVAILABLE = {"error": "unavailable", "message": "the database is unavailable; retry shortly"}


def client_connections() -> int:
    """Connections to the test database, every process's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND backend_type = 'client backend'"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.usefixtures("kube_cluster")  # /readyz checks the cluster too
def test_a_restart_heals_at_once_and_an_outage_is_a_503(postgres: SuitePostgres) -> None:
    token = issue_token("sh", ["allocations"])
    ensure_role_groups()
    browser = Client()
    browser.force_login(
        user_set_role(user=User.objects.create_user("ada"), role="viewer", actor="user:test")
    )
    session = f"sessionid={browser.cookies['sessionid'].value}"
    with web_process("web-database-faults") as url:
        assert call(f"{url}/v1/sandbox-pools", token)[0] == 200
        # A busy web process keeps several connections in its pool; all die in a restart.
        before = client_connections()
        with ThreadPoolExecutor(16) as pool:
            statuses = list(
                pool.map(lambda _: call(f"{url}/v1/sandbox-pools", token)[0], range(96))
            )
        assert statuses == [200] * 96
        assert client_connections() - before >= 3, "the pool did not grow: nothing to test"

        postgres.restart()

        # The first dead connection met sends the whole pool through a check: the very
        # next request after the restart is answered (psycopg_pool alone would check the
        # dead ones one by one, 1 s then 2 s apart, and time out).
        assert call(f"{url}/v1/sandbox-pools", token)[::2] == (200, {"items": []})
        assert call(f"{url}/v1/sandbox-pools", token)[::2] == (200, {"items": []})
        assert call(f"{url}/readyz")[0] == 200
        assert call(f"{url}/allocations/", cookie=session)[0] == 200

        with postgres.down():
            status, headers, body = call(f"{url}/v1/sandbox-pools", token)
            assert (status, headers["Retry-After"], body) == (503, "5", UNAVAILABLE)
            status, headers, body = call(f"{url}/metrics", token)
            assert (status, headers["Retry-After"], body) == (503, "5", UNAVAILABLE)
            status, headers, body = call(f"{url}/allocations/", cookie=session)
            assert (status, headers["Retry-After"]) == (503, "5")
            assert (
                body == "The service's database is unavailable; this page will work again shortly."
            )
            status, _, body = call(f"{url}/readyz")
            assert (status, body["status"], body["failed"]) == (503, "unavailable", ["postgres"])

        assert call(f"{url}/v1/sandbox-pools", token)[::2] == (200, {"items": []})
        assert call(f"{url}/readyz")[0] == 200
        assert call(f"{url}/allocations/", cookie=session)[0] == 200


@pytest.mark.usefixtures("service")
def test_the_watcher_reconnects_after_a_restart(
    postgres: SuitePostgres, watcher_process: ManagedProcess, namespace: str
) -> None:
    log = watcher_process.log_path
    start = len(log.read_text(errors="replace"))

    postgres.restart()

    def reconnected() -> bool:
        watcher_process.assert_running()
        since = log.read_text(errors="replace")[start:]
        lost = since.find("lost the watcher lock connection; stopped watching, reconnecting")
        return lost >= 0 and "this watcher is now active" in since[lost:]

    wait_until(reconnected, timeout=60, interval=0.2, message="the watcher to take its lock again")
    # And it observes again: an allocation made after the restart becomes ready.
    api = ApiClient(issue_token("sh", ["allocations"]))
    response = api.post(
        "/v1/sandbox-pools",
        {
            "name": "after-restart",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    assert response.status_code == 201
    assert wait_for_phase("after-restart", Phase.READY, timeout=90).ready_replicas == 1
    watcher_process.assert_running()
