"""Every Kubernetes API access the service makes: (API group, resource) → verbs.

The client (contextsvc/kube/client.py) refuses any call that is not listed here, so the
list cannot fall behind the code; tests/deploy/test_rbac.py checks the deployed RBAC
(deploy/base/rbac.yaml) grants exactly this, no more. Cluster-scoped resources are marked.
Discovery (``/apis/<group>/<version>``) and ``/version`` need no RBAC beyond being
authenticated.
"""

from __future__ import annotations

from contextsvc.kube.objects.kinds import (
    EVENT,
    JOB,
    NETWORK_POLICY,
    POD,
    PVC,
    RUNTIME_CLASS,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
    SANDBOX_WARM_POOL_SCALE,
    STORAGE_CLASS,
    ApiKind,
)

USES: dict[ApiKind, frozenset[str]] = {
    # Workspaces (managed, caller's, named contexts, agent workspaces); expansion patches.
    PVC: frozenset({"get", "list", "watch", "create", "delete", "patch"}),
    # Why a PVC stays Pending: the PV controller's events about it (allocations/resync.py).
    EVENT: frozenset({"list"}),
    # Readiness of direct allocations; never written (Sandboxes own their Pods).
    POD: frozenset({"list", "watch"}),
    # The per-allocation fence; watched so that a release ends only once it is gone too.
    NETWORK_POLICY: frozenset({"get", "list", "watch", "create", "delete"}),
    # Context cleanup.
    JOB: frozenset({"get", "create"}),
    # Suspend and resume, and the expiry backstop, patch a Sandbox's lifecycle fields.
    SANDBOX: frozenset({"get", "list", "watch", "create", "delete", "patch"}),
    SANDBOX_CLAIM: frozenset({"get", "list", "watch", "create", "delete"}),
    # Checked on create (the watcher records each pool's check with its template: watched),
    # listed for the dashboard; a profile's own (warmPool) are created, kept in step with the
    # profile (their spec replaced, the pool's scale and the time of its last scaling
    # patched) and deleted with it.
    SANDBOX_WARM_POOL: frozenset({"get", "list", "watch", "create", "delete", "patch"}),
    SANDBOX_WARM_POOL_SCALE: frozenset({"patch"}),
    SANDBOX_TEMPLATE: frozenset({"get", "list", "watch", "create", "delete", "patch"}),
    # Cluster-scoped: isolation modes and expandability.
    RUNTIME_CLASS: frozenset({"list"}),
    STORAGE_CLASS: frozenset({"get"}),
}


class UndeclaredAccess(RuntimeError):
    """The code called the API in a way USES does not list (a bug: list it, and grant it)."""


def check(kind: ApiKind, verb: str) -> None:
    if verb not in USES.get(kind, frozenset()):
        raise UndeclaredAccess(
            f"{verb} {kind.plural}.{kind.group or 'core'} is not in contextsvc/kube/access.py"
        )
