"""A LangGraph graph whose operations Context Service judges, that stops while a person
decides and resumes on any agent process from its PostgreSQL checkpoint (seed 001).

The optional extra ``agent`` (``pip install 'context-service[agent]'``) brings LangGraph and
its PostgreSQL checkpointer; the rest of cs_agent needs neither.

Each operation takes two nodes. ``judge`` asks the service: a rule's allow runs at once
(through the executor, contained where the profile says so), a rule's deny becomes a result
the model can read, and a queued request is kept in the state. ``decide`` then calls
``interrupt()`` with the request. LangGraph re-runs a resumed node from its start, so the
asking is a node of its own: resuming never asks again.

A resume value approves nothing. Whatever a resumer passes in, ``decide`` reads the
request's outcome from the service, and runs ``verdict.operation``: after a reviewer's edit,
the edited command, never the one the graph first wrote.

Who resumes. Every agent process runs a ``Resumer``. It keeps a table of the waits in the
agent's own PostgreSQL, beside the checkpoints (``cs_agent_waits``). It asks the service
about each waiting request, and resumes a decided one once it has claimed it. The claim is
one ``UPDATE … WHERE status = 'waiting'``, so when two processes both notice a decision, one
resumes and the other finds nothing to do. A claim whose process died is taken over after
``lease_seconds``, but only if the graph still waits on that request.

Asking the service needs only the agent's own outbound HTTP; no inbound route to the agent
is needed. A webhook would need the agent reachable from the service; a stream would need
a connection held per process. The cost is one GET per waiting request per interval.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import operator
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict
from urllib.parse import quote

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from cs_agent.client import ApprovalClient, ApprovalError, Verdict
from cs_agent.executor import Executor, RunResult

logger = logging.getLogger(__name__)

# Each result keeps this much of a command's output for the model (the run report has
# the sizes; the executor's own limit bounds what is captured).
OUTPUT_KEPT = 8192
# LangChain v1's human-in-the-loop decisions, and the service's outcome each one is.
DECISION_OF_STATUS = {"approved": "approve", "denied": "reject", "expired": "reject"}


class OperationState(TypedDict, total=False):
    """The graph's state. ``plan`` is the operations to ask for, in order: a scripted list
    here, or what a model's tool calls propose (a node before ``judge`` would append)."""

    context_id: str
    plan: list[dict[str, Any]]
    step: int
    # The queued request the graph waits on (the interrupt's payload), or None.
    pending: dict[str, Any] | None
    results: Annotated[list[dict[str, Any]], operator.add]


def interrupt_payload(answer: dict[str, Any], *, dashboard_url: str) -> dict[str, Any]:
    """What ``interrupt()`` surfaces for a queued request: the request (its id, the
    operation as the service normalised it, the rule evaluation, the deadline and its page)
    and, so that LangChain v1's human-in-the-loop UIs can show it, an ``action_requests`` /
    ``review_configs`` pair. Their decisions go to the dashboard, not back through the
    resume value."""
    operation = answer.get("operation") or {}
    kind = str(operation.get("kind", "operation"))
    return {
        "approval_request": answer["id"],
        "operation": operation,
        "normalised": answer.get("normalised"),
        "evaluation": answer.get("evaluation") or {},
        "deadline": answer.get("deadline"),
        "url": f"{dashboard_url.rstrip('/')}/approvals/{quote(str(answer['id']))}/",
        "action_requests": [
            {
                "name": kind,
                "args": operation,
                "description": f"Context Service waits for a person: {answer.get('normalised')}",
            }
        ],
        "review_configs": [
            {"action_name": kind, "allowed_decisions": ["approve", "edit", "reject"]}
        ],
    }


