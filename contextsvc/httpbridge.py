"""HTTP requests through Django's synchronous handler on a thread pool, inside the ASGI
server that also serves WebSockets.

Why not Django's ASGI handler: every view here is synchronous, and under ASGI Django hops
between the event loop and worker threads for each middleware and signal — about fifteen
hops per request, which measured 7.5 ms per request on this project's 2-core machine
against 1 ms for the same request through the WSGI handler. asgiref's ``WsgiToAsgi`` runs
every request on one thread and never calls the response's ``close()`` (so Django never
sends ``request_finished`` and database connections are never returned). This bridge does
both: requests run in parallel on a bounded pool, and ``close()`` is always called.

Responses are buffered before they are sent: API responses and pages are small, and the
static assets WhiteNoise serves are too. Request bodies are read into memory up to
``MAX_BODY`` (the v1 contract's 1 MiB limit is enforced by Django after that); a larger body
is refused here with the v1 error body, without reaching Django.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from contextsvc.infra.contract import TOO_BIG
from contextsvc.infra.errors import error_body

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Anything larger cannot be a valid request to this service (the contract allows 1 MiB).
MAX_BODY = 2 * 1024 * 1024


class ThreadedWSGI:
    def __init__(self, application: WSGIApp, *, threads: int) -> None:
        self.application = application
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"ThreadedWSGI serves HTTP, not {scope['type']}")
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                await _too_large(send)
                return
            if not message.get("more_body"):
                break
        loop = asyncio.get_running_loop()
        status, headers, content = await loop.run_in_executor(
            self.executor, self._run, scope, bytes(body)
        )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def _run(self, scope: Scope, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        environ = build_environ(scope, body)
        started: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            started["status"] = int(status.split(" ", 1)[0])
            started["headers"] = [
                (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers
            ]
            return lambda data: None  # the legacy write() callable; Django never uses it

        result = self.application(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django sends request_finished here: connections go back to the pool
        return started["status"], started["headers"], content


def build_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI HTTP scope (PEP 3333; repeated headers joined by ",")."""
    script_name = scope.get("root_path", "").encode().decode("latin-1")
    path_info = scope["path"].encode().decode("latin-1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name) :]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if scope.get("client"):
        environ["REMOTE_ADDR"] = scope["client"][0]
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name not in ("CONTENT_LENGTH", "CONTENT_TYPE"):
            name = f"HTTP_{name}"
        value = raw_value.decode("latin-1")
        environ[name] = f"{environ[name]},{value}" if name in environ else value
    return environ


async def _too_large(send: Send) -> None:
    text = json.dumps(error_body("invalid_request", TOO_BIG)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(text))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": text})
