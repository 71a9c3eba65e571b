"""The Kubernetes Pod Security Standards, as one table the service holds every sandbox to.

Everything the **baseline** level forbids is refused, always: such a Pod is not a sandbox
(it reaches the node). What the **restricted** level forbids is refused too, unless the
profile (or, for a warm pool, the pool's owner) relaxes that rule by name. Direct
allocations are checked after the hardened defaults are applied (``objects.hardening.harden``), so
a restricted rule only bites when it was relaxed away or the template sets something the
defaults do not overwrite; warm-pool templates are the pool owner's and are checked as
they are.

The levels follow https://kubernetes.io/docs/concepts/security/pod-security-standards/
(v1.36); each rule's ``id`` is the standard's control name.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from contextsvc.kube.objects.blueprint import (
    PART_POD,
    PART_VOLUMES,
    Blueprint,
    Problem,
    blueprint_problems,
)
from contextsvc.kube.objects.hardening import Relaxation, harden

Spec = Mapping[str, Any]

BASELINE = "baseline"
RESTRICTED = "restricted"

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset(
    {"container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
CONFINED_PROFILES = frozenset({"RuntimeDefault", "Localhost"})
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True)
class Pod:
    """What a check looks at: the pod spec and the pod's annotations."""

    spec: Spec
    annotations: Mapping[str, str]

    def containers(self) -> Iterator[tuple[str, Spec]]:
        for field in ("initContainers", "containers", "ephemeralContainers"):
            for container in self.spec.get(field) or []:
                yield f'container "{container.get("name")}"', container

    def security_contexts(self) -> Iterator[tuple[str, Spec]]:
        """(where, securityContext) for the pod and each container."""
        yield "the pod", self.spec.get("securityContext") or {}
        for where, container in self.containers():
            yield where, container.get("securityContext") or {}

    def effective(self, container: Spec, key: str) -> Any:
        """A container's setting, falling back to the pod's (as the kubelet applies it)."""
        own = (container.get("securityContext") or {}).get(key)
        return own if own is not None else (self.spec.get("securityContext") or {}).get(key)


Check = Callable[[Pod], list[str]]


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    check: Check
    # A restricted rule a profile may switch off by naming this relaxation; None: never.
    relaxation: str | None = None
    part: str = PART_POD  # what in the pod it is about (objects.blueprint.PART_VOLUMES, …)


def _host_process(pod: Pod) -> list[str]:
    return [
        f"{where} sets windowsOptions.hostProcess"
        for where, security in pod.security_contexts()
        if (security.get("windowsOptions") or {}).get("hostProcess")
    ]


def _host_namespaces(pod: Pod) -> list[str]:
    return [
        f"the pod template sets {key}"
        for key in ("hostNetwork", "hostPID", "hostIPC")
        if pod.spec.get(key)
    ]


def _privileged(pod: Pod) -> list[str]:
    return [
        f"{where} is privileged"
        for where, container in pod.containers()
        if (container.get("securityContext") or {}).get("privileged")
    ]


def _added_capabilities(container: Spec) -> list[str]:
    capabilities = (container.get("securityContext") or {}).get("capabilities") or {}
    return [str(name) for name in capabilities.get("add") or []]


def _baseline_capabilities(pod: Pod) -> list[str]:
    return [
        f"{where} adds capability {name}"
        for where, container in pod.containers()
        for name in _added_capabilities(container)
        if name not in BASELINE_CAPABILITIES
    ]


def _host_path(pod: Pod) -> list[str]:
    return [
        f'volume "{volume.get("name")}" is a hostPath volume'
        for volume in pod.spec.get("volumes") or []
        if "hostPath" in volume
    ]


def _host_ports(pod: Pod) -> list[str]:
    return [
        f"{where} binds host port {port['hostPort']}"
        for where, container in pod.containers()
        for port in container.get("ports") or []
        if port.get("hostPort")
    ]


def _apparmor(pod: Pod) -> list[str]:
    problems = [
        f"{where} sets appArmorProfile {kind}"
        for where, security in pod.security_contexts()
        if (kind := (security.get("appArmorProfile") or {}).get("type")) is not None
        and kind not in CONFINED_PROFILES
    ]
    problems += [
        f"annotation {key} is {value}"
        for key, value in pod.annotations.items()
        if key.startswith(APPARMOR_ANNOTATION)
        and value != "runtime/default"
        and not str(value).startswith("localhost/")
    ]
    return problems


def _selinux(pod: Pod) -> list[str]:
    problems = []
    for where, security in pod.security_contexts():
        options = security.get("seLinuxOptions") or {}
        kind = options.get("type")
        if kind and kind not in SELINUX_TYPES:
            problems.append(f"{where} sets seLinuxOptions.type {kind}")
        for key in ("user", "role"):
            if options.get(key):
                problems.append(f"{where} sets seLinuxOptions.{key}")
    return problems


def _proc_mount(pod: Pod) -> list[str]:
    return [
        f"{where} sets procMount {kind}"
        for where, container in pod.containers()
        if (kind := (container.get("securityContext") or {}).get("procMount"))
        not in (None, "Default")
    ]


