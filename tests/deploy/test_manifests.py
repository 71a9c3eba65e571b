"""deploy/ renders with kustomize and every object is accepted by the real API server
(server-side dry run); the pods meet the restricted Pod Security Standard; the Dockerfile
passes hadolint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from devenv.system import REPO_DIR
from testenv import build, create_namespace

pytestmark = pytest.mark.cluster

DEPLOY = REPO_DIR / "deploy"
OVERLAYS = ["base", "overlays/local", "overlays/openshift"]


def render(overlay: str) -> list[dict[str, Any]]:
    kustomize = build.binaries()["kustomize"]
    output = subprocess.run(
        [str(kustomize), "build", str(DEPLOY / overlay)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(output) if doc]


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        f"{doc['kind']}/{doc['metadata']['name']}": doc["spec"]["template"]["spec"]
        for doc in docs
        if doc["kind"] in ("Deployment", "Job")
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_is_accepted_by_the_api_server(kube_cluster: Any, overlay: str) -> None:
    from kubernetes.dynamic import DynamicClient

    docs = render(overlay)
    for namespace in {doc["metadata"].get("namespace") for doc in docs} - {None}:
        create_namespace(namespace, kubeconfig=kube_cluster.kubeconfig)
    errors = []
    with kube_cluster.api_client() as api:
        dynamic = DynamicClient(api)
        for doc in docs:
            resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            try:
                resource.server_side_apply(
                    body=doc,
                    name=doc["metadata"]["name"],
                    namespace=doc["metadata"].get("namespace"),
                    field_manager="context-service-deploy-test",
                    dry_run="All",
                    force_conflicts=True,
                )
            except Exception as exc:  # noqa: BLE001 - every rejection is collected and reported
                errors.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc}")
    assert errors == []
    kinds = sorted({doc["kind"] for doc in docs})
    assert {
        "ClusterRole",
        "ConfigMap",
        "Deployment",
        "Job",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    } <= set(kinds)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_disruption_budgets_never_block_a_drain(overlay: str) -> None:
    docs = render(overlay)
    replicas = {
        doc["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]: doc["spec"][
            "replicas"
        ]
        for doc in docs
        if doc["kind"] == "Deployment"
    }
    budgets = {
        doc["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]: doc["spec"]
        for doc in docs
        if doc["kind"] == "PodDisruptionBudget"
    }

    assert sorted(budgets) == ["watcher", "web", "worker"]
    for component, spec in budgets.items():
        # An eviction is allowed whenever every replica is up, however many there are.
        assert spec == {"maxUnavailable": 1, "selector": spec["selector"]}, component
        assert replicas[component] >= 1, component


def test_egress_is_narrowed_to_the_database_redis_and_the_api_server() -> None:
    def policies(overlay: str) -> dict[str, dict[str, Any]]:
        return {
            doc["metadata"]["name"]: doc["spec"]
            for doc in render(overlay)
            if doc["kind"] == "NetworkPolicy"
        }

    base, local = policies("base"), policies("overlays/local")

    ours = {"matchLabels": {"app.kubernetes.io/name": "context-service"}}
    assert base["default-deny"] == {"podSelector": ours, "policyTypes": ["Ingress", "Egress"]}
    # The base's destinations are a placeholder that reaches nothing (TEST-NET-1): "any
    # address" on 443 would let the worker's webhooks past the notifications rule's except
    # list (policies add up). Each overlay sets them, as the local one does.
    placeholder = [{"ipBlock": {"cidr": "192.0.2.0/24"}}]
    assert [rule.get("to") for rule in base["context-service-egress"]["egress"]] == [
        None,
        placeholder,
        placeholder,
        placeholder,
    ]
    assert [
        ([port["port"] for port in rule["ports"]], rule.get("to"))
        for rule in local["context-service-egress"]["egress"]
    ] == [
        ([53, 53], None),
        ([5432], [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "postgresql"}}}]),
        ([6379], [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "redis"}}}]),
        (
            [443, 6443],
            [{"ipBlock": {"cidr": "172.18.0.0/16"}}, {"ipBlock": {"cidr": "10.96.0.1/32"}}],
        ),
    ]


PRIVATE_IPV4 = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_worker_notifications_reach_public_addresses_only(overlay: str) -> None:
    policies = {
        doc["metadata"]["name"]: doc["spec"]
        for doc in render(overlay)
        if doc["kind"] == "NetworkPolicy"
    }
    worker = {"app.kubernetes.io/name": "context-service", "app.kubernetes.io/component": "worker"}

    notifications = policies["context-service-worker-notifications"]
    assert notifications["podSelector"] == {"matchLabels": worker}
    assert [
        (rule["to"], [port["port"] for port in rule["ports"]]) for rule in notifications["egress"]
    ] == [([{"ipBlock": {"cidr": "0.0.0.0/0", "except": PRIVATE_IPV4}}], [80, 443, 25, 465, 587])]
    # No other rule for the worker opens "any address" (it would undo the except list).
    for name, spec in policies.items():
        for rule in spec.get("egress", []):
            for peer in rule.get("to", []):
                block = peer.get("ipBlock", {})
                assert (
                    block.get("cidr") not in ("0.0.0.0/0", "::/0")
                    or block.get("except") == PRIVATE_IPV4
                ), name


def test_every_pod_meets_the_restricted_standard() -> None:
    for overlay in OVERLAYS:
        specs = pod_specs(render(overlay))
        assert set(specs) == {
            "Deployment/context-service-web",
            "Deployment/context-service-worker",
            "Deployment/context-service-beat",
            "Deployment/context-service-watcher",
            "Job/context-service-migrate",
        }, overlay
        for name, spec in specs.items():
            where = f"{overlay}: {name}"
            assert spec["serviceAccountName"] == "context-service", where
            assert spec["securityContext"]["runAsNonRoot"] is True, where
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, where
            [container] = spec["containers"]
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }, where
            assert container["resources"]["requests"]["cpu"], where
            assert container["resources"]["limits"]["memory"], where
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], where
            assert container["envFrom"] == [
                {"configMapRef": {"name": "context-service"}},
                {"secretRef": {"name": "context-service-secrets"}},
            ], where
        openshift = render("overlays/openshift")
        for spec in pod_specs(openshift).values():
            assert not {"runAsUser", "runAsGroup", "fsGroup"} & set(spec["securityContext"])


def test_processes_probes_and_replicas() -> None:
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in render("base")}
    web = docs["Deployment/context-service-web"]["spec"]
    container = web["template"]["spec"]["containers"][0]
    assert (
        container["args"],
        container["livenessProbe"]["httpGet"]["path"],
        container["readinessProbe"]["httpGet"]["path"],
    ) == (["web"], "/healthz", "/readyz")
    assert docs["Deployment/context-service-beat"]["spec"]["replicas"] == 1
    assert docs["Deployment/context-service-watcher"]["spec"]["replicas"] == 2
    assert [
        docs[f"Deployment/context-service-{p}"]["spec"]["template"]["spec"]["containers"][0]["args"]
        for p in ("worker", "beat", "watcher")
    ] == [["worker"], ["beat"], ["watcher"]]
    assert docs["Job/context-service-migrate"]["spec"]["template"]["spec"]["containers"][0][
        "args"
    ] == ["migrate"]


# Settings of the README's table that a deployment does not put in the ConfigMap, and why.
SECRET_SETTINGS = {"DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CS_EMAIL_PASSWORD"}
NOT_DEPLOYED = {
    "KUBECONFIG": "pods use their service account",
    "CS_DB_POOL": "per process: manage.py serve turns it on for web only",
    "CS_TOKEN_CACHE": "per process: follows CS_DB_POOL unless set",
    "CS_STATIC_ROOT": "fixed by the image",
}
# Rows whose meaning starts like this are for make run and the tests, never a deployment.
DEV_ONLY = re.compile(r"^(dev/test|test|`make run`[^:]*):")


def readme_settings() -> dict[str, str]:
    """Variable → its meaning column, from the README's configuration table."""
    readme = (REPO_DIR / "README.md").read_text()
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \| .*? \| (.*) \|$", readme, flags=re.MULTILINE)
    return dict(rows)


