"""Ask Context Service whether an operation may run, waiting for a human when it must."""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

LONG_POLL_SECONDS = 30.0
# The server holds a long-poll open this long at most; the socket waits a little longer.
SOCKET_SLACK = 15.0
# No answer at all (None: refused, reset, timed out) or a gateway / unavailable answer.
RECONNECT_STATUSES = (None, 502, 503, 504)
RECONNECT_SECONDS = 1.0


class ApprovalError(Exception):
    """Context Service could not be asked, or refused the request itself (HTTP 4xx/5xx)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Verdict:
    """What the agent may do. ``allowed`` is the only thing an executor needs to look at;
    everything else explains it. ``status`` is ``allow``/``deny`` for an immediate rule
    decision, or the request's final status (``approved``, ``denied``, ``expired``,
    ``cancelled``), or ``timeout`` / ``error`` when no answer came (both deny)."""

    allowed: bool
    status: str
    reason: str | None = None
    request_id: str | None = None
    evaluation: dict[str, Any] = field(default_factory=dict)
    # The operation as the service judged it (after an edit, the edited one): what an
    # executor runs. And how to run it: the profile's isolation and limits.
    operation: dict[str, Any] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)
    # An immediate rule decision's audit record (a queued one is known by request_id).
    check_id: int | None = None
    # A reviewer rewrote the operation and approved the rewrite: ``operation`` is theirs
    # (what to run), ``asked`` what the agent asked.
    edited: bool = False
    asked: dict[str, Any] = field(default_factory=dict)


class ServiceClient:
    """HTTP to Context Service with a bearer token; errors become ``ApprovalError``."""

    def __init__(self, base_url: str, token: str, *, request_timeout: float = 10.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ApprovalError(f"Context Service URL must be http(s), got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.request_timeout = request_timeout

    def _call(
        self, method: str, path: str, body: Any = None, *, timeout: float | None = None
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - the operator configures the URL
            self.base_url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        seconds = timeout or self.request_timeout
        try:
            # The scheme was checked in __init__: only http(s) URLs get here.
            with urllib.request.urlopen(request, timeout=seconds) as response:  # noqa: S310
                return int(response.status), json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read() or b"null")
            except ValueError:
                detail = None
            message = detail.get("message") if isinstance(detail, dict) else exc.reason
            raise ApprovalError(
                f"{method} {path}: {exc.code} {message}", exc.code, detail
            ) from None
        except (OSError, ValueError) as exc:
            raise ApprovalError(f"{method} {path}: {exc}") from None


def _require_env(*names: str) -> None:
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        raise ApprovalError(f"set {', '.join(missing)} to reach Context Service")


class ApprovalClient(ServiceClient):
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        agent_type: str,
        agent_instance: str | None = None,
        allocation: str | None = None,
        request_timeout: float = 10.0,
    ) -> None:
        super().__init__(base_url, token, request_timeout=request_timeout)
        self.agent_type = agent_type
        self.agent_instance = agent_instance or socket.gethostname()
        self.allocation = allocation

    @classmethod
    def from_env(cls) -> ApprovalClient:
        """``CS_URL``, ``CS_TOKEN``, ``CS_AGENT_TYPE`` and optionally ``CS_AGENT_INSTANCE``,
        ``CS_ALLOCATION``."""
        missing = [
            name for name in ("CS_URL", "CS_TOKEN", "CS_AGENT_TYPE") if not os.environ.get(name)
        ]
        if missing:
            raise ApprovalError(f"set {', '.join(missing)} to reach Context Service")
        return cls(
            os.environ["CS_URL"],
            os.environ["CS_TOKEN"],
            agent_type=os.environ["CS_AGENT_TYPE"],
            agent_instance=os.environ.get("CS_AGENT_INSTANCE"),
            allocation=os.environ.get("CS_ALLOCATION"),
        )

    # --- The protocol ----------------------------------------------------------------------

    def submit(
        self, operation: dict[str, Any], context_id: str, *, deadline_seconds: int | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "contextId": context_id,
            "agentType": self.agent_type,
            "agentInstance": self.agent_instance,
            "operation": operation,
        }
        if self.allocation:
            body["allocation"] = self.allocation
        if deadline_seconds is not None:
            body["deadlineSeconds"] = deadline_seconds
        _, answer = self._call("POST", "/v1/approvals", body)
        return dict(answer)

    def wait(self, request_id: str, *, timeout: float) -> dict[str, Any]:
        """Long-poll until the request is decided (or expires) or ``timeout`` passes."""
        until = time.monotonic() + timeout
        path = f"/v1/approvals/{quote(request_id)}"
        while True:
            wait = max(0.0, min(LONG_POLL_SECONDS, until - time.monotonic()))
            try:
                _, state = self._call("GET", f"{path}?wait={wait:.1f}", timeout=wait + SOCKET_SLACK)
            except ApprovalError as exc:
                # The web process holding the poll went away (a restart, a rollout) or the
                # service is briefly unavailable: the decision is in the database, so ask
                # again until the deadline; anything else is an answer (and fails closed).
                if exc.status not in RECONNECT_STATUSES or time.monotonic() >= until:
                    raise
                time.sleep(min(RECONNECT_SECONDS, max(0.0, until - time.monotonic())))
                continue
            if state["status"] != "pending" or time.monotonic() >= until or wait == 0:
                return dict(state)

    def cancel(self, request_id: str) -> dict[str, Any]:
        _, state = self._call("POST", f"/v1/approvals/{quote(request_id)}/cancel")
        return dict(state)

    def check(
        self,
        operation: dict[str, Any],
        context_id: str,
        *,
        timeout: float = 300.0,
        deadline_seconds: int | None = None,
        on_pending: Callable[[dict[str, Any]], None] | None = None,
    ) -> Verdict:
        """Allowed or not. Blocks while a human decides, up to ``timeout`` seconds.

        Fails closed: an error, a timeout or an expired request is a denial. ``on_pending``
        is called once with the pending request (its id, deadline and the rule evaluation)
        before blocking — the place to tell a user that input is required."""
        try:
            answer = self.submit(operation, context_id, deadline_seconds=deadline_seconds)
            decided = self.immediate(answer)
            if decided is not None:
                return decided
            if on_pending is not None:
                on_pending(answer)
            return self.outcome(answer["id"], timeout=timeout)
        except ApprovalError as exc:
            return Verdict(False, "error", str(exc))

    @staticmethod
    def immediate(answer: dict[str, Any]) -> Verdict | None:
        """The verdict in ``submit``'s answer when a rule decided at once; None when the
        operation was queued for a human."""
        if answer.get("decision") not in ("allow", "deny"):
            return None
        return Verdict(
            answer["decision"] == "allow",
            answer["decision"],
            evaluation=answer.get("evaluation") or {},
            operation=answer.get("operation") or {},
            execution=answer.get("execution") or {},
            check_id=answer.get("checkId"),
        )

    def outcome(self, request_id: str, *, timeout: float) -> Verdict:
        """The verdict on a queued request: waits up to ``timeout`` for the decision and
        cancels the request if none came (a denial, like every other failure). What a
        LangGraph graph resumed after ``interrupt()`` calls."""
        try:
            state = self.wait(request_id, timeout=timeout)
            if state["status"] == "pending":
                self.cancel(request_id)
                return Verdict(False, "timeout", f"no decision within {timeout:.0f}s", request_id)
        except ApprovalError as exc:
            return Verdict(False, "error", str(exc), request_id)
        return self.verdict_of(state)

    @staticmethod
    def verdict_of(state: dict[str, Any]) -> Verdict:
        """The verdict a decided request states. ``allow_edited``: run the reviewer's edit
        (``edit.operation``), never what was asked; without an edit to run it is refused."""
        decision, edit = state.get("decision"), state.get("edit")
        request_id = state.get("id")
        asked = state.get("operation") or {}
        if decision == "allow_edited":
            if not isinstance(edit, dict) or not isinstance(edit.get("operation"), dict):
                return Verdict(False, "error", "an edited approval without its edit", request_id)
            return Verdict(
                True,
                state["status"],
                state.get("reason"),
                request_id,
                edit.get("evaluation") or {},
                operation=edit["operation"],
                execution=state.get("execution") or {},
                edited=True,
                asked=asked,
            )
        return Verdict(
            decision == "allow",
            state["status"],
            state.get("reason"),
            request_id,
            state.get("evaluation") or {},
            operation=asked,
            execution=state.get("execution") or {},
            asked=asked,
        )

    def report_run(
        self,
        verdict: Verdict,
        *,
        context_id: str,
        command: str,
        outcome: str,
        exit_status: int | None,
        signal: int | None,
        duration: float,
        stdout_bytes: int,
        stderr_bytes: int,
        truncated: bool,
        refused_effects: list[dict[str, str]] | None = None,
        sandbox: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """What an executor ran for an allowed operation; the service checks that it is the
        operation it allowed and keeps it next to the decision."""
        body: dict[str, Any] = {
            "contextId": context_id,
            "command": command,
            "outcome": outcome,
            "exitStatus": exit_status,
            "signal": signal,
            "durationMs": round(duration * 1000),
            "stdoutBytes": stdout_bytes,
            "stderrBytes": stderr_bytes,
            "truncated": truncated,
        }
        if refused_effects:
            body["refusedEffects"] = refused_effects
        if sandbox:
            body["sandbox"] = sandbox
        if verdict.request_id is not None:
            body["requestId"] = verdict.request_id
        else:
            body["checkId"] = verdict.check_id
        _, record = self._call("POST", "/v1/runs", body)
        return dict(record)

    # --- Conveniences ----------------------------------------------------------------------

    def shell(self, command: str, context_id: str, **kwargs: Any) -> Verdict:
        return self.check({"kind": "shell", "command": command}, context_id, **kwargs)

    def file(self, action: str, path: str, context_id: str, **kwargs: Any) -> Verdict:
        return self.check({"kind": "file", "action": action, "path": path}, context_id, **kwargs)

    def network(self, host: str, context_id: str, **kwargs: Any) -> Verdict:
        return self.check({"kind": "network", "host": host}, context_id, **kwargs)
