"""The API's HTML pages: the Swagger page and, in local settings, DRF's browsable API.
Both used to answer 500 (a token-authenticated principal, or nobody at all, reached the
dashboard's role lookup)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from django.test import Client

from tests.support.api import issue_token
from tests.support.processes import web_process


@pytest.mark.django_db
def test_the_docs_page_with_a_token() -> None:
    token = issue_token("reader", ["read"])

    response = Client().get("/api/docs/", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert b"swagger-ui" in response.content


@pytest.mark.django_db
def test_the_docs_page_without_a_login_sends_people_to_log_in() -> None:
    response = Client().get("/api/docs/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/api/docs/"


@pytest.fixture(scope="module")
def local_web(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """A web process on the local (development) settings: DEBUG on, the browsable API."""
    with web_process("web-local", {"DJANGO_SETTINGS_MODULE": "config.settings.local"}) as url:
        yield url


def get(url: str, headers: dict[str, str]) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


@pytest.mark.django_db(transaction=True)
def test_the_browsable_api_with_a_token(local_web: str) -> None:
    token = issue_token("reader", ["read"])

    status, content_type, body = get(
        f"{local_web}/v1/sandbox-pools",
        {"Authorization": f"Bearer {token}", "Accept": "text/html"},
    )

    assert (status, content_type) == (200, "text/html; charset=utf-8")
    assert "Sandbox Pool Collection" in body


@pytest.mark.django_db(transaction=True)
def test_the_browsable_api_without_credentials_is_a_plain_401(local_web: str) -> None:
    status, content_type, body = get(f"{local_web}/v1/sandbox-pools", {"Accept": "text/html"})

    assert (status, content_type) == (401, "text/html; charset=utf-8")
    assert "Traceback (most recent call last)" not in body
    assert "Authentication credentials were not provided." in body
