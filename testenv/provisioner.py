"""A fake dynamic volume provisioner (and resizer) for the test cluster.

Run by the test cluster (``python -m testenv.provisioner``): it needs only the ``kubernetes``
client and the kernel's quantity parser, never Django. For every Pending
PersistentVolumeClaim whose StorageClass names our provisioner it creates a PersistentVolume
pre-bound to the claim through ``spec.claimRef`` (a hostPath volume with a made-up path that
nothing ever mounts); the real PV binder in kube-controller-manager then binds the two, as
with a real external provisioner. A PV of ours that becomes Released is deleted (reclaim
policy Delete). A bound claim whose request grows (allowed only for classes with
``allowVolumeExpansion``, which the API server's admission enforces) gets its PV and its
status capacity raised, which is what an external resizer does for a volume that needs no
node-side expansion.

Any access mode is accepted, so one class serves ReadWriteOnce and ReadWriteMany alike.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from contextsvc.quantity import parse_quantity

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
FAKE_ROOT = "/nonexistent/context-service-testenv"


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


class Provisioner:
    def __init__(self, api: client.ApiClient, name: str) -> None:
        self.core = client.CoreV1Api(api)
        self.storage = client.StorageV1Api(api)
        self.name = name
        self._classes: dict[str, Any] = {}
        self._classes_lock = threading.Lock()
        # Claim uids we already created a PV for: later events for the same claim (the
        # binder annotating it) then cost no API call.
        self._provisioned: set[str] = set()

    # --- StorageClasses -----------------------------------------------------------

    def storage_class(self, name: str) -> Any | None:
        with self._classes_lock:
            cached = self._classes.get(name)
        if cached is not None:
            return cached
        try:
            sc = self.storage.read_storage_class(name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        with self._classes_lock:
            self._classes[name] = sc
        return sc

    def forget_class(self, name: str) -> None:
        with self._classes_lock:
            self._classes.pop(name, None)

    def _our_class(self, pvc: Any) -> Any | None:
        annotations = pvc.metadata.annotations or {}
        class_name = pvc.spec.storage_class_name or annotations.get(BETA_CLASS_ANNOTATION)
        if not class_name:
            return None
        sc = self.storage_class(class_name)
        return sc if sc is not None and sc.provisioner == self.name else None

    # --- claims -------------------------------------------------------------------

    def handle_claim(self, pvc: Any) -> None:
        if pvc.metadata.deletion_timestamp is not None:
            return
        sc = self._our_class(pvc)
        if sc is None:
            return
        if not pvc.spec.volume_name:
            if (pvc.status.phase or "Pending") == "Pending":
                self.provision(pvc, sc)
        elif pvc.status.phase == "Bound":
            self.maybe_resize(pvc)

    def provision(self, pvc: Any, sc: Any) -> None:
        meta = pvc.metadata
        if meta.uid in self._provisioned:
            return
        name = f"pvc-{meta.uid}"
        request = (pvc.spec.resources.requests or {}).get("storage")
        if request is None:
            log(f"{meta.namespace}/{meta.name}: no storage request; not provisioning")
            return
        pv: Any = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: self.name}},
            "spec": {
                "capacity": {"storage": request},
                "accessModes": list(pvc.spec.access_modes or ["ReadWriteOnce"]),
                "volumeMode": pvc.spec.volume_mode or "Filesystem",
                "storageClassName": sc.metadata.name,
                "persistentVolumeReclaimPolicy": sc.reclaim_policy or "Delete",
                "mountOptions": list(sc.mount_options or []),
                # Pre-bound: the PV binder binds exactly this claim (matched by uid).
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta.namespace,
                    "name": meta.name,
                    "uid": meta.uid,
                    "resourceVersion": meta.resource_version,
                },
                # A made-up path: no kubelet ever mounts it.
                "hostPath": {"path": f"{FAKE_ROOT}/{name}"},
            },
        }
        try:
            self.core.create_persistent_volume(pv)
        except ApiException as exc:
            if exc.status == 409:
                self._provisioned.add(meta.uid)
                return
            raise
        self._provisioned.add(meta.uid)
        log(f"provisioned {name} ({request}) for {meta.namespace}/{meta.name}")

    def maybe_resize(self, pvc: Any) -> None:
        requested = (pvc.spec.resources.requests or {}).get("storage")
        current = (pvc.status.capacity or {}).get("storage")
        if requested is None or current is None:
            return
        if parse_quantity(requested) <= parse_quantity(current):
            return
        pv: Any = self.core.read_persistent_volume(pvc.spec.volume_name)
        if (pv.metadata.annotations or {}).get(PROVISIONED_BY) != self.name:
            return
        pv_size = (pv.spec.capacity or {}).get("storage", "0")
        if parse_quantity(pv_size) < parse_quantity(requested):
            self.core.patch_persistent_volume(
                pv.metadata.name, {"spec": {"capacity": {"storage": requested}}}
            )
        status = {
            "status": {
                "capacity": {"storage": requested},
                "allocatedResources": {"storage": requested},
                "conditions": None,
                "allocatedResourceStatuses": None,
            }
        }
        self.core.patch_namespaced_persistent_volume_claim_status(
            pvc.metadata.name, pvc.metadata.namespace, status
        )
        log(f"resized {pvc.metadata.namespace}/{pvc.metadata.name} {current} -> {requested}")

    # --- volumes ------------------------------------------------------------------

    def handle_volume(self, pv: Any) -> None:
        if pv.metadata.deletion_timestamp is not None:
            return
        if (pv.metadata.annotations or {}).get(PROVISIONED_BY) != self.name:
            return
        if pv.status.phase == "Released" and pv.spec.persistent_volume_reclaim_policy == "Delete":
            try:
                self.core.delete_persistent_volume(pv.metadata.name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            log(f"deleted released volume {pv.metadata.name}")


def run_informer(
    name: str,
    list_fn: Callable[..., Any],
    handle: Callable[[Any], None],
    on_delete: Callable[[Any], None] | None = None,
    ready: threading.Event | None = None,
) -> None:
    """List, handle everything, then watch from that resourceVersion; repeat forever.

    The periodic relist (every watch timeout) doubles as a resync that catches anything a
    handler could not do the first time (e.g. a claim created before its class).
    """
    while True:
        try:
            listing = list_fn()
            for item in listing.items:
                _safe(name, handle, item)
            if ready is not None:
                ready.set()
            stream: Iterable[dict[str, Any]] = watch.Watch().stream(
                list_fn,
                resource_version=listing.metadata.resource_version,
                timeout_seconds=30,
            )
            for event in stream:
                obj = event["object"]
                if event["type"] == "DELETED":
                    if on_delete is not None:
                        _safe(name, on_delete, obj)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    _safe(name, handle, obj)
        except ApiException as exc:
            if exc.status != 410:  # 410 Gone: the resourceVersion is too old; relist
                log(f"{name}: API error {exc.status}: {exc.reason}; relisting")
                time.sleep(1)
        except Exception as exc:  # noqa: BLE001 - keep the provisioner alive on any error
            log(f"{name}: {type(exc).__name__}: {exc}; relisting")
            time.sleep(1)


def _safe(name: str, handle: Callable[[Any], None], obj: Any) -> None:
    try:
        handle(obj)
    except Exception as exc:  # noqa: BLE001 - one bad object must not stop the loop
        log(f"{name}: handling {obj.metadata.name}: {type(exc).__name__}: {exc}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--provisioner", required=True, help="provisioner name of our classes")
    parser.add_argument("--ready-file", help="written once the first listings are handled")
    args = parser.parse_args(argv)

    def make_api() -> client.ApiClient:
        configuration = client.Configuration()
        config.load_kube_config(config_file=args.kubeconfig, client_configuration=configuration)
        configuration.no_proxy = "127.0.0.1,localhost"  # loopback: never via a proxy
        return client.ApiClient(configuration)

    # One API client (connection pool) per watch loop.
    claims = Provisioner(make_api(), args.provisioner)
    volumes = Provisioner(make_api(), args.provisioner)
    classes = Provisioner(make_api(), args.provisioner)
    events = [threading.Event() for _ in range(3)]
    loops: list[
        tuple[str, Callable[..., Any], Callable[[Any], None], Callable[[Any], None] | None]
    ] = [
        (
            "claims",
            claims.core.list_persistent_volume_claim_for_all_namespaces,
            claims.handle_claim,
            None,
        ),
        ("volumes", volumes.core.list_persistent_volume, volumes.handle_volume, None),
        (
            "classes",
            classes.storage.list_storage_class,
            # A class change or deletion invalidates the claims loop's cached copy.
            lambda sc: claims.forget_class(sc.metadata.name),
            lambda sc: claims.forget_class(sc.metadata.name),
        ),
    ]
    for (name, list_fn, handle, on_delete), ready in zip(loops, events, strict=True):
        threading.Thread(
            target=run_informer,
            args=(name, list_fn, handle, on_delete, ready),
            name=name,
            daemon=True,
        ).start()
    for ready in events:
        ready.wait()
    log(f"provisioner {args.provisioner} ready")
    if args.ready_file:
        Path(args.ready_file).write_text("ready\n")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
