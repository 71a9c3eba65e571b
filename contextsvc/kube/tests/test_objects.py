"""The v1 contract's Kubernetes shapes, checked field by field."""

from __future__ import annotations

from typing import Any

from contextsvc.kube.objects.blueprint import builtin_blueprint
from contextsvc.kube.objects.claim import claim_is_ready, claim_manifest, claim_warm_pool
from contextsvc.kube.objects.fields import (
    annotations_of,
    conditions_of,
    for_display,
    is_deleting,
    kind_of,
    labels_of,
    name_of,
    namespace_of,
    object_key,
    resource_version_of,
    status_phase,
)
from contextsvc.kube.objects.hardening import HARDENING_CHECKS
from contextsvc.kube.objects.labels import (
    CONTEXT_NAME_LABEL,
    POOL_LABEL,
    PROFILE_LABEL,
    REPLICAS_KEY,
    managed_pool_selector,
    pool_selector,
)
from contextsvc.kube.objects.names import (
    claim_name,
    context_pvc_name,
    dedicated_pvc_name,
    sandbox_index,
    sandbox_name,
    shared_pvc_name,
)
from contextsvc.kube.objects.pod import pod_is_ready, sandbox_pods_among
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.pvc import (
    VOLUME_PROBLEM_ANNOTATION,
    PvcShape,
    context_key,
    managed_pvc_names,
    pvc_capacity,
    pvc_events_problem,
    pvc_manifest,
    pvc_resize_patch,
    pvc_shape,
    storage_class_expansion_problem,
    volume_problem,
    volume_problem_patch,
)
from contextsvc.kube.objects.sandbox import sandbox_drift, sandbox_manifest, terminal_failure
from contextsvc.kube.objects.warmpool import warm_pool_summary

SPEC = PoolSpec(
    name="a-b",
    namespace="ns",
    replicas=2,
    strategy="dedicated",
    workspace_size="1Gi",
    workspace_access_mode="ReadWriteOnce",
    workspace_storage_class="fast",
)


def test_names_and_selectors() -> None:
    assert sandbox_name("a-b", 1) == "sandbox-a-b-1"
    assert dedicated_pvc_name("a-b", 0) == "a-b-workspace-0"
    assert shared_pvc_name("a-b") == "a-b-workspace"
    assert claim_name("a-b", 3) == "claim-a-b-3"
    assert context_pvc_name("mem") == "context-mem"
    assert pool_selector("a-b") == "context.rossoctl.io/pool=a-b"
    assert managed_pool_selector("a-b") == (
        "context.rossoctl.io/pool=a-b,app.kubernetes.io/managed-by=context-service"
    )


def test_direct_sandbox_manifest() -> None:
    runtime = builtin_blueprint(image="registry/sandbox:1", service_account="runner")
    assert sandbox_manifest(SPEC, 1, runtime) == {
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": {
            "name": "sandbox-a-b-1",
            "namespace": "ns",
            "labels": {
                "context.rossoctl.io/pool": "a-b",
                "app.kubernetes.io/managed-by": "context-service",
            },
            "annotations": {
                "context.rossoctl.io/replicas": "2",
                "context.rossoctl.io/workspace-read-only": "false",
            },
        },
        "spec": {
            "podTemplate": {
                "metadata": {
                    "labels": {
                        "context.rossoctl.io/pool": "a-b",
                        "app.kubernetes.io/managed-by": "context-service",
                    }
                },
                "spec": {
                    "serviceAccountName": "runner",
                    "automountServiceAccountToken": False,
                    "securityContext": {
                        "seccompProfile": {"type": "RuntimeDefault"},
                        "runAsNonRoot": True,
                        "runAsUser": 10001,
                        "runAsGroup": 10001,
                        "fsGroup": 10001,
                    },
                    "containers": [
                        {
                            "name": "sandbox",
                            "image": "registry/sandbox:1",
                            "command": [
                                "/bin/sh",
                                "-c",
                                "mkdir -p /workspace && exec sleep infinity",
                            ],
                            "workingDir": "/workspace",
                            "volumeMounts": [
                                {"name": "workspace", "mountPath": "/workspace", "readOnly": False},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                            "resources": {
                                "requests": {"memory": "64Mi", "cpu": "50m"},
                                "limits": {"memory": "256Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": True,
                                "runAsUser": 10001,
                                "runAsGroup": 10001,
                            },
                        }
                    ],
                    "volumes": [
                        {
                            "name": "workspace",
                            "persistentVolumeClaim": {
                                "claimName": "a-b-workspace-1",
                                "readOnly": False,
                            },
                        },
                        {"name": "tmp", "emptyDir": {}},
                    ],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": {"context.rossoctl.io/pool": "a-b"}},
                        }
                    ],
                },
            }
        },
    }


