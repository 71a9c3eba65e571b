from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from contextsvc.infra.errors import NotFound
from profiles.approvalpolicy import ApprovalPolicy, parse_approval_policy
from profiles.models import SandboxProfile, runtime_class_for
from rules.sources import Sources, parse_sources


def profile_list() -> QuerySet[SandboxProfile]:
    return SandboxProfile.objects.order_by("name")


def profile_get(*, name: str) -> SandboxProfile:
    profile = SandboxProfile.objects.filter(name=name).first()
    if profile is None:
        raise NotFound(f'profile "{name}" not found')
    return profile


def profile_execution(profile: SandboxProfile) -> dict[str, Any]:
    """How the agent's executor runs what this agent type is allowed: its isolation, the
    Pod's RuntimeClass, sources.json's runtime limits (None: the executor's defaults), and
    whether a command may have the Pod's network at all: ``none`` when sources.json
    switches web access off (or leaves it out) and enables no package manager and no git;
    ``pod`` otherwise, and the executor still gives a command no network unless it was
    judged to need one."""
    sources = parse_sources(profile.sources) if profile.sources else None
    runtime = sources.runtime if sources else None
    return {
        "isolation": profile.executor_isolation,
        "network": "none" if sources is not None and _offline(sources) else "pod",
        "runtimeClass": runtime_class_for(profile.isolation),
        "timeLimitSeconds": runtime.max_execution_time_seconds if runtime else None,
        "memoryLimitMb": runtime.max_memory_mb if runtime else None,
    }


def _offline(sources: Sources) -> bool:
    # An undeclared section is a resource the agent type does not have (rules.sources).
    web = sources.web_access
    return (
        (web is None or not web.enabled)
        and not any(manager.enabled for manager in sources.package_managers)
        and not (sources.git is not None and sources.git.enabled)
    )


def profile_approval_policy(profile: SandboxProfile | None) -> ApprovalPolicy:
    """The agent type's approval policy (checked when the profile was saved)."""
    return parse_approval_policy(profile.approval_policy if profile else None)
