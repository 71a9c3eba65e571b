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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from contextsvc.kube import access
from contextsvc.kube.objects.fields import name_of, namespace_of, object_key, resource_version_of
from contextsvc.kube.objects.kinds import RUNTIME_CLASS, ApiKind
from contextsvc.kube.objects.warmpool import scale_patch

T = TypeVar("T")
CONCURRENT_READS = 16


class KubeNotConfigured(RuntimeError):
    """Neither KUBECONFIG nor an in-cluster service account is available."""


_lock = threading.Lock()
_api_client: k8s.ApiClient | None = None


def _load_configuration() -> k8s.Configuration:
    configuration = k8s.Configuration()
    # Enough kept-alive connections for the concurrent reads and the request threads, so
    # none is opened (a TLS handshake) and dropped again per call.
    configuration.connection_pool_maxsize = CONCURRENT_READS + 16
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


def check_reachable() -> str:
    """Ask the API server for its version; returns it, raises on any failure."""
    return str(_call("GET", "/version")["gitVersion"])


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
# Every kind goes through the same few REST calls: objects go in and come out as plain JSON
# dicts, whose shapes ``contextsvc.kube.objects`` knows. Every call has a timeout.

Obj = dict[str, Any]


def _path(kind: ApiKind, namespace: str | None, name: str | None = None) -> str:
    base = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    scope = f"/namespaces/{namespace}" if namespace is not None and kind.namespaced else ""
    return f"{base}{scope}/{kind.plural}" + (f"/{name}" if name else "")