def test_existing_read_only_workspace_is_read_only_on_mount_and_volume() -> None:
    spec = PoolSpec(
        name="c", namespace="ns", replicas=1, strategy="existing", claim_name="data", read_only=True
    )
    manifest = sandbox_manifest(spec, 0, builtin_blueprint(image="img"))
    pod = manifest["spec"]["podTemplate"]["spec"]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "workspace", "mountPath": "/workspace", "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    assert pod["volumes"] == [
        {"name": "workspace", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "tmp", "emptyDir": {}},
    ]
    assert manifest["metadata"]["annotations"] == {
        "context.rossoctl.io/replicas": "1",
        "context.rossoctl.io/workspace-read-only": "true",
        "context.rossoctl.io/workspace-claim": "data",
    }
    assert managed_pvc_names(spec) == []


def test_pvc_and_claim_manifests() -> None:
    assert pvc_manifest(SPEC, "a-b-workspace-0") == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "a-b-workspace-0",
            "namespace": "ns",
            "labels": {
                "context.rossoctl.io/pool": "a-b",
                "app.kubernetes.io/managed-by": "context-service",
                "context.rossoctl.io/replicas": "2",
            },
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast",
        },
    }
    warm = PoolSpec(name="w", namespace="ns", replicas=1, strategy="warmpool", warm_pool="pool")
    assert claim_manifest(warm, 0) == {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxClaim",
        "metadata": {
            "name": "claim-w-0",
            "namespace": "ns",
            "labels": {
                "context.rossoctl.io/pool": "w",
                "app.kubernetes.io/managed-by": "context-service",
            },
        },
        "spec": {
            "warmPoolRef": {"name": "pool"},
            "additionalPodMetadata": {"labels": {"context.rossoctl.io/pool": "w"}},
        },
    }


def test_readiness_and_terminal_reasons() -> None:
    ready_pod: dict[str, Any] = {
        "metadata": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    terminating = {**ready_pod, "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert pod_is_ready(ready_pod) is True
    assert pod_is_ready(terminating) is False
    claim: dict[str, Any] = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "sandbox": {}}
    }
    assert claim_is_ready(claim) is False  # no sandbox named yet
    claim["status"]["sandbox"] = {"name": "pool-abcde"}
    assert claim_is_ready(claim) is True
    failed = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "InvalidMetadata",
                    "message": "bad key",
                }
            ]
        }
    }
    assert terminal_failure(failed) == ("InvalidMetadata", "bad key")
    pending: dict[str, Any] = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "reason": "DependenciesNotReady"}]
        }
    }
    assert terminal_failure(pending) is None


def test_pvc_shape_prefers_read_write_many_and_reads_what_is_there() -> None:
    pvc = {
        "spec": {
            "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": "fast",
        },
        "status": {"phase": "Bound", "capacity": {"storage": "8Gi"}},
    }

    assert pvc_shape(pvc) == PvcShape(
        "5Gi", "ReadWriteMany", "fast", ("ReadWriteOnce", "ReadWriteMany")
    )
    assert pvc_capacity(pvc) == "8Gi"
    assert pvc_shape({}) == PvcShape("", "", "", ())
    assert pvc_capacity({"status": {"phase": "Pending"}}) is None
    assert pvc_resize_patch("10Gi") == {"spec": {"resources": {"requests": {"storage": "10Gi"}}}}


def test_sandbox_index_only_reads_names_the_service_made() -> None:
    assert sandbox_index("review", sandbox_name("review", 7)) == 7
    assert sandbox_index("review", "sandbox-review-x") is None
    assert sandbox_index("review", "sandbox-review-") is None
    assert sandbox_index("review", "sandbox-review-2-1") is None
    # A pool whose name extends this one's is not this one's.
    assert sandbox_index("review", "sandbox-review-b-1") is None
    # Unicode digits are digits to str.isdigit, but never in a name the service made.
    assert sandbox_index("review", "sandbox-review-\u0663") is None


