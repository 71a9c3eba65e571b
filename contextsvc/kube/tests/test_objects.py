"""The v1 contract's Kubernetes shapes, checked field by field."""

from __future__ import annotations

from typing import Any

from contextsvc.kube import objects

SPEC = objects.PoolSpec(
    name="a-b",
    namespace="ns",
    replicas=2,
    strategy="dedicated",
    size="1Gi",
    access_mode="ReadWriteOnce",
    storage_class="fast",
)


def test_names_and_selectors() -> None:
    assert objects.sandbox_name("a-b", 1) == "sandbox-a-b-1"
    assert objects.dedicated_pvc_name("a-b", 0) == "a-b-workspace-0"
    assert objects.shared_pvc_name("a-b") == "a-b-workspace"
    assert objects.claim_name("a-b", 3) == "claim-a-b-3"
    assert objects.context_pvc_name("mem") == "context-mem"
    assert objects.pool_selector("a-b") == "context.rossoctl.io/pool=a-b"
    assert objects.managed_pool_selector("a-b") == (
        "context.rossoctl.io/pool=a-b,app.kubernetes.io/managed-by=context-service"
    )


def test_direct_sandbox_manifest() -> None:
    runtime = objects.builtin_blueprint(image="registry/sandbox:1", service_account="runner")
    assert objects.sandbox_manifest(SPEC, 1, runtime) == {
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
    spec = objects.PoolSpec(
        name="c", namespace="ns", replicas=1, strategy="existing", claim_name="data", read_only=True
    )
    manifest = objects.sandbox_manifest(spec, 0, objects.builtin_blueprint(image="img"))
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
    assert objects.managed_pvc_names(spec) == []


def test_pvc_and_claim_manifests() -> None:
    assert objects.pvc_manifest(SPEC, "a-b-workspace-0") == {
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
    warm = objects.PoolSpec(
        name="w", namespace="ns", replicas=1, strategy="warmpool", warm_pool="pool"
    )
    assert objects.claim_manifest(warm, 0) == {
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
    assert objects.pod_is_ready(ready_pod) is True
    assert objects.pod_is_ready(terminating) is False
    claim: dict[str, Any] = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "sandbox": {}}
    }
    assert objects.claim_is_ready(claim) is False  # no sandbox named yet
    claim["status"]["sandbox"] = {"name": "pool-abcde"}
    assert objects.claim_is_ready(claim) is True
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
    assert objects.terminal_failure(failed) == ("InvalidMetadata", "bad key")
    pending: dict[str, Any] = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "reason": "DependenciesNotReady"}]
        }
    }
    assert objects.terminal_failure(pending) is None


def test_pvc_shape_prefers_read_write_many_and_reads_what_is_there() -> None:
    pvc = {
        "spec": {
            "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": "fast",
        },
        "status": {"phase": "Bound", "capacity": {"storage": "8Gi"}},
    }

    assert objects.pvc_shape(pvc) == objects.PvcShape(
        "5Gi", "ReadWriteMany", "fast", ("ReadWriteOnce", "ReadWriteMany")
    )
    assert objects.pvc_capacity(pvc) == "8Gi"
    assert objects.pvc_shape({}) == objects.PvcShape("", "", "", ())
    assert objects.pvc_capacity({"status": {"phase": "Pending"}}) is None
    assert objects.pvc_resize_patch("10Gi") == {
        "spec": {"resources": {"requests": {"storage": "10Gi"}}}
    }


def test_sandbox_index_only_reads_names_the_service_made() -> None:
    assert objects.sandbox_index("review", objects.sandbox_name("review", 7)) == 7
    assert objects.sandbox_index("review", "sandbox-review-x") is None
    assert objects.sandbox_index("review", "sandbox-review-") is None
    assert objects.sandbox_index("review", "sandbox-review-2-1") is None
    # A pool whose name extends this one's is not this one's.
    assert objects.sandbox_index("review", "sandbox-review-b-1") is None
    # Unicode digits are digits to str.isdigit, but never in a name the service made.
    assert objects.sandbox_index("review", "sandbox-review-\u0663") is None


