"""Where each kind lives in the Kubernetes API (group, version, plural), and the plain
dict types manifests and observed objects are in this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

Manifest = dict[str, Any]
AnyObject = TypeVar("AnyObject", bound=Mapping[str, Any])

SANDBOX_GROUP = "agents.x-k8s.io"
EXTENSIONS_GROUP = "extensions.agents.x-k8s.io"
AGENT_SANDBOX_VERSION = "v1beta1"


@dataclass(frozen=True)
class ApiKind:
    """Where a kind lives in the API (group "" is the core group)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


PVC = ApiKind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
# Read for what the PV controller says of a PVC that stays Pending (volume_problem).
EVENT = ApiKind("", "v1", "events", "Event")
POD = ApiKind("", "v1", "pods", "Pod")
NETWORK_POLICY = ApiKind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
JOB = ApiKind("batch", "v1", "jobs", "Job")
RUNTIME_CLASS = ApiKind("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", namespaced=False)
STORAGE_CLASS = ApiKind("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False)
SANDBOX = ApiKind(SANDBOX_GROUP, AGENT_SANDBOX_VERSION, "sandboxes", "Sandbox")
SANDBOX_TEMPLATE = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxtemplates", "SandboxTemplate"
)
SANDBOX_WARM_POOL = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxwarmpools", "SandboxWarmPool"
)
SANDBOX_CLAIM = ApiKind(EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxclaims", "SandboxClaim")
# A warm pool's scale subresource (what RBAC grants as sandboxwarmpools/scale).
SANDBOX_WARM_POOL_SCALE = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxwarmpools/scale", "Scale"
)
EXTENSION_KINDS = (SANDBOX_TEMPLATE, SANDBOX_WARM_POOL, SANDBOX_CLAIM)