def test_every_deployable_setting_is_in_the_configmap_or_the_secret() -> None:
    settings = readme_settings()
    deployable = {name for name, meaning in settings.items() if not DEV_ONLY.match(meaning)}
    config = next(d for d in render("base") if d["kind"] == "ConfigMap")

    # Nothing undocumented is set, and nothing documented is missing.
    assert sorted(set(config["data"]) - set(settings)) == []
    assert sorted(deployable - set(config["data"]) - SECRET_SETTINGS - set(NOT_DEPLOYED)) == []
    # Sanity of the classification itself: a known dev-only and a known deployable row.
    assert "CS_LOCAL_PG_PORT" not in deployable
    assert "CS_WORKSPACE_MAX_SIZE" in deployable
    for pod in pod_specs(render("base")).values():
        (container,) = pod["containers"]
        assert container["envFrom"] == [
            {"configMapRef": {"name": "context-service"}},
            {"secretRef": {"name": "context-service-secrets"}},
        ]


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "agent/Dockerfile"])
def test_dockerfile_passes_hadolint(dockerfile: str) -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    result = subprocess.run(
        [hadolint, "--config", str(DEPLOY / "hadolint.yaml"), str(DEPLOY / dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (result.returncode, result.stdout) == (0, "")


def test_the_agent_pod_example_is_accepted_and_has_what_bubblewrap_needs(
    kube_cluster: Any,
) -> None:
    from kubernetes.dynamic import DynamicClient

    pod = yaml.safe_load((DEPLOY / "agent" / "pod.yaml").read_text())
    create_namespace("agent-example", kubeconfig=kube_cluster.kubeconfig)
    with kube_cluster.api_client() as api:
        accepted = (
            DynamicClient(api)
            .resources.get(api_version="v1", kind="Pod")
            .server_side_apply(
                body=pod,
                name=pod["metadata"]["name"],
                namespace="agent-example",
                field_manager="context-service-deploy-test",
                dry_run="All",
            )
        )

    spec = accepted.to_dict()["spec"]
    (container,) = spec["containers"]
    assert (spec["hostUsers"], container["securityContext"]["procMount"]) == (False, "Unmasked")
    assert spec["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # The agent image installs bubblewrap, which namespaces isolation needs.
    assert "bubblewrap=" in (DEPLOY / "agent" / "Dockerfile").read_text()