def test_object_and_context_keys() -> None:
    pvc = {
        "metadata": {
            "namespace": "team1",
            "name": "context-notes",
            "labels": {objects.CONTEXT_NAME_LABEL: "notes"},
        }
    }

    assert objects.object_key(pvc) == ("team1", "context-notes")
    assert objects.context_key(pvc) == ("team1", "notes")
    assert objects.context_key({"metadata": {"namespace": "team1", "name": "x"}}) is None


def test_storage_class_expansion_problem_names_the_reason() -> None:
    elastic = ("efs.csi.aws.com",)
    growable = {"provisioner": "ebs.csi.aws.com", "allowVolumeExpansion": True}

    assert objects.storage_class_expansion_problem(growable, "gp3", elastic) is None
    assert (
        objects.storage_class_expansion_problem(None, "gone", elastic)
        == 'StorageClass "gone" does not exist'
    )
    assert (
        objects.storage_class_expansion_problem({"provisioner": "efs.csi.aws.com"}, "efs", elastic)
        == 'StorageClass "efs" (efs.csi.aws.com) grows by itself'
    )
    assert (
        objects.storage_class_expansion_problem({"provisioner": "x"}, "fixed", elastic)
        == 'StorageClass "fixed" does not allow volume expansion'
    )


def test_warm_pool_summary_and_claim_pool() -> None:
    pool = {
        "metadata": {"namespace": "team1", "name": "warm"},
        "spec": {"replicas": 3, "sandboxTemplateRef": {"name": "python"}},
        "status": {"readyReplicas": 2},
    }

    assert objects.warm_pool_summary(pool) == {
        "namespace": "team1",
        "name": "warm",
        "template": "python",
        "replicas": 3,
        "readyReplicas": 2,
        "profile": "",
    }
    assert objects.warm_pool_summary({"metadata": {"namespace": "a", "name": "b"}}) == {
        "namespace": "a",
        "name": "b",
        "template": None,
        "replicas": 1,
        "readyReplicas": 0,
        "profile": "",
    }
    # A profile's own pool says whose it is; the label alone, without ours, does not.
    labels = {"app.kubernetes.io/managed-by": "context-service", objects.PROFILE_LABEL: "coder"}
    owned = {"metadata": {"namespace": "a", "name": "profile-coder", "labels": labels}}
    foreign = {"metadata": {"namespace": "a", "name": "x", "labels": {objects.PROFILE_LABEL: "c"}}}
    assert objects.warm_pool_summary(owned)["profile"] == "coder"
    assert objects.warm_pool_summary(foreign)["profile"] == ""
    assert objects.claim_warm_pool({"spec": {"warmPoolRef": {"name": "warm"}}}) == "warm"
    assert objects.claim_warm_pool({}) == ""


def test_object_fields_read_what_is_there_and_default_what_is_not() -> None:
    pod: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {
            "name": "sandbox-a-0",
            "namespace": "team1",
            "resourceVersion": "417",
            "labels": {objects.POOL_LABEL: "a"},
            "annotations": {objects.REPLICAS_KEY: "2"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }

    assert objects.kind_of(pod) == "Pod"
    assert objects.name_of(pod) == "sandbox-a-0"
    assert objects.namespace_of(pod) == "team1"
    assert objects.labels_of(pod) == {objects.POOL_LABEL: "a"}
    assert objects.annotations_of(pod) == {objects.REPLICAS_KEY: "2"}
    assert objects.resource_version_of(pod) == "417"
    assert objects.is_deleting(pod) is True
    assert objects.status_phase(pod) == "Running"
    assert objects.conditions_of(pod) == [{"type": "Ready", "status": "True"}]
    bare: dict[str, Any] = {}
    assert (objects.kind_of(bare), objects.name_of(bare), objects.namespace_of(bare)) == (
        "",
        "",
        "",
    )
    assert (objects.labels_of(bare), objects.annotations_of(bare)) == ({}, {})
    assert (objects.is_deleting(bare), objects.status_phase(bare)) == (False, "")
    assert objects.conditions_of(bare) == []


def test_for_display_leaves_out_managed_fields_and_the_object_alone() -> None:
    pvc: dict[str, Any] = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "w", "managedFields": [{"manager": "kube-controller-manager"}]},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }

    assert objects.for_display(pvc) == {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "w"},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }
    assert list(objects.for_display(pvc)) == ["kind", "metadata", "spec"]
    assert pvc["metadata"]["managedFields"] == [{"manager": "kube-controller-manager"}]