def test_object_and_context_keys() -> None:
    pvc = {
        "metadata": {
            "namespace": "team1",
            "name": "context-notes",
            "labels": {CONTEXT_NAME_LABEL: "notes"},
        }
    }

    assert object_key(pvc) == ("team1", "context-notes")
    assert context_key(pvc) == ("team1", "notes")
    assert context_key({"metadata": {"namespace": "team1", "name": "x"}}) is None


def test_storage_class_expansion_problem_names_the_reason() -> None:
    elastic = ("efs.csi.aws.com",)
    growable = {"provisioner": "ebs.csi.aws.com", "allowVolumeExpansion": True}

    assert storage_class_expansion_problem(growable, "gp3", elastic) is None
    assert (
        storage_class_expansion_problem(None, "gone", elastic)
        == 'StorageClass "gone" does not exist'
    )
    assert (
        storage_class_expansion_problem({"provisioner": "efs.csi.aws.com"}, "efs", elastic)
        == 'StorageClass "efs" (efs.csi.aws.com) grows by itself'
    )
    assert (
        storage_class_expansion_problem({"provisioner": "x"}, "fixed", elastic)
        == 'StorageClass "fixed" does not allow volume expansion'
    )


def test_warm_pool_summary_and_claim_pool() -> None:
    pool = {
        "metadata": {"namespace": "team1", "name": "warm"},
        "spec": {"replicas": 3, "sandboxTemplateRef": {"name": "python"}},
        "status": {"readyReplicas": 2},
    }

    assert warm_pool_summary(pool) == {
        "namespace": "team1",
        "name": "warm",
        "template": "python",
        "replicas": 3,
        "readyReplicas": 2,
        "profile": "",
    }
    assert warm_pool_summary({"metadata": {"namespace": "a", "name": "b"}}) == {
        "namespace": "a",
        "name": "b",
        "template": None,
        "replicas": 1,
        "readyReplicas": 0,
        "profile": "",
    }
    # A profile's own pool says whose it is; the label alone, without ours, does not.
    labels = {"app.kubernetes.io/managed-by": "context-service", PROFILE_LABEL: "coder"}
    owned = {"metadata": {"namespace": "a", "name": "profile-coder", "labels": labels}}
    foreign = {"metadata": {"namespace": "a", "name": "x", "labels": {PROFILE_LABEL: "c"}}}
    assert warm_pool_summary(owned)["profile"] == "coder"
    assert warm_pool_summary(foreign)["profile"] == ""
    assert claim_warm_pool({"spec": {"warmPoolRef": {"name": "warm"}}}) == "warm"
    assert claim_warm_pool({}) == ""


def test_object_fields_read_what_is_there_and_default_what_is_not() -> None:
    pod: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {
            "name": "sandbox-a-0",
            "namespace": "team1",
            "resourceVersion": "417",
            "labels": {POOL_LABEL: "a"},
            "annotations": {REPLICAS_KEY: "2"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }

    assert kind_of(pod) == "Pod"
    assert name_of(pod) == "sandbox-a-0"
    assert namespace_of(pod) == "team1"
    assert labels_of(pod) == {POOL_LABEL: "a"}
    assert annotations_of(pod) == {REPLICAS_KEY: "2"}
    assert resource_version_of(pod) == "417"
    assert is_deleting(pod) is True
    assert status_phase(pod) == "Running"
    assert conditions_of(pod) == [{"type": "Ready", "status": "True"}]
    bare: dict[str, Any] = {}
    assert (kind_of(bare), name_of(bare), namespace_of(bare)) == (
        "",
        "",
        "",
    )
    assert (labels_of(bare), annotations_of(bare)) == ({}, {})
    assert (is_deleting(bare), status_phase(bare)) == (False, "")
    assert conditions_of(bare) == []


def test_for_display_leaves_out_managed_fields_and_the_object_alone() -> None:
    pvc: dict[str, Any] = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "w", "managedFields": [{"manager": "kube-controller-manager"}]},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }

    assert for_display(pvc) == {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "w"},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }
    assert list(for_display(pvc)) == ["kind", "metadata", "spec"]
    assert pvc["metadata"]["managedFields"] == [{"manager": "kube-controller-manager"}]


def test_only_pods_a_sandbox_made_count() -> None:
    made: dict[str, Any] = {
        "metadata": {
            "name": "made",
            "ownerReferences": [{"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox"}],
        }
    }
    labelled_by_hand: dict[str, Any] = {"metadata": {"name": "hand", "labels": {POOL_LABEL: "a"}}}
    other_owner: dict[str, Any] = {
        "metadata": {
            "name": "rs",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Sandbox"}],
        }
    }

    assert sandbox_pods_among([labelled_by_hand, made, other_owner]) == [made]