def result_of(verdict: Verdict, run: RunResult | None) -> dict[str, Any]:
    """A step's result as the model reads it. ``decision`` is LangChain's word for the
    outcome (``edit`` when a reviewer changed the command), ``error`` the refusal a model
    can act on, ``ran`` what ran."""
    decision = (
        "edit"
        if verdict.edited
        else DECISION_OF_STATUS.get(verdict.status, "approve" if verdict.allowed else "reject")
    )
    result: dict[str, Any] = {
        "request": verdict.request_id,
        "status": verdict.status,
        "decision": decision,
        "asked": verdict.asked or verdict.operation,
        "ran": None,
        "exit": None,
        "output": "",
        "error": None,
    }
    if not verdict.allowed:
        result["error"] = f"operation refused ({verdict.status}): {verdict.reason or 'no reason'}"
    elif run is None or run.outcome in ("refused", "error"):
        result["error"] = f"operation not run: {run.message if run else 'nothing to run'}"
    else:
        result.update(
            ran=run.command,
            exit=run.exit_code,
            output=run.stdout[:OUTPUT_KEPT].decode(errors="replace"),
        )
    return result


@dataclass
class GuardedGraph:
    """The nodes that ask before each operation, and the graph of a plan of them."""

    client: ApprovalClient
    executor: Executor
    dashboard_url: str
    # How long a person has to decide (the service's default when None).
    deadline_seconds: int | None = None
    stop_on_refusal: bool = True

    def judge(self, state: OperationState) -> dict[str, Any]:
        step = state.get("step", 0)
        operation = state["plan"][step]
        context_id = state["context_id"]
        try:
            answer = self.client.submit(
                operation, context_id, deadline_seconds=self.deadline_seconds
            )
        except ApprovalError as exc:
            verdict = Verdict(False, "error", str(exc), operation=operation)
            return {"step": step + 1, "results": [result_of(verdict, None)]}
        decided = self.client.immediate(answer)
        if decided is None:
            return {"pending": interrupt_payload(answer, dashboard_url=self.dashboard_url)}
        return {"step": step + 1, "results": [self._run(decided, context_id)]}

    def decide(self, state: OperationState) -> dict[str, Any]:
        pending = state["pending"] or {}
        request_id = str(pending["approval_request"])
        while True:
            # The value a resumer passes is not read: the outcome is the service's.
            interrupt(pending)
            try:
                answer = self.client.wait(request_id, timeout=0)
            except ApprovalError as exc:
                verdict = Verdict(False, "error", str(exc), request_id)
                break
            if answer["status"] != "pending":
                verdict = self.client.verdict_of(answer)
                break
            # Resumed before a decision (a resumer's mistake, or an operator's nudge):
            # wait again, as a new interrupt of this node.
        return {
            "pending": None,
            "step": state.get("step", 0) + 1,
            "results": [self._run(verdict, state["context_id"])],
        }

    def _run(self, verdict: Verdict, context_id: str) -> dict[str, Any]:
        run = self.executor.run_verdict(verdict, context_id=context_id) if verdict.allowed else None
        return result_of(verdict, run)

    def build(self, checkpointer: AsyncPostgresSaver) -> Any:
        builder = StateGraph(OperationState)
        builder.add_node("judge", self.judge)
        builder.add_node("decide", self.decide)
        builder.add_conditional_edges(START, self.next_step, ["judge", END])
        builder.add_conditional_edges("judge", self.after_judge, ["decide", "judge", END])
        builder.add_conditional_edges("decide", self.next_step, ["judge", END])
        return builder.compile(checkpointer=checkpointer)

    def next_step(self, state: OperationState) -> str:
        """The plan's next operation, until it is done or (``stop_on_refusal``) one was
        refused: a scripted plan has no other approach to choose; a model reads the
        refusal in the results and proposes one."""
        results = state.get("results") or []
        if self.stop_on_refusal and results and results[-1]["error"]:
            return END
        return "judge" if state.get("step", 0) < len(state.get("plan", [])) else END

    def after_judge(self, state: OperationState) -> str:
        return "decide" if state.get("pending") else self.next_step(state)


WAITS_TABLE = """
CREATE TABLE IF NOT EXISTS cs_agent_waits (
    thread_id text NOT NULL,
    request_id text NOT NULL,
    status text NOT NULL DEFAULT 'waiting',
    claimed_by text,
    claimed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, request_id)
)
"""


@dataclass(frozen=True)
class Outcome:
    """Where a thread stands after a start or a resume: ``waiting`` on a request (with the
    interrupt's payload) or ``done`` (with the state's results)."""

    thread_id: str
    status: str
    payload: dict[str, Any] | None
    results: list[dict[str, Any]]

    def as_json(self) -> str:
        return json.dumps(
            {
                "thread": self.thread_id,
                "status": self.status,
                "interrupt": self.payload,
                "results": self.results,
            }
        )


