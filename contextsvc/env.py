"""Typed readers for configuration taken from environment variables.

Every reader raises :class:`ConfigError` with a one-line message that names the variable,
so that a bad deployment fails with ``error: CS_FOO: ...`` and not a traceback.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ImproperlyConfigured):
    """A configuration variable is missing or malformed."""


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ConfigError(f"{name} is required but not set")
        return default
    return value


def env_optional(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value or None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        if default is None:
            raise ConfigError(f"{name} is required but not set")
        return default
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items and default is None:
        raise ConfigError(f"{name} must list at least one value (comma-separated)")
    return items


def env_networks(
    name: str, default: list[str]
) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """A comma-separated list of networks (``10.0.0.0/8``, ``::1``); a bad one stops start-up."""
    found = []
    for item in env_list(name, default):
        try:
            found.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(f"{name}: {item!r} is not a network (e.g. 10.0.0.0/8)") from None
    return found


@dataclass(frozen=True)
class DatabaseURL:
    name: str
    user: str
    password: str
    host: str
    port: int


def parse_database_url(name: str, url: str) -> DatabaseURL:
    """Parse ``postgres://user:password@host:port/dbname``; other schemes are refused."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(
            f"{name} must be a postgres:// URL (only PostgreSQL is supported), got scheme "
            f"{parts.scheme or '(none)'!r}"
        )
    database = parts.path.lstrip("/")
    if not database:
        raise ConfigError(f"{name} must name a database, e.g. postgres://user@host:5432/dbname")
    try:
        port = parts.port or 5432
    except ValueError:
        raise ConfigError(f"{name} has an invalid port") from None
    return DatabaseURL(
        name=unquote(database),
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        host=parts.hostname or "",
        port=port,
    )


def check_redis_url(name: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss"}:
        # The scheme only: the rest of the URL may carry a password.
        raise ConfigError(
            f"{name} must be a redis:// or rediss:// URL, got scheme {parts.scheme or '(none)'!r}"
        )
    if not parts.hostname:
        raise ConfigError(f"{name} must name a host, e.g. redis://127.0.0.1:6379/0")
    return url


def check_public_url(name: str, url: str) -> str:
    """An absolute http(s) URL without a path's trailing slash (links append to it)."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(f"{name} must be an http(s) URL such as https://cs.example.com")
    if parts.query or parts.fragment:
        raise ConfigError(f"{name} must not have a query or fragment")
    return url.rstrip("/")
