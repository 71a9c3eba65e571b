"""What the service makes of a profile, against the real control plane (through the API, as
callers use it): the Sandbox a profile produces, hardened by default, template copies,
refusals on save, the default profile, and a profile in use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from allocations.models import Allocation, Phase
from contextsvc.core import capabilities
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import (
    NETWORK_POLICY,
    POD,
    RUNTIME_CLASS,
    SANDBOX,
    SANDBOX_TEMPLATE,
)
from contextsvc.kube.objects.labels import pool_selector
from profiles.models import SandboxProfile
from tests.support.api import ApiClient
from tests.support.kube import (
    NOTHING,
    admin_create,
    admin_patch,
    make_template,
    make_warm_pool,
    pool_objects,
    wait_for_phase,
)
from tests.support.processes import wait_until
from tests.support.unchanged import everything, kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def gvisor(service: None) -> None:
    try:
        admin_create(
            RUNTIME_CLASS,
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": "gvisor"},
                "handler": "runsc",
            },
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    capabilities.refresh()


def sandbox_pod_spec(namespace: str, name: str) -> dict[str, Any]:
    wait_for_phase(name, Phase.READY)
    sandbox = kube.get_object(SANDBOX, namespace, f"sandbox-{name}-0")
    assert sandbox is not None
    return dict(sandbox["spec"]["podTemplate"]["spec"])


HARDENED_POD = {
    "seccompProfile": {"type": "RuntimeDefault"},
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "fsGroup": 10001,
}


HARDENED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
}


@pytest.mark.usefixtures("gvisor")
def test_builtin_profile_blueprint_is_used_hardened_and_fenced(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    created = admin.post(
        "/v1/profiles",
        {
            "name": "python-data-agent",
            "source": "builtin",
            "image": "registry.example.com/agents/python:3.11",
            "command": ["python", "-m", "agent"],
            "args": ["--serve"],
            "env": [{"name": "MODE", "value": "sandbox"}],
            "resources": {
                "requests": {"cpu": "250m", "memory": "512Mi"},
                "limits": {"memory": "1Gi"},
            },
            "isolation": "gvisor",
            "egress": [{"cidr": "10.20.0.0/16", "ports": [443]}],
            "ingress": [{"namespace": "serverless-harness", "ports": [8080]}],
        },
    )
    assert created.status_code == 201, created.content

    response = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "data",
            "replicas": 1,
            "namespace": namespace,
            "profile": "python-data-agent",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    assert response.status_code == 201
    assert response.json()["profile"] == "python-data-agent"
    wait_for_phase("data", Phase.READY)
    spec = sandbox_pod_spec(namespace, "data")
    [container] = spec["containers"]
    assert container["image"] == "registry.example.com/agents/python:3.11"
    assert container["command"] == ["python", "-m", "agent"]
    assert container["args"] == ["--serve"]
    assert container["env"] == [{"name": "MODE", "value": "sandbox"}]
    assert container["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"memory": "1Gi"},
    }
    assert container["volumeMounts"] == [
        {"name": "workspace", "mountPath": "/workspace", "readOnly": False},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    assert container["securityContext"] == HARDENED_CONTAINER
    assert spec["securityContext"] == HARDENED_POD
    assert spec["automountServiceAccountToken"] is False
    assert spec["runtimeClassName"] == "gvisor"
    assert spec["volumes"] == [
        {
            "name": "workspace",
            "persistentVolumeClaim": {"claimName": "data-workspace-0", "readOnly": False},
        },
        {"name": "tmp", "emptyDir": {}},
    ]
    # The Pod the controller made carries the same spec.
    [pod] = kube.list_objects(POD, namespace, pool_selector("data"))
    assert pod["spec"]["runtimeClassName"] == "gvisor"
    assert pod["spec"]["containers"][0]["securityContext"] == HARDENED_CONTAINER
    policy = kube.get_object(NETWORK_POLICY, namespace, "data-sandboxes")
    assert policy is not None
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"context.rossoctl.io/pool": "data"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "serverless-harness"}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8080}],
            }
        ],
        "egress": [
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            {
                "to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
                "ports": [{"protocol": "TCP", "port": 443}],
            },
        ],
    }

    assert caller.delete("/v1/sandbox-pools/data").status_code == 204
    wait_for_phase("data", Phase.RELEASED)
    assert kube.get_object(NETWORK_POLICY, namespace, "data-sandboxes") is None


def test_builtin_runtime_is_hardened_with_a_deny_all_policy(
    caller: ApiClient, namespace: str
) -> None:
    response = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "plain",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    assert response.status_code == 201
    assert "profile" not in response.json()
    spec = sandbox_pod_spec(namespace, "plain")
    assert spec["containers"][0]["image"] == "busybox:1.36"
    assert spec["containers"][0]["securityContext"] == HARDENED_CONTAINER
    assert spec["securityContext"] == HARDENED_POD
    policy = kube.get_object(NETWORK_POLICY, namespace, "plain-sandboxes")
    assert policy is not None
    assert policy["spec"].get("ingress", []) == []
    assert policy["spec"]["egress"] == [
        {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    ]


def test_relaxations_are_explicit_and_only_switch_off_what_they_name(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    admin.post(
        "/v1/profiles",
        {
            "name": "writer",
            "source": "builtin",
            "image": "busybox:1.36",
            "relaxations": ["writable-root-filesystem"],
        },
    )

    caller.post(
        "/v1/sandbox-pools",
        {
            "name": "relaxed",
            "replicas": 1,
            "namespace": namespace,
            "profile": "writer",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    spec = sandbox_pod_spec(namespace, "relaxed")
    assert spec["containers"][0]["securityContext"] == {
        **HARDENED_CONTAINER,
        "readOnlyRootFilesystem": False,
    }
    assert spec["volumes"] == [
        {
            "name": "workspace",
            "persistentVolumeClaim": {"claimName": "relaxed-workspace-0", "readOnly": False},
        }
    ]
    assert spec["securityContext"] == HARDENED_POD


def test_template_profile_copies_the_template_blueprint(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    make_template(
        namespace,
        "research",
        {
            "metadata": {"labels": {"team": "research"}},
            "spec": {
                "containers": [
                    {
                        "name": "agent",
                        "image": "registry.example.com/research:7",
                        "env": [{"name": "TEAM", "value": "research"}],
                        "securityContext": {"runAsUser": 0},
                    }
                ]
            },
        },
    )
    created = admin.post(
        "/v1/profiles",
        {
            "name": "research-agent",
            "source": "template",
            "template": {"namespace": namespace, "name": "research"},
        },
    )
    assert created.status_code == 201, created.content

    response = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "copied",
            "replicas": 2,
            "namespace": namespace,
            "profile": "research-agent",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
        },
    )

    assert response.status_code == 201
    wait_for_phase("copied", Phase.READY)
    sandbox = kube.get_object(SANDBOX, namespace, "sandbox-copied-1")
    assert sandbox is not None
    template = sandbox["spec"]["podTemplate"]
    assert template["metadata"]["labels"] == {
        "team": "research",
        "context.rossoctl.io/pool": "copied",
        "app.kubernetes.io/managed-by": "context-service",
    }
    [container] = template["spec"]["containers"]
    assert container["image"] == "registry.example.com/research:7"
    assert container["env"] == [{"name": "TEAM", "value": "research"}]
    # The template asked for root; the hardened default wins because the profile does not
    # relax it.
    assert container["securityContext"] == HARDENED_CONTAINER
    assert container["volumeMounts"][0] == {
        "name": "workspace",
        "mountPath": "/workspace",
        "readOnly": False,
    }
    # The template sets no resources: the built-in runtime's defaults apply.
    assert container["resources"] == {
        "requests": {"memory": "64Mi", "cpu": "50m"},
        "limits": {"memory": "256Mi"},
    }

    # Editing the template afterwards does not change this allocation (it was copied) ...
    admin_patch(
        SANDBOX_TEMPLATE,
        namespace,
        "research",
        {
            "spec": {
                "podTemplate": {
                    "spec": {
                        "hostPID": True,
                        "containers": [
                            {
                                "name": "agent",
                                "image": "registry.example.com/research:8",
                                "ports": [{"containerPort": 8080, "hostPort": 8080}],
                            }
                        ],
                    }
                }
            }
        },
    )
    # ... not even when it is reconciled again: scaled to 3, the new Sandbox is made from
    # the copy (a blueprint read again would bring image 8 and the host's PID namespace).
    scaled = caller.client.patch(
        "/v1/sandbox-pools/copied",
        json.dumps({"replicas": 3}),
        content_type="application/json",
        headers=caller.headers,
    )
    assert scaled.status_code == 200, scaled.content
    added = wait_until(
        lambda: kube.get_object(SANDBOX, namespace, "sandbox-copied-2"),
        timeout=60,
        message="the third Sandbox",
    )
    assert isinstance(added, dict)
    for name in ("sandbox-copied-1", "sandbox-copied-2"):
        sandbox = kube.get_object(SANDBOX, namespace, name)
        assert sandbox is not None
        spec = sandbox["spec"]["podTemplate"]["spec"]
        assert (spec["containers"][0]["image"], spec.get("hostPID")) == (
            "registry.example.com/research:7",
            None,
        )
    assert Allocation.objects.get(name="copied").blueprint["podSpec"]["containers"][0]["image"] == (
        "registry.example.com/research:7"
    )
    # ... and a new allocation is refused with every problem of the edited template.
    refused = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "after-edit",
            "replicas": 1,
            "namespace": namespace,
            "profile": "research-agent",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_request",
        "message": "template: baseline host-namespaces: the pod template sets hostPID",
        "problems": {
            "template": [
                "baseline host-namespaces: the pod template sets hostPID",
                'baseline host-ports: container "agent" binds host port 8080',
            ]
        },
    }
    # (The pool scaled above is still being reconciled, so its rows move on their own.)
    assert not Allocation.objects.filter(name="after-edit").exists()
    assert not AuditEntry.objects.filter(target="after-edit").exists()
    assert pool_objects(namespace, "after-edit") == NOTHING


def test_template_that_mounts_the_workspace_is_refused_on_save(
    admin: ApiClient, namespace: str
) -> None:
    make_template(
        namespace,
        "greedy",
        {
            "metadata": {"labels": {"context.rossoctl.io/pool": "mine"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox:1.36",
                        "volumeMounts": [{"name": "w", "mountPath": "/workspace"}],
                    }
                ],
                "volumes": [{"name": "w", "emptyDir": {}}],
            },
        },
    )

    with kept(namespace):
        response = admin.post(
            "/v1/profiles",
            {
                "name": "greedy",
                "source": "template",
                "template": {"namespace": namespace, "name": "greedy"},
            },
        )

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": 'template: pod label "context.rossoctl.io/pool" is set by Context Service and cannot be overridden',
        "problems": {
            "template": [
                'pod label "context.rossoctl.io/pool" is set by Context Service and cannot be overridden',
                'container "c" mounts "w" at /workspace, where the allocation\'s workspace goes',
            ]
        },
    }


def test_template_that_reaches_the_host_is_refused_on_save(
    admin: ApiClient, namespace: str
) -> None:
    make_template(
        namespace,
        "escape",
        {
            "spec": {
                "hostNetwork": True,
                "hostPID": True,
                "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox:1.36",
                        "securityContext": {
                            "privileged": True,
                            "seccompProfile": {"type": "Unconfined"},
                        },
                        "volumeMounts": [{"name": "root", "mountPath": "/host"}],
                    }
                ],
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            },
        },
    )

    with kept(namespace):
        response = admin.post(
            "/v1/profiles",
            {
                "name": "escape",
                "source": "template",
                "template": {"namespace": namespace, "name": "escape"},
            },
        )

    assert response.status_code == 400
    assert response.json()["problems"] == {
        "template": [
            "baseline host-namespaces: the pod template sets hostNetwork",
            "baseline host-namespaces: the pod template sets hostPID",
            'baseline privileged: container "c" is privileged',
            'baseline hostpath-volumes: volume "root" is a hostPath volume',
            "baseline apparmor: the pod sets appArmorProfile Unconfined",
            'baseline seccomp-baseline: container "c" sets seccompProfile Unconfined',
            'restricted seccomp-restricted: container "c" has no RuntimeDefault or Localhost '
            "seccomp profile",
        ]
    }


def test_host_ports_and_unmasked_proc_are_refused_on_save(admin: ApiClient, namespace: str) -> None:
    """Found by hand: such a profile was saved and its Pod bound node port 8080."""
    make_template(
        namespace,
        "ports",
        {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox:1.36",
                        "ports": [{"containerPort": 8080, "hostPort": 8080}],
                        "securityContext": {"procMount": "Unmasked"},
                    }
                ]
            }
        },
    )

    with kept(namespace):
        response = admin.post(
            "/v1/profiles", {"name": "ports", "template": {"namespace": namespace, "name": "ports"}}
        )

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": 'template: baseline host-ports: container "c" binds host port 8080',
        "problems": {
            "template": [
                'baseline host-ports: container "c" binds host port 8080',
                'baseline proc-mount: container "c" sets procMount Unmasked',
            ]
        },
    }


def test_missing_template_and_runtime_class_are_refused_on_save(
    admin: ApiClient, namespace: str
) -> None:
    with kept(namespace):
        missing = admin.post(
            "/v1/profiles",
            {
                "name": "ghost",
                "source": "template",
                "template": {"namespace": namespace, "name": "ghost"},
            },
        )
        kata = admin.post(
            "/v1/profiles",
            {"name": "vm", "source": "builtin", "image": "busybox:1.36", "isolation": "kata"},
        )

    assert missing.status_code == 400
    assert missing.json()["problems"] == {
        "template": [f'SandboxTemplate "ghost" does not exist in namespace "{namespace}"'],
    }
    assert kata.status_code == 400
    assert kata.json()["problems"]["isolation"][0].startswith(
        'kata needs the RuntimeClass "kata", which this cluster does not have (it has: '
    )


def test_unknown_disabled_and_warm_pool_profiles(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    admin.post(
        "/v1/profiles",
        {"name": "off", "source": "builtin", "image": "busybox:1.36", "enabled": False},
    )
    body = {
        "replicas": 1,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    before = everything(namespace)

    unknown = caller.post("/v1/sandbox-pools", {"name": "u", "profile": "nope", **body})
    disabled = caller.post("/v1/sandbox-pools", {"name": "d", "profile": "off", **body})

    for response, name in ((unknown, "nope"), (disabled, "off")):
        assert response.status_code == 400
        assert response.json() == {
            "error": "invalid_request",
            "message": f'profile "{name}" does not exist or is disabled',
        }
    assert everything(namespace) == before

    make_warm_pool(namespace, "warm", replicas=1)
    warm = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "w",
            "replicas": 1,
            "namespace": namespace,
            "warmPoolRef": "warm",
            "profile": "off",
        },
    )
    assert warm.status_code == 201
    assert warm.json()["warnings"] == [
        "profile is ignored for warm-pool allocations: the pool's SandboxTemplate decides the runtime"
    ]
    assert "profile" not in warm.json()
    assert Allocation.objects.get(name="w").profile is None


def test_the_default_profile_applies_when_none_is_named(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    admin.post(
        "/v1/profiles",
        {"name": "first", "source": "builtin", "image": "busybox:1.35", "default": True},
    )
    admin.post(
        "/v1/profiles",
        {"name": "second", "source": "builtin", "image": "busybox:1.36", "default": True},
    )

    response = caller.post(
        "/v1/sandbox-pools",
        {
            "name": "defaulted",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    assert response.json()["profile"] == "second"
    assert list(SandboxProfile.objects.filter(is_default=True).values_list("name", flat=True)) == [
        "second"
    ]
    assert sandbox_pod_spec(namespace, "defaulted")["containers"][0]["image"] == "busybox:1.36"


def test_a_profile_in_use_cannot_be_deleted(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    admin.post("/v1/profiles", {"name": "busy", "source": "builtin", "image": "busybox:1.36"})
    caller.post(
        "/v1/sandbox-pools",
        {
            "name": "user",
            "replicas": 1,
            "namespace": namespace,
            "profile": "busy",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    wait_for_phase("user", Phase.READY)
    with kept(namespace):
        refused = admin.delete("/v1/profiles/busy")

    assert refused.status_code == 409
    assert refused.json() == {
        "error": "conflict",
        "message": 'profile "busy" is used by 1 active allocation(s)',
    }

    # Released, the allocation lets go of the profile and keeps its name.
    assert caller.delete("/v1/sandbox-pools/user").status_code == 204
    released = wait_for_phase("user", Phase.RELEASED)
    assert (released.profile_id, released.profile_name) == (None, "busy")
    assert admin.delete("/v1/profiles/busy").status_code == 204
    assert not SandboxProfile.objects.filter(name="busy").exists()
    assert AuditEntry.objects.filter(action="profile.delete", target="busy").count() == 1
