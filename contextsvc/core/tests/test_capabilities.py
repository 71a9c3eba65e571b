"""A cluster without agent-sandbox: features switch off with a clear answer, nothing crashes.

The cluster here is a second, empty API server over the test etcd (testenv's
``bare_apiserver``): no CRDs at all, then only the core Sandbox CRD."""

from __future__ import annotations

import os
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.test import Client

from contextsvc.core import capabilities
from contextsvc.kube import client as kube
from contextsvc.kube.objects.claim import KNOWN_RELEASES, RELEASE_V05, RELEASE_V1
from contextsvc.kube.objects.kinds import AGENT_SANDBOX_VERSION, SANDBOX, SANDBOX_GROUP, ApiKind
from frontend.tests.support import client_for
from testenv import bare_apiserver, build
from testenv.cluster.bootstrap import sandbox_crds
from tests.support.api import ApiClient, issue_token
from tests.support.kube import admin_create
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]


@pytest.fixture
def bare_cluster(kube_cluster: object) -> Iterator[Path]:
    previous = os.environ["KUBECONFIG"]
    with bare_apiserver() as kubeconfig:
        os.environ["KUBECONFIG"] = str(kubeconfig)
        kube.reset_api_client()
        try:
            yield kubeconfig
        finally:
            os.environ["KUBECONFIG"] = previous
            kube.reset_api_client()
            capabilities.refresh()


def install_core_crd_only() -> None:
    core = next(crd for crd in sandbox_crds() if crd["metadata"]["name"] == SANDBOX.crd_name)
    admin_create(
        ApiKind(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            namespaced=False,
        ),
        core,
    )
    import time

    deadline = time.monotonic() + 30
    while kube.served_resources(SANDBOX_GROUP, AGENT_SANDBOX_VERSION) is None:
        assert time.monotonic() < deadline, "the Sandbox CRD was not served in time"
        time.sleep(0.2)


MISSING_CORE = (
    "the cluster does not serve sandboxes.agents.x-k8s.io/v1beta1: install the agent-sandbox "
    "CRDs and controller"
)


def test_without_any_crd_allocations_answer_503_and_the_service_stays_healthy(
    bare_cluster: Path,
) -> None:
    capabilities.refresh()
    api = ApiClient(issue_token("serverless-harness", ["allocations"]))

    with kept():
        created = api.post(
            "/v1/sandbox-pools",
            {
                "name": "p",
                "replicas": 1,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )

    assert created.status_code == 503
    assert created.json() == {"error": "unavailable", "message": MISSING_CORE}
    assert api.get("/v1/sandbox-pools").json() == {"items": []}
    caps = api.get("/v1/capabilities").json()
    assert (caps["sandboxes"], caps["extensions"]) == (False, False)
    assert caps["missing"] == [
        "sandboxes.agents.x-k8s.io",
        "sandboxtemplates.extensions.agents.x-k8s.io",
        "sandboxwarmpools.extensions.agents.x-k8s.io",
        "sandboxclaims.extensions.agents.x-k8s.io",
    ]
    ready = Client().get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["features"] == {
        "sandboxes": False,
        "extensions": False,
        "missing": caps["missing"],
    }


def test_without_extensions_warm_pools_and_template_profiles_answer_400(bare_cluster: Path) -> None:
    install_core_crd_only()
    capabilities.refresh()
    api = ApiClient(issue_token("serverless-harness", ["allocations"]))
    admin = ApiClient(issue_token("platform-admin", ["admin"]))
    expected = (
        "the agent-sandbox extensions are not installed in this cluster (missing "
        "sandboxtemplates.extensions.agents.x-k8s.io/v1beta1, "
        "sandboxwarmpools.extensions.agents.x-k8s.io/v1beta1, "
        "sandboxclaims.extensions.agents.x-k8s.io/v1beta1); run the controller with "
        "--extensions and apply its CRDs"
    )

    with kept():
        warm = api.post("/v1/sandbox-pools", {"name": "w", "replicas": 1, "warmPoolRef": "pool"})
        profile = admin.post(
            "/v1/profiles",
            {"name": "t", "source": "template", "template": {"namespace": "default", "name": "x"}},
        )

    assert warm.status_code == 400
    assert warm.json() == {
        "error": "invalid_request",
        "message": f"warm-pool allocations need {expected[4:]}",
    }
    assert profile.status_code == 400
    assert profile.json()["problems"] == {
        "template": [f"profile 't' copies a SandboxTemplate, but {expected}"],
    }
    caps = api.get("/v1/capabilities").json()
    assert (caps["sandboxes"], caps["extensions"]) == (True, False)
    out = StringIO()
    from django.core.management import call_command

    call_command("check", stdout=out)
    assert "no issues" in out.getvalue()


def test_the_agent_sandbox_release_is_read_from_the_claims_schema(kube_cluster: object) -> None:
    """Issue 45: which release a cluster runs (v1.0 added status.sandbox.serviceFQDN to the
    claim), said on the cluster page beside the releases known to work. ``make test`` runs
    v1.0.1; ``make test-compat`` runs this again against v0.5.6."""
    found = capabilities.refresh()

    expected = RELEASE_V05 if build.agent_sandbox_before_v1() else RELEASE_V1
    assert found.release == expected
    assert "known to work: v1.0.1, v0.5.6." in found.release_note()
    assert KNOWN_RELEASES == build.AGENT_SANDBOX_SUPPORTED
    page = client_for("admin").get("/cluster/").content.decode()
    assert f"agent-sandbox {expected}" in page


def test_a_cluster_without_the_extensions_has_no_release(bare_cluster: Path) -> None:
    found = capabilities.refresh()

    assert (found.release, found.release_note()) == (
        "",
        "agent-sandbox release unknown (no SandboxClaim schema); known to work: v1.0.1, v0.5.6.",
    )
