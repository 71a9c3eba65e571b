"""Jobs: the one-off cleanup Job that deletes a context's directory from an agent-type
workspace, and how a Job ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextsvc.kube.objects.fields import condition
from contextsvc.kube.objects.hardening import harden
from contextsvc.kube.objects.kinds import Manifest
from contextsvc.kube.objects.labels import (
    CLEANUP_CONTEXT_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    WORKSPACE_AGENT_LABEL,
)
from contextsvc.kube.objects.names import (
    WORKSPACE_MOUNT_PATH,
    WORKSPACE_VOLUME,
    agent_workspace_pvc_name,
)

# The cleanup deletes exactly /workspace/<context id>. The id was validated when it was
# registered (no "/", no "." or "..", no leading "-") and is checked again here before use;
# ``rm -rf`` never follows symbolic links, so a link planted at or under that path removes
# the link, not what it points to.
CLEANUP_SCRIPT = """set -eu
case "$CONTEXT_ID" in
  ""|.|..|*/*|-*) echo "refusing context id '$CONTEXT_ID'" >&2; exit 2 ;;
esac
rm -rf -- "/workspace/$CONTEXT_ID"
echo "removed /workspace/$CONTEXT_ID"
"""


def cleanup_job_manifest(
    *, name: str, namespace: str, agent_type: str, context_id: str, image: str
) -> Manifest:
    """A one-off Job that deletes one context's directory from the agent workspace,
    hardened like every sandbox Pod."""
    labels = {
        MANAGED_BY_LABEL: MANAGED_BY,
        WORKSPACE_AGENT_LABEL: agent_type,
        CLEANUP_CONTEXT_LABEL: "cleanup",
    }
    pod_spec: Manifest = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "cleanup",
                "image": image,
                "command": ["/bin/sh", "-c", CLEANUP_SCRIPT],
                "env": [{"name": "CONTEXT_ID", "value": context_id}],
                "volumeMounts": [{"name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_MOUNT_PATH}],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "16Mi"},
                    "limits": {"memory": "64Mi"},
                },
            }
        ],
        "volumes": [
            {
                "name": WORKSPACE_VOLUME,
                "persistentVolumeClaim": {"claimName": agent_workspace_pvc_name(agent_type)},
            }
        ],
    }
    harden(pod_spec, frozenset())
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": 600,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def job_outcome(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """("succeeded" | "failed", message) once a Job has finished; None while it runs."""
    for kind, outcome in (("Complete", "succeeded"), ("Failed", "failed")):
        found = condition(job, kind)
        if found is not None and found.get("status") == "True":
            return outcome, str(found.get("message") or found.get("reason") or outcome)
    return None
