"""What the OpenAPI document says that every app shares: the error body, the error
responses an operation can give, the two ways to send a token, and the links that chain a
create to its reads and delete (schemathesis' stateful phase and generated clients follow
them).

The document must be true (tests/test_openapi.py holds it to that with schemathesis): every
status an operation can return is listed with its body.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.views import SpectacularSwaggerView
from rest_framework import exceptions, serializers

from contextsvc.infra import contract

# Patterns for the document (JSON Schema / ECMA regex), the same rules as
# contextsvc/infra/validators.py and contextsvc/quantity.py apply.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"
POOL_NAME = r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$"
# A positive Kubernetes quantity, as contextsvc/quantity.py reads one: a number with a
# non-zero digit, then a binary or decimal suffix or an exponent of at most 30.
POSITIVE_QUANTITY = (
    r"^[+]?([0-9]*[1-9][0-9]*(\.[0-9]*)?|[0-9]*\.[0-9]*[1-9][0-9]*)"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?0*([12]?[0-9]|30))?$"
)
CONTEXT_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,252}$"
ACCESS_MODES = ["ReadWriteOnce", "ReadWriteMany"]


class ErrorSerializer(serializers.Serializer):
    """Every error: ``{"error": CODE, "message": TEXT}`` (the v1 contract's body)."""

    error = serializers.CharField(
        help_text="invalid_request, unauthorized, forbidden, not_found, already_exists, "
        "conflict, internal_error or unavailable"
    )
    message = serializers.CharField(help_text="What went wrong, for people and for callers")
    problems = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="An invalid profile: every problem by field",
    )

    class Meta:
        ref_name = "Error"


ERROR_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON, an unknown field, a failed validation (the message "
    "says which, in the v1 contract's words), or a NUL character in the URL",
    401: "No token, or a malformed, unknown, expired or revoked one (`WWW-Authenticate` says "
    "how to send one); also two different tokens in one request",
    403: "The credential is valid but lacks the scope, or the agent type, this needs; or "
    "the change would pass a limit of the caller's team (`quota_exceeded`, with the quota, its "
    "limit and the current use)",
    404: "No such object (another team's is answered as absent)",
    409: "The name is taken, or the object is no longer in a state that allows this",
    429: "The caller's team has used its API request rate (`rate_limited`, with the limit, "
    "the use and `retryAfter`); retry after `Retry-After` seconds",
    500: "A Kubernetes or service failure",
    503: "A dependency is unavailable: the database (retry after `Retry-After`), or the "
    "cluster lacks a CRD this needs",
}

# Any operation: a NUL in its URL is a 400, every one needs a credential with a scope, is
# counted in its team's request rate, and may meet a fault or an unavailable dependency.
ALWAYS = (400, 401, 403, 429, 500, 503)


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    return {
        status: OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[status])
        for status in sorted({*ALWAYS, *statuses})
    }


def responses(success: dict[int, Any], *errors: int) -> dict[int, Any]:
    """``success`` (status → serializer or OpenApiResponse) plus the error responses."""
    return {**success, **error_responses(*errors)}


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Both headers carry the same API-client tokens (contextsvc/core/auth.py)."""

    target_class = "contextsvc.core.auth.BearerTokenAuthentication"
    name = ["bearerToken", "shAuth"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, str]]:
        return [
            {
                "type": "http",
                "scheme": "bearer",
                "description": "An API client token (manage.py api_client), as scripts send it.",
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": "X-SH-Auth",
                "description": "The same token without a scheme, as contextctl and "
                "Serverless Harness send it.",
            },
        ]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[str]]]:
        return [{"bearerToken": []}, {"shAuth": []}]


# (operationId of a create, the field of its 201 body) → operations it leads to, with the
# path parameters they take from that body.
LINKS: dict[str, dict[str, dict[str, str]]] = {
    "sandbox_pools_create": {
        "sandbox_pools_get": {"name": "$response.body#/name"},
        "sandbox_pools_release": {"name": "$response.body#/name"},
    },
    "contexts_create": {
        "contexts_get": {
            "namespace": "$response.body#/namespace",
            "name": "$response.body#/name",
        },
        "contexts_delete": {
            "namespace": "$response.body#/namespace",
            "name": "$response.body#/name",
        },
        "contexts_list": {"namespace": "$response.body#/namespace"},
    },
    "profiles_create": {
        "profiles_get": {"name": "$response.body#/name"},
        "profiles_update": {"name": "$response.body#/name"},
        "profiles_delete": {"name": "$response.body#/name"},
        "profiles_settings_get": {"name": "$response.body#/name"},
        "profiles_settings_put": {"name": "$response.body#/name"},
        "profiles_sources_get": {"name": "$response.body#/name"},
        "profiles_sources_put": {"name": "$response.body#/name"},
    },
    "approvals_check": {
        "approvals_get": {"request_id": "$response.body#/id"},
        "approvals_cancel": {"request_id": "$response.body#/id"},
        "approvals_decide": {"request_id": "$response.body#/id"},
        "approvals_similar": {"request_id": "$response.body#/id"},
    },
    "agent_workspaces_ensure": {
        "agent_workspaces_get": {
            "namespace": "$response.body#/namespace",
            "agent_type": "$response.body#/agentType",
        },
        "workspace_contexts_list": {
            "namespace": "$response.body#/namespace",
            "agent_type": "$response.body#/agentType",
        },
        "workspace_contexts_touch": {
            "namespace": "$response.body#/namespace",
            "agent_type": "$response.body#/agentType",
        },
        "agent_workspaces_usage": {
            "namespace": "$response.body#/namespace",
            "agent_type": "$response.body#/agentType",
        },
        "agent_workspaces_delete": {
            "namespace": "$response.body#/namespace",
            "agent_type": "$response.body#/agentType",
        },
    },
}


HEALTHZ = {
    "get": {
        "operationId": "healthz",
        "description": "Liveness, as the v1 contract has it; needs no token.",
        "security": [],
        "tags": ["probes"],
        "responses": {
            "200": {
                "description": "The process serves requests",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {"status": {"type": "string", "enum": ["ok"]}},
                            "required": ["status"],
                        }
                    }
                },
            }
        },
    }
}


def _link_name(operation_id: str) -> str:
    return "".join(part.capitalize() for part in operation_id.split("_"))


def postprocess(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    """drf-spectacular postprocessing hook: request bodies closed to unknown fields, the
    contract's ``/healthz`` (a plain Django view), and OpenAPI links from each create's
    success response to the operations that read, change or delete what it made."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        component.update(contract.document_keywords(name))
    result["paths"] = {"/healthz": HEALTHZ, **result.get("paths", {})}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if schema.get("type") == "string" and not {"pattern", "enum"} & set(schema):
                    # A NUL anywhere in a URL is refused (core/middleware.reject_nul_in_url).
                    schema["pattern"] = contract.NO_NUL
            targets = LINKS.get(operation.get("operationId", ""))
            if not targets:
                continue
            for status, response in operation["responses"].items():
                if not status.startswith("2"):
                    continue
                response["links"] = {
                    _link_name(target): {"operationId": target, "parameters": parameters}
                    for target, parameters in targets.items()
                }
    return result


class ApiDocsView(SpectacularSwaggerView):
    """The Swagger page: people who are not logged in are sent to the login page (it is a
    page for browsers; the document itself, ``/api/schema/``, answers 401 like the API)."""

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, exceptions.NotAuthenticated):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