def test_only_pods_a_sandbox_made_count() -> None:
    made: dict[str, Any] = {
        "metadata": {
            "name": "made",
            "ownerReferences": [{"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox"}],
        }
    }
    labelled_by_hand: dict[str, Any] = {
        "metadata": {"name": "hand", "labels": {objects.POOL_LABEL: "a"}}
    }
    other_owner: dict[str, Any] = {
        "metadata": {
            "name": "rs",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Sandbox"}],
        }
    }

    assert objects.sandbox_pods_among([labelled_by_hand, made, other_owner]) == [made]


def test_hardening_checks_pass_what_harden_makes_and_name_what_is_missing() -> None:
    runtime = objects.builtin_blueprint(image="busybox:1.36")
    sandbox = objects.sandbox_manifest(SPEC, 0, runtime)
    hardened = {"spec": sandbox["spec"]["podTemplate"]["spec"]}
    plain = {
        "spec": {
            "containers": [{"name": "c", "volumeMounts": [{"mountPath": "/data"}]}],
        }
    }

    assert [check(hardened) for _, check in objects.HARDENING_CHECKS] == [None] * 5
    assert [check(plain) for _, check in objects.HARDENING_CHECKS] == [
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

    assert objects.pvc_events_problem(pvc, events) == "ProvisioningFailed: quota exceeded"
    assert objects.pvc_events_problem(pvc, events[2:]) == ""
    assert objects.pvc_events_problem(pvc, []) == ""


def test_a_volume_problem_holds_only_while_the_pvc_is_pending() -> None:
    said = objects.volume_problem_patch("ProvisioningFailed: quota exceeded")["metadata"]
    pending = {"metadata": {"name": "w-0", **said}, "status": {"phase": "Pending"}}
    bound = {**pending, "status": {"phase": "Bound"}}
    deleting = {"metadata": {**pending["metadata"], "deletionTimestamp": "x"}, "status": {}}

    assert objects.volume_problem(pending) == ("ProvisioningFailed", "quota exceeded")
    assert objects.volume_problem(bound) is None
    assert objects.volume_problem(deleting) is None
    assert objects.volume_problem({"metadata": {"name": "w-0"}, "status": {}}) is None
    # Cleared: a merge patch that removes the annotation.
    assert objects.volume_problem_patch("") == {
        "metadata": {"annotations": {objects.VOLUME_PROBLEM_ANNOTATION: None}}
    }


def test_a_sandbox_read_back_with_the_crds_defaults_has_no_drift() -> None:
    """What the cluster fills in is not a change to make: the CRD defaults shutdownPolicy
    to Retain, and every reconcile used to patch it away (an API write each time, and an
    "applied" event on the timeline)."""
    desired = {
        "metadata": {"annotations": {objects.REPLICAS_KEY: "1"}},
        "spec": {"podTemplate": {}},
    }
    read_back = {
        "metadata": {"annotations": {objects.REPLICAS_KEY: "1"}},
        "spec": {"podTemplate": {}, "operatingMode": "Running", "shutdownPolicy": "Retain"},
    }
    expiring = {
        **desired,
        "spec": {"shutdownTime": "2026-12-04T03:00:00Z", "shutdownPolicy": "Retain"},
    }

    assert objects.sandbox_drift(read_back, desired) is None
    assert objects.sandbox_drift(read_back, expiring) == {
        "spec": {"shutdownTime": "2026-12-04T03:00:00Z"}
    }
    assert objects.sandbox_drift({**read_back, "spec": {"shutdownPolicy": "Delete"}}, desired) == {
        "spec": {"shutdownPolicy": "Retain"}
    }
