"""API tokens already looked up, kept in the web process until anything about any token,
client or team changes.

Authentication was a third of a GET's cost (docs/performance.md). A cache of it must
never let a revoked token through, so it is not kept for a time but for as long as
PostgreSQL has not said otherwise: triggers on the token, client and team tables
(``core/migrations/0006`` and ``0011``) send ``NOTIFY cs_tokens`` in the transaction that
revokes a token, deactivates a client, changes its scopes, agent types or team, or changes
a team's name or request rate (delivered when it commits), and a thread here that
``LISTEN``s empties the cache when one arrives. While that thread is not listening —
before it first connects, after its connection is lost, until it listens again — the
cache is off and every request asks the database. A lost connection is noticed when the
thread next runs (at once, unless the cores are busy), one that died silently within
``PROBE_SECONDS``: that is how long a change made meanwhile can go unheard.

A lookup that started before a notification must not put its (possibly stale) answer in
the cache after it: each entry is only stored if no notification came in between
(``generation``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

logger = logging.getLogger(__name__)

CHANNEL = "cs_tokens"
APPLICATION_NAME = "cs-token-cache"
MAX_ENTRIES = 10_000
RECONNECT_SECONDS = 1.0
PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class Entry:
    principal: Any  # auth.ApiPrincipal (auth imports this module)
    token_id: int
    client_id: int
    expires_at: datetime | None
    last_used_at: datetime | None


class TokenCache:
    def __init__(self, connect: dict[str, Any]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._generation = 0
        self._listening = False
        self._started = False

    # --- What requests use -------------------------------------------------------------------

    def generation(self) -> int | None:
        """The current generation, or None when the cache is off."""
        self._start()
        with self._lock:
            return self._generation if self._listening else None

    def get(self, token_hash: str) -> Entry | None:
        with self._lock:
            return self._entries.get(token_hash) if self._listening else None

    def put(self, token_hash: str, entry: Entry, generation: int) -> None:
        with self._lock:
            if not self._listening or generation != self._generation:
                return  # something changed while it was looked up
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[token_hash] = entry

    # --- The listener ------------------------------------------------------------------------

    def _forget(self, *, listening: bool) -> None:
        with self._lock:
            self._entries.clear()
            self._generation += 1
            self._listening = listening

    def _start(self) -> None:
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._listen_forever, name="token-cache", daemon=True).start()

    def _listen_forever(self) -> None:
        while True:
            try:
                with psycopg.connect(
                    **self._connect, autocommit=True, application_name=APPLICATION_NAME
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    # Anything that changed before LISTEN took effect was not heard.
                    self._forget(listening=True)
                    while True:
                        for _ in conn.notifies(timeout=PROBE_SECONDS):
                            self._forget(listening=True)
                        # A connection that died without a word would leave the cache on
                        # and deaf: ask it something between waits.
                        conn.execute("SELECT 1")
            except Exception as exc:  # noqa: BLE001 - any loss turns the cache off, then retry
                logger.warning("token cache stopped listening (%s); it is off until it can", exc)
            self._forget(listening=False)
            time.sleep(RECONNECT_SECONDS)
