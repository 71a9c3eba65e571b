from __future__ import annotations

import pytest

from contextsvc.env import (
    ConfigError,
    check_redis_url,
    env_bool,
    env_int,
    env_list,
    env_str,
    parse_database_url,
)


def test_database_url_is_parsed_with_escaped_password() -> None:
    parsed = parse_database_url("DATABASE_URL", "postgres://svc:p%40ss@db.example:6543/cs")

    assert (parsed.user, parsed.password, parsed.host, parsed.port, parsed.name) == (
        "svc",
        "p@ss",
        "db.example",
        6543,
        "cs",
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///db.sqlite3", "DATABASE_URL must be a postgres:// URL"),
        ("postgres://svc@db:5432/", "DATABASE_URL must name a database"),
        ("postgres://svc@db:notaport/cs", "DATABASE_URL has an invalid port"),
    ],
)
def test_bad_database_url_names_the_variable(url: str, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_database_url("DATABASE_URL", url)
    assert str(excinfo.value).startswith(message)


def test_redis_url_must_be_redis() -> None:
    with pytest.raises(
        ConfigError, match=r"^REDIS_URL must be a redis:// or rediss:// URL, got scheme"
    ):
        check_redis_url("REDIS_URL", "http://localhost:6379")


def test_missing_required_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CS_SOMETHING", raising=False)
    with pytest.raises(ConfigError, match=r"^CS_SOMETHING is required but not set$"):
        env_str("CS_SOMETHING")


@pytest.mark.parametrize(("raw", "expected"), [("true", True), ("0", False), ("Yes", True)])
def test_booleans(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    monkeypatch.setenv("CS_FLAG", raw)
    assert env_bool("CS_FLAG", not expected) is expected


def test_bad_boolean_and_integer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CS_FLAG", "maybe")
    monkeypatch.setenv("CS_COUNT", "ten")
    with pytest.raises(
        ConfigError, match=r"^CS_FLAG must be a boolean \(true/false\), got 'maybe'$"
    ):
        env_bool("CS_FLAG", False)
    with pytest.raises(ConfigError, match=r"^CS_COUNT must be an integer, got 'ten'$"):
        env_int("CS_COUNT", 1)


def test_integer_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CS_COUNT", "-1")
    with pytest.raises(ConfigError, match=r"^CS_COUNT must be at least 0, got -1$"):
        env_int("CS_COUNT", 1, minimum=0)


def test_list_splits_and_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", " a.example , b.example,, ")
    assert env_list("DJANGO_ALLOWED_HOSTS") == ["a.example", "b.example"]
