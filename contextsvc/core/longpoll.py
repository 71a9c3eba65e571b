"""What the async HTTP consumers share (a waiting caller holds no thread): authentication
from the request's headers, database reads on the thread pool, a channel in a
channel-layer group (or None when Redis cannot be reached: the consumer then polls), and
answers in the API's error shape."""

from __future__ import annotations

import logging
import math
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from channels.db import DatabaseSyncToAsync
from channels.generic.http import AsyncHttpConsumer
from rest_framework.renderers import JSONRenderer

from contextsvc.core import ratelimit
from contextsvc.core.auth import (
    InvalidCredentials,
    actor_of,
    principal_from_headers,
    principal_scopes,
)
from contextsvc.core.teams import Reach, reach_of
from contextsvc.infra.errors import RateLimited, error_body

logger = logging.getLogger(__name__)

JSON_HEADERS = [(b"Content-Type", b"application/json"), (b"Cache-Control", b"no-store")]


class WaitConsumer(AsyncHttpConsumer):
    """A long-poll GET: ``answer()`` is the body of a 200, or raises ``Refused``. Not
    subscribed to a channel of its own: a subclass listens on a group through a channel it
    makes while it waits. (A consumer's own channel would keep one more blocking Redis read
    open per waiter, whose cancellation at the end logged spurious errors.)"""

    channel_layer_alias = None

    async def handle(self, body: bytes) -> None:
        try:
            payload = await self.answer()
        except Refused as refused:
            await send_refusal(self, refused)
        else:
            await self.send_response(200, encode(payload), headers=headers_for(200))

    async def answer(self) -> dict[str, Any]:
        raise NotImplementedError


class Refused(Exception):
    """An answer other than the one asked for: (status, error body)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: dict[str, object] | None = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(code, message, details)
        self.headers = headers or []


def in_thread(function: Any) -> Any:
    """Run a database read on the thread pool, not on Django's one "main" thread: waiters
    are independent, and one slow read must not hold up every other waiter's answer."""
    return DatabaseSyncToAsync(function, thread_sensitive=False)


class Caller(NamedTuple):
    actor: str
    scopes: frozenset[str]
    reach: Reach


@in_thread
def _principal(authorization: str, sh_auth: str) -> Caller | None:
    found = principal_from_headers(authorization=authorization, sh_auth=sh_auth)
    if found is None:
        return None
    principal, _ = found
    ratelimit.take_for(principal)  # a long-poll is a request like any other
    return Caller(actor_of(principal), principal_scopes(principal), reach_of(principal))


async def authenticate(scope: dict[str, Any], needs: AbstractSet[str]) -> Caller:
    """Who the caller is, what it may do and whose objects it reaches; it must hold one of
    ``needs``, else ``Refused``."""
    headers = dict(scope.get("headers") or [])
    authorization = headers.get(b"authorization", b"").decode("latin-1")
    sh_auth = headers.get(b"x-sh-auth", b"").decode("latin-1")
    try:
        found = await _principal(authorization, sh_auth) if authorization or sh_auth else None
    except InvalidCredentials as exc:
        raise Refused(401, "unauthorized", str(exc)) from None
    except RateLimited as exc:
        retry = [] if exc.retry_after is None else [(b"Retry-After", str(exc.retry_after).encode())]
        raise Refused(429, exc.code, exc.message, details=exc.details, headers=retry) from None
    if found is None:
        raise Refused(401, "unauthorized", "Authentication credentials were not provided.")
    if not found.scopes & needs:
        raise Refused(403, "forbidden", "this credential lacks the scope this endpoint needs")
    return found


async def send_refusal(consumer: AsyncHttpConsumer, refused: Refused) -> None:
    """The refusal as the API's views answer it: its status, body and headers (a 429's
    ``Retry-After``, a 401's ``WWW-Authenticate``)."""
    await consumer.send_response(
        refused.status, encode(refused.body), headers=headers_for(refused.status) + refused.headers
    )


def headers_for(status: int) -> list[tuple[bytes, bytes]]:
    headers = list(JSON_HEADERS)
    if status == 401:
        headers.append((b"WWW-Authenticate", b'Bearer realm="context-service"'))
    return headers


_RENDERER = JSONRenderer()


def encode(payload: Any) -> bytes:
    """The bytes DRF's views send for the same data (compact, UTF-8): a long-poll's body
    is exactly GET's."""
    return bytes(_RENDERER.render(payload))


async def subscribe(layer: Any, group: str) -> str | None:
    """A channel in ``group``, or None when the channel layer (Redis) cannot be reached:
    then the waiter polls the database, and the answer still arrives."""
    try:
        channel: str = await layer.new_channel()
        await layer.group_add(group, channel)
    except Exception:  # noqa: BLE001 - any failure of the layer means: poll instead
        logger.warning("the channel layer is unavailable; long-polls read the database")
        return None
    return channel


def wait_seconds(query: dict[str, list[str]], maximum: float) -> float:
    """``?wait=N``, clamped to [0, maximum]. NaN and the infinities are refused: NaN passes
    every clamp (each comparison with it is false) and would reach the event loop."""
    try:
        seconds = float(query.get("wait", ["0"])[0])
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise Refused(400, "invalid_request", "wait must be a number of seconds")
    return min(max(seconds, 0.0), maximum)
