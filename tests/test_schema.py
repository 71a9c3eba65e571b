"""The OpenAPI document generates without warnings, validates, and says what the service
does: both token headers, lists as ``{"items": [...]}``, the error responses of every
operation, links from creates, and examples that validate against their own schemas.
(tests/test_openapi.py holds the live service to the document.)"""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.support.contextctl import Contextctl

REQUEST = {"$ref": "#/components/schemas/SandboxPoolRequest"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    document: dict[str, Any] = yaml.safe_load(out.getvalue())
    return document


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]


def validator(schema: dict[str, Any], subschema: dict[str, Any]) -> Draft202012Validator:
    """A validator for a component the document refers to (``#/components/schemas/X``)."""
    document = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry = Registry().with_resource("urn:openapi", document)
    return Draft202012Validator({"$ref": "urn:openapi" + subschema["$ref"]}, registry=registry)


def test_document_is_valid_and_complete(schema: dict[str, Any]) -> None:
    assert schema["info"]["title"] == "Context Service API"
    assert schema["openapi"] == "3.1.0"
    assert set(schema["paths"]) >= {
        "/healthz",
        "/v1/sandbox-pools",
        "/v1/sandbox-pools/{name}",
        "/v1/contexts",
        "/v1/namespaces/{namespace}/contexts",
        "/v1/namespaces/{namespace}/contexts/{name}",
        "/v1/profiles",
        "/v1/capabilities",
    }
    assert schema["components"]["securitySchemes"] == {
        "bearerToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API client token (manage.py api_client), as scripts send it.",
        },
        "shAuth": {
            "type": "apiKey",
            "in": "header",
            "name": "X-SH-Auth",
            "description": "The same token without a scheme, as contextctl and Serverless "
            "Harness send it.",
        },
        "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
    }
    pool_post = schema["paths"]["/v1/sandbox-pools"]["post"]
    assert pool_post["security"] == [{"bearerToken": []}, {"shAuth": []}, {"cookieAuth": []}]
    assert schema["paths"]["/healthz"]["get"]["security"] == []


def test_every_operation_documents_its_errors(schema: dict[str, Any]) -> None:
    for method, path, operation in operations(schema):
        if path == "/healthz":
            continue
        statuses = set(operation["responses"])
        assert {"400", "401", "403", "500", "503"} <= statuses, (method, path)
        if "{" in path:
            assert "404" in statuses, (method, path)
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                assert response["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }, (method, path, status)
                assert response["description"], (method, path, status)


def test_lists_are_items_arrays(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for name, item in [
        ("SandboxPoolList", "SandboxPool"),
        ("ContextList", "Context"),
        ("ProfileList", "Profile"),
        ("GrantList", "Grant"),
        ("ApprovalList", "Approval"),
        ("AgentWorkspaceList", "AgentWorkspace"),
        ("WorkspaceContextList", "WorkspaceContext"),
    ]:
        assert components[name]["properties"]["items"] == {
            "type": "array",
            "items": {"$ref": f"#/components/schemas/{item}"},
        }, name
    listed = schema["paths"]["/v1/sandbox-pools"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SandboxPoolList"
    }


def test_creates_link_to_reads_and_deletes(schema: dict[str, Any]) -> None:
    created = schema["paths"]["/v1/sandbox-pools"]["post"]["responses"]["201"]
    assert created["links"] == {
        "SandboxPoolsGet": {
            "operationId": "sandbox_pools_get",
            "parameters": {"name": "$response.body#/name"},
        },
        "SandboxPoolsRelease": {
            "operationId": "sandbox_pools_release",
            "parameters": {"name": "$response.body#/name"},
        },
    }
    operation_ids = {operation["operationId"] for _, _, operation in operations(schema)}
    for _, _, operation in operations(schema):
        for response in operation["responses"].values():
            for link in (response.get("links") or {}).values():
                assert link["operationId"] in operation_ids


def test_a_pool_request_is_one_of_the_strategies(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert components["SandboxPoolRequest"] == {
        "oneOf": [
            {"$ref": "#/components/schemas/ManagedPoolRequest"},
            {"$ref": "#/components/schemas/ExistingPoolRequest"},
            {"$ref": "#/components/schemas/WarmPoolRequest"},
            {"$ref": "#/components/schemas/ProfileWarmPoolRequest"},
        ]
    }
    required = {name: sorted(item.get("required", [])) for name, item in components.items()}
    assert required["ManagedPoolRequest"] == ["name", "replicas", "workspace"]
    assert required["ManagedWorkspace"] == ["accessMode", "size"]
    assert required["ExistingWorkspace"] == ["claimName", "readOnly"]
    assert required["WarmPoolRequest"] == ["name", "replicas", "warmPoolRef"]
    assert required["ProfileWarmPoolRequest"] == ["name", "profile", "replicas"]
    for name in ("ManagedPoolRequest", "ManagedWorkspace", "ContextRequest", "ProfileRequest"):
        assert components[name]["additionalProperties"] is False, name


CONTEXTCTL_CREATES = [
    ["demo"],
    ["demo", "--shared"],
    ["-n", "3", "-s", "2Gi", "-c", "standard", "demo"],
    ["demo", "--claim", "prepared", "--read-only", "-n", "2"],
    ["demo", "--claim", "prepared", "--read-write"],
    ["demo", "--warm-pool", "agents", "-n", "2"],
]


@pytest.mark.parametrize("args", CONTEXTCTL_CREATES, ids=" ".join)
def test_every_body_contextctl_sends_is_a_documented_request(
    schema: dict[str, Any], args: list[str]
) -> None:
    """Go's encoder sends the zero values of the other strategies' fields ("size": ""):
    a client generated from the document must accept what the real client sends."""
    body = Contextctl("http://contextctl.invalid", storage_class="standard").create_body(args)

    errors = list(validator(schema, REQUEST).iter_errors(body))

    assert errors == []


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x", "replicas": 1, "warmPoolRef": "p", "workspace": {"size": "1Gi"}},
        {"name": "x", "replicas": 1, "warmPoolRef": "p", "workspace": {"storageClass": "s"}},
        {
            "name": "x",
            "replicas": 1,
            "workspace": {"size": "1Gi", "accessMode": "", "claimName": "c", "readOnly": True},
        },
        {"name": "x", "replicas": 1, "workspace": {"size": "", "accessMode": "ReadWriteOnce"}},
    ],
)
def test_only_zero_values_of_the_other_strategies_are_documented(
    schema: dict[str, Any], body: dict[str, Any]
) -> None:
    assert not validator(schema, REQUEST).is_valid(body)


def test_examples_validate_against_their_schemas(schema: dict[str, Any]) -> None:
    checked = 0
    for method, path, operation in operations(schema):
        body = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
        media = [("request", body)] if body else []
        media += [
            (status, (response.get("content") or {}).get("application/json"))
            for status, response in operation["responses"].items()
        ]
        for where, content in media:
            for name, example in ((content or {}).get("examples") or {}).items():
                errors = list(validator(schema, content["schema"]).iter_errors(example["value"]))
                assert errors == [], (method, path, where, name, [e.message for e in errors])
                checked += 1
    # The contract's examples for pools and contexts: two requests and a 201 for pools, one
    # request and a 201 for contexts.
    assert checked == 5
