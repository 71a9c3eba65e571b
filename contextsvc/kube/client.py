"""Connection to the Kubernetes API server.

Configuration comes from ``KUBECONFIG`` when it is set (a developer's cluster, the
project-local test cluster), otherwise from the in-cluster service account. One
``ApiClient`` per process: its urllib3 pool is thread-safe and reusing it keeps TLS
handshakes off the hot path.
"""

from __future__ import annotations

import os
import threading

from django.conf import settings
from kubernetes import client as k8s
from kubernetes import config as k8s_config


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
