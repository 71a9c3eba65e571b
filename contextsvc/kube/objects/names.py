"""The names of the objects, volumes and mount paths the service makes.

Like the labels they are the v1 contract (``v1-api.md``): objects an earlier Go deployment
left in a cluster must be found by them, so none of them may change.
"""

from __future__ import annotations

WORKSPACE_VOLUME = "workspace"
WORKSPACE_MOUNT_PATH = "/workspace"
ARTIFACTS_VOLUME = "artifacts"
ARTIFACTS_MOUNT_PATH = "/artifacts"


def sandbox_name(pool: str, index: int) -> str:
    return f"sandbox-{pool}-{index}"


def sandbox_index(pool: str, name: str) -> int | None:
    """The replica index in a Sandbox name that :func:`sandbox_name` made, else None."""
    prefix = f"sandbox-{pool}-"
    rest = name.removeprefix(prefix)
    return int(rest) if name.startswith(prefix) and rest.isdigit() and rest.isascii() else None


def dedicated_pvc_name(pool: str, index: int) -> str:
    return f"{pool}-workspace-{index}"


def shared_pvc_name(pool: str) -> str:
    return f"{pool}-workspace"


def claim_name(pool: str, index: int) -> str:
    return f"claim-{pool}-{index}"


def context_pvc_name(name: str) -> str:
    return f"context-{name}"


def artifacts_context_name(pool: str) -> str:
    """The named context an allocation's retained artifacts become."""
    return f"{pool}-artifacts"


def artifacts_pvc_name(pool: str) -> str:
    # Named as the context it may become, so that the context's PVC is this one.
    return context_pvc_name(artifacts_context_name(pool))


def network_policy_name(pool: str) -> str:
    return f"{pool}-sandboxes"


def profile_warm_pool_name(profile: str) -> str:
    """The SandboxWarmPool (and its SandboxTemplate) a profile's warmPool makes."""
    return f"profile-{profile}"


def agent_workspace_pvc_name(agent_type: str) -> str:
    return f"{agent_type}-workspace"


def cleanup_job_name(agent_type: str, context_key: int) -> str:
    return f"cs-cleanup-{agent_type[:30]}-{context_key}"
