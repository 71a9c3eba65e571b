"""The other ends of notifications, real and on loopback: an SMTP server (aiosmtpd) that
keeps what it receives, and an HTTP server that records each webhook POST and answers as a
test scripts it."""

from __future__ import annotations

import email
import email.policy
import json
import threading
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from devenv.system import free_port
from tests.support.processes import wait_until


class _Inbox:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: list[EmailMessage] = []
        self.refuse: set[str] = set()

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        if address in self.refuse:
            return "550 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or envelope.content
        assert isinstance(content, bytes)
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.lock:
            self.messages.append(parsed)
        return "250 Message accepted for delivery"


class MailServer:
    """aiosmtpd on 127.0.0.1:<free port>, in a thread of the test process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.inbox = _Inbox()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    @property
    def env(self) -> dict[str, str]:
        """What a service process needs to send here."""
        return {"CS_EMAIL_HOST": "127.0.0.1", "CS_EMAIL_PORT": str(self.port)}

    def start(self) -> MailServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def clear(self) -> None:
        with self.inbox.lock:
            self.inbox.messages.clear()
        self.inbox.refuse.clear()

    @property
    def messages(self) -> list[EmailMessage]:
        with self.inbox.lock:
            return list(self.inbox.messages)

    def wait_for(self, count: int, *, timeout: float = 30) -> list[EmailMessage]:
        wait_until(
            lambda: len(self.messages) >= count,
            timeout=timeout,
            message=f"{count} e-mail(s) (have {len(self.messages)})",
        )
        return self.messages


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """Records every POST; answers with the next status of ``script`` (then 200)."""

    script: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook/secret-path"

    def start(self) -> HttpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(Received(self.path, dict(self.headers), body))
                    status = receiver.script.pop(0) if receiver.script else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def wait_for(self, count: int, *, timeout: float = 30) -> list[Received]:
        def enough() -> bool:
            with self.lock:
                return len(self.received) >= count

        wait_until(enough, timeout=timeout, message=f"{count} webhook POST(s)")
        with self.lock:
            return list(self.received)
