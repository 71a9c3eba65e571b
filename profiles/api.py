"""``/v1/profiles`` (admin-only writes) and ``/v1/capabilities``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from contextsvc.core import capabilities
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.models import Scope
from contextsvc.infra.contract import NO_NUL, Body, Field, SchemaField, read_json_object
from contextsvc.infra.errors import InvalidRequest
from contextsvc.infra.openapi import responses
from profiles import selectors, services, v1
from profiles.validation import DOCUMENTS, normalised_document
from rules.settings import LISTS
from rules.sources import SOURCES_KEYS

# The answers' documents, from the declarations that render them.
Profile = v1.PROFILE_SHOWN.serializer()
ProfileList = v1.PROFILE_LIST.serializer()


_STRINGS = {"items": {"type": "string"}}


def _flag(name: str) -> Field:
    return Field.out(name, lambda caps: getattr(caps, name), bool)


def _names(name: str) -> Field:
    return Field.out(name, lambda caps: list(getattr(caps, name)), list, schema=_STRINGS)


# What the cluster serves, as GET /v1/capabilities answers it.
CAPABILITIES = Body(
    "Capabilities",
    (
        *(_flag(name) for name in ("sandboxes", "templates", "warm_pools", "claims")),
        _names("runtime_classes"),
        _names("template_list"),
        Field.out(
            "warm_pool_list",
            lambda caps: [dict(pool) for pool in caps.warm_pool_list],
            list,
            schema={"items": {"type": "object"}},
        ),
        Field.out("error", lambda caps: caps.error),
        Field.out("detected_at", lambda caps: caps.detected_at),
        _names("missing"),
        Field.out(
            "release",
            lambda caps: caps.release,
            help="The agent-sandbox release line, from the claim's schema (empty without the "
            "extensions)",
        ),
        _flag("extensions"),
    ),
)
Capabilities = CAPABILITIES.serializer()


class ProfileCollectionApi(ServiceAPIView):
    """Sandbox profiles: list them (callers choose one by name), or create one (admins)."""

    # Callers choose a profile by name, so they may list them.
    read_scopes = (Scope.READ, Scope.ALLOCATIONS)
    write_scope = Scope.ADMIN

    @extend_schema(operation_id="profiles_list", responses=responses({200: ProfileList}))
    def get(self, request: Request) -> Response:
        return Response(v1.PROFILE_LIST.render(list(selectors.profile_list())))

    @extend_schema(
        operation_id="profiles_create",
        request=v1.REQUEST.serializer(),
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
        request=v1.REQUEST.serializer(),
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
        return Response(CAPABILITIES.render(capabilities.current()))
