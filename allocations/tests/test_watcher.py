"""Observed state stays right when events are missed or watches expire: the watcher, its
standby, its informers, and the resync behind them."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from allocations import selectors, watcher
from allocations.models import Allocation, Phase, PoolPresence
from allocations.observe import shard_of
from allocations.requests import PoolRequest
from allocations.resync import resync_all
from allocations.services.create import allocation_create
from contextsvc.core.models import ProcessHeartbeat
from contextsvc.infra.errors import AlreadyExists
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import POD, PVC, SANDBOX
from contextsvc.kube.objects.labels import MANAGED_SELECTOR, pool_labels, pool_selector
from contextsvc.kube.objects.names import sandbox_name
from contextsvc.kube.objects.pod import pod_is_ready
from tests.support.kube import (
    admin_create,
    admin_delete,
    admin_patch,
    make_pvc,
    resync_until_settled,
    wait_for_phase,
)
from tests.support.processes import ManagedProcess, manage_argv, wait_until

pytestmark = pytest.mark.cluster


def start_watcher(process: ManagedProcess) -> None:
    process.start()
    wait_until(
        lambda: "watching" in process.log_path.read_text(errors="replace"),
        timeout=60,
        message="the watcher to start again",
    )


@pytest.mark.usefixtures("service")
def test_resync_and_a_restarted_watcher_repair_missed_events(
    namespace: str, watcher_process: ManagedProcess
) -> None:
    request = PoolRequest(
        "missed",
        2,
        "shared",
        workspace_size="1Gi",
        workspace_access_mode="ReadWriteMany",
        namespace=namespace,
    )
    allocation = allocation_create(request=request, actor="user:test").allocation
    wait_for_phase("missed", Phase.READY)
    watcher_process.stop()
    try:
        # As if the watcher had never seen the Pods become Ready.
        Allocation.objects.filter(pk=allocation.pk).update(
            phase=Phase.PROVISIONING, ready_replicas=0
        )

        report = resync_all(adopt=False)

        allocation.refresh_from_db()
        assert (allocation.phase, allocation.ready_replicas) == (Phase.READY, 2)
        assert report.changed == 1
        assert report.requeued == []

        Allocation.objects.filter(pk=allocation.pk).update(
            phase=Phase.PROVISIONING, ready_replicas=0
        )
    finally:
        start_watcher(watcher_process)
    # A watcher that starts lists everything and fixes what it finds.
    wait_for_phase("missed", Phase.READY)
    allocation.refresh_from_db()
    assert allocation.ready_replicas == 2


@pytest.mark.usefixtures("service")
def test_one_watcher_is_active_and_a_standby_takes_over(
    namespace: str, watcher_process: ManagedProcess
) -> None:
    standby = ManagedProcess("watcher-standby", manage_argv("watch"), watcher_process.env)

    def said(process: ManagedProcess, text: str) -> bool:
        return text in process.log_path.read_text(errors="replace")

    standby.start()
    try:
        wait_until(
            lambda: said(standby, "another watcher is active; standing by"),
            timeout=30,
            message="the second watcher to stand by",
        )
        assert not said(standby, "this watcher is now active")
        watcher_process.stop()
        try:
            wait_until(
                lambda: said(standby, "this watcher is now active"),
                timeout=30,
                message="the standby to take over",
            )
            # The standby now does the active one's work: readiness reaches the row.
            request = PoolRequest(
                "takeover", 1, "shared", workspace_size="1Gi", workspace_access_mode="ReadWriteMany",
                namespace=namespace,
            )  # fmt: skip
            allocation_create(request=request, actor="user:test")
            assert wait_for_phase("takeover", Phase.READY).ready_replicas == 1
        finally:
            standby.stop()
    finally:
        start_watcher(watcher_process)


# Well past the 75 s it takes on a young cluster, and well inside the test's own timeout
# (below), so that a cluster that never expires it fails with this helper's message.
CHURN_DEADLINE = 150.0


def expire_resource_version_one(namespace: str) -> None:
    """Make a watch from resourceVersion "1" fail with 410 Gone, as it does on any cluster
    that has been busy for a while. The API server's watch cache serves old versions until it
    drops its first events, which it does once they are older than its freshness window
    (75 s) and it is full; on a young cluster it has not yet, so churn PVCs (without our
    labels: the informer under test never sees them) until it has."""
    target = kube.Watchable(PVC, namespace, "")
    deadline = time.monotonic() + CHURN_DEADLINE
    batch = 0
    while time.monotonic() < deadline:
        first = next(iter(kube.watch_raw(target, "1", timeout_seconds=1)), None)
        if first is not None and first["type"] == "ERROR" and first["object"].get("code") == 410:
            return
        for index in range(10):
            name = f"churn-{batch}-{index}"
            make_pvc(namespace, name, modes=["ReadWriteOnce"], storage_class="churn-no-such-class")
            admin_delete(PVC, namespace, name)
        batch += 1
        time.sleep(1)
    raise AssertionError(
        f"the API server still serves resourceVersion 1 after {CHURN_DEADLINE:g} s of churn"
    )


@pytest.mark.timeout(CHURN_DEADLINE + 60)
def test_informer_relists_after_410_gone(
    kube_cluster: Any,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin_create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "seen",
                "namespace": namespace,
                "labels": pool_labels("p"),
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    expire_resource_version_one(namespace)
    real_list = kube.list_raw
    versions: list[str] = []

    def list_then_expire(watchable: kube.Watchable) -> tuple[list[dict[str, Any]], str]:
        items, version = real_list(watchable)
        versions.append(version)
        # The first list hands out a resourceVersion the API server has long forgotten, so
        # the watch that follows it fails with 410 Gone.
        return items, "1" if len(versions) == 1 else version

    monkeypatch.setattr(kube, "list_raw", list_then_expire)
    changes: list[tuple[str | None, str | None]] = []
    stop = threading.Event()
    informer = watcher.Informer(
        kube.Watchable(PVC, namespace, MANAGED_SELECTOR),
        "pvcs",
        lambda old, new: changes.append(
            (old["metadata"]["name"] if old else None, new["metadata"]["name"] if new else None)
        ),
        stop,
    )
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: informer.relists == 2, timeout=30, message="a relist after 410")
        kube.delete_object(PVC, namespace, "seen")
        # The watch opened after the relist follows the deletion.
        wait_until(
            lambda: informer.items_for((namespace, "p")) == [],
            timeout=30,
            message="the informer to see the deletion",
        )
    finally:
        stop.set()
    assert len(versions) == 2
    assert f"watch of persistentvolumeclaims in {namespace}" in caplog.text
    assert "expired (410); relisting" in caplog.text
    assert "failed" not in caplog.text
    assert changes[0] == (None, "seen")
    assert changes[-1] == ("seen", None)


@pytest.mark.usefixtures("service")
def test_the_resync_records_only_what_changed(namespace: str) -> None:
    request = PoolRequest(
        "steady",
        1,
        "shared",
        workspace_size="1Gi",
        workspace_access_mode="ReadWriteMany",
        namespace=namespace,
    )
    allocation_create(request=request, actor="user:test")
    wait_for_phase("steady", Phase.READY)

    first = resync_all(adopt=False)
    resync_until_settled()
    second = resync_all(adopt=False)
    sandbox = sandbox_name("steady", 0)
    kube_patch_annotation(namespace, sandbox)
    third = resync_all(adopt=False)

    # The first cycle looks and notes what it saw; once the controllers are done writing,
    # a cycle has nothing to look at;
    # a changed object (a new resourceVersion) is looked at again.
    assert (first.checked, first.changed, first.unchanged) == (1, 0, 0)
    assert (second.checked, second.changed, second.unchanged) == (1, 0, 1)
    assert (third.checked, third.changed, third.unchanged) == (1, 0, 0)
    assert Allocation.objects.get(name="steady").phase == Phase.READY


def kube_patch_annotation(namespace: str, sandbox: str) -> None:
    admin_patch(SANDBOX, namespace, sandbox, {"metadata": {"annotations": {"touched": "yes"}}})


@pytest.mark.usefixtures("service")
def test_two_watcher_shards_share_the_pools_and_take_over_from_each_other(
    namespace: str, watcher_process: ManagedProcess
) -> None:
    env = {**watcher_process.env, "CS_WATCHER_SHARDS": "2"}
    first = ManagedProcess("watcher-shard-a", manage_argv("watch"), env)
    second = ManagedProcess("watcher-shard-b", manage_argv("watch"), env)

    def shards_of(process: ManagedProcess) -> str:
        text = process.log_path.read_text(errors="replace")
        marker = "this watcher is now active (shards "
        return text[text.index(marker) + len(marker) :].split(")", 1)[0] if marker in text else ""

    by_shard: dict[int, list[str]] = {0: [], 1: []}
    index = 0
    while min(len(names) for names in by_shard.values()) < 2:
        name = f"sharded-{index}"
        index += 1
        shard = shard_of((namespace, name), 2)
        if len(by_shard[shard]) < 2:
            by_shard[shard].append(name)

    watcher_process.stop()
    try:
        first.start()
        wait_until(lambda: shards_of(first), timeout=30, message="the first shard's watcher")
        second.start()
        wait_until(lambda: shards_of(second), timeout=30, message="the second shard's watcher")
        # Each holds one shard: the second took the one the first left free.
        assert sorted([shards_of(first), shards_of(second)]) == ["[0]", "[1]"]
        for names in by_shard.values():
            for name in names[:1]:
                request = PoolRequest(
                    name, 1, "shared", workspace_size="1Gi", workspace_access_mode="ReadWriteMany",
                    namespace=namespace,
                )  # fmt: skip
                allocation_create(request=request, actor="user:test")
        for names in by_shard.values():
            assert wait_for_phase(names[0], Phase.READY).ready_replicas == 1

        first.kill()
        orphaned = int(shards_of(first).strip("[]"))
        wait_until(
            lambda: (
                f"taking over shard(s) [{orphaned}]" in second.log_path.read_text(errors="replace")
            ),
            timeout=30,
            message="the survivor to take the dead one's shard",
        )
        late = by_shard[orphaned][1]
        request = PoolRequest(
            late,
            1,
            "shared",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteMany",
            namespace=namespace,
        )
        allocation_create(request=request, actor="user:test")
        assert wait_for_phase(late, Phase.READY).ready_replicas == 1
    finally:
        first.stop()
        second.stop()
        start_watcher(watcher_process)


@pytest.mark.usefixtures("service")
def test_two_namespace_groups_share_a_database_each_recording_its_own(
    namespace: str, other_namespace: str, watcher_process: ManagedProcess
) -> None:
    """Watchers of two namespace groups (CS_ALLOWED_NAMESPACES) are active at once, each on
    locks of its own; each records only its namespaces' allocations, and one killed loses
    nothing: its successor records what happened meanwhile."""
    first = ManagedProcess(
        "watcher-group-a",
        manage_argv("watch"),
        {**watcher_process.env, "CS_ALLOWED_NAMESPACES": namespace},
    )
    second = ManagedProcess(
        "watcher-group-b",
        manage_argv("watch"),
        {**watcher_process.env, "CS_ALLOWED_NAMESPACES": other_namespace},
    )

    def active(process: ManagedProcess) -> bool:
        return "this watcher is now active (shards [0])" in process.log_path.read_text(
            errors="replace"
        )

    def create(name: str, where: str) -> None:
        request = PoolRequest(
            name,
            1,
            "shared",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteMany",
            namespace=where,
        )
        allocation_create(request=request, actor="user:test")

    watcher_process.stop()
    try:
        first.start()
        second.start()
        wait_until(lambda: active(first) and active(second), timeout=60, message="both groups")
        create("group-a", namespace)
        create("group-b", other_namespace)
        assert wait_for_phase("group-a", Phase.READY).ready_replicas == 1
        assert wait_for_phase("group-b", Phase.READY).ready_replicas == 1

        first.kill()
        create("group-a-late", namespace)
        create("group-b-late", other_namespace)
        assert wait_for_phase("group-b-late", Phase.READY).ready_replicas == 1
        # Its Pod is Ready, but nobody records group a's namespace now: the other group's
        # watcher does not look at it.
        wait_until(
            lambda: any(
                pod_is_ready(pod)
                for pod in kube.list_objects(POD, namespace, pool_selector("group-a-late"))
            ),
            timeout=60,
            message="group-a-late's Pod to be Ready",
        )
        time.sleep(2)
        assert Allocation.objects.get(name="group-a-late").phase != Phase.READY
        assert Allocation.objects.get(name="group-a").phase == Phase.READY

        first.start()
        assert wait_for_phase("group-a-late", Phase.READY).ready_replicas == 1
        assert Allocation.objects.get(name="group-b").phase == Phase.READY
    finally:
        first.stop()
        second.stop()
        start_watcher(watcher_process)


def _vouched(namespace: str, name: str) -> bool:
    return selectors.watcher_vouches(namespace=namespace, name=name)


def _pool(name: str, namespace: str) -> PoolRequest:
    return PoolRequest(name, 1, "dedicated", workspace_size="1Gi", workspace_access_mode="ReadWriteOnce",
                       namespace=namespace)  # fmt: skip


@pytest.mark.usefixtures("service")
def test_leftovers_keep_a_name_taken_from_the_watchers_view(namespace: str) -> None:
    """A POST reads the watcher's PoolPresence instead of listing every kind: what it holds
    is what the 409 follows, and the watcher keeps it to what its caches hold."""
    make_pvc(namespace, "left-behind", modes=["ReadWriteOnce"], labels=pool_labels("ghostly"))
    # Wearing only the pool label counts for nothing (no Sandbox made it).
    admin_create(POD, {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "impostor", "namespace": namespace,
                                    "labels": {"context.rossoctl.io/pool": "posing"}},
                       "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})  # fmt: skip
    wait_until(
        lambda: (
            selectors.pool_leftovers(namespace=namespace, name="ghostly") == ["pvcs/left-behind"]
        ),
        timeout=30,
        message="the watcher to record the leftover",
    )
    wait_until(lambda: _vouched(namespace, "phantom"), timeout=40, message="the heartbeat")
    assert selectors.pool_leftovers(namespace=namespace, name="posing") == []

    with pytest.raises(AlreadyExists, match='sandbox pool "ghostly" already exists'):
        allocation_create(request=_pool("ghostly", namespace), actor="user:test")
    # Nothing in the cluster, but the watcher's view says so: the POST trusts the view.
    PoolPresence.objects.create(namespace=namespace, pool="phantom", objects_seen=["pvcs/x"])
    with pytest.raises(AlreadyExists, match='sandbox pool "phantom" already exists'):
        allocation_create(request=_pool("phantom", namespace), actor="user:test")
    assert not Allocation.objects.filter(name__in=["ghostly", "phantom"]).exists()

    admin_delete(PVC, namespace, "left-behind")
    wait_until(
        lambda: not PoolPresence.objects.filter(namespace=namespace, pool="ghostly").exists(),
        timeout=30,
        message="the watcher to see the leftover go",
    )
    allocation_create(request=_pool("ghostly", namespace), actor="user:test")
    assert wait_for_phase("ghostly", Phase.READY, timeout=90).ready_replicas == 1


@pytest.mark.usefixtures("service")
def test_without_a_watcher_to_vouch_a_post_lists_and_a_new_watcher_rewrites_the_view(
    namespace: str, watcher_process: ManagedProcess
) -> None:
    watcher_process.stop()
    try:
        # Its last heartbeat would vouch for up to two heartbeats more; gone, nobody does.
        ProcessHeartbeat.objects.filter(kind=ProcessHeartbeat.Kind.WATCHER).delete()
        stale = PoolPresence.objects.create(namespace=namespace, pool="stale", objects_seen=["x"])
        make_pvc(namespace, "unseen", modes=["ReadWriteOnce"], labels=pool_labels("unseen"))
        assert not _vouched(namespace, "stale")

        # The cluster is asked: the leftover nobody recorded is found; the row is not read.
        with pytest.raises(AlreadyExists):
            allocation_create(request=_pool("unseen", namespace), actor="user:test")
        allocation_create(request=_pool("stale", namespace), actor="user:test")
    finally:
        start_watcher(watcher_process)

    # Filled caches, then the view rewritten: the stale row goes, the unseen leftover comes.
    wait_until(lambda: _vouched(namespace, "unseen"), timeout=60, message="the new heartbeat")
    assert not PoolPresence.objects.filter(pk=stale.pk).exists()
    assert selectors.pool_leftovers(namespace=namespace, name="unseen") == ["pvcs/unseen"]
    assert wait_for_phase("stale", Phase.READY, timeout=90).ready_replicas == 1
