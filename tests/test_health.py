from __future__ import annotations

import pytest
from django.test import Client, override_settings

from contextsvc.kube.client import reset_api_client


def test_healthz_is_the_v1_contract(client: Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_refuses_other_methods(client: Client) -> None:
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_names_the_dependency_that_failed(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    reset_api_client()
    # Port 1 on loopback is never a Redis server.
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/readyz")
    reset_api_client()

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["failed"] == ["kubernetes", "redis"]
    assert body["checks"]["postgres"] == "ok"
    assert body["checks"]["redis"].startswith("error: ConnectionError: ")
    assert body["checks"]["kubernetes"] == (
        "error: KubeNotConfigured: KUBECONFIG is not set and this process is not running "
        "inside a cluster"
    )


@pytest.mark.django_db
@pytest.mark.cluster
def test_readyz_is_ok_when_everything_answers(client: Client, kube_cluster: object) -> None:
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"postgres": "ok", "redis": "ok", "kubernetes": "ok"},
        "features": {"sandboxes": True, "extensions": True, "missing": []},
    }
