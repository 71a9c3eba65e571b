"""The profile resource as the API shows and accepts it (JSON, camelCase)."""

from __future__ import annotations

from typing import Any

from contextsvc.core import contract
from contextsvc.core.contract import reject_unknown_fields
from contextsvc.core.errors import InvalidRequest
from contextsvc.kube.objects import profile_warm_pool_name
from profiles.models import SandboxProfile

# API field → (model field, JSON type name, Python type)
FIELDS: dict[str, tuple[str, str, type]] = {
    "description": ("description", "a string", str),
    "enabled": ("enabled", "a boolean", bool),
    "default": ("is_default", "a boolean", bool),
    "source": ("source", "a string", str),
    "image": ("image", "a string", str),
    "command": ("command", "a list", list),
    "args": ("args", "a list", list),
    "env": ("env", "a list", list),
    "resources": ("resources", "an object", dict),
    "podLabels": ("pod_labels", "an object", dict),
    "volumes": ("volumes", "a list", list),
    "volumeMounts": ("volume_mounts", "a list", list),
    "isolation": ("isolation", "a string", str),
    "executorIsolation": ("executor_isolation", "a string", str),
    "relaxations": ("relaxations", "a list", list),
    "egress": ("egress", "a list", list),
    "ingress": ("ingress", "a list", list),
    "rules": ("rules", "an object (settings.json)", dict),
    "sources": ("sources", "an object (sources.json)", dict),
    "approvals": ("approval_policy", "an object", dict),
}
KNOWN = frozenset({"name", "template", "warmPool", *FIELDS})
WARM_POOL_FIELDS = frozenset({"min", "max", "namespace"})
WARM_POOL_MESSAGE = (
    "warmPool must be null or an object with min and max (integers) and optionally namespace"
)


def parse_profile(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, model field values) from a request body; types are checked here, meaning in
    the service."""
    reject_unknown_fields(body, KNOWN)
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest("name must be a non-empty string")
    values: dict[str, Any] = {}
    for key, (model_field, type_name, python_type) in FIELDS.items():
        value = contract.field(body, key, python_type, described=type_name)
        if value is not None:
            values[model_field] = value
    template = body.get("template")
    if template is not None:
        if not isinstance(template, dict):
            raise InvalidRequest("template must be an object with namespace and name")
        reject_unknown_fields(template, {"namespace", "name"}, "template.")
        for key in ("namespace", "name"):
            if not isinstance(template.get(key), str):
                raise InvalidRequest(f"template.{key} must be a string")
        values["template_namespace"] = template["namespace"]
        values["template_name"] = template["name"]
    if "warmPool" in body:
        values.update(_warm_pool(body["warmPool"]))
    return name, values


def _warm_pool(raw: Any) -> dict[str, Any]:
    """warmPool: null removes the profile's warm pool; bounds are checked by the service."""
    if raw is None:
        return {"warm_pool_min": None, "warm_pool_max": None, "warm_pool_namespace": ""}
    if not isinstance(raw, dict):
        raise InvalidRequest(WARM_POOL_MESSAGE)
    reject_unknown_fields(raw, WARM_POOL_FIELDS, "warmPool.")
    bounds = [raw.get("min"), raw.get("max")]
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in bounds):
        raise InvalidRequest(WARM_POOL_MESSAGE)
    namespace = raw.get("namespace", "")
    if not isinstance(namespace, str):
        raise InvalidRequest("warmPool.namespace must be a string")
    return {
        "warm_pool_min": bounds[0],
        "warm_pool_max": bounds[1],
        "warm_pool_namespace": namespace,
    }


def profile_response(profile: SandboxProfile) -> dict[str, Any]:
    body: dict[str, Any] = {"name": profile.name}
    for key, (field, _, _) in FIELDS.items():
        body[key] = getattr(profile, field)
    if profile.source == "template":
        body["template"] = {"namespace": profile.template_namespace, "name": profile.template_name}
    body["warmPool"] = (
        {
            "min": profile.warm_pool_min,
            "max": profile.warm_pool_max,
            "namespace": profile.warm_pool_namespace,
            "name": profile_warm_pool_name(profile.name),
        }
        if profile.has_warm_pool
        else None
    )
    body["updatedAt"] = profile.updated_at.isoformat() if profile.updated_at else None
    body["updatedBy"] = profile.updated_by
    return body
