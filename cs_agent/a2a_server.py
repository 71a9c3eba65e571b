"""The reference A2A agent of seed 001 ("python-data-agent"), on the protocol's own SDK
(a2a-sdk 1.x) and cs_agent.graph: its tasks ask Context Service before each command.

    python -m cs_agent.a2a_server --port 8100      # CS_URL, CS_TOKEN, CS_AGENT_TYPE,
                                                   # CS_WORKSPACE_ROOT, CS_AGENT_DATABASE_URL

A task moves ``submitted → working → input-required`` while a person decides; the status
message names what is asked and links the request's page in the dashboard. It then moves
``→ working → completed`` with the commands' output as an artifact. A denial or an expiry
makes it ``failed``, with the reason. ``CancelTask`` cancels the approval request in the
service and makes the task ``canceled``.

No model is needed: each line of the message's text is a command the graph asks for in
turn (docs/agent-client.md shows where a model's tool calls take their place).

Threads. Several tasks of one ``contextId`` may run at once: A2A does not cancel the
earlier one (seed 001), and they share that context's workspace directory; the executor
locks it for writes. A LangGraph thread runs one step at a time, so each task is a thread
of its own, ``<contextId>:<taskId>``.

Resuming. The server's ``Resumer`` loop resumes decided requests. The tasks are kept in the
agent's PostgreSQL (``DatabaseTaskStore``), like the checkpoints and the waits, so the Pod
that resumes a graph need not be the one that started it. The resume reaches the task as
an internal message sent through the request handler, which re-runs ``execute()`` with the
outcome in the call's state. A caller over HTTP cannot set that state.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

from cs_agent.graph import Outcome, Resumer, resumer_from_env

logger = logging.getLogger(__name__)

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
}
# Where the resumer puts a thread's outcome for execute(): the call's own state, which no
# HTTP request can set.
RESUMED = "cs_agent.resumed"


def thread_of(context_id: str, task_id: str) -> str:
    return f"{context_id}:{task_id}"


def task_of(thread_id: str) -> tuple[str, str] | None:
    context_id, _, task_id = thread_id.rpartition(":")
    return (context_id, task_id) if context_id and task_id else None


def plan_of(text: str) -> list[dict[str, Any]]:
    """The scripted agent's plan: each non-blank line of the message is a command."""
    return [
        {"kind": "shell", "command": line.strip()} for line in text.splitlines() if line.strip()
    ]


def transcript(results: list[dict[str, Any]]) -> str:
    """The task's artifact: what ran and what it printed, or why it did not run."""
    parts = []
    for result in results:
        if result["error"]:
            parts.append(f"# {result['asked'].get('command')}: {result['error']}")
            continue
        header = f"$ {result['ran']}"
        if result["decision"] == "edit":
            header += f"   (a reviewer changed it from: {result['asked'].get('command')})"
        parts.append(f"{header}\n{result['output']}".rstrip("\n") + f"\n[exit {result['exit']}]")
    return "\n".join(parts)


