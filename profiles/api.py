"""``/v1/profiles`` (admin-only writes) and ``/v1/capabilities``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contextsvc.core import capabilities, openapi
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.contract import NO_NUL, Body, Field, SchemaField, read_json_object
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.models import Scope
from contextsvc.core.openapi import responses
from profiles import selectors, services, v1
from profiles.validation import DOCUMENTS, normalised_document
from rules.settings import LISTS
from rules.sources import SOURCES_KEYS


class TemplateRef(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()


class WarmPoolBounds(serializers.Serializer):
    min = serializers.IntegerField(min_value=0, max_value=100)
    max = serializers.IntegerField(min_value=1, max_value=100)
    namespace = serializers.CharField(
        required=False, help_text="Where the pool lives (default: CS_NAMESPACE)"
    )


class WarmPool(WarmPoolBounds):
    name = serializers.CharField(help_text="The SandboxWarmPool and SandboxTemplate made")


class ApprovalPolicy(serializers.Serializer):
    """How the agent type's operations reach people (docs/approvals.md)."""

    twoPersonRule = serializers.BooleanField(
        required=False, help_text="High-risk operations need two distinct approvers"
    )
    escalateAfter = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="Share of the deadline after which an undecided request is escalated",
    )
    escalateTo = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Usernames of approvers"
    )
    email = serializers.ChoiceField(
        choices=["all", "high", "none"],
        required=False,
        help_text="Which new requests e-mail the approvers",
    )


class _ProfileFields(serializers.Serializer):
    description = serializers.CharField()
    enabled = serializers.BooleanField()
    default = serializers.BooleanField(help_text="Used by direct allocations naming none")
    source = serializers.ChoiceField(choices=["builtin", "template"])  # type: ignore[assignment]
    image = serializers.CharField()
    command = serializers.ListField(child=serializers.CharField())
    args = serializers.ListField(child=serializers.CharField())
    env = serializers.ListField(child=serializers.DictField())
    resources = serializers.DictField()
    podLabels = serializers.DictField(child=serializers.CharField())
    volumes = serializers.ListField(child=serializers.DictField())
    volumeMounts = serializers.ListField(child=serializers.DictField())
    isolation = serializers.ChoiceField(choices=["default", "gvisor", "kata"])
    executorIsolation = serializers.ChoiceField(choices=["namespaces", "none"])
    relaxations = serializers.ListField(child=serializers.CharField())
    egress = serializers.ListField(child=serializers.DictField())
    ingress = serializers.ListField(child=serializers.DictField())
    rules = serializers.DictField(help_text="The agent type's settings.json")
    sources = serializers.DictField(help_text="The agent type's sources.json")
    approvals = ApprovalPolicy()


class Profile(_ProfileFields):
    name = serializers.CharField()
    warmPool = WarmPool(allow_null=True, help_text="Warm capacity the service owns, or null")
    template = TemplateRef(required=False)
    updatedAt = serializers.DateTimeField(allow_null=True)
    updatedBy = serializers.CharField()


class ProfileRequest(serializers.Serializer):
    """The fields of ``Profile`` that may be written; all but ``name`` are optional."""

    name = serializers.RegexField(openapi.DNS_LABEL)
    template = TemplateRef(required=False)
    description = serializers.CharField(required=False)
    enabled = serializers.BooleanField(required=False)
    default = serializers.BooleanField(required=False)
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["builtin", "template"], required=False
    )
    image = serializers.CharField(required=False)
    command = serializers.ListField(child=serializers.CharField(), required=False)
    args = serializers.ListField(child=serializers.CharField(), required=False)
    env = serializers.ListField(child=serializers.DictField(), required=False)
    resources = serializers.DictField(required=False)
    podLabels = serializers.DictField(child=serializers.CharField(), required=False)
    volumes = serializers.ListField(child=serializers.DictField(), required=False)
    volumeMounts = serializers.ListField(child=serializers.DictField(), required=False)
    isolation = serializers.ChoiceField(choices=["default", "gvisor", "kata"], required=False)
    executorIsolation = serializers.ChoiceField(
        choices=["namespaces", "none"],
        required=False,
        help_text="How the agent's executor isolates each command (docs/agent-client.md)",
    )
    relaxations = serializers.ListField(child=serializers.CharField(), required=False)
    egress = serializers.ListField(child=serializers.DictField(), required=False)
    ingress = serializers.ListField(child=serializers.DictField(), required=False)
    rules = serializers.DictField(required=False)
    sources = serializers.DictField(required=False)
    approvals = ApprovalPolicy(required=False)
    warmPool = WarmPoolBounds(
        required=False,
        allow_null=True,
        help_text="A warm pool the service makes, owns and sizes from demand; null removes it",
    )


class ProfileList(serializers.Serializer):
    items = Profile(many=True)


class Capabilities(serializers.Serializer):
    sandboxes = serializers.BooleanField()
    templates = serializers.BooleanField()
    warm_pools = serializers.BooleanField()
    claims = serializers.BooleanField()
    extensions = serializers.BooleanField()
    runtime_classes = serializers.ListField(child=serializers.CharField())
    template_list = serializers.ListField(child=serializers.CharField())
    warm_pool_list = serializers.ListField(child=serializers.DictField())
    error = serializers.CharField()
    detected_at = serializers.CharField()
    missing = serializers.ListField(child=serializers.CharField())


