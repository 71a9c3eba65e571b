"""Kubernetes name rules, shared by every request that names a Kubernetes object."""

from __future__ import annotations

import re

_DNS1123_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\Z")
_POOL_NAME = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\Z")

# The v1 contract's messages for the names and access modes that sandbox pools and named
# contexts share (allocations/v1.py, contexts/v1.py): the Go service's own strings.
NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"
NAMESPACE_MESSAGE = "namespace must be a lowercase Kubernetes name"
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")


def is_dns1123_label(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS1123_LABEL.fullmatch(value))


def is_dns1123_subdomain(value: object) -> bool:
    if not isinstance(value, str) or not value or len(value) > 253:
        return False
    return all(len(part) <= 63 and _DNS1123_LABEL.fullmatch(part) for part in value.split("."))


def is_pool_name(value: object) -> bool:
    """1–50 characters: short enough that ``sandbox-{name}-{99}`` etc. stay valid names."""
    return isinstance(value, str) and 1 <= len(value) <= 50 and bool(_POOL_NAME.fullmatch(value))