class DataAgentExecutor(AgentExecutor):
    def __init__(self, resumer: Resumer) -> None:
        self.resumer = resumer

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        # The stored task's contextId: a follow-up without one gets a new id from the SDK.
        context_id = task.context_id if task is not None else str(context.context_id)
        task_id = str(context.task_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if task is None:
            assert context.message is not None  # a new task always comes with its message
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            await updater.start_work()
            plan = plan_of(context.get_user_input())
            await self._report(
                updater, await self.resumer.start(thread_of(context_id, task_id), context_id, plan)
            )
            return
        if task.status.state in TERMINAL:
            # A request queued behind the one that ended the task: emitting anything would
            # bring the task back.
            return
        outcome = context.call_context.state.get(RESUMED) if context.call_context else None
        if isinstance(outcome, Outcome):
            await updater.start_work()
            await self._report(updater, outcome)
            return
        await updater.requires_input(
            updater.new_agent_message([Part(text="Still waiting for a person to decide.")])
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        context_id, task_id = str(context.context_id), str(context.task_id)
        cancelled = await self.resumer.cancel(thread_of(context_id, task_id))
        updater = TaskUpdater(event_queue, task_id, context_id)
        note = f"Cancelled; approval request {cancelled} withdrawn." if cancelled else "Cancelled."
        await updater.cancel(updater.new_agent_message([Part(text=note)]))

    @staticmethod
    async def _report(updater: TaskUpdater, outcome: Outcome) -> None:
        if outcome.status == "waiting" and outcome.payload is not None:
            asked = outcome.payload
            text = f"Waiting for a person to approve `{asked['normalised']}`: {asked['url']}"
            await updater.requires_input(
                updater.new_agent_message([Part(text=text)], metadata={"approval": asked})
            )
            return
        await updater.add_artifact([Part(text=transcript(outcome.results))], name="output")
        refused = [result["error"] for result in outcome.results if result["error"]]
        if refused:
            await updater.failed(updater.new_agent_message([Part(text=refused[0])]))
        else:
            await updater.complete()


def agent_card(url: str) -> AgentCard:
    return AgentCard(
        name="python-data-agent",
        description=(
            "Runs each line of a message as a shell command in the conversation's workspace, "
            "asking Context Service first; waits (input-required) while a person decides."
        ),
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="shell",
                name="Shell in a workspace",
                description="One command per line, each judged by Context Service.",
                tags=["shell", "data"],
            )
        ],
    )


async def deliver(handler: DefaultRequestHandler, outcome: Outcome) -> None:
    """A resumed thread's outcome to its task, through the request handler (so the task
    store, and anyone following the task, hear of it)."""
    ids = task_of(outcome.thread_id)
    if ids is None:
        return
    context_id, task_id = ids
    message = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        task_id=task_id,
        context_id=context_id,
        parts=[Part(text="Context Service: the request was decided.")],
    )
    await handler.on_message_send(
        SendMessageRequest(message=message), ServerCallContext(state={RESUMED: outcome})
    )


def asyncpg_url(database: str) -> str:
    """SQLAlchemy's name for the same PostgreSQL (the task store's driver is asyncpg)."""
    scheme, _, rest = database.partition("://")
    return f"postgresql+asyncpg://{rest}" if scheme in ("postgres", "postgresql") else database


@contextlib.asynccontextmanager
async def serving(
    database: str, url: str, *, interval: float, deadline_seconds: int | None = None
) -> AsyncIterator[Starlette]:
    """The A2A application with everything behind it open, and the resumer running."""
    engine = create_async_engine(asyncpg_url(database))
    async with resumer_from_env(database, deadline_seconds=deadline_seconds) as resumer:
        store = DatabaseTaskStore(engine, create_table=True)
        await store.initialize()
        card = agent_card(url)
        handler = DefaultRequestHandler(
            agent_executor=DataAgentExecutor(resumer), task_store=store, agent_card=card
        )

        async def deliver_to_task(outcome: Outcome) -> None:
            await deliver(handler, outcome)

        resuming = asyncio.create_task(resumer.run(interval=interval, on_outcome=deliver_to_task))
        app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
        )
        try:
            yield app
        finally:
            resuming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await resuming
            await handler.aclose()
            await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cs_agent.a2a_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--database", default=os.environ.get("CS_AGENT_DATABASE_URL"))
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between resumes")
    parser.add_argument("--deadline-seconds", type=int)
    args = parser.parse_args(argv)
    if not args.database:
        parser.error("set --database or CS_AGENT_DATABASE_URL (the agent's PostgreSQL)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    url = f"http://{args.host}:{args.port}/"

    async def run() -> None:
        async with serving(
            args.database, url, interval=args.interval, deadline_seconds=args.deadline_seconds
        ) as app:
            config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info")
            server = uvicorn.Server(config)
            logger.info("python-data-agent on %s", url)
            await server.serve()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
