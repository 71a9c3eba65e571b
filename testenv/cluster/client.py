"""A ``kubernetes`` client for this cluster (or any kubeconfig), and the idempotent create
the setup and the test helpers share.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from testenv.cluster.instance import KUBECONFIG


def api_client(kubeconfig: Path = KUBECONFIG) -> Any:  # kubernetes.client.ApiClient
    """A ``kubernetes.client.ApiClient`` for the admin user of this cluster."""

    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    # Never send loopback traffic through a proxy taken from the environment.
    configuration.no_proxy = "127.0.0.1,localhost"
    return k8s.ApiClient(configuration)


def create_if_absent(fn: Callable[..., Any], *args: Any) -> None:
    """Create an object; an existing one is fine (idempotent setup)."""

    try:
        fn(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise


Kubeconfig = Path | str | None


def api_for(kubeconfig: Kubeconfig) -> Any:
    return api_client(Path(kubeconfig) if kubeconfig is not None else KUBECONFIG)