def _call(
    method: str,
    path: str,
    *,
    query: list[tuple[str, Any]] | None = None,
    body: Any = None,
    stream: bool = False,
    timeout: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> Any:
    """One REST call. Returns the decoded JSON body (or, with ``stream``, the open urllib3
    response); a non-2xx status raises ``ApiException`` with the server's Status body."""
    client = api_client()
    method, url, headers, payload, post = client.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params={"Accept": accept, "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = client.call_api(
        method,
        url,
        header_params=headers,
        body=payload,
        post_params=post,
        _request_timeout=timeout if timeout is not None else request_timeout(),
    )
    if not 200 <= response.status < 300:
        data = response.read()
        raise ApiException(
            status=response.status,
            reason=response.reason,
            body=data.decode("utf-8", errors="replace") if data else None,
        )
    if stream:
        return response.response
    data = response.read()
    return json.loads(data) if data else {}


# Independent reads a request needs all of (a create's name checks) go out together: one
# round trip of waiting instead of one per call. Bounded, shared by the process's requests.
_readers = ThreadPoolExecutor(max_workers=CONCURRENT_READS, thread_name_prefix="kube-read")


def concurrently(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run independent API calls at once; their results in order, or the first error
    raised (the others still finish: every caller's calls are idempotent). The calls must
    not touch the database: they run on other threads, outside the caller's transaction."""
    if len(calls) <= 1:
        return [call() for call in calls]
    futures = [_readers.submit(call) for call in calls]
    return [future.result() for future in futures]


def get_object(kind: ApiKind, namespace: str | None, name: str) -> Obj | None:
    """The object, or None when it does not exist."""
    access.check(kind, "get")
    try:
        found: Obj = _call("GET", _path(kind, namespace, name))
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise kube_error(exc, f"reading {kind.kind} {namespace}/{name}") from exc
    return found


def list_objects(
    kind: ApiKind,
    namespace: str | None,
    selector: str = "",
    *,
    cached: bool = False,
    fields: str = "",
) -> list[Obj]:
    """Objects matching ``selector`` (labels) and ``fields`` (a field selector) in
    ``namespace`` (None: every namespace). ``cached``: as the API server's watch cache has
    them (``resourceVersion=0``), possibly a moment old, without a quorum read of etcd."""
    access.check(kind, "list")
    query = [("labelSelector", selector)] if selector else []
    if fields:
        query.append(("fieldSelector", fields))
    if cached:
        query.append(("resourceVersion", "0"))
    try:
        result = _call("GET", _path(kind, namespace), query=query)
    except Exception as exc:
        raise kube_error(exc, f"listing {kind.plural} {selector}") from exc
    items: list[Obj] = result.get("items") or []
    return items


def create_object(kind: ApiKind, body: Obj, *, dry_run: bool = False) -> Obj:
    """Create; raises the client's exception unchanged so callers can test AlreadyExists.
    ``dry_run`` has the API server validate and admit the object without storing it."""
    access.check(kind, "create")
    namespace = namespace_of(body) or None
    query = [("dryRun", "All")] if dry_run else None
    created: Obj = _call("POST", _path(kind, namespace), query=query, body=body)
    return created


def create_if_absent(kind: ApiKind, body: Obj, *, dry_run: bool = False) -> bool:
    """Create; False when an object with that name already exists (the caller decides
    whether it is ours). Any other failure raises a classified ``KubeError``."""
    try:
        create_object(kind, body, dry_run=dry_run)
    except Exception as exc:
        if is_already_exists(exc):
            return False
        where = "/".join(object_key(body))
        raise kube_error(exc, f"creating {kind.kind} {where}") from exc
    return True


def delete_object(
    kind: ApiKind, namespace: str | None, name: str, *, foreground: bool = False
) -> bool:
    """True when a delete was issued, False when the object was already gone."""
    access.check(kind, "delete")
    options = {"propagationPolicy": "Foreground" if foreground else "Background"}
    try:
        _call("DELETE", _path(kind, namespace, name), body=options)
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise kube_error(exc, f"deleting {kind.kind} {namespace}/{name}") from exc
    return True


def patch_object(kind: ApiKind, namespace: str | None, name: str, patch: Obj) -> Obj:
    """A JSON merge patch."""
    access.check(kind, "patch")
    try:
        patched: Obj = _call(
            "PATCH",
            _path(kind, namespace, name),
            body=patch,
            content_type="application/merge-patch+json",
        )
    except Exception as exc:
        raise kube_error(exc, f"patching {kind.kind} {namespace}/{name}") from exc
    return patched


def replace_spec(
    kind: ApiKind, namespace: str | None, name: str, spec: Obj, *, annotations: Obj
) -> Obj:
    """Replace the object's whole spec and set ``annotations`` in one JSON patch (what the
    new spec leaves out goes, which a merge patch would keep). The object must already
    carry annotations (a JSON patch adds keys only to a map that exists)."""
    access.check(kind, "patch")
    operations: list[Obj] = [{"op": "replace", "path": "/spec", "value": spec}]
    for key, value in annotations.items():
        # RFC 6901: "~" and "/" in a key are escaped as "~0" and "~1".
        pointer = key.replace("~", "~0").replace("/", "~1")
        operations.append({"op": "add", "path": f"/metadata/annotations/{pointer}", "value": value})
    try:
        patched: Obj = _call(
            "PATCH",
            _path(kind, namespace, name),
            body=operations,
            content_type="application/json-patch+json",
        )
    except Exception as exc:
        raise kube_error(exc, f"replacing the spec of {kind.kind} {namespace}/{name}") from exc
    return patched


def scale(kind: ApiKind, namespace: str, name: str, replicas: int) -> Obj:
    """Set the replicas through the object's scale subresource (``kind`` names it, e.g.
    objects.kinds.SANDBOX_WARM_POOL_SCALE)."""
    access.check(kind, "patch")
    parent = kind.plural.removesuffix("/scale")
    path = _path(kind, namespace).removesuffix(f"/{kind.plural}") + f"/{parent}/{name}/scale"
    try:
        scaled: Obj = _call(
            "PATCH",
            path,
            body=scale_patch(replicas),
            content_type="application/merge-patch+json",
        )
    except Exception as exc:
        raise kube_error(exc, f"scaling {parent} {namespace}/{name}") from exc
    return scaled


# --- List and watch, for the watcher ----------------------------------------------------------


# The API server's metadata-only form of a list and of a watch's objects (what kubectl and
# client-go's metadata informers ask for): names and labels without specs or statuses.
_METADATA_ONLY = "application/json;as=PartialObjectMetadata{};g=meta.k8s.io;v=v1,application/json"


@dataclass(frozen=True)
class Watchable:
    """A collection the watcher lists and watches: a kind, a namespace (or all), a selector;
    ``metadata_only``: each object's metadata alone (PartialObjectMetadata)."""

    kind: ApiKind
    namespace: str | None
    selector: str
    metadata_only: bool = False

    def describe(self) -> str:
        where = self.namespace or "all namespaces"
        return f"{self.kind.plural} in {where} ({self.selector})"

    def accept(self, *, listing: bool) -> str:
        if not self.metadata_only:
            return "application/json"
        return _METADATA_ONLY.format("List" if listing else "")


def list_raw(target: Watchable) -> tuple[list[Obj], str]:
    """Every object and the list's resourceVersion to watch from."""
    access.check(target.kind, "list")
    try:
        data = _call(
            "GET",
            _path(target.kind, target.namespace),
            query=[("labelSelector", target.selector)],
            timeout=30,
            accept=target.accept(listing=True),
        )
    except Exception as exc:
        raise kube_error(exc, f"listing {target.describe()}") from exc
    return list(data.get("items") or []), resource_version_of(data)


def watch_raw(target: Watchable, resource_version: str, timeout_seconds: int) -> Iterator[Obj]:
    """Watch events as JSON dicts until the server ends the watch. Bookmarks are asked for so
    that a quiet watch still advances its resourceVersion and seldom hits 410 Gone."""
    access.check(target.kind, "watch")
    query = [
        ("labelSelector", target.selector),
        ("watch", "true"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", timeout_seconds),
    ]
    try:
        response = _call(
            "GET",
            _path(target.kind, target.namespace),
            query=query,
            stream=True,
            timeout=(5, timeout_seconds + 30),
            accept=target.accept(listing=False),
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


# --- Discovery ---------------------------------------------------------------------------------


def served_resources(group: str, version: str) -> set[str] | None:
    """The resource plurals ``group/version`` serves, or None when it is not served at all.

    Discovery needs no RBAC beyond being authenticated, so it works for any identity.
    """
    try:
        data = _call("GET", f"/apis/{group}/{version}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise kube_error(exc, f"discovering {group}/{version}") from exc
    except Exception as exc:
        raise kube_error(exc, f"discovering {group}/{version}") from exc
    return {str(item["name"]) for item in data.get("resources") or []}


def openapi_schemas(group: str, version: str) -> dict[str, Any]:
    """The OpenAPI v3 component schemas ``group/version`` publishes (CRDs' included), by
    name; empty when it publishes none. Like discovery, it needs no RBAC."""
    try:
        data = _call("GET", f"/openapi/v3/apis/{group}/{version}")
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise kube_error(exc, f"reading the OpenAPI schema of {group}/{version}") from exc
    except Exception as exc:
        raise kube_error(exc, f"reading the OpenAPI schema of {group}/{version}") from exc
    return dict((data.get("components") or {}).get("schemas") or {})


def list_runtime_classes() -> list[str]:
    return sorted(name_of(item) for item in list_objects(RUNTIME_CLASS, None))
