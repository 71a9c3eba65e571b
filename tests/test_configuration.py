"""Bad configuration stops each process with one line naming the variable; production
settings pass Django's deployment checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from devenv.system import REPO_DIR

GOOD_SECRET = "k3y-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP"


def run(argv: list[str], env_overrides: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in env_overrides}
    env.update({k: v for k, v in env_overrides.items() if v is not None})
    return subprocess.run(
        argv, env=env, cwd=REPO_DIR, capture_output=True, text=True, timeout=120, check=False
    )


def production_env(**overrides: str | None) -> dict[str, str | None]:
    from django.conf import settings

    env: dict[str, str | None] = {
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": GOOD_SECRET,
        "DJANGO_ALLOWED_HOSTS": "cs.example.com",
        "CS_SANDBOX_IMAGE": "registry.example.com/sandbox:1",
        "CS_PUBLIC_URL": "https://cs.example.com",
        "DATABASE_URL": "postgres://u:p@127.0.0.1:1/db",
        "REDIS_URL": settings.REDIS_URL,
        # Set for the browser tests' own thread when they ran first; never in production.
        "DJANGO_ALLOW_ASYNC_UNSAFE": None,
    }
    env.update(overrides)
    return env


MANAGE = [sys.executable, "manage.py", "check"]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"DJANGO_SECRET_KEY": None}, "error: DJANGO_SECRET_KEY is required but not set"),
        (
            {"DJANGO_SECRET_KEY": "short"},
            "error: DJANGO_SECRET_KEY must be at least 50 characters of random text",
        ),
        ({"DJANGO_ALLOWED_HOSTS": None}, "error: DJANGO_ALLOWED_HOSTS is required but not set"),
        (
            {"DJANGO_ALLOWED_HOSTS": " , "},
            "error: DJANGO_ALLOWED_HOSTS must list at least one value (comma-separated)",
        ),
        ({"CS_SANDBOX_IMAGE": None}, "error: CS_SANDBOX_IMAGE is required but not set"),
        (
            {"DATABASE_URL": "mysql://x@y/z"},
            "error: DATABASE_URL must be a postgres:// URL (only PostgreSQL is supported), got "
            "scheme 'mysql'",
        ),
        ({"REDIS_URL": None}, "error: REDIS_URL is required but not set"),
        ({"CS_LOG_FORMAT": "xml"}, "error: CS_LOG_FORMAT must be 'text' or 'json', got 'xml'"),
    ],
)
def test_manage_py_reports_bad_configuration_in_one_line(
    overrides: dict[str, str | None], expected: str
) -> None:
    result = run(MANAGE, production_env(**overrides))

    assert result.returncode == 1
    assert result.stderr == expected + "\n"
    assert result.stdout == ""


def test_celery_reports_bad_configuration_in_one_line() -> None:
    celery = [sys.executable, "-m", "celery", "-A", "config", "worker"]
    result = run(celery, production_env(REDIS_URL="http://:hunter2@nope"))

    assert result.returncode == 1
    # Only the scheme is repeated: the rest of a URL may hold a password.
    assert (
        result.stderr == "error: REDIS_URL must be a redis:// or rediss:// URL, got scheme 'http'\n"
    )


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("CS_LOCAL_PG_PORT", "abc", "CS_LOCAL_PG_PORT must be an integer, got 'abc'"),
        ("CS_LOCAL_REDIS_PORT", "0", "CS_LOCAL_REDIS_PORT must be at least 1, got 0"),
    ],
)
def test_the_local_services_script_reports_bad_configuration_in_one_line(
    variable: str, value: str, expected: str
) -> None:
    result = run([sys.executable, "-m", "devenv", "status"], {variable: value})

    assert result.returncode == 2
    assert result.stderr == f"[devenv] error: {expected}\n"
    assert result.stdout == ""


def test_production_settings_pass_the_deployment_checks() -> None:
    result = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "System check identified no issues (0 silenced).\n"


PROBE = """
import django, json, logging
django.setup()
from django.test import Client
response = Client().get("/readyz", HTTP_HOST="cs.example.com", secure=True)
print(json.dumps({"status": response.status_code, "body": response.json()}))
"""


def test_production_logs_are_json_lines_and_readyz_names_postgres() -> None:
    # Port 1 on loopback is never a PostgreSQL server.
    # Python's own warnings (whitenoise's: no collectstatic in this checkout) are not log
    # records and are not written as JSON; switched off, every line left must be one.
    result = run([sys.executable, "-c", PROBE], production_env(PYTHONWARNINGS="ignore"))

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["status"] == 503
    assert "postgres" in answer["body"]["failed"]
    assert answer["body"]["checks"]["postgres"].startswith("error: OperationalError: ")
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert lines
    warning = next(line for line in lines if line["message"].startswith("readiness check postgres"))
    assert (warning["level"], warning["logger"]) == ("WARNING", "contextsvc.health")
    assert set(warning) >= {"time", "level", "logger", "message"}


SKIPPED_TREES = {".git", ".venv", "node_modules", "staticfiles", ".mypy_cache", ".ruff_cache"}


def test_every_directory_with_tests_is_collected() -> None:
    """A test module pytest never collects is a test that cannot fail: each top-level
    directory holding ``tests/test_*.py`` is in pyproject.toml's testpaths (usage/ once
    was not, and its tests ran only when named)."""
    import tomllib

    config = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())
    collected = set(config["tool"]["pytest"]["ini_options"]["testpaths"])
    holding = set()
    for top in REPO_DIR.iterdir():
        if not top.is_dir() or top.name in SKIPPED_TREES:
            continue
        for module in top.rglob("test_*.py"):
            parts = module.relative_to(REPO_DIR).parts
            if "tests" in parts and not SKIPPED_TREES & set(parts):
                holding.add(top.name)
                break
    assert "usage" in holding
    assert sorted(holding - collected) == []


MISSING_PAGE = """
import django
django.setup()
from django.test import Client
response = Client(HTTP_HOST="127.0.0.1").get("/no-such-page/")
print(response.status_code, b"URLconf" in response.content)
"""


@pytest.mark.parametrize(("debug", "expected"), [(None, "404 False"), ("1", "404 True")])
def test_make_runs_settings_show_no_url_patterns_unless_asked(
    debug: str | None, expected: str
) -> None:
    """Issue 45: ``make run`` served Django's DEBUG 404 page, which lists every URL pattern
    to whoever asks for a page that does not exist; now only with CS_DEBUG=1."""
    found = run(
        [sys.executable, "-c", MISSING_PAGE],
        {"DJANGO_SETTINGS_MODULE": "config.settings.local", "CS_DEBUG": debug},
    )

    assert (found.returncode, found.stdout.strip()) == (0, expected), found.stderr[-2000:]
