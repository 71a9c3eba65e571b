"""The dashboard's WebSocket, through the real web process (uvicorn, Channels, the Redis
channel layer): only signed-in people with a role, from our own origin, on a known topic."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.models import Group, User
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from allocations.tests.factories import AllocationFactory
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core import services
from contextsvc.core.users import ensure_role_groups
from contextsvc.infra import events
from frontend.tests.support import client_for
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token, run_report

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.cluster]


def session_cookie(role: str | None) -> str:
    return f"sessionid={client_for(role).cookies['sessionid'].value}"


def socket_url(web_server: str, topic: str) -> str:
    return f"ws://{urlsplit(web_server).netloc}/ws/live/?topic={topic}"


@pytest.fixture(autouse=True)
def _roles() -> None:
    ensure_role_groups()


def test_a_viewer_gets_a_snapshot_then_events(web_server: str) -> None:
    headers = {"Cookie": session_cookie("viewer")}
    with connect(
        socket_url(web_server, "approvals"), origin=Origin(web_server), additional_headers=headers
    ) as socket:
        snapshot = json.loads(socket.recv(timeout=10))
        # What contextsvc.infra.events sends when a request is queued.
        async_to_sync(get_channel_layer().group_send)(
            events.APPROVALS,
            {"type": "live.event", "event": {"type": "approval.created", "data": {"id": "x"}}},
        )
        event = json.loads(socket.recv(timeout=10))

    assert (snapshot["type"], snapshot["topic"]) == ("snapshot", "approvals")
    assert event == {"type": "approval.created", "data": {"id": "x"}}


@pytest.mark.parametrize(
    ("topic", "role", "origin"),
    [
        ("overview", "anonymous", "same"),  # not signed in
        ("approvals", None, "same"),  # signed in, but no role
        ("nonsense", "viewer", "same"),  # no such topic
        ("approval:not-a-request", "viewer", "same"),  # no request could have this id
        ("approvals", "viewer", "https://evil.example"),  # another site's page
    ],
)
def test_the_handshake_is_refused(
    web_server: str, topic: str, role: str | None, origin: str
) -> None:
    headers = {} if role == "anonymous" else {"Cookie": session_cookie(role)}

    with pytest.raises(InvalidStatus) as excinfo:
        connect(
            socket_url(web_server, topic),
            origin=Origin(web_server if origin == "same" else origin),
            additional_headers=headers,
        )

    assert excinfo.value.response.status_code == 403


def test_a_resync_message_answers_with_a_fresh_snapshot(web_server: str) -> None:
    SandboxProfileFactory.create(name="data-agent")
    headers = {"Cookie": session_cookie("viewer")}
    with connect(
        socket_url(web_server, "approvals"), origin=Origin(web_server), additional_headers=headers
    ) as socket:
        first = json.loads(socket.recv(timeout=10))
        # Written straight to the database: no event announces it, only a snapshot shows it.
        waiting = ApprovalRequestFactory.create()
        socket.send(json.dumps({"type": "resync"}))
        second = json.loads(socket.recv(timeout=10))
        socket.send(json.dumps({"type": "something else"}))
        socket.send(json.dumps(["not", "an", "object"]))
        socket.send(json.dumps({"type": "resync"}))
        third = json.loads(socket.recv(timeout=10))

    assert first == {"type": "snapshot", "topic": "approvals", "data": {"pending": {}}}
    assert (second["type"], list(second["data"]["pending"])) == ("snapshot", [str(waiting.pk)])
    assert second["data"]["pending"][str(waiting.pk)]["normalised"] == "pip install pandas"
    # Other messages are ignored: the next answer is the next resync's.
    assert third == second


@pytest.mark.parametrize("change", ["demoted", "deactivated"])
def test_a_person_who_may_no_longer_see_the_queue_hears_nothing_more(
    web_server: str, change: str
) -> None:
    headers = {"Cookie": session_cookie("viewer")}
    event = {"type": "live.event", "event": {"type": "approval.created", "data": {"id": "y"}}}
    with connect(
        socket_url(web_server, "approvals"), origin=Origin(web_server), additional_headers=headers
    ) as socket:
        json.loads(socket.recv(timeout=10))  # the snapshot
        person = User.objects.get(username="user-viewer")
        if change == "demoted":
            person.groups.remove(*Group.objects.all())
        else:
            User.objects.filter(pk=person.pk).update(is_active=False)

        async_to_sync(get_channel_layer().group_send)(events.APPROVALS, event)

        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)

    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403


def after_created(socket: Any) -> Any:
    """The next message, past the request's own ``approval.created``: the sockets open
    after the POST returned, and its announcement (sent after commit, from another
    thread) may reach them or not."""
    message = json.loads(socket.recv(timeout=10))
    if message["type"] == "approval.created":
        message = json.loads(socket.recv(timeout=10))
    return message


def test_a_requests_page_hears_its_decision_and_its_run_and_the_queue_not_its_run(
    web_server: str,
) -> None:
    SandboxProfileFactory.create(name="data-agent")
    agent = ApiClient(issue_token("agent-1", ["agent"]))
    approver = ApiClient(issue_token("alice", ["approver"]))
    asked = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "data-agent",
            "operation": {"kind": "shell", "command": "pip install pandas"},
        },
    ).json()
    headers = {"Cookie": session_cookie("viewer")}
    origin = Origin(web_server)
    with (
        connect(
            socket_url(web_server, f"approval:{asked['id']}"),
            origin=origin,
            additional_headers=headers,
        ) as page,
        connect(
            socket_url(web_server, "approvals"), origin=origin, additional_headers=headers
        ) as queue,
    ):
        snapshot = json.loads(page.recv(timeout=10))
        json.loads(queue.recv(timeout=10))
        decided = approver.post(
            f"/v1/approvals/{asked['id']}/decision",
            {"decision": "approve", "version": asked["version"]},
        )
        assert decided.status_code == 200
        on_page = [after_created(page)]
        on_queue = [after_created(queue)]
        ran = agent.post(
            "/v1/runs",
            run_report(asked["id"], "pip install pandas", duration_ms=1200, stdout_bytes=10),
        )
        assert ran.status_code == 201
        on_page.append(json.loads(page.recv(timeout=10)))
        # Anything the queue had been sent about the run would come before this answer.
        queue.send(json.dumps({"type": "resync"}))
        on_queue.append(json.loads(queue.recv(timeout=10)))

    assert (snapshot["topic"], snapshot["data"]["request"]["id"]) == (
        f"approval:{asked['id']}",
        asked["id"],
    )
    assert snapshot["data"]["request"]["status"] == "pending"
    assert [(m["type"], m["data"]["id"], m["data"]["status"]) for m in on_page] == [
        ("approval.decided", asked["id"], "approved"),
        ("approval.ran", asked["id"], "approved"),
    ]
    assert [m["type"] for m in on_queue] == ["approval.decided", "snapshot"]


def test_with_two_teams_a_person_hears_only_their_teams_rows(web_server: str) -> None:
    viewer_cookie, admin_cookie = session_cookie("viewer"), session_cookie("admin")
    SandboxProfileFactory.create(name="data-agent")
    research = services.team_create(name="research", actor="system:test")
    services.person_set_team(
        user=User.objects.get(username="user-viewer"), team=research, actor="system:test"
    )
    ours = ApiClient(issue_token("research-agent", ["agent"], team=research))
    theirs = ApiClient(issue_token("default-agent", ["agent"]))

    def ask(agent: ApiClient, command: str) -> Any:
        return agent.post(
            "/v1/approvals",
            {
                "contextId": "ctx-1",
                "agentType": "data-agent",
                "operation": {"kind": "shell", "command": command},
            },
        ).json()

    before = ask(theirs, "pip install requests")  # the default team's, already waiting
    origin = Origin(web_server)
    with (
        connect(
            socket_url(web_server, "approvals"),
            origin=origin,
            additional_headers={"Cookie": viewer_cookie},
        ) as viewer,
        connect(
            socket_url(web_server, "approvals"),
            origin=origin,
            additional_headers={"Cookie": admin_cookie},
        ) as admin,
    ):
        seen = json.loads(viewer.recv(timeout=10))
        everything = json.loads(admin.recv(timeout=10))
        other = ask(theirs, "pip install numpy")
        mine = ask(ours, "pip install pandas")
        heard = json.loads(viewer.recv(timeout=10))
        admin_heard: list[Any] = []
        while len(admin_heard) < 2:
            message = json.loads(admin.recv(timeout=10))
            # (The first request's own announcement may come after the socket opened.)
            if message["data"]["id"] != before["id"]:
                admin_heard.append(message)
        # Anything the viewer had been sent about the other team's request would come
        # before the answer to this.
        viewer.send(json.dumps({"type": "resync"}))
        again = json.loads(viewer.recv(timeout=10))

    assert list(seen["data"]["pending"]) == []
    assert list(everything["data"]["pending"]) == [before["id"]]
    assert (heard["type"], heard["data"]["id"]) == ("approval.created", mine["id"])
    assert [(m["type"], m["data"]["id"]) for m in admin_heard] == [
        ("approval.created", other["id"]),
        ("approval.created", mine["id"]),
    ]
    assert (again["type"], list(again["data"]["pending"])) == ("snapshot", [mine["id"]])

    # Another team's request page is refused, as an unknown topic is; their own opens.
    with pytest.raises(InvalidStatus) as refused:
        connect(
            socket_url(web_server, f"approval:{other['id']}"),
            origin=origin,
            additional_headers={"Cookie": viewer_cookie},
        )
    assert refused.value.response.status_code == 403
    with connect(
        socket_url(web_server, f"approval:{mine['id']}"),
        origin=origin,
        additional_headers={"Cookie": viewer_cookie},
    ) as page:
        assert json.loads(page.recv(timeout=10))["data"]["request"]["id"] == mine["id"]


def test_with_two_teams_a_persons_allocation_pages_are_their_teams(web_server: str) -> None:
    viewer_cookie = session_cookie("viewer")
    research = services.team_create(name="research", actor="system:test")
    services.person_set_team(
        user=User.objects.get(username="user-viewer"), team=research, actor="system:test"
    )
    mine = AllocationFactory.create(name="mine", team=research, phase="ready")
    theirs = AllocationFactory.create(name="not-theirs", phase="ready")  # the default team's
    origin, headers = Origin(web_server), {"Cookie": viewer_cookie}

    with connect(
        socket_url(web_server, "allocations"), origin=origin, additional_headers=headers
    ) as socket:
        listed = json.loads(socket.recv(timeout=10))
    assert list(listed["data"]["rows"]) == [str(mine.pk)]
    with pytest.raises(InvalidStatus) as refused:
        connect(
            socket_url(web_server, f"allocation:{theirs.pk}"),
            origin=origin,
            additional_headers=headers,
        )
    assert refused.value.response.status_code == 403
    with connect(
        socket_url(web_server, f"allocation:{mine.pk}"), origin=origin, additional_headers=headers
    ) as page:
        assert list(json.loads(page.recv(timeout=10))["data"]["rows"]) == [str(mine.pk)]


def test_a_socket_opened_with_one_team_closes_when_a_second_is_made(web_server: str) -> None:
    with connect(
        socket_url(web_server, "approvals"),
        origin=Origin(web_server),
        additional_headers={"Cookie": session_cookie("viewer")},
    ) as socket:
        assert json.loads(socket.recv(timeout=10))["type"] == "snapshot"
        # It listens to every team's group; from now on the viewer may hear only the
        # default team's, so the next event closes it (the page then reopens it, narrowed).
        services.team_create(name="research", actor="system:test")
        async_to_sync(get_channel_layer().group_send)(
            events.APPROVALS,
            {"type": "live.event", "event": {"type": "approval.created", "data": {"id": "x"}}},
        )
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403
