"""Run reports: what the agent's executor ran, kept next to the decision that allowed it
(a request a human approved, or a rule's immediate allow). A report of anything but the
command judged is refused and audited."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction

from approvals import live
from approvals.models import ApprovalRequest, OperationRun, RunOutcome, Status
from approvals.selectors import operation_digest
from contextsvc.core.models import AuditEntry, default_team_pk
from contextsvc.core.services import audit_record
from contextsvc.infra.errors import Conflict, InvalidRequest, NotFound


def _allowed_operation(
    *, request_id: UUID | None, check_id: int | None, actor: str, context_id: str
) -> tuple[ApprovalRequest | None, AuditEntry | None, str, str]:
    """The decision a run report refers to: (request, check entry, agent type, digest of
    the operation it allowed). Only the credential that asked may report, and only an
    allowed operation in the context it was asked for."""
    if (request_id is None) == (check_id is None):
        raise InvalidRequest("give exactly one of requestId and checkId")
    if request_id is not None:
        request = ApprovalRequest.objects.filter(pk=request_id, requested_by=actor).first()
        if request is None:
            raise NotFound(f"approval request {request_id} not found")
        if request.status != Status.APPROVED:
            raise Conflict(f"approval request {request_id} is {request.status}, not approved")
        if request.context_id != context_id:
            raise InvalidRequest(f"contextId: approval request {request_id} is for another context")
        return request, None, request.agent_type, operation_digest(request.effective_operation)
    assert check_id is not None  # exactly one of the two was given
    entry = AuditEntry.objects.filter(pk=check_id, actor=actor).first()
    if entry is None or entry.action not in ("approval.allow", "approval.refuse"):
        raise NotFound(f"check {check_id} not found")
    if entry.action != "approval.allow":
        raise Conflict(f"check {check_id} was denied")
    if entry.target != context_id:
        raise InvalidRequest(f"contextId: check {check_id} is for another context")
    return (
        None,
        entry,
        str(entry.payload.get("agent_type", "")),
        str(entry.payload.get("judged_sha256", "")),
    )


REFUSED_ACTIONS = ("read", "write", "delete", "network")
# Who says it was refused: the executor's own record (its egress proxy), or the program's
# error output, which the executor reads but cannot vouch for (the default: older agents).
REPORTED_BY = ("executor", "program")
MAX_REFUSED = 20
MAX_REFUSED_PATH = 4096
# proxy: by host, through the executor's egress proxy; pod: the Pod's (isolation none).
SANDBOX_NETWORKS = ("proxy", "none", "pod")
_SANDBOX_VALUES = {"network": SANDBOX_NETWORKS, "memory": ("cgroup", "rlimit"),
                   "processes": ("cgroup", "rlimit")}  # fmt: skip


def _refused_effects(items: list[Any]) -> list[dict[str, str]]:
    if len(items) > MAX_REFUSED:
        raise InvalidRequest(f"refusedEffects holds at most {MAX_REFUSED} items")
    checked = []
    for index, item in enumerate(items):
        where = f"refusedEffects[{index}]"
        if not isinstance(item, dict) or not (
            {"action", "path", "error"} <= set(item) <= {"action", "path", "error", "reportedBy"}
        ):
            raise InvalidRequest(
                f"{where} must be an object with action, path, error and optionally reportedBy"
            )
        if item["action"] not in REFUSED_ACTIONS:
            raise InvalidRequest(f"{where}.action must be one of {', '.join(REFUSED_ACTIONS)}")
        for key, limit in (("path", MAX_REFUSED_PATH), ("error", 200)):
            if not isinstance(item[key], str) or len(item[key]) > limit:
                raise InvalidRequest(f"{where}.{key} must be a string of at most {limit}")
        # null is the field left out (the contract's rule for optional fields).
        reported_by = item.get("reportedBy")
        reported_by = "program" if reported_by is None else reported_by
        if reported_by not in REPORTED_BY:
            raise InvalidRequest(f"{where}.reportedBy must be one of {', '.join(REPORTED_BY)}")
        checked.append(
            {**{key: str(item[key]) for key in ("action", "path", "error")},
             "reportedBy": reported_by}
        )  # fmt: skip
    return checked


def _sandbox(given: dict[str, Any]) -> dict[str, str]:
    unknown = sorted(set(given) - set(_SANDBOX_VALUES))
    if unknown:
        raise InvalidRequest(f"sandbox.{unknown[0]} is not a field of a run's sandbox")
    for key, value in given.items():
        if value not in _SANDBOX_VALUES[key]:
            raise InvalidRequest(f"sandbox.{key} must be one of {', '.join(_SANDBOX_VALUES[key])}")
    return {key: str(value) for key, value in given.items()}


def run_record(
    *,
    context_id: str,
    request_id: UUID | None,
    check_id: int | None,
    command: str,
    outcome: str,
    exit_status: int | None,
    signal: int | None,
    duration_ms: int,
    stdout_bytes: int,
    stderr_bytes: int,
    truncated: bool,
    actor: str,
    refused_effects: list[Any] | None = None,
    sandbox: dict[str, Any] | None = None,
    team_id: int | None = None,
) -> OperationRun:
    """Keep what an executor ran next to the decision that allowed it. The command must be
    the one judged: a report of anything else is refused, and the refusal is audited (an
    executor that runs something else than it asked about is what approvals exist to
    catch)."""
    if outcome not in RunOutcome.values:
        raise InvalidRequest(f"outcome must be one of {', '.join(RunOutcome.values)}")
    refused = _refused_effects(refused_effects or [])
    contained = _sandbox(sandbox or {})
    request, entry, agent_type, judged = _allowed_operation(
        request_id=request_id, check_id=check_id, actor=actor, context_id=context_id
    )
    target = str(request.pk) if request is not None else str(check_id)
    target_type = "approval" if request is not None else "check"
    if operation_digest({"kind": "shell", "command": command}) != judged:
        audit_record(
            actor=actor,
            team_id=request.team_id if request is not None else team_id,
            action="operation.run_mismatch",
            target_type=target_type,
            target=target,
            payload={"context_id": context_id, "reported": command[:2000]},
        )
        raise Conflict("the command reported is not the command that was judged")
    try:
        with transaction.atomic():
            run = OperationRun.objects.create(
                request=request,
                check_entry=entry,
                context_id=context_id,
                agent_type=agent_type,
                command=command,
                outcome=outcome,
                exit_status=exit_status,
                signal=signal,
                duration_ms=duration_ms,
                stdout_bytes=stdout_bytes,
                stderr_bytes=stderr_bytes,
                truncated=truncated,
                refused_effects=refused,
                sandbox=contained,
                reported_by=actor,
                # The request's team; a check's is the reporter's (it was the one asking).
                team_id=request.team_id
                if request is not None
                else (team_id if team_id is not None else default_team_pk()),
            )
            audit_record(
                actor=actor,
                team_id=run.team_id,
                action="operation.run",
                target_type=target_type,
                target=target,
                payload={
                    "run": str(run.pk),
                    "context_id": context_id,
                    "outcome": outcome,
                    "exit_status": exit_status,
                    "signal": signal,
                    "duration_ms": duration_ms,
                    "truncated": truncated,
                    "refused_effects": refused,
                    "sandbox": contained,
                },
            )
    except IntegrityError:
        # One run per decision: the database's unique key, not a check that could race.
        raise Conflict(f"the run of {target_type} {target} was already reported") from None
    if request is not None:
        live.announce(request, live.RAN)
    return run
