"""The profile resource as the API shows and accepts it (JSON, camelCase)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contextsvc.infra import openapi
from contextsvc.infra.contract import NO_NUL, Body, Field, reject_unknown_fields
from contextsvc.infra.errors import InvalidRequest
from contextsvc.kube.objects.names import profile_warm_pool_name
from profiles.models import SandboxProfile

_STRINGS = {"items": {"type": "string", "pattern": NO_NUL}}
_OBJECTS = {"items": {"type": "object"}}
_A_LIST = "a list"

# The writable fields, declared once: the parser below, the document's ProfileRequest and
# Profile (profiles/api.py), and the response's keys. API field → model field.
MODEL_FIELDS = {
    "description": "description",
    "enabled": "enabled",
    "default": "is_default",
    "source": "source",
    "image": "image",
    "command": "command",
    "args": "args",
    "env": "env",
    "resources": "resources",
    "podLabels": "pod_labels",
    "volumes": "volumes",
    "volumeMounts": "volume_mounts",
    "isolation": "isolation",
    "executorIsolation": "executor_isolation",
    "relaxations": "relaxations",
    "egress": "egress",
    "ingress": "ingress",
    "rules": "rules",
    "sources": "sources",
    "approvals": "approval_policy",
}
TEMPLATE_REF = Body(
    "TemplateRef",
    (Field("namespace", required=True), Field("name", required=True)),
    null_is_absent=False,
)
WARM_POOL_BOUNDS = Body(
    "WarmPoolBounds",
    (
        Field("min", int, required=True, schema={"minimum": 0, "maximum": 100}),
        Field("max", int, required=True, schema={"minimum": 1, "maximum": 100}),
        Field("namespace", help="Where the pool lives (default: CS_NAMESPACE)"),
    ),
    null_is_absent=False,
)
APPROVAL_POLICY = Body(
    "ApprovalPolicy",
    (
        Field("twoPersonRule", bool, help="High-risk operations need two distinct approvers"),
        Field(
            "escalateAfter",
            float,
            nullable=True,
            schema={"exclusiveMinimum": 0, "exclusiveMaximum": 1},
            help="Share of the deadline after which an undecided request is escalated",
        ),
        Field(
            "escalateTo",
            list,
            schema={"items": {"type": "string", "minLength": 1}, "uniqueItems": True},
            help="Usernames of approvers (with escalateAfter)",
        ),
        Field(
            "email",
            schema={"enum": ["all", "high", "none"]},
            help="Which new requests e-mail the approvers",
        ),
    ),
    "How the agent type's operations reach people (docs/approvals.md).",
    null_is_absent=False,
)
PROFILE_FIELDS = (
    Field("description"),
    Field("enabled", bool),
    Field("default", bool, help="Used by direct allocations naming none"),
    Field("source", schema={"enum": ["builtin", "template"]}),
    Field("image"),
    Field("command", list, schema=_STRINGS, described=_A_LIST),
    Field("args", list, schema=_STRINGS, described=_A_LIST),
    Field("env", list, schema=_OBJECTS, described=_A_LIST),
    Field("resources", dict),
    Field("podLabels", dict, schema={"additionalProperties": {"type": "string"}}),
    Field("volumes", list, schema=_OBJECTS, described=_A_LIST),
    Field("volumeMounts", list, schema=_OBJECTS, described=_A_LIST),
    Field("isolation", schema={"enum": ["default", "gvisor", "kata"]}),
    Field(
        "executorIsolation",
        schema={"enum": ["namespaces", "none"]},
        help="How the agent's executor isolates each command (docs/agent-client.md)",
    ),
    Field("relaxations", list, schema=_STRINGS, described=_A_LIST),
    Field("egress", list, schema=_OBJECTS, described=_A_LIST),
    Field("ingress", list, schema=_OBJECTS, described=_A_LIST),
    Field(
        "rules",
        dict,
        described="an object (settings.json)",
        help="The agent type's settings.json",
    ),
    Field(
        "sources",
        dict,
        described="an object (sources.json)",
        help="The agent type's sources.json",
    ),
    Field("approvals", dict, body=APPROVAL_POLICY),
)
REQUEST = Body(
    "ProfileRequest",
    (
        Field("name", required=True, schema={"pattern": openapi.DNS_LABEL}),
        Field("template", dict, body=TEMPLATE_REF),
        *PROFILE_FIELDS,
        Field(
            "warmPool",
            dict,
            body=WARM_POOL_BOUNDS,
            help="A warm pool the service makes, owns and sizes from demand; null removes it",
        ),
    ),
    "The fields of ``Profile`` that may be written; all but ``name`` are optional.",
)
WARM_POOL_FIELDS = WARM_POOL_BOUNDS.known
WARM_POOL_MESSAGE = (
    "warmPool must be null or an object with min and max (integers) and optionally namespace"
)


def parse_profile(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, model field values) from a request body; types are checked here, meaning in
    the service."""
    REQUEST.open(body)
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest("name must be a non-empty string")
    values: dict[str, Any] = {}
    for key, model_field in MODEL_FIELDS.items():
        value = REQUEST[key].read(body)
        if value is not None:
            values[model_field] = value
    template = body.get("template")
    if template is not None:
        if not isinstance(template, dict):
            raise InvalidRequest("template must be an object with namespace and name")
        reject_unknown_fields(template, TEMPLATE_REF.known, "template.")
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


def _column(name: str) -> Callable[[SandboxProfile], Any]:
    return lambda profile: getattr(profile, name)


# The answer, declared once for the body and the document: every writable field, always
# present, then what the service adds.
WARM_POOL_SHOWN = Body(
    "WarmPool",
    (
        *(
            item.but(required=True, source=_column(f"warm_pool_{item.name}"))
            for item in WARM_POOL_BOUNDS.fields
        ),
        Field.out(
            "name",
            lambda profile: profile_warm_pool_name(profile.name),
            help="The SandboxWarmPool and SandboxTemplate made",
        ),
    ),
)
TEMPLATE_SHOWN = Body(
    "TemplateRef",
    (
        Field.out("namespace", _column("template_namespace")),
        Field.out("name", _column("template_name")),
    ),
)
PROFILE_SHOWN = Body(
    "Profile",
    (
        Field.out("name", _column("name")),
        *(
            item.but(required=True, source=_column(MODEL_FIELDS[item.name]))
            for item in PROFILE_FIELDS
        ),
        Field.out(
            "template",
            lambda profile: profile,
            dict,
            body=TEMPLATE_SHOWN,
            shown=lambda profile: profile.source == "template",
            help="A template profile's template",
        ),
        Field.out(
            "warmPool",
            lambda profile: profile if profile.has_warm_pool else None,
            dict,
            body=WARM_POOL_SHOWN,
            nullable=True,
            help="Warm capacity the service owns, or null",
        ),
        Field.out(
            "updatedAt",
            lambda profile: profile.updated_at.isoformat() if profile.updated_at else None,
            nullable=True,
            schema={"format": "date-time"},
        ),
        Field.out("updatedBy", _column("updated_by")),
    ),
)
PROFILE_LIST = Body(
    "ProfileList", (Field.out("items", lambda profiles: profiles, list, body=PROFILE_SHOWN),)
)


def profile_response(profile: SandboxProfile) -> dict[str, Any]:
    return PROFILE_SHOWN.render(profile)
