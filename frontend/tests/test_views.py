"""Every page checks the role on the server; forms need CSRF; the allocations list costs a
fixed number of queries whatever the page."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Allocation, Phase, Strategy
from allocations.tests.factories import AllocationFactory
from approvals.models import ApprovalRequest
from approvals.services.check import approval_check
from approvals.tests.factories import ApprovalRequestFactory, GrantFactory
from contextsvc.core import capabilities
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups
from frontend.tests.support import client_for
from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.kube import HARDENED_POD_SPEC, make_template, wait_for_phase
from tests.support.processes import wait_until
from tests.support.unchanged import kept

pytestmark = [pytest.mark.django_db, pytest.mark.cluster]

VIEWER_PAGES = [
    "/",
    "/allocations/",
    "/approvals/",
    "/approvals/analytics/",
    "/notifications/",
    "/profiles/",
    "/audit/",
    "/cluster/",
]
ADMIN_PAGES = ["/allocations/new/", "/clients/", "/users/", "/profiles/new/"]


@pytest.fixture(autouse=True)
def _cluster(kube_cluster: object) -> None:
    ensure_role_groups()


def test_anonymous_visitors_are_sent_to_log_in() -> None:
    for path in VIEWER_PAGES + ADMIN_PAGES:
        response = Client().get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/login/?next="), path


@pytest.mark.parametrize(
    ("role", "viewer_status", "admin_status"),
    [(None, 403, 403), ("viewer", 200, 403), ("approver", 200, 403), ("admin", 200, 200)],
)
def test_pages_follow_the_role(role: str | None, viewer_status: int, admin_status: int) -> None:
    client = client_for(role)

    assert {path: client.get(path).status_code for path in VIEWER_PAGES} == dict.fromkeys(
        VIEWER_PAGES, viewer_status
    )
    assert {path: client.get(path).status_code for path in ADMIN_PAGES} == dict.fromkeys(
        ADMIN_PAGES, admin_status
    )


def test_a_refused_page_says_which_role_it_needs() -> None:
    refused = client_for(None).get("/")

    assert refused.status_code == 403
    page = refused.content.decode()
    assert "<p>this needs the viewer role.</p>" in page
    assert "Your account has no role yet" in page
    page = client_for("viewer").get("/clients/").content.decode()
    assert "<p>this needs the admin role.</p>" in page
    assert "with the viewer role." in page


def _pending() -> ApprovalRequest:
    return ApprovalRequestFactory.create(command="pip install x", context_id="c")


def test_only_approvers_decide_and_a_refused_decision_changes_nothing() -> None:
    request = _pending()
    viewer, approver = client_for("viewer"), client_for("approver")

    with kept():
        refused = viewer.post(f"/approvals/{request.pk}/decide/", {"decision": "approve"})
        forged = viewer.post(
            f"/approvals/{request.pk}/decide/",
            {"decision": "approve"},
            headers={"Accept": "application/json"},
        )
        scripted = viewer.post(
            f"/approvals/{request.pk}/decide/",
            {"decision": "approve"},
            headers={"Accept": "application/json, text/plain, */*"},
        )
    page = viewer.get("/approvals/").content.decode()
    assert (refused.status_code, refused["Content-Type"]) == (403, "text/html; charset=utf-8")
    # Whoever asks for JSON gets the API's error shape, not an HTML page.
    for answer in (forged, scripted):
        assert (answer.status_code, answer.json()) == (
            403,
            {"error": "forbidden", "message": "this needs the approver role"},
        )
    assert f'id="approval-{request.pk}"' in page
    assert "data-decide hidden" in page

    accepted = approver.post(
        f"/approvals/{request.pk}/decide/",
        {"decision": "deny", "reason": "no"},
        headers={"Accept": "application/json"},
    )
    assert accepted.status_code == 200
    decided = accepted.json()
    assert (decided["id"], decided["status"], decided["decision"], decided["reason"]) == (
        str(request.pk),
        "denied",
        "deny",
        "no",
    )
    with kept():
        again = approver.post(
            f"/approvals/{request.pk}/decide/",
            {"decision": "approve"},
            headers={"Accept": "application/json"},
        )
    assert again.status_code == 409
    assert again.json() == {
        "error": "conflict",
        "message": f"approval request {request.pk} is already denied",
    }


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (
            {"decision": "maybe"},
            "decision must be approve, deny, approve_edited or approve_similar",
        ),
        ({"decision": "deny", "reason": "x" * 1001}, "reason must be at most 1000 characters"),
        (
            {"decision": "approve_similar", "expires_in": "1h"},
            "expiresInSeconds must be an integer",
        ),
        (
            {"decision": "approve", "version": "not-a-version"},
            "version must be a request's version as the API shows it (32 hexadecimal "
            "characters), or absent",
        ),
    ],
)
def test_the_dashboard_refuses_a_decision_as_the_api_does(
    form: dict[str, str], message: str
) -> None:
    """The card's form is read by the API's parser: the same refusals, in its words, and
    nothing changes (the form once capped the reason where the API did not)."""
    request = _pending()
    approver = client_for("approver")

    with kept():
        refused = approver.post(
            f"/approvals/{request.pk}/decide/", form, headers={"Accept": "application/json"}
        )

    assert (refused.status_code, refused.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )


def test_overview_activity_leaves_out_routine_allows() -> None:
    SandboxProfileFactory.create(
        name="data-agent",
        rules={"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}},
    )
    for command in ("ls", "curl https://evil.example"):
        approval_check(
            operation={"kind": "shell", "command": command},
            context_id="ctx-seen",
            agent_type="data-agent",
            actor="api:agent",
        )

    page = client_for("viewer").get("/").content.decode()

    assert "<code>approval.refuse</code>" in page
    assert "<code>approval.allow</code>" not in page
    assert "<code>approval.allow</code>" in client_for("admin").get("/audit/").content.decode()


def test_the_cluster_page_lists_each_crd_with_its_version() -> None:
    capabilities.refresh()
    page = client_for("viewer").get("/cluster/").content.decode()

    for crd in (
        "sandboxes.agents.x-k8s.io",
        "sandboxtemplates.extensions.agents.x-k8s.io",
        "sandboxwarmpools.extensions.agents.x-k8s.io",
        "sandboxclaims.extensions.agents.x-k8s.io",
    ):
        assert (
            f"<tr><td><code>{crd}</code></td><td><code>v1beta1</code></td>"
            '<td><span class="badge phase-ready">served</span></td></tr>'
        ) in page


def test_the_cluster_page_lists_agent_workspaces() -> None:
    """Found by hand: "No agent workspaces." while two existed (the view never passed them)."""
    from workspaces.models import AgentWorkspace, WorkspaceContext

    workspace = AgentWorkspace.objects.create(
        agent_type="weather-service",
        namespace="team1",
        initial_size="5Gi",
        max_size="20Gi",
        requested_bytes=5 * 2**30,
        usage_bytes=2**30,
        status=AgentWorkspace.Status.READY,
        created_by="user:test",
    )
    now = timezone.now()
    for context_id, status in (("ctx-1", "active"), ("ctx-2", "active"), ("old", "expired")):
        WorkspaceContext.objects.create(
            workspace=workspace,
            context_id=context_id,
            status=status,
            created_at=now,
            last_accessed_at=now,
            ttl_seconds=3600,
        )

    page = client_for("viewer").get("/cluster/").content.decode()

    assert "No agent workspaces." not in page
    assert "<tr><td>weather-service</td><td>team1</td><td>5.0\xa0GB" in page
    assert '<span class="label">20%</span>' in page
    assert "<td>2</td>" in page  # two active contexts (the expired one is not counted)


def test_forms_need_the_csrf_token() -> None:
    request = _pending()
    approver = client_for("approver", csrf=True)

    with kept():
        response = approver.post(f"/approvals/{request.pk}/decide/", {"decision": "approve"})

    assert response.status_code == 403


def test_the_create_form_refuses_what_the_api_refuses() -> None:
    admin = client_for("admin")

    with kept():
        response = admin.post(
            "/allocations/new/",
            {"name": "Bad_Name", "replicas": "1", "strategy": "dedicated", "size": "1Gi"},
        )

    assert response.status_code == 200
    assert (
        "name must be a lowercase Kubernetes name no longer than 50 characters"
        in response.content.decode()
    )


def _bulk(count: int) -> None:
    Allocation.objects.bulk_create(
        Allocation(
            name=f"a-{i:05d}",
            namespace="ns",
            replicas=3,
            strategy="shared",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteMany",
            phase="ready" if i % 3 else "provisioning",
            ready_replicas=3 if i % 3 else 1,
            requester="api:sh",
        )
        for i in range(count)
    )


def test_allocations_list_costs_the_same_queries_on_any_page() -> None:
    _bulk(240)
    viewer = client_for("viewer")
    counts: dict[str, Any] = {}
    for query in ("", "?page=4", "?phase=ready&page=2", "?q=a-001&strategy=shared"):
        with CaptureQueriesContext(connection) as captured:
            response = viewer.get(f"/allocations/{query}")
        assert response.status_code == 200
        counts[query] = len(captured)
    assert len(set(counts.values())) == 1, counts
    page = viewer.get("/allocations/?page=2").content.decode()
    assert page.count('<tr data-id="') == 50
    assert "page 2 of 5" in page


def test_the_table_the_list_fetches_live_is_the_lists_own_for_the_same_query() -> None:
    _bulk(60)
    viewer = client_for("viewer")
    for query in ("", "?page=2", "?phase=ready&q=a-00"):
        page = viewer.get(f"/allocations/{query}").content.decode()
        table = viewer.get(f"/allocations/rows/{query}")
        assert table.status_code == 200
        body = table.content.decode().split("\n", 1)[1]  # after the template's comment
        assert body.strip() in page
        assert f'data-src="/allocations/rows/{html.escape(query)}"' in page
    assert 'data-total="60"' in viewer.get("/allocations/rows/").content.decode()
    assert client_for(None).get("/allocations/rows/").status_code == 403
    assert Client().get("/allocations/rows/").status_code == 302


def test_a_weak_password_is_refused_with_the_validators_reasons() -> None:
    """The password validators are configured; the Users page used to skip them."""
    admin = client_for("admin")

    with kept():
        response = admin.post(
            "/users/", {"username": "weak", "password": "password1234", "role": "viewer"}
        )

    assert response.status_code == 200
    assert "This password is too common." in response.content.decode()
    strong = admin.post(
        "/users/", {"username": "strong", "password": "correct horse battery 7", "role": "viewer"}
    )
    assert strong.status_code == 302
    assert User.objects.filter(username="strong").exists()


def test_pages_show_json_as_json_times_with_their_zone_and_no_endless_badge(
    namespace: str,
) -> None:
    """Found by hand: Python dict reprs on profile pages, grant expiry without a time zone,
    a live badge that said "connecting…" for ever without JavaScript, no template picker."""
    make_template(namespace, "picked", {"spec": HARDENED_POD_SPEC})
    capabilities.refresh()
    SandboxProfileFactory.create(
        name="shown",
        resources={"limits": {"cpu": "500m"}},
        egress=[{"cidr": "10.0.0.0/8", "ports": [443]}],
    )
    GrantFactory.create(rule="shell(ls:*)", expires_at=timezone.now() + timedelta(hours=1))
    viewer, admin = client_for("viewer"), client_for("admin")

    detail = viewer.get("/profiles/shown/").content.decode()
    edit = admin.get("/profiles/shown/edit/").content.decode()
    queue = viewer.get("/approvals/").content.decode()
    allocations = viewer.get("/allocations/").content.decode()

    assert "{&#x27;limits&#x27;" not in detail
    assert "{'limits'" not in detail
    assert '"cpu": "500m"' in detail.replace("&quot;", '"')
    assert '"cidr": "10.0.0.0/8"' in detail.replace("&quot;", '"')
    assert f'<option value="{namespace}/picked">{namespace}/picked</option>' in edit
    assert '"limits": {' in edit.replace("&quot;", '"')
    assert " UTC</time>" in queue
    assert (
        'id="live-indicator" class="live" data-state="connecting" title="Live updates" hidden>'
        in allocations
    )
    assert "<noscript>" in allocations


def test_approve_and_allow_similar_from_the_queue_grants_for_this_context() -> None:
    """The dashboard decides through the same service as the API; its scope picker starts
    on "this context", so a form without one grants for the request's context."""
    SandboxProfileFactory.create(name="data-agent")
    request = ApprovalRequestFactory.create(command="pip install pandas", context_id="ctx-7")

    response = client_for("approver").post(
        f"/approvals/{request.pk}/decide/",
        {"decision": "approve_similar", "reason": "the usual"},
        headers={"Accept": "application/json"},
    )

    assert response.status_code == 200
    decided = response.json()
    assert (decided["status"], decided["decidedBy"], decided["reason"]) == (
        "approved",
        "user:user-approver",
        "the usual",
    )
    grant = decided["grant"]
    assert (grant["rule"], grant["scope"], grant["contextId"], grant["expiresAt"]) == (
        "shell(pip install pandas:*)",
        "context",
        "ctx-7",
        None,
    )


