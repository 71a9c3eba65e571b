"""A real, local Kubernetes control plane for tests: no Docker, no kubelet, loopback only.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes) and the
agent-sandbox controller are built from the Go module proxy into a cache outside the repo
(``build.py``) and run as local processes (``cluster/``); ``provisioner.py`` fakes
dynamic volume provisioning. CLI: ``python -m testenv
build|up|down|status|kubeconfig|seed-demo``.

Typical use from a pytest session fixture::

    handle = ensure_cluster()          # reuses a healthy running cluster if there is one
    handle.kubeconfig                  # path of an admin kubeconfig (token, embedded CA)
    api = handle.api_client()          # kubernetes.client.ApiClient for that user
    with throwaway_namespace("t", kubeconfig=handle.kubeconfig) as ns:
        ...
    handle.stop()                      # stops it only if this call started it

``create_namespace``/``delete_namespace``/``seed_demo`` default to this repo's cluster
when no ``kubeconfig`` is given.

Importing this package needs no Django settings; it uses the ``kubernetes`` client,
PyYAML and ``cryptography`` (the project package ``contextsvc`` itself imports Celery).
"""

from testenv.cluster.client import api_client
from testenv.cluster.demo import demo_template, seed_demo
from testenv.cluster.handle import ClusterHandle, bare_apiserver, ensure_cluster
from testenv.cluster.instance import KUBECONFIG, ClusterError
from testenv.cluster.namespaces import create_namespace, delete_namespace, throwaway_namespace

__all__ = (
    "KUBECONFIG",
    "ClusterError",
    "ClusterHandle",
    "api_client",
    "bare_apiserver",
    "create_namespace",
    "delete_namespace",
    "demo_template",
    "ensure_cluster",
    "seed_demo",
    "throwaway_namespace",
)
