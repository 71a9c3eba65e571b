"""Redis killed: the broker loses its queue and the channel layer its groups.

Pools created and released while Redis is SIGKILLed and started again (empty, as a Redis
without persistence comes back) still converge; a decision made while Redis is down
reaches the waiting agent; a live event sent after the restart arrives.

The processes these tests break use a Redis of their own, on a port of its own, so that
killing it takes nothing away from the rest of the suite (its worker, watcher and web
process keep the suite's Redis). What would happen in a cluster is what happens here: the
service's processes lose their broker and channel layer at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.conf import settings
from django.db import transaction
from django.test import override_settings

from allocations.models import Phase
from contextsvc.infra import events
from cs_agent import ApprovalClient
from devenv.services import Redis
from devenv.system import free_port, pid_alive, port_open
from profiles.tests.factories import SandboxProfileFactory
from testenv import ClusterHandle
from tests.faults.scenarios import (
    FAST_RESYNC,
    Caller,
    Stack,
    pool_body,
    scenario,
    wait_converged,
)
from tests.support.api import decide_over_http, issue_token
from tests.support.processes import ManagedProcess, celery_argv, child_env, manage_argv, wait_until

pytestmark = [pytest.mark.cluster]

RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(sudo:*)"]}}
ASKED = {"kind": "shell", "command": "pip install pandas"}


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    redis = Redis(port=free_port(), home=tmp_path_factory.mktemp("redis"))
    assert redis.start()
    try:
        yield redis
    finally:
        redis.stop()


def kill(redis: Redis) -> None:
    """SIGKILL, as the kubelet's OOM kill or a node loss would; the queue is gone."""
    pid = redis.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(
        lambda: not pid_alive(pid) and not port_open(redis.port),
        timeout=10,
        message="Redis to die",
    )


@pytest.fixture
def redis_stack(
    kube_cluster: ClusterHandle,
    watcher_process: ManagedProcess,
    own_redis: Redis,
    tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None,
    django_db_blocker: Any,
) -> Iterator[Stack]:
    """Web, worker and beat on the scenario's own Redis; the suite's watcher observes (it
    uses Redis only to announce, and the suite's Redis stays up). One stack per test, stopped
    before the test's database is emptied: this worker is not the suite's, so ``service``
    cannot wait for it to be idle, and a reconcile it ran while the database was emptied
    once made the flush fail."""
    with django_db_blocker.unblock():
        env = child_env({**FAST_RESYNC, "REDIS_URL": own_redis.url()})
    port = free_port()
    schedule = Path(tmp_path_factory.mktemp("beat")) / "schedule"
    web = ManagedProcess("web-redis", manage_argv("serve", "--bind", f"127.0.0.1:{port}"), env)
    beat = ManagedProcess(
        "beat-redis",
        celery_argv(
            "beat", "--loglevel=INFO", "-S", "celery.beat:PersistentScheduler", "-s", str(schedule)
        ),
        env,
    )
    worker = ManagedProcess(
        "worker-redis",
        celery_argv("worker", "--loglevel=INFO", "--concurrency=2", "-n", "redis-faults@%h"),
        env,
    )
    built = Stack(web, port, beat, worker, watcher_process, kube_cluster)
    built.start_web()
    beat.start()
    worker.start()
    try:
        yield built
    finally:
        web.stop()
        beat.stop()
        worker.stop()


@pytest.mark.usefixtures("service")
def test_redis_killed_mid_burst_and_mid_release_loses_its_queue_and_nothing_else(
    redis_stack: Stack, own_redis: Redis, namespace: str
) -> None:
    restarted: list[list[str]] = []

    def kill_and_restart() -> None:
        kill(own_redis)
        time.sleep(2)  # long enough for every process to notice
        assert own_redis.start()
        time.sleep(2)
        # A process that exits on losing Redis is started again, as the kubelet would.
        restarted.append(redis_stack.revive())

    scenario(
        redis_stack,
        namespace,
        "redis",
        during_burst=kill_and_restart,
        during_release=kill_and_restart,
    )
    # Every process rode both outages out: none had to be started again.
    assert restarted == [[], []]


RESTARTS = 6