class ProfileCollectionApi(ServiceAPIView):
    """Sandbox profiles: list them (callers choose one by name), or create one (admins)."""

    # Callers choose a profile by name, so they may list them.
    read_scopes = (Scope.READ, Scope.ALLOCATIONS)
    write_scope = Scope.ADMIN

    @extend_schema(operation_id="profiles_list", responses=responses({200: ProfileList}))
    def get(self, request: Request) -> Response:
        return Response({"items": [v1.profile_response(p) for p in selectors.profile_list()]})

    @extend_schema(
        operation_id="profiles_create",
        request=ProfileRequest,
        responses=responses({201: Profile}, 409),
    )
    def post(self, request: Request) -> Response:
        name, values = v1.parse_profile(read_json_object(request._request))
        profile = services.profile_save(
            name=name, values=values, actor=actor_of(request.user), create=True
        )
        return Response(v1.profile_response(profile), status=201)


class ProfileDetailApi(ServiceAPIView):
    """One sandbox profile: read, replace (admins) or delete (admins)."""

    read_scopes = (Scope.READ, Scope.ALLOCATIONS)
    write_scope = Scope.ADMIN

    @extend_schema(operation_id="profiles_get", responses=responses({200: Profile}, 404))
    def get(self, request: Request, name: str) -> Response:
        return Response(v1.profile_response(selectors.profile_get(name=name)))

    @extend_schema(
        operation_id="profiles_update",
        request=ProfileRequest,
        responses=responses({200: Profile}, 404),
    )
    def put(self, request: Request, name: str) -> Response:
        body = read_json_object(request._request)
        body.setdefault("name", name)
        given, values = v1.parse_profile(body)
        if given != name:
            raise InvalidRequest(f'name "{given}" does not match the profile "{name}" in the path')
        profile = services.profile_save(
            name=name, values=values, actor=actor_of(request.user), create=False
        )
        return Response(v1.profile_response(profile))

    @extend_schema(operation_id="profiles_delete", responses=responses({204: None}, 404, 409))
    def delete(self, request: Request, name: str) -> Response:
        services.profile_delete(name=name, actor=actor_of(request.user))
        return Response(status=204)


class _ProfileDocumentApi(ServiceAPIView):
    """A profile's settings.json or sources.json, exported and imported in the seed's form."""

    write_scope = Scope.ADMIN
    document = ""

    def get(self, request: Request, name: str) -> Response:
        profile = selectors.profile_get(name=name)
        return Response(getattr(profile, DOCUMENTS[self.document].field))

    def put(self, request: Request, name: str) -> Response:
        field = DOCUMENTS[self.document].field
        normalised = normalised_document(self.document, read_json_object(request._request))
        profile = services.profile_save(
            name=name, values={field: normalised}, actor=actor_of(request.user), create=False
        )
        return Response(getattr(profile, field))


# The two documents as the rule engine reads them (rules.settings, rules.sources): closed at
# the top, "_" keys comments; what their entries mean is the engine's (its messages).
_OBJECT = {"type": "object"}
_STRINGS = {"items": {"type": "string", "pattern": NO_NUL}}
DOCUMENT_BODIES = {
    "settings": Body(
        "SettingsJson",
        (
            Field("context_workspace", nullable=True),
            Field(
                "permissions",
                dict,
                body=Body(
                    "Permissions",
                    tuple(Field(name, list, schema=_STRINGS) for name in LISTS),
                    null_is_absent=False,
                ),
            ),
        ),
        "settings.json: the agent type's rules (allow, ask, deny)",
        comment_prefix="_",
        null_is_absent=False,
    ),
    "sources": Body(
        "SourcesJson",
        (
            Field("agent_type", nullable=True),
            *(
                Field(name, dict, document=SchemaField(_OBJECT, required=False))
                for name in SOURCES_KEYS[1:]
            ),
        ),
        "sources.json: where the agent type may fetch packages, pages and code from",
        comment_prefix="_",
        null_is_absent=False,
    ),
}


def _document(name: str) -> Any:
    document = DOCUMENT_BODIES[name].serializer()
    return extend_schema_view(
        get=extend_schema(
            operation_id=f"profiles_{name}_get",
            responses=responses({200: document}, 404),
        ),
        put=extend_schema(
            operation_id=f"profiles_{name}_put",
            request=document,
            responses=responses({200: document}, 404),
        ),
    )


@_document("settings")
class ProfileSettingsApi(_ProfileDocumentApi):
    document = "settings"


@_document("sources")
class ProfileSourcesApi(_ProfileDocumentApi):
    document = "sources"


class CapabilitiesApi(ServiceAPIView):
    """What the cluster serves: the agent-sandbox CRDs, RuntimeClasses, templates and warm pools."""

    read_scopes = (Scope.READ, Scope.ALLOCATIONS, Scope.AGENT, Scope.APPROVER)

    @extend_schema(operation_id="capabilities", responses=responses({200: Capabilities}))
    def get(self, request: Request) -> Response:
        return Response(capabilities.current().as_dict())