class Resumer:
    """Starts threads of a guarded graph and resumes the decided ones, exactly once among
    every process that shares the agent's PostgreSQL."""

    def __init__(
        self,
        guarded: GuardedGraph,
        checkpointer: AsyncPostgresSaver,
        connection: psycopg.AsyncConnection[Any],
        *,
        name: str | None = None,
        lease_seconds: float = 600.0,
    ) -> None:
        self.graph = guarded.build(checkpointer)
        self.client = guarded.client
        self.connection = connection
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.lease_seconds = lease_seconds

    async def setup(self) -> None:
        await self.connection.execute(WAITS_TABLE)

    async def start(
        self, thread_id: str, context_id: str, plan: Sequence[dict[str, Any]]
    ) -> Outcome:
        """Run a new thread until it ends or waits on a person. ``thread_id`` is the A2A
        ``contextId`` of a conversation (or a task of its own, to run several at once)."""
        state: OperationState = {"context_id": context_id, "plan": list(plan), "step": 0}
        return await self._advance(thread_id, state)

    async def resume_decided(self) -> list[Outcome]:
        """Resume every thread whose request the service has decided (or expired, or
        cancelled) and that this process could claim."""
        cursor = await self.connection.execute(
            "SELECT thread_id, request_id FROM cs_agent_waits WHERE status = 'waiting'"
            " OR (status = 'resuming' AND claimed_at < now() - make_interval(secs => %s))",
            (self.lease_seconds,),
        )
        outcomes = []
        for thread_id, request_id in await cursor.fetchall():
            try:
                state = await asyncio.to_thread(self.client.wait, request_id, timeout=0)
            except ApprovalError:
                continue  # the service is unreachable: the next round asks again
            if state["status"] == "pending" or not await self._claim(thread_id, request_id):
                continue
            resume: Command[Any] = Command(resume={"approval_request": request_id})
            outcomes.append(await self._advance(thread_id, resume, resumed=request_id))
        return outcomes

    async def cancel(self, thread_id: str) -> str | None:
        """Withdraw the request a thread waits on (A2A's CancelTask): the wait is never
        resumed, and the service cancels the request (its queue no longer shows it). The
        request's id, or None when the thread waited on nothing."""
        cursor = await self.connection.execute(
            "UPDATE cs_agent_waits SET status = 'cancelled'"
            " WHERE thread_id = %s AND status = 'waiting' RETURNING request_id",
            (thread_id,),
        )
        row = await cursor.fetchone()
        if row is None:
            return None
        try:
            await asyncio.to_thread(self.client.cancel, row[0])
        except ApprovalError as exc:
            # Decided meanwhile (409) or the service is away: the thread stays stopped
            # either way, and a decision that came first is not run.
            logger.warning("cancelling request %s: %s", row[0], exc)
        return str(row[0])

    async def run(
        self, *, interval: float, on_outcome: Callable[[Outcome], Awaitable[None]]
    ) -> None:
        """Resume what is decided every ``interval`` seconds until cancelled. A round that
        fails is logged and the next one tries again: a claim it left is taken over after
        its lease."""
        while True:
            try:
                for outcome in await self.resume_decided():
                    await on_outcome(outcome)
            except Exception:  # one bad round must not stop the resuming
                logger.exception("resuming decided requests failed; trying again")
            await asyncio.sleep(interval)

    async def _claim(self, thread_id: str, request_id: str) -> bool:
        """Take the wait for this process: one UPDATE, so two processes never both resume
        it. A claim past its lease is taken over only while the graph still waits there."""
        cursor = await self.connection.execute(
            "UPDATE cs_agent_waits SET status = 'resuming', claimed_by = %s, claimed_at = now()"
            " WHERE thread_id = %s AND request_id = %s AND (status = 'waiting'"
            " OR (status = 'resuming' AND claimed_at < now() - make_interval(secs => %s)))"
            " RETURNING 1",
            (self.name, thread_id, request_id, self.lease_seconds),
        )
        claimed = await cursor.fetchone() is not None
        if claimed and not await self._waits_on(thread_id, request_id):
            await self._finish(thread_id, request_id, "done")
            return False
        return claimed

    async def _waits_on(self, thread_id: str, request_id: str) -> bool:
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        return any(
            (item.value or {}).get("approval_request") == request_id for item in snapshot.interrupts
        )

    async def _advance(self, thread_id: str, given: Any, *, resumed: str | None = None) -> Outcome:
        """Run the thread from ``given`` (a new state, or the resume of the wait on
        ``resumed``) until it ends or waits again, and record the wait it is left in."""
        config = {"configurable": {"thread_id": thread_id}}
        output = await self.graph.ainvoke(given, config, version="v2")
        if resumed is not None:
            await self._finish(thread_id, resumed, "done")
        state = output.value
        if output.interrupts:
            payload = output.interrupts[0].value
            await self.connection.execute(
                "INSERT INTO cs_agent_waits (thread_id, request_id) VALUES (%s, %s)"
                " ON CONFLICT (thread_id, request_id) DO UPDATE SET status = 'waiting',"
                " claimed_by = NULL, claimed_at = NULL",
                (thread_id, str(payload["approval_request"])),
            )
            return Outcome(thread_id, "waiting", payload, list(state.get("results", [])))
        return Outcome(thread_id, "done", None, list(state.get("results", [])))

    async def _finish(self, thread_id: str, request_id: str, status: str) -> None:
        await self.connection.execute(
            "UPDATE cs_agent_waits SET status = %s WHERE thread_id = %s AND request_id = %s",
            (status, thread_id, request_id),
        )


