"""The v1 request rules of named contexts: every validation error with its exact message,
in contract order."""

from __future__ import annotations

from typing import Any

import pytest

from contexts.v1 import parse_context_request
from contextsvc.infra.errors import InvalidRequest
from tests.support.v1_messages import CONTEXT_ERRORS


@pytest.mark.parametrize(("body", "message"), CONTEXT_ERRORS)
def test_context_request_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest) as excinfo:
        parse_context_request(body)
    assert excinfo.value.message == message
