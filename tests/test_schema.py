"""The OpenAPI document generates without warnings and validates."""

from __future__ import annotations

from io import StringIO

import pytest
import yaml
from django.core.management import call_command


@pytest.mark.django_db
def test_openapi_schema_is_valid_and_complete() -> None:
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)

    schema = yaml.safe_load(out.getvalue())
    assert schema["info"]["title"] == "Context Service API"
    assert set(schema["paths"]) >= {
        "/v1/sandbox-pools",
        "/v1/sandbox-pools/{name}",
        "/v1/contexts",
        "/v1/namespaces/{namespace}/contexts",
        "/v1/namespaces/{namespace}/contexts/{name}",
        "/v1/profiles",
        "/v1/capabilities",
    }
    assert schema["components"]["securitySchemes"]["bearerToken"]["scheme"] == "bearer"