@contextlib.asynccontextmanager
async def resumer_from_env(
    database: str, *, deadline_seconds: int | None = None
) -> AsyncIterator[Resumer]:
    """A Resumer for the agent the environment describes (``CS_URL``, ``CS_TOKEN``,
    ``CS_AGENT_TYPE``, ``CS_WORKSPACE_ROOT``…, ``CS_DASHBOARD_URL``), its checkpoints and
    waits in ``database``, set up."""
    client = ApprovalClient.from_env()
    guarded = GuardedGraph(
        client,
        Executor.from_env(client),
        os.environ.get("CS_DASHBOARD_URL") or client.base_url,
        deadline_seconds,
    )
    async with (
        AsyncPostgresSaver.from_conn_string(database) as checkpointer,
        await psycopg.AsyncConnection.connect(database, autocommit=True) as connection,
    ):
        await checkpointer.setup()
        resumer = Resumer(guarded, checkpointer, connection)
        await resumer.setup()
        yield resumer


async def serve(
    database: str,
    *,
    start: tuple[str, str, list[dict[str, Any]]] | None,
    interval: float,
    once: bool,
    deadline_seconds: int | None = None,
) -> None:
    """``python -m cs_agent.graph``: optionally start a thread, then resume what is
    decided, printing each outcome as a JSON line."""

    async def emit(outcome: Outcome) -> None:
        print(outcome.as_json(), flush=True)

    async with resumer_from_env(database, deadline_seconds=deadline_seconds) as resumer:
        if start is not None:
            await emit(await resumer.start(*start))
        if once:
            for outcome in await resumer.resume_decided():
                await emit(outcome)
            return
        await resumer.run(interval=interval, on_outcome=emit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs_agent.graph",
        description="Run and resume Context Service guarded LangGraph threads.",
    )
    parser.add_argument("--database", default=os.environ.get("CS_AGENT_DATABASE_URL"))
    parser.add_argument("--start", nargs=3, metavar=("THREAD", "CONTEXT", "PLAN_JSON"))
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--once", action="store_true", help="resume what is decided, then exit")
    parser.add_argument(
        "--deadline-seconds", type=int, help="how long a person has to decide each request"
    )
    args = parser.parse_args(argv)
    if not args.database:
        parser.error("set --database or CS_AGENT_DATABASE_URL (the agent's PostgreSQL)")
    start = None
    if args.start:
        thread, context, plan = args.start
        start = (thread, context, json.loads(plan))
    try:
        asyncio.run(
            serve(
                args.database,
                start=start,
                interval=args.interval,
                once=args.once,
                deadline_seconds=args.deadline_seconds,
            )
        )
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