def test_hardening_checks_pass_what_harden_makes_and_name_what_is_missing() -> None:
    runtime = builtin_blueprint(image="busybox:1.36")
    sandbox = sandbox_manifest(SPEC, 0, runtime)
    hardened = {"spec": sandbox["spec"]["podTemplate"]["spec"]}
    plain = {
        "spec": {
            "containers": [{"name": "c", "volumeMounts": [{"mountPath": "/data"}]}],
        }
    }

    assert [check(hardened) for _, check in HARDENING_CHECKS] == [None] * 5
    assert [check(plain) for _, check in HARDENING_CHECKS] == [
        "container c may run as root",
        "container c has a writable root filesystem",
        "the service-account token is mounted",
        "the pod's seccomp profile is not RuntimeDefault",
        "container c does not mount /workspace",
    ]


def _event(uid: str, reason: str, message: str, at: str, kind: str = "Normal") -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "PersistentVolumeClaim", "name": "w-0", "uid": uid},
        "reason": reason,
        "message": message,
        "type": kind,
        "lastTimestamp": at,
    }


def test_a_pvcs_problem_is_the_newest_event_that_says_why_it_gets_no_volume() -> None:
    pvc = {"metadata": {"name": "w-0", "uid": "u-2"}, "status": {"phase": "Pending"}}
    events = [
        _event(
            "u-2", "ExternalProvisioning", "waiting for example.com/csi", "2026-12-04T01:00:05Z"
        ),
        _event("u-2", "ProvisioningFailed", "quota exceeded", "2026-12-04T01:00:09Z", "Warning"),
        # Newer, but no problem: a normal event of another reason.
        _event(
            "u-2", "Provisioning", "external provisioner is provisioning", "2026-12-04T01:00:10Z"
        ),
        # Newer, but of an earlier PVC of the same name.
        _event("u-1", "FailedBinding", "no persistent volumes", "2026-12-04T01:00:11Z", "Warning"),
    ]

    assert pvc_events_problem(pvc, events) == "ProvisioningFailed: quota exceeded"
    assert pvc_events_problem(pvc, events[2:]) == ""
    assert pvc_events_problem(pvc, []) == ""


def test_a_volume_problem_holds_only_while_the_pvc_is_pending() -> None:
    said = volume_problem_patch("ProvisioningFailed: quota exceeded")["metadata"]
    pending = {"metadata": {"name": "w-0", **said}, "status": {"phase": "Pending"}}
    bound = {**pending, "status": {"phase": "Bound"}}
    deleting = {"metadata": {**pending["metadata"], "deletionTimestamp": "x"}, "status": {}}

    assert volume_problem(pending) == ("ProvisioningFailed", "quota exceeded")
    assert volume_problem(bound) is None
    assert volume_problem(deleting) is None
    assert volume_problem({"metadata": {"name": "w-0"}, "status": {}}) is None
    # Cleared: a merge patch that removes the annotation.
    assert volume_problem_patch("") == {
        "metadata": {"annotations": {VOLUME_PROBLEM_ANNOTATION: None}}
    }


def test_a_sandbox_read_back_with_the_crds_defaults_has_no_drift() -> None:
    """What the cluster fills in is not a change to make: the CRD defaults shutdownPolicy
    to Retain, and every reconcile used to patch it away (an API write each time, and an
    "applied" event on the timeline)."""
    desired = {
        "metadata": {"annotations": {REPLICAS_KEY: "1"}},
        "spec": {"podTemplate": {}},
    }
    read_back = {
        "metadata": {"annotations": {REPLICAS_KEY: "1"}},
        "spec": {"podTemplate": {}, "operatingMode": "Running", "shutdownPolicy": "Retain"},
    }
    expiring = {
        **desired,
        "spec": {"shutdownTime": "2026-12-04T03:00:00Z", "shutdownPolicy": "Retain"},
    }

    assert sandbox_drift(read_back, desired) is None
    assert sandbox_drift(read_back, expiring) == {"spec": {"shutdownTime": "2026-12-04T03:00:00Z"}}
    assert sandbox_drift({**read_back, "spec": {"shutdownPolicy": "Delete"}}, desired) == {
        "spec": {"shutdownPolicy": "Retain"}
    }