def _seccomp_unconfined(pod: Pod) -> list[str]:
    return [
        f"{where} sets seccompProfile Unconfined"
        for where, security in pod.security_contexts()
        if (security.get("seccompProfile") or {}).get("type") == "Unconfined"
    ]


def _sysctls(pod: Pod) -> list[str]:
    return [
        f"the pod sets the unsafe sysctl {item.get('name')}"
        for item in (pod.spec.get("securityContext") or {}).get("sysctls") or []
        if item.get("name") not in SAFE_SYSCTLS
    ]


def _volume_types(pod: Pod) -> list[str]:
    problems = []
    for volume in pod.spec.get("volumes") or []:
        kinds = [key for key in volume if key != "name"]
        for kind in kinds:
            if kind not in RESTRICTED_VOLUMES and kind != "hostPath":  # hostPath: baseline
                problems.append(f'volume "{volume.get("name")}" is of type {kind}')
    return problems


def _privilege_escalation(pod: Pod) -> list[str]:
    return [
        f"{where} does not set allowPrivilegeEscalation: false"
        for where, container in pod.containers()
        if (container.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False
    ]


def _run_as_non_root(pod: Pod) -> list[str]:
    problems = []
    for where, container in pod.containers():
        if pod.effective(container, "runAsNonRoot") is not True:
            problems.append(f"{where} may run as root (runAsNonRoot is not true)")
        if pod.effective(container, "runAsUser") == 0:
            problems.append(f"{where} runs as user 0")
    return problems


def _seccomp_confined(pod: Pod) -> list[str]:
    pod_profile = ((pod.spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    problems = []
    for where, container in pod.containers():
        own = ((container.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
        if (own or pod_profile) not in CONFINED_PROFILES:
            problems.append(f"{where} has no RuntimeDefault or Localhost seccomp profile")
    return problems


def _restricted_capabilities(pod: Pod) -> list[str]:
    problems = []
    for where, container in pod.containers():
        capabilities = (container.get("securityContext") or {}).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            problems.append(f"{where} does not drop ALL capabilities")
        problems += [
            f"{where} adds capability {name}"
            for name in _added_capabilities(container)
            if name != "NET_BIND_SERVICE" and name in BASELINE_CAPABILITIES
        ]
    return problems


RULES: tuple[Rule, ...] = (
    Rule("hostProcess", BASELINE, _host_process),
    Rule("host-namespaces", BASELINE, _host_namespaces),
    Rule("privileged", BASELINE, _privileged),
    Rule("capabilities-baseline", BASELINE, _baseline_capabilities),
    Rule("hostpath-volumes", BASELINE, _host_path, part=PART_VOLUMES),
    Rule("host-ports", BASELINE, _host_ports),
    Rule("apparmor", BASELINE, _apparmor),
    Rule("selinux", BASELINE, _selinux),
    Rule("proc-mount", BASELINE, _proc_mount),
    Rule("seccomp-baseline", BASELINE, _seccomp_unconfined),
    Rule("sysctls", BASELINE, _sysctls),
    Rule("volume-types", RESTRICTED, _volume_types, Relaxation.ANY_VOLUME_TYPE, part=PART_VOLUMES),
    Rule(
        "privilege-escalation",
        RESTRICTED,
        _privilege_escalation,
        Relaxation.PRIVILEGE_ESCALATION,
    ),
    Rule("running-as-non-root", RESTRICTED, _run_as_non_root, Relaxation.RUN_AS_ROOT),
    Rule("seccomp-restricted", RESTRICTED, _seccomp_confined),
    Rule("capabilities-restricted", RESTRICTED, _restricted_capabilities, Relaxation.CAPABILITIES),
)
RELAXABLE = frozenset(rule.relaxation for rule in RULES if rule.relaxation)


def _violations(
    pod_spec: Spec, annotations: Mapping[str, str] | None, relaxations: frozenset[str]
) -> list[Problem]:
    pod = Pod(pod_spec, annotations or {})
    return [
        (rule.part, f"{rule.level} {rule.id}: {problem}")
        for rule in RULES
        if rule.relaxation is None or rule.relaxation not in relaxations
        for problem in rule.check(pod)
    ]


def violations(
    pod_spec: Spec,
    *,
    annotations: Mapping[str, str] | None = None,
    relaxations: frozenset[str] = frozenset(),
) -> list[str]:
    """Every problem, each prefixed with its level and rule, in the table's order."""
    return [message for _, message in _violations(pod_spec, annotations, relaxations)]


def sandbox_problems(blueprint: Blueprint) -> list[Problem]:
    """Why a direct allocation's blueprint may not run: the structural rules (the workspace
    and the pool labels are ours), then this table applied to the Pod as it will be, with
    the hardened defaults and the blueprint's relaxations."""
    pod_spec = copy.deepcopy(dict(blueprint.pod_spec))
    harden(pod_spec, blueprint.relaxations)
    return blueprint_problems(blueprint) + _violations(
        pod_spec, blueprint.annotations, blueprint.relaxations
    )
