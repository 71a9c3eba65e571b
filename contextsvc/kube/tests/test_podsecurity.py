"""The Pod Security table, rule by rule: each rule refuses what the standard forbids (with
its exact problem), a restricted rule gives way to its relaxation and a baseline rule to
none, and what the hardened defaults produce passes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from contextsvc.kube import podsecurity
from contextsvc.kube.objects.hardening import Relaxation, default_resources, harden

# What objects.hardening.harden makes of a plain container: the restricted level, satisfied.
HARDENED: dict[str, Any] = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "containers": [
        {
            "name": "c",
            "image": "busybox:1.36",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
}


def pod(**changes: Any) -> dict[str, Any]:
    """The hardened pod with ``a__b__0__c=value`` set (``0``: a list index)."""
    spec = copy.deepcopy(HARDENED)
    for path, value in changes.items():
        target: Any = spec
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target.setdefault(key, {})
        target[last] = value
    return spec


def container_security(**security: Any) -> dict[str, Any]:
    return pod(
        containers__0__securityContext={**HARDENED["containers"][0]["securityContext"], **security}
    )


CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "hostProcess",
        container_security(windowsOptions={"hostProcess": True}),
        'baseline hostProcess: container "c" sets windowsOptions.hostProcess',
    ),
    (
        "host-namespaces",
        pod(hostNetwork=True),
        "baseline host-namespaces: the pod template sets hostNetwork",
    ),
    (
        "host-namespaces",
        pod(hostPID=True),
        "baseline host-namespaces: the pod template sets hostPID",
    ),
    (
        "host-namespaces",
        pod(hostIPC=True),
        "baseline host-namespaces: the pod template sets hostIPC",
    ),
    (
        "privileged",
        container_security(privileged=True),
        'baseline privileged: container "c" is privileged',
    ),
    (
        "capabilities-baseline",
        container_security(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]}),
        'baseline capabilities-baseline: container "c" adds capability SYS_ADMIN',
    ),
    (
        "hostpath-volumes",
        pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        'baseline hostpath-volumes: volume "root" is a hostPath volume',
    ),
    (
        "host-ports",
        pod(containers__0__ports=[{"containerPort": 8080, "hostPort": 8080}]),
        'baseline host-ports: container "c" binds host port 8080',
    ),
    (
        "apparmor",
        pod(
            securityContext={
                **HARDENED["securityContext"],
                "appArmorProfile": {"type": "Unconfined"},
            }
        ),
        "baseline apparmor: the pod sets appArmorProfile Unconfined",
    ),
    (
        "selinux",
        container_security(seLinuxOptions={"type": "spc_t"}),
        'baseline selinux: container "c" sets seLinuxOptions.type spc_t',
    ),
    (
        "selinux",
        container_security(seLinuxOptions={"user": "root"}),
        'baseline selinux: container "c" sets seLinuxOptions.user',
    ),
    (
        "proc-mount",
        container_security(procMount="Unmasked"),
        'baseline proc-mount: container "c" sets procMount Unmasked',
    ),
    (
        "seccomp-baseline",
        container_security(seccompProfile={"type": "Unconfined"}),
        'baseline seccomp-baseline: container "c" sets seccompProfile Unconfined',
    ),
    (
        "sysctls",
        pod(
            securityContext={
                **HARDENED["securityContext"],
                "sysctls": [{"name": "kernel.msgmax", "value": "1"}],
            }
        ),
        "baseline sysctls: the pod sets the unsafe sysctl kernel.msgmax",
    ),
    (
        "volume-types",
        pod(volumes=[{"name": "share", "nfs": {"server": "nfs.example", "path": "/"}}]),
        'restricted volume-types: volume "share" is of type nfs',
    ),
    (
        "privilege-escalation",
        container_security(allowPrivilegeEscalation=True),
        'restricted privilege-escalation: container "c" does not set allowPrivilegeEscalation: false',
    ),
    (
        "running-as-non-root",
        pod(securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
        'restricted running-as-non-root: container "c" may run as root (runAsNonRoot is not true)',
    ),
    (
        "running-as-non-root",
        container_security(runAsUser=0),
        'restricted running-as-non-root: container "c" runs as user 0',
    ),
    (
        "seccomp-restricted",
        pod(securityContext={"runAsNonRoot": True}),
        'restricted seccomp-restricted: container "c" has no RuntimeDefault or Localhost seccomp profile',
    ),
    (
        "capabilities-restricted",
        container_security(capabilities={}),
        'restricted capabilities-restricted: container "c" does not drop ALL capabilities',
    ),
    (
        "capabilities-restricted",
        container_security(capabilities={"drop": ["ALL"], "add": ["CHOWN"]}),
        'restricted capabilities-restricted: container "c" adds capability CHOWN',
    ),
]


def test_every_rule_has_a_case() -> None:
    assert {rule.id for rule in podsecurity.RULES} == {rule for rule, _, _ in CASES}


def test_the_hardened_pod_passes() -> None:
    assert podsecurity.violations(HARDENED) == []
    # And so does a plain container once the hardened defaults are applied.
    plain: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    harden(plain, frozenset())
    assert podsecurity.violations(plain) == []


# An unconfined seccomp profile breaks both levels' seccomp rules.
ALSO = {
    'baseline seccomp-baseline: container "c" sets seccompProfile Unconfined': [
        'restricted seccomp-restricted: container "c" has no RuntimeDefault or Localhost '
        "seccomp profile"
    ]
}


@pytest.mark.parametrize(("rule_id", "spec", "problem"), CASES)
def test_each_rule_refuses_what_the_standard_forbids(
    rule_id: str, spec: dict[str, Any], problem: str
) -> None:
    expected = [problem, *ALSO.get(problem, [])]
    assert podsecurity.violations(spec) == expected
    rule = next(rule for rule in podsecurity.RULES if rule.id == rule_id)
    every = frozenset(Relaxation.ALL)
    if rule.relaxation is None:
        # Baseline (and restricted seccomp): no relaxation switches it off.
        assert podsecurity.violations(spec, relaxations=every) == expected
    else:
        assert rule.level == podsecurity.RESTRICTED
        assert podsecurity.violations(spec, relaxations=frozenset({rule.relaxation})) == []
        assert podsecurity.violations(spec, relaxations=every - {rule.relaxation}) == expected


def test_baseline_rules_have_no_relaxation() -> None:
    assert [
        rule.id
        for rule in podsecurity.RULES
        if rule.level == podsecurity.BASELINE and rule.relaxation
    ] == []
    assert set(Relaxation.ALL) >= podsecurity.RELAXABLE


def test_apparmor_annotations_are_read() -> None:
    key = "container.apparmor.security.beta.kubernetes.io/c"

    assert podsecurity.violations(HARDENED, annotations={key: "unconfined"}) == [
        f"baseline apparmor: annotation {key} is unconfined"
    ]
    assert podsecurity.violations(HARDENED, annotations={key: "runtime/default"}) == []
    assert podsecurity.violations(HARDENED, annotations={key: "localhost/mine"}) == []


def test_defaults_fill_missing_resources_without_contradicting_the_container() -> None:
    bare: dict[str, Any] = {"name": "a"}
    big_request: dict[str, Any] = {"name": "b", "resources": {"requests": {"memory": "1Gi"}}}
    small_limit: dict[str, Any] = {"name": "c", "resources": {"limits": {"memory": "32Mi"}}}

    for container in (bare, big_request, small_limit):
        default_resources(container)

    assert bare["resources"] == {
        "requests": {"memory": "64Mi", "cpu": "50m"},
        "limits": {"memory": "256Mi"},
    }
    assert big_request["resources"] == {
        "requests": {"memory": "1Gi", "cpu": "50m"},
        "limits": {"memory": "1Gi"},
    }
    assert small_limit["resources"] == {
        "requests": {"memory": "32Mi", "cpu": "50m"},
        "limits": {"memory": "32Mi"},
    }


def test_unbounded_resources_is_a_relaxation() -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}

    harden(spec, frozenset({Relaxation.UNBOUNDED_RESOURCES}))

    assert "resources" not in spec["containers"][0]
