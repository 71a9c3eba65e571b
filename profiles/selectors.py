from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from contextsvc.core.errors import NotFound
from profiles.approvalpolicy import ApprovalPolicy, parse_approval_policy
from profiles.models import SandboxProfile, runtime_class_for
from rules.sources import parse_sources


def profile_list() -> QuerySet[SandboxProfile]:
    return SandboxProfile.objects.order_by("name")


def profile_get(*, name: str) -> SandboxProfile:
    profile = SandboxProfile.objects.filter(name=name).first()
    if profile is None:
        raise NotFound(f'profile "{name}" not found')
    return profile


def profile_execution(profile: SandboxProfile) -> dict[str, Any]:
    """How the agent's executor runs what this agent type is allowed: its isolation, the
    Pod's RuntimeClass, and sources.json's runtime limits (None: the executor's defaults)."""
    runtime = parse_sources(profile.sources).runtime if profile.sources else None
    return {
        "isolation": profile.executor_isolation,
        "runtimeClass": runtime_class_for(profile.isolation),
        "timeLimitSeconds": runtime.max_execution_time_seconds if runtime else None,
        "memoryLimitMb": runtime.max_memory_mb if runtime else None,
    }


def profile_approval_policy(profile: SandboxProfile | None) -> ApprovalPolicy:
    """The agent type's approval policy (checked when the profile was saved)."""
    return parse_approval_policy(profile.approval_policy if profile else None)
