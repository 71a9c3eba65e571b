"""Connection to the Kubernetes API server.

Configuration comes from ``KUBECONFIG`` when it is set (a developer's cluster, the
project-local test cluster), otherwise from the in-cluster service account. One
``ApiClient`` per process: its urllib3 pool is thread-safe and reusing it keeps TLS
handshakes off the hot path.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from contextsvc.kube.objects import CustomKind


class KubeNotConfigured(RuntimeError):
    """Neither KUBECONFIG nor an in-cluster service account is available."""


_lock = threading.Lock()
_api_client: k8s.ApiClient | None = None


def _load_configuration() -> k8s.Configuration:
    configuration = k8s.Configuration()
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)
    else:
        raise KubeNotConfigured(
            "KUBECONFIG is not set and this process is not running inside a cluster"
        )
    return configuration


def api_client() -> k8s.ApiClient:
    global _api_client
    with _lock:
        if _api_client is None:
            _api_client = k8s.ApiClient(_load_configuration())
        return _api_client


def reset_api_client() -> None:
    """Forget the cached client (tests point processes at a fresh cluster)."""
    global _api_client
    with _lock:
        if _api_client is not None:
            _api_client.close()
        _api_client = None


def request_timeout() -> float:
    return float(settings.CS_KUBE_TIMEOUT_SECONDS)


def core_v1() -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client())


def custom_objects() -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client())


def check_reachable() -> str:
    """Ask the API server for its version; returns it, raises on any failure."""
    info = k8s.VersionApi(api_client()).get_code(_request_timeout=request_timeout())
    return str(info.git_version)


# --- Errors ------------------------------------------------------------------------------------


class KubeError(Exception):
    """A Kubernetes call failed. ``transient`` says whether retrying can help."""

    def __init__(self, message: str, *, status: int | None, reason: str, transient: bool) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.transient = transient


_TRANSIENT_STATUSES = {408, 429, 500, 502, 503, 504}


def kube_error(exc: Exception, doing: str) -> KubeError:
    """Classify any exception from the client; connection problems are transient."""
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        reason = str(exc.reason or "")
        detail = reason
        try:
            body = json.loads(exc.body or "{}")
            detail = str(body.get("message") or reason)
            reason = str(body.get("reason") or reason)
        except (ValueError, AttributeError):
            pass
        # 409 Conflict without AlreadyExists is an optimistic-concurrency clash: retry.
        transient = status in _TRANSIENT_STATUSES or (status == 409 and reason == "Conflict")
        return KubeError(
            f"{doing}: {status} {detail}", status=status, reason=reason, transient=transient
        )
    if isinstance(exc, KubeNotConfigured):
        return KubeError(f"{doing}: {exc}", status=None, reason="NotConfigured", transient=False)
    return KubeError(
        f"{doing}: {type(exc).__name__}: {exc}", status=None, reason="Unreachable", transient=True
    )


def is_not_found(exc: Exception) -> bool:
    """The object is missing, as opposed to its whole resource type (a CRD not installed),
    which the API server also answers with 404, but without naming an object."""
    if not isinstance(exc, ApiException) or exc.status != 404:
        return False
    try:
        details = json.loads(exc.body or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return False
    return bool(details.get("name"))


def is_already_exists(exc: Exception) -> bool:
    return (
        isinstance(exc, ApiException) and exc.status == 409 and "AlreadyExists" in (exc.body or "")
    )


# --- Calls ---------------------------------------------------------------------------------------
# Thin, typed wrappers: objects go in and come out as plain dicts, the shapes of which
# ``contextsvc.kube.objects`` knows. Every call has a timeout.

Obj = dict[str, Any]


def _plain(obj: Any) -> Obj:
    if isinstance(obj, dict):
        return obj
    plain: Obj = api_client().sanitize_for_serialization(obj)
    return plain


def get_pvc(namespace: str, name: str) -> Obj | None:
    try:
        return _plain(
            core_v1().read_namespaced_persistent_volume_claim(
                name, namespace, _request_timeout=request_timeout()
            )
        )
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise kube_error(exc, f"reading PVC {namespace}/{name}") from exc


def list_pvcs(namespace: str | None, selector: str) -> list[Obj]:
    try:
        if namespace is None:
            result = core_v1().list_persistent_volume_claim_for_all_namespaces(
                label_selector=selector, _request_timeout=request_timeout()
            )
        else:
            result = core_v1().list_namespaced_persistent_volume_claim(
                namespace, label_selector=selector, _request_timeout=request_timeout()
            )
    except Exception as exc:
        raise kube_error(exc, f"listing PVCs {selector}") from exc
    return [_plain(item) for item in result.items]


def list_pods(namespace: str | None, selector: str) -> list[Obj]:
    try:
        if namespace is None:
            result = core_v1().list_pod_for_all_namespaces(
                label_selector=selector, _request_timeout=request_timeout()
            )
        else:
            result = core_v1().list_namespaced_pod(
                namespace, label_selector=selector, _request_timeout=request_timeout()
            )
    except Exception as exc:
        raise kube_error(exc, f"listing Pods {selector}") from exc
    return [_plain(item) for item in result.items]


def create_pvc(body: Obj) -> Obj:
    namespace = body["metadata"]["namespace"]
    return _plain(
        core_v1().create_namespaced_persistent_volume_claim(
            namespace,
            body,  # type: ignore[arg-type]
            _request_timeout=request_timeout(),
        )
    )


def delete_pvc(namespace: str, name: str) -> bool:
    """True when a delete was issued, False when it was already gone."""
    try:
        core_v1().delete_namespaced_persistent_volume_claim(
            name, namespace, _request_timeout=request_timeout()
        )
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise kube_error(exc, f"deleting PVC {namespace}/{name}") from exc
    return True


def get_custom(kind: CustomKind, namespace: str, name: str) -> Obj | None:
    try:
        return _plain(
            custom_objects().get_namespaced_custom_object(
                kind.group,
                kind.version,
                namespace,
                kind.plural,
                name,
                _request_timeout=request_timeout(),
            )
        )
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise kube_error(exc, f"reading {kind.kind} {namespace}/{name}") from exc


def list_custom(kind: CustomKind, namespace: str | None, selector: str = "") -> list[Obj]:
    try:
        if namespace is None:
            result = custom_objects().list_cluster_custom_object(
                kind.group,
                kind.version,
                kind.plural,
                label_selector=selector,
                _request_timeout=request_timeout(),
            )
        else:
            result = custom_objects().list_namespaced_custom_object(
                kind.group,
                kind.version,
                namespace,
                kind.plural,
                label_selector=selector,
                _request_timeout=request_timeout(),
            )
    except Exception as exc:
        raise kube_error(exc, f"listing {kind.plural} {selector}") from exc
    items: list[Obj] = result.get("items") or []  # type: ignore[attr-defined]
    return list(items)


def create_custom(kind: CustomKind, body: Obj) -> Obj:
    namespace = body["metadata"]["namespace"]
    return _plain(
        custom_objects().create_namespaced_custom_object(
            kind.group,
            kind.version,
            namespace,
            kind.plural,
            body,
            _request_timeout=request_timeout(),
        )
    )


def delete_custom(kind: CustomKind, namespace: str, name: str, *, foreground: bool = False) -> bool:
    options: Any = {"propagationPolicy": "Foreground"} if foreground else None
    try:
        custom_objects().delete_namespaced_custom_object(
            kind.group,
            kind.version,
            namespace,
            kind.plural,
            name,
            body=options,
            _request_timeout=request_timeout(),
        )
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise kube_error(exc, f"deleting {kind.kind} {namespace}/{name}") from exc
    return True


# --- List and watch, for the watcher ----------------------------------------------------------


@dataclass(frozen=True)
class Watchable:
    """A collection the watcher lists and watches: a resource, a namespace (or all), a selector."""

    resource: str  # "pods", "persistentvolumeclaims" or a CustomKind plural
    namespace: str | None
    selector: str
    kind: CustomKind | None = None

    def describe(self) -> str:
        where = self.namespace or "all namespaces"
        return f"{self.resource} in {where} ({self.selector})"


def _list_call(target: Watchable, **kwargs: Any) -> Any:
    common = {"label_selector": target.selector, "_preload_content": False, **kwargs}
    if target.kind is not None:
        kind = target.kind
        if target.namespace is None:
            return custom_objects().list_cluster_custom_object(
                kind.group, kind.version, kind.plural, **common
            )
        return custom_objects().list_namespaced_custom_object(
            kind.group, kind.version, target.namespace, kind.plural, **common
        )
    api = core_v1()
    calls: dict[tuple[str, bool], Any] = {
        ("pods", False): api.list_namespaced_pod,
        ("pods", True): api.list_pod_for_all_namespaces,
        ("persistentvolumeclaims", False): api.list_namespaced_persistent_volume_claim,
        ("persistentvolumeclaims", True): api.list_persistent_volume_claim_for_all_namespaces,
    }
    call = calls[(target.resource, target.namespace is None)]
    return call(**common) if target.namespace is None else call(target.namespace, **common)


def list_raw(target: Watchable) -> tuple[list[Obj], str]:
    """Every object (as JSON dicts) and the list's resourceVersion to watch from."""
    try:
        response = _list_call(target, _request_timeout=30)
        data = json.loads(response.data)
    except Exception as exc:
        raise kube_error(exc, f"listing {target.describe()}") from exc
    return list(data.get("items") or []), str(data["metadata"]["resourceVersion"])


def watch_raw(target: Watchable, resource_version: str, timeout_seconds: int) -> Iterator[Obj]:
    """Watch events as JSON dicts until the server ends the watch. Bookmarks are asked for so
    that a quiet watch still advances its resourceVersion and seldom hits 410 Gone."""
    try:
        response = _list_call(
            target,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _request_timeout=(5, timeout_seconds + 30),
        )
    except Exception as exc:
        raise kube_error(exc, f"watching {target.describe()}") from exc
    buffer = b""
    try:
        for chunk in response.stream(amt=None, decode_content=False):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield json.loads(line)
    finally:
        response.close()
        response.release_conn()