@pytest.mark.usefixtures("service")
def test_the_worker_rides_out_redis_restarts_while_it_acknowledges(
    redis_stack: Stack, own_redis: Redis, namespace: str
) -> None:
    """Redis killed just after a burst, while the worker finishes and acknowledges its
    reconciles: kombu's Redis transport used to end the worker (an acknowledgement, or the
    closing of a channel, on a connection it had dropped), a third of the time.
    contextsvc/broker.py keeps it alive."""
    caller = Caller(redis_stack.url, issue_token("sh-restarts", ["allocations"]))
    names: list[str] = []
    exited: list[tuple[int, str]] = []
    for attempt in range(RESTARTS):
        for index in range(3):
            name = f"restart-{attempt}-{index}"
            assert caller.until_answered("POST", "/v1/sandbox-pools", pool_body(name, namespace))[
                -1
            ] in (201, 409)
            names.append(name)
        kill(own_redis)
        time.sleep(1)
        assert own_redis.start()
        time.sleep(2)
        worker = redis_stack.worker
        if worker.proc is not None and worker.proc.poll() is not None:
            exited.append((attempt, worker.log_tail(5)))
        redis_stack.revive()

    assert exited == []
    # And nothing was lost: every pool is ready (the resync re-queued what Redis lost).
    wait_converged(names, Phase.READY)


@pytest.fixture
def redis_web(own_redis: Redis, transactional_db: None) -> Iterator[str]:
    port = free_port()
    web = ManagedProcess(
        "web-redis-approvals",
        manage_argv("serve", "--bind", f"127.0.0.1:{port}"),
        child_env({"REDIS_URL": own_redis.url()}),
    ).start()
    web.wait_listening(port, timeout=60)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        web.stop()


def test_a_decision_made_while_redis_is_down_reaches_the_agent(
    redis_web: str, own_redis: Redis
) -> None:
    SandboxProfileFactory.create(name="data-agent", rules=RULES)
    agent = ApprovalClient(redis_web, issue_token("agent-1", ["agent"]), agent_type="data-agent")
    pending = agent.submit(ASKED, "ctx-1")
    answer: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: answer.update(agent.wait(pending["id"], timeout=60)))
    waiter.start()
    time.sleep(1.0)  # the long-poll is open, subscribed through the channel layer
    kill(own_redis)
    try:
        decided = decide_over_http(
            redis_web, issue_token("alice", ["approver"]), pending["id"], {"decision": "approve"}
        )
        waiter.join(timeout=60)
    finally:
        assert own_redis.start()

    assert not waiter.is_alive()
    assert decided["status"] == "approved"
    assert (answer["status"], answer["decidedBy"]) == ("approved", "api:alice")


@pytest.mark.django_db(transaction=True)
def test_a_live_event_sent_after_a_redis_restart_arrives(own_redis: Redis) -> None:
    """The sender keeps its Redis connections across sends; after Redis restarts its first
    send meets a dead connection and is tried again on a new one."""
    default: dict[str, Any] = settings.CHANNEL_LAYERS["default"]
    config: dict[str, Any] = {**default["CONFIG"], "hosts": [own_redis.url()]}
    hosts = {"default": {**default, "CONFIG": config}}
    with override_settings(CHANNEL_LAYERS=hosts):
        channel_layers.backends.clear()
        try:
            sender = events._Sender()
            layer = get_channel_layer()
            group = "redis-fault-test"

            def member() -> str:
                channel: str = async_to_sync(layer.new_channel)()
                async_to_sync(layer.group_add)(group, channel)
                return channel

            def next_message(channel: str) -> Any:
                async def receive() -> Any:
                    return await asyncio.wait_for(layer.receive(channel), 10)

                return async_to_sync(receive)()

            first = member()
            with transaction.atomic():
                transaction.on_commit(lambda: sender.send((group,), {"n": 1}))
            assert next_message(first) == {"type": "live.event", "event": {"n": 1}}

            kill(own_redis)
            assert own_redis.start()
            second = member()  # Redis lost the group with everything else
            sender.send((group,), {"n": 2})

            assert next_message(second) == {"type": "live.event", "event": {"n": 2}}
        finally:
            channel_layers.backends.clear()
