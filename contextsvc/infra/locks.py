"""PostgreSQL advisory locks: one holder at a time across every worker pod."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

# Lock namespaces (the first of the two 32-bit keys), so ids from different tables never meet.
ALLOCATION = 1
CONTEXT = 2
SINGLETON = 3
WORKSPACE = 4


def singleton_key(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


@contextmanager
def try_advisory_lock(namespace: int, key: int) -> Iterator[bool]:
    """Yields whether the lock was taken; it is held until the block ends.

    Session-level, not transaction-level: the holder makes Kubernetes calls while holding
    it, and a transaction must not stay open across those.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key])
