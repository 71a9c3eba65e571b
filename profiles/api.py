"""``/v1/profiles`` (admin-only writes) and ``/v1/capabilities``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from approvals.rules.model import RuleSyntaxError, SourcesError
from approvals.rules.settings import parse_settings
from approvals.rules.sources import parse_sources
from contextsvc.core import capabilities
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.jsonbody import read_json_object
from contextsvc.core.models import Scope
from profiles import selectors, services, v1


class ProfileCollectionApi(ServiceAPIView):
    # Callers choose a profile by name, so they may list them.
    read_scopes = (Scope.READ, Scope.ALLOCATIONS)
    write_scope = Scope.ADMIN

    @extend_schema(operation_id="profiles_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response({"items": [v1.profile_response(p) for p in selectors.profile_list()]})

    @extend_schema(
        operation_id="profiles_create",
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        name, values = v1.parse_profile(read_json_object(request._request))
        profile = services.profile_save(
            name=name, values=values, actor=actor_of(request.user), create=True
        )
        return Response(v1.profile_response(profile), status=201)


class ProfileDetailApi(ServiceAPIView):
    read_scopes = (Scope.READ, Scope.ALLOCATIONS)
    write_scope = Scope.ADMIN

    @extend_schema(operation_id="profiles_get", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, name: str) -> Response:
        return Response(v1.profile_response(selectors.profile_get(name=name)))

    @extend_schema(
        operation_id="profiles_update",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
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

    @extend_schema(operation_id="profiles_delete", responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        services.profile_delete(name=name, actor=actor_of(request.user))
        return Response(status=204)


class _ProfileDocumentApi(ServiceAPIView):
    """A profile's settings.json or sources.json, exported and imported in the seed's form."""

    write_scope = Scope.ADMIN
    field = ""

    def _normalised(self, document: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def get(self, request: Request, name: str) -> Response:
        return Response(getattr(selectors.profile_get(name=name), self.field))

    def put(self, request: Request, name: str) -> Response:
        document = self._normalised(read_json_object(request._request))
        profile = services.profile_save(
            name=name, values={self.field: document}, actor=actor_of(request.user), create=False
        )
        return Response(getattr(profile, self.field))


_DOCUMENT = extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})


@extend_schema_view(get=_DOCUMENT, put=_DOCUMENT)
class ProfileSettingsApi(_ProfileDocumentApi):
    field = "rules"

    def _normalised(self, document: dict[str, Any]) -> dict[str, Any]:
        try:
            return parse_settings(document).to_json()
        except RuleSyntaxError as exc:
            raise InvalidRequest(str(exc)) from None


@extend_schema_view(get=_DOCUMENT, put=_DOCUMENT)
class ProfileSourcesApi(_ProfileDocumentApi):
    field = "sources"

    def _normalised(self, document: dict[str, Any]) -> dict[str, Any]:
        try:
            return parse_sources(document).to_json()
        except SourcesError as exc:
            raise InvalidRequest(str(exc)) from None


class CapabilitiesApi(ServiceAPIView):
    read_scopes = (Scope.READ, Scope.ALLOCATIONS, Scope.AGENT, Scope.APPROVER)

    @extend_schema(operation_id="capabilities", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(capabilities.current().as_dict())