def test_documents_are_imported_and_refused_like_the_api_does() -> None:
    SandboxProfileFactory.create(
        name="data-agent", rules={"permissions": {"allow": ["shell(ls:*)"]}}
    )
    admin = client_for("admin")

    def upload(document: str, content: bytes) -> str:
        response = admin.post(
            f"/profiles/data-agent/{document}/import/",
            {"document": SimpleUploadedFile(f"{document}.json", content)},
            follow=True,
        )
        assert response.redirect_chain == [("/profiles/data-agent/", 302)]
        return response.content.decode()

    with kept():
        broken = upload("settings", b'{"permissions": {"allow": ["shell(ls"]}}')
        not_json = upload("sources", b"{nope")
    assert (
        "settings.json refused: permissions.allow[0]: &quot;shell(ls&quot; is missing its "
        "closing parenthesis"
    ) in broken
    assert "sources.json refused: Expecting property name enclosed in double quotes" in not_json
    profile = SandboxProfile.objects.get(name="data-agent")
    assert (profile.rules, profile.sources) == ({"permissions": {"allow": ["shell(ls:*)"]}}, {})

    imported = upload("settings", b'{"permissions": {"deny": ["shell(curl:*)"]}}')

    assert "settings.json imported." in imported
    profile.refresh_from_db()
    assert profile.rules == {"permissions": {"allow": [], "deny": ["shell(curl:*)"]}}
    assert admin.post("/profiles/data-agent/policy/import/").status_code == 404


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service")
def test_the_objects_of_a_ready_allocation_say_what_each_one_is_doing(namespace: str) -> None:
    api = ApiClient(issue_token("sh", ["allocations"]))
    created = api.post(
        "/v1/sandbox-pools",
        {
            "name": "seen",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    assert created.status_code == 201
    allocation = wait_for_phase("seen", Phase.READY, timeout=90)
    viewer = client_for("viewer")

    def summaries() -> dict[tuple[str, str], str]:
        answer = viewer.get(f"/allocations/{allocation.pk}/objects/")
        assert answer.status_code == 200
        return {(o["kind"], o["name"]): o["status"] for o in answer.json()["objects"]}

    # The PVC's phase follows the binder; wait for it rather than for an arbitrary time.
    wait_until(
        lambda: summaries().get(("PersistentVolumeClaim", "seen-workspace-0")) == "Bound",
        timeout=30,
        message="the PVC to show as Bound",
    )
    found = summaries()

    assert found == {
        ("NetworkPolicy", "seen-sandboxes"): "in force",
        ("PersistentVolumeClaim", "seen-workspace-0"): "Bound",
        ("Sandbox", "sandbox-seen-0"): "Ready=True (DependenciesReady)",
        ("Pod", "sandbox-seen-0"): "Running, ready",
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service")
def test_admins_suspend_resume_scale_and_extend_from_the_page(namespace: str) -> None:
    api = ApiClient(issue_token("sh", ["allocations"]))
    assert (
        api.post(
            "/v1/sandbox-pools",
            {
                "name": "paged",
                "replicas": 1,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
            },
        ).status_code
        == 201
    )
    allocation = wait_for_phase("paged", Phase.READY, timeout=90)
    admin, viewer = client_for("admin", csrf=False), client_for("viewer", csrf=False)
    last_id = AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0

    with kept(namespace):
        refused = viewer.post(f"/allocations/{allocation.pk}/suspend/")
    assert refused.status_code == 403

    page = admin.get(f"/allocations/{allocation.pk}/").content.decode()
    assert f'action="/allocations/{allocation.pk}/suspend/"' in page
    admin.post(f"/allocations/{allocation.pk}/suspend/")
    assert Allocation.objects.get(pk=allocation.pk).phase == Phase.SUSPENDED
    page = admin.get(f"/allocations/{allocation.pk}/").content.decode()
    assert f'action="/allocations/{allocation.pk}/resume/"' in page
    assert 'class="badge phase-suspended"' in page
    admin.post(f"/allocations/{allocation.pk}/resume/")
    admin.post(f"/allocations/{allocation.pk}/scale/", {"replicas": "2"})
    admin.post(f"/allocations/{allocation.pk}/extend/", {"hours": "24"})
    bad = admin.post(f"/allocations/{allocation.pk}/scale/", {"replicas": "0"}, follow=True)

    changed = Allocation.objects.get(pk=allocation.pk)
    assert (changed.phase in (Phase.PROVISIONING, Phase.READY), changed.replicas) == (True, 2)
    assert changed.expires_at is not None
    assert (
        timedelta(hours=23, minutes=59) < changed.expires_at - timezone.now() <= timedelta(hours=24)
    )
    assert "replicas must be between 1 and 100" in bad.content.decode()
    assert list(
        AuditEntry.objects.filter(target="paged", id__gt=last_id)
        .order_by("id")
        .values_list("actor", "action")
    ) == [
        ("user:user-admin", "allocation.suspend"),
        ("user:user-admin", "allocation.resume"),
        ("user:user-admin", "allocation.update"),
        ("user:user-admin", "allocation.update"),
    ]


def test_a_contained_allow_is_marked_in_the_audit_log_and_on_the_profile() -> None:
    rules = {"permissions": {"allow": ["shell(python3:*)"]}}
    SandboxProfileFactory.create(name="held-agent", rules=rules, executor_isolation="namespaces")
    SandboxProfileFactory.create(name="plain-agent", rules=rules, executor_isolation="none")
    for agent_type in ("held-agent", "plain-agent"):
        approval_check(
            operation={"kind": "shell", "command": "python3 analysis.py"},
            context_id="ctx-held",
            agent_type=agent_type,
            actor="api:agent",
        )

    audit = client_for("admin").get("/audit/").content.decode()
    viewer = client_for("viewer")
    held = viewer.get("/profiles/held-agent/").content.decode()
    plain = viewer.get("/profiles/plain-agent/").content.decode()

    # One allow, contained (the executor holds it); the other agent type's run is asked.
    assert audit.count('<span class="badge decision-contained"') == 1
    assert audit.count("<code>approval.allow</code>") == 1
    assert ApprovalRequest.objects.filter(agent_type="plain-agent", status="pending").count() == 1
    assert "<dt>Interpreter runs</dt><dd>contained:" in held
    assert "<dt>Interpreter runs</dt><dd>asked:" in plain


def test_an_agent_type_without_an_enforcing_executor_is_marked_rules_only() -> None:
    """Issue 44: where no executor holds a command to what was judged, the engine alone is
    an advisor; its profile, its requests' cards and pages say so, the others' do not."""
    rules = {"permissions": {"allow": ["shell(ls:*)"]}}
    SandboxProfileFactory.create(name="held-agent", rules=rules, executor_isolation="namespaces")
    SandboxProfileFactory.create(name="plain-agent", rules=rules, executor_isolation="none")
    requests = {
        agent_type: approval_check(
            operation={"kind": "shell", "command": "make build"},
            context_id="ctx-1",
            agent_type=agent_type,
            actor="api:agent",
        ).request
        for agent_type in ("held-agent", "plain-agent")
    }
    viewer = client_for("viewer")
    marked = '<span class="badge warn">rules only — not enforced</span>'

    pages = {
        agent_type: (
            viewer.get(f"/profiles/{agent_type}/").content.decode(),
            viewer.get(f"/approvals/{request.pk}/").content.decode(),
        )
        for agent_type, request in requests.items()
        if request is not None
    }
    queue = viewer.get("/approvals/").content.decode()

    assert sorted(pages) == ["held-agent", "plain-agent"]
    for page in pages["plain-agent"]:
        assert marked in page
    for page in pages["held-agent"]:
        assert marked not in page
    assert (
        "<dt>Enforcement</dt><dd>the executor's sandbox holds every command"
        in (pages["held-agent"][0])
    )
    # The queue's cards: one shown, one hidden (the template's own is hidden too).
    assert queue.count('data-field="unenforced"') == 3
    assert queue.count('data-field="unenforced" title="') == 3
    for agent_type, hidden in (("plain-agent", 0), ("held-agent", 1)):
        request = requests[agent_type]
        assert request is not None
        card = queue.split(f'id="approval-{request.pk}"')[1].split("</header>")[0]
        assert card.count(" hidden>rules only — not enforced") == hidden


def test_the_overview_shows_the_warm_pool_hit_ratio_of_the_last_hour() -> None:
    """Issue 32: docs/profiles.md said the overview shows it; it plotted size and claims."""
    now = timezone.now()
    for name, warm, cold in (("w-1", 2, 0), ("w-2", 1, 1), ("w-old", 0, 5)):
        AllocationFactory.create(
            name=name, strategy=Strategy.WARMPOOL, warm_pool="agents", replicas=warm + cold,
            warm_claims=warm, cold_claims=cold, claims_bound_at=now, phase=Phase.READY,
        )  # fmt: skip
    # Requested two hours ago: not in the last hour.
    Allocation.objects.filter(name="w-old").update(requested_at=now - timedelta(hours=2))

    page = client_for("viewer").get("/").content.decode()

    shown = '<span data-chart-total="warmPools.hitRatio" id="warm-hit-ratio">'
    assert f"{shown}75 % warm (3 of 4 claims)</span>" in page


def test_the_cluster_page_says_what_each_table_keeps_and_retention_removed() -> None:
    released_at = timezone.now() - timedelta(days=3)
    AllocationFactory.create(name="live-one")
    gone = AllocationFactory.create(name="gone-one", phase=Phase.RELEASED)
    Allocation.objects.filter(pk=gone.pk).update(released_at=released_at)

    page = client_for("viewer").get("/cluster/").content.decode()

    assert (
        "<tr><td><code>allocations.Allocation</code></td><td>2</td><td>30 days</td>"
        f"<td>{released_at:%Y-%m-%d %H:%M}</td><td>0</td></tr>"
    ) in page
    assert (
        "<tr><td><code>core.AuditEntry</code></td>"
        f'<td>{AuditEntry.objects.count()}</td><td><span class="muted">ever</span></td>'
        '<td><span class="muted">—</span></td><td>0</td></tr>'
    ) in page
