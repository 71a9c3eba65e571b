"""The web process as ``make run`` starts it: uvicorn serving pages, static files, login."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from contextsvc.core.users import user_set_role


@pytest.mark.django_db(transaction=True)
def test_login_page_static_files_and_login(web_server: str) -> None:
    user = get_user_model().objects.create_user("alice", password="correct horse battery")
    user_set_role(user=user, role="viewer", actor="test")
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    with opener.open(f"{web_server}/login/") as response:
        page = response.read().decode()
    assert response.status == 200
    assert "<h1>Log in</h1>" in page
    with opener.open(f"{web_server}/static/frontend/app.css") as css:
        assert css.status == 200
        assert css.headers["Content-Type"].startswith("text/css")

    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    form = urlencode(
        {
            "username": "alice",
            "password": "correct horse battery",
            "csrfmiddlewaretoken": token.group(1),
            "next": "/",
        }
    ).encode()
    request = urllib.request.Request(
        f"{web_server}/login/", data=form, headers={"Referer": f"{web_server}/login/"}
    )
    with opener.open(request) as response:
        landed = response.read().decode()
    assert response.url == f"{web_server}/"
    assert "<h1>Overview</h1>" in landed
    assert "alice" in landed


def test_oversized_body_is_refused_before_django(web_server: str) -> None:
    body = b'{"name": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    request = urllib.request.Request(
        f"{web_server}/v1/sandbox-pools",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )

    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(request)

    assert excinfo.value.code == 400
    assert json.loads(excinfo.value.read()) == {
        "error": "invalid_request",
        "message": "request body must not exceed 1 MiB",
    }


def test_web_process_answers_concurrent_requests(web_server: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def fetch(_: int) -> int:
        with urllib.request.urlopen(f"{web_server}/healthz") as response:
            return int(response.status)

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(fetch, range(40))) == [200] * 40
