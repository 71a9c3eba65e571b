"""Risk notes: what an operation touches in its sandbox's topology, said in one line each
for the reviewer ("writes to the shared ReadWriteMany workspace of pool a, mounted by 3
sandboxes"). The level itself (low, medium, high) is the rule engine's (rules/risk.py);
the notes add what only the service knows: the allocation the agent runs in and the agent
type's shared workspace volume."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from allocations.models import Allocation, Strategy
from allocations.selectors import allocation_active_by_name
from contextsvc.kube.objects.names import (
    ARTIFACTS_MOUNT_PATH,
    WORKSPACE_MOUNT_PATH,
    artifacts_context_name,
)
from rules import Evaluation, Kind, NetworkOperation, Operation
from rules.risk import changed_paths, inside
from workspaces.models import AgentWorkspace
from workspaces.selectors import workspace_live_for

VERBS = {"write": "writes", "delete": "deletes", "access": "may change"}
MAX_PATHS = 3


@dataclass(frozen=True)
class Surroundings:
    """Where the operation would run, as this service knows it."""

    allocation_name: str  # as the agent named it ("" when it named none)
    allocation: Allocation | None
    agent_workspace: AgentWorkspace | None  # annotated with active_contexts
    # The allocation named runs another agent type (its profile's): the agent's claim is
    # not its topology, and the reviewer is told so instead.
    runs_other: str = ""


def surroundings(*, allocation: str, namespace: str, agent_type: str) -> Surroundings:
    """What the service knows of where the operation runs. The allocation is the agent's
    word: it counts only when that allocation is active, in that namespace, and — when
    made from a profile — made for this agent type, so that an agent cannot borrow a
    reassuring topology by naming someone else's pool."""
    found = allocation_active_by_name(name=allocation) if allocation else None
    if found is not None and namespace and found.namespace != namespace:
        found = None  # the name is held in another namespace: not the agent's pool
    runs_other = ""
    if found is not None and found.profile_name and found.profile_name != agent_type:
        runs_other, found = found.profile_name, None
    workspace = workspace_live_for(
        namespace=namespace or (found.namespace if found else settings.CS_NAMESPACE),
        agent_type=agent_type,
    )
    return Surroundings(allocation, found, workspace, runs_other)


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:MAX_PATHS])
    return shown + (f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else "")


def _sandboxes(count: int) -> str:
    return f"{count} sandbox{'es' if count != 1 else ''}"


def _allocation_notes(pool: Allocation, *, writes: bool, reads_only: bool) -> list[str]:
    count = _sandboxes(pool.replicas)
    if pool.strategy == Strategy.SHARED:
        if writes:
            return [
                f"writes to the shared ReadWriteMany workspace of pool {pool.name}, mounted by "
                f"{count}"
            ]
        if not reads_only:
            return [f"runs in pool {pool.name}, whose workspace is one volume mounted by {count}"]
    if pool.strategy == Strategy.EXISTING:
        if pool.read_only:
            return [
                f"targets the caller-owned PVC {pool.claim_name}, mounted read-only by {count}: "
                f"writes to {WORKSPACE_MOUNT_PATH} fail"
            ]
        if not reads_only:
            return [
                f"targets the caller-owned PVC {pool.claim_name}, mounted read-write by {count} "
                "(it outlives the allocation)"
            ]
    if pool.strategy == Strategy.DEDICATED and writes:
        return [
            f"writes to this sandbox's own ReadWriteOnce workspace (pool {pool.name} has one "
            f"per sandbox, {count})"
        ]
    if pool.strategy == Strategy.WARMPOOL and not reads_only:
        return [f"runs in a sandbox claimed from warm pool {pool.warm_pool}"]
    return []


def risk_notes(
    operation: Operation, evaluation: Evaluation, *, workspace: str, around: Surroundings
) -> list[str]:
    """One line per thing the reviewer should know, most serious first."""
    notes: list[str] = []
    if "\\u" in evaluation.normalised:
        notes.append("contains hidden or control characters (shown escaped)")
    hosts = [part.text.partition(" ")[2] for part in evaluation.parts if part.kind is Kind.NETWORK]
    if isinstance(operation, NetworkOperation):
        hosts = [operation.host]
    if hosts:
        notes.append(f"reaches {_listed(sorted(set(hosts)))} over the network")
    changes = changed_paths(evaluation)
    pool = around.allocation
    # An allocation's artifacts volume is its own place, noted below.
    artifacts = pool is not None and pool.has_artifacts
    for action, verb in VERBS.items():
        outside = [
            path
            for done, path in changes
            if done == action
            and not inside(path, workspace)
            and not (artifacts and inside(path, ARTIFACTS_MOUNT_PATH))
        ]
        if outside:
            notes.append(f"{verb} outside the context's directory: {_listed(outside)}")
    in_workspace = any(inside(path, WORKSPACE_MOUNT_PATH) for _, path in changes)
    in_artifacts = any(inside(path, ARTIFACTS_MOUNT_PATH) for _, path in changes)
    reads_only = operation.kind.value == "file" and not changes
    if around.runs_other:
        notes.append(
            f'names allocation "{around.allocation_name}", which runs agent type '
            f'"{around.runs_other}", not this one: its topology is not this request\'s'
        )
    elif around.allocation_name and around.allocation is None:
        notes.append(
            f'names allocation "{around.allocation_name}", which is not an active allocation '
            "of this service"
        )

    if pool is not None:
        notes += _allocation_notes(pool, writes=in_workspace, reads_only=reads_only)
        if in_artifacts and artifacts:
            kept = (
                f"kept after release as context {artifacts_context_name(pool.name)}"
                if pool.artifacts_retain
                else "deleted at release"
            )
            notes.append(f"writes to {ARTIFACTS_MOUNT_PATH} ({kept})")
    shared = around.agent_workspace
    if shared is not None and any(inside(path, workspace) for _, path in changes):
        others = getattr(shared, "active_contexts", 0)
        notes.append(
            f"writes to the context's directory on the agent type's shared ReadWriteMany "
            f"volume {shared.pvc_name} ({others} active context{'s' if others != 1 else ''})"
        )
    return notes
