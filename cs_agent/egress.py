"""Where a command's network traffic may go, and the proxy of the executor's that holds it
there.

Every sandbox has a network namespace of its own with loopback only (``--unshare-net``).
When the judged effects name hosts and the profile has a network, the command reaches out
only through :class:`EgressProxy`: it listens on a unix socket in the run's directory,
which is bound into the sandbox, where a bridge (``cs_agent/launcher.py``) relays
``127.0.0.1:3128`` to it and ``HTTP(S)_PROXY``, ``ALL_PROXY``, pip's and git's proxy
settings point there (the model of Anthropic's sandbox-runtime). The proxy speaks HTTP
``CONNECT`` (https), plain HTTP (a request with an absolute URL) and SOCKS5 ``CONNECT``.

For each connection it judges, in this order (:class:`EgressPolicy`):

1. **the host**: not one of sources.json's ``blocked_domains``; inside the agent type's
   ceiling (``execution.egress.hosts``: sources.json's web domains, registries and git
   remotes, or the network allow rules' hosts — what a contained run may reach, the same
   for every run of the agent type); and one of the hosts judged for this command
   (``effects.network``; ``*``, a host only known at run time, is the whole ceiling);
2. **the port**: one the ceiling's URLs name (80 and 443, and a registry's own);
3. **every address the name resolves to**, resolved here once: public, by the rule the
   service's webhooks obey (:func:`public_address`: no loopback, private, link-local,
   metadata, shared or reserved address, and an IPv6 address that carries an IPv4 one —
   mapped, NAT64, 6to4, Teredo — is judged as that IPv4 address). It then connects to
   exactly the address it judged: the name is not resolved again.

Each refusal is answered (HTTP 403, SOCKS5 "not allowed by ruleset") and recorded for the
run report: these are facts of the executor's, not words of the program's.

Standard library only: the proxy is a thread of the agent process, per run; the image
needs no daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Inside the sandbox: where the bridge listens, and what the environment points at.
BRIDGE_PORT = 3128
PROXY_URL = f"http://127.0.0.1:{BRIDGE_PORT}"
SOCKS_URL = f"socks5h://127.0.0.1:{BRIDGE_PORT}"
DEFAULT_PORTS = (80, 443)
MAX_REFUSALS = 20
HEAD_LIMIT = 64 * 1024
CONNECT_SECONDS = 10.0
HEAD_SECONDS = 30.0

# --- Addresses ------------------------------------------------------------------------------

# Where IPv6 carries IPv4 in its last 32 bits: NAT64's well-known prefix (RFC 6052) and
# IPv4-compatible addresses (::a.b.c.d, RFC 4291; :: and ::1 are themselves).
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
COMPATIBLE = ipaddress.IPv6Network("::/96")
# NAT64's local-use prefix (RFC 8215) places IPv4 where the operator's prefix length says;
# it is never globally reachable (Python >= 3.12.4 agrees; the 3.11 here calls it global).
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def carried_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (Lib/ipaddress.py: ipv4_mapped,
    sixtofour = bits 16..48, teredo = (server, client with its bits inverted))."""
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if address in NAT64 or (address in COMPATIBLE and int(address) > 1):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []


def public_address(address: Address, named: Sequence[Any] = ()) -> bool:
    """Public (``is_global``, not multicast), or inside one of the ``named`` networks; an
    IPv6 address that carries IPv4 is judged by the IPv4 address(es) it carries. The rule
    of the service's webhook egress (approvals/egress.py) and of the executor's proxy."""

    def is_named(candidate: Address) -> bool:
        return any(candidate in network for network in named)

    def permitted(candidate: Address) -> bool:
        return is_named(candidate) or (candidate.is_global and not candidate.is_multicast)

    if isinstance(address, ipaddress.IPv6Address):
        if address in NAT64_LOCAL:
            return is_named(address)
        carried = carried_ipv4(address)
        if carried:
            # ::ffff:10.0.0.1, 64:ff9b::a00:1, 2002:a00:1:: are 10.0.0.1 on the wire. Teredo
            # (2001::/32) is not global: it passes only if the operator names it too.
            passes = all(permitted(ipv4) for ipv4 in carried)
            return passes and (address.teredo is None or is_named(address))
    return permitted(address)


# --- The policy -----------------------------------------------------------------------------


def host_matches(pattern: str, host: str) -> bool:
    """sources.json's host patterns: ``*`` every host, ``*.example.com`` its subdomains at
    any depth (not the apex), anything else the exact host."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern


def _normal(host: str) -> str:
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


@dataclass(frozen=True)
class EgressPolicy:
    """Where one run may connect (see the module's docstring)."""

    judged: tuple[str, ...]  # the command's hosts; "*": any host of the ceiling
    ceiling: tuple[str, ...]  # the agent type's patterns
    blocked: tuple[str, ...] = ()
    ports: frozenset[int] = frozenset(DEFAULT_PORTS)

    @classmethod
    def for_run(cls, judged: Iterable[str], egress: Mapping[str, Any] | None) -> EgressPolicy:
        """The policy of a run whose effects judged ``judged`` hosts, under the service's
        ``execution.egress``. Without one (a service older than the proxy) the ceiling is
        the hosts judged by name: a host only known at run time reaches nothing."""
        hosts = tuple(_normal(str(host)) for host in judged)
        if egress is None:
            return cls(hosts, tuple(h for h in hosts if h != "*"))
        ports = frozenset(int(port) for port in egress.get("ports") or DEFAULT_PORTS)
        return cls(
            hosts,
            tuple(_normal(str(host)) for host in egress.get("hosts") or ()),
            tuple(_normal(str(host)) for host in egress.get("blocked") or ()),
            ports,
        )

    @property
    def reaches_anything(self) -> bool:
        return bool(self.judged and self.ceiling)

    def refusal(self, host: str, port: int) -> str | None:
        """Why a connection to ``host:port`` is refused (None: it is not, by name)."""
        name = _normal(host)
        if any(host_matches(pattern, name) for pattern in self.blocked):
            return f"{name} is a blocked domain of the agent type (sources.json)"
        if not any(host_matches(pattern, name) for pattern in self.ceiling):
            return f"{name} is not a host the agent type may reach (sources.json)"
        if "*" not in self.judged and not any(host_matches(p, name) for p in self.judged):
            return f"{name} is not a host this command was judged to reach"
        if port not in self.ports:
            allowed = ", ".join(str(p) for p in sorted(self.ports))
            return f"port {port} is not one this agent type may reach ({allowed})"
        return None


# --- The proxy ------------------------------------------------------------------------------

Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class EgressProxy:
    """One run's proxy: :meth:`start` listens on ``path`` (a unix socket) in a thread of
    its own, :meth:`stop` closes it; :attr:`refused` is what it refused, as run-report
    entries.

    ``pinned`` maps ``host:port`` to the address and port to use instead of resolving the
    name and judging the address: the tests' loopback stand-ins for real registries.
    ``connect`` opens the upstream connection (the tests wrap it to prove nothing else is
    dialled)."""

    policy: EgressPolicy
    path: str
    pinned: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    connect: Connect | None = None
    refused: list[dict[str, str]] = field(default_factory=list)
    connections: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.AbstractServer | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_unix_server(self._handle, path=self.path)
                )
            except BaseException as exc:  # noqa: BLE001 - reported to start()'s caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=serve, name="cs-egress-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise OSError(f"the egress proxy could not listen on {self.path}: {failure[0]}")

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- one connection ------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # a handler always runs in a task
        self._tasks.add(task)
        try:
            first = await asyncio.wait_for(reader.readexactly(1), HEAD_SECONDS)
            if first == b"\x05":
                await self._socks(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError, OSError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    def _record(self, host: str, port: int, reason: str) -> None:
        where = f"{_normal(host)}:{port}"
        if len(self.refused) < MAX_REFUSALS and all(r["path"] != where for r in self.refused):
            self.refused.append(
                {"action": "network", "path": where, "error": reason, "reportedBy": "executor"}
            )

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The upstream connection, once the host, the port and its addresses pass."""
        reason = self.policy.refusal(host, port)
        if reason is None:
            pinned = self.pinned.get(f"{_normal(host)}:{port}")
            if pinned is not None:
                address, to_port = pinned
            else:
                address, to_port, reason = await self._resolve(_normal(host), port)
        if reason is not None:
            self._record(host, port, reason)
            raise _Refused(reason)
        connect = self.connect or asyncio.open_connection
        try:
            opened = await asyncio.wait_for(connect(address, to_port), CONNECT_SECONDS)
        except (OSError, TimeoutError) as exc:
            raise _Refused(f"could not connect to {_normal(host)}:{port}: {exc}") from None
        self.connections += 1
        return opened

    async def _resolve(self, host: str, port: int) -> tuple[str, int, str | None]:
        try:
            literal: Address | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            found = [literal]
        else:
            loop = asyncio.get_running_loop()
            try:
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                return "", 0, f"{host} does not resolve"
            found = sorted(
                {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos},
                key=lambda address: (address.version, int(address)),
            )
        if not found:
            return "", 0, f"{host} does not resolve"
        if not all(public_address(address) for address in found):
            shown = ", ".join(str(address) for address in found)
            where = host if literal is not None else f"{host} resolves to {shown}, which"
            return "", 0, f"{where} is not a public address"
        return str(found[0]), port, None

    async def _http(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            rest = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except asyncio.LimitOverrunError:
            return await _answer(writer, 431, "request head too large")
        head = first + rest
        if len(head) > HEAD_LIMIT:
            return await _answer(writer, 431, "request head too large")
        line, _, headers = head.partition(b"\r\n")
        parts = line.decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return await _answer(writer, 400, "not an HTTP proxy request")
        method, target, version = parts
        if method == "CONNECT":
            host, port = _split_authority(target, None)
            if host is None or port is None:
                return await _answer(writer, 400, f"CONNECT needs host:port, got {target!r}")
            try:
                upstream = await self._open(host, port)
            except _Refused as refused:
                return await _answer(writer, 403, refused.reason)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            return await _relay(reader, writer, *upstream)
        if not target.lower().startswith("http://"):
            return await _answer(writer, 400, "only http:// URLs and CONNECT are proxied")
        authority, slash, path = target[7:].partition("/")
        host, port = _split_authority(authority, 80)
        if host is None or port is None:
            return await _answer(writer, 400, f"not a URL with a host: {target!r}")
        try:
            upstream_reader, upstream_writer = await self._open(host, port)
        except _Refused as refused:
            return await _answer(writer, 403, refused.reason)
        # Origin form, and one request per connection: a second request on a kept-alive
        # connection would go to this host whatever its URL says.
        kept = [
            h
            for h in headers.split(b"\r\n")
            if h and not h.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))
        ]
        request = f"{method} {slash}{path} {version}".encode("latin-1")
        upstream_writer.write(b"\r\n".join([request, *kept, b"Connection: close", b"", b""]))
        await upstream_writer.drain()
        await _relay(reader, writer, upstream_reader, upstream_writer)

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # RFC 1928: greeting (methods), then one CONNECT request; no authentication.
        (count,) = await reader.readexactly(1)
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        version, command, _, kind = await reader.readexactly(4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif kind == 3:
            (length,) = await reader.readexactly(1)
            host = (await reader.readexactly(length)).decode("ascii", errors="replace")
        else:
            writer.write(b"\x05\x08\x00\x01" + bytes(6))  # address type not supported
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:
            writer.write(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
            return
        try:
            upstream = await self._open(host, port)
        except _Refused:
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # not allowed by ruleset
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await writer.drain()
        await _relay(reader, writer, *upstream)


def _split_authority(authority: str, default: int | None) -> tuple[str | None, int | None]:
    """("host", port) of ``host[:port]`` / ``[v6][:port]``; (None, None) when malformed."""
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        host, colon, port_text = authority.rpartition(":")
        if not colon:
            host, port_text = authority, ""
    if not host or port_text is None or "@" in host:
        return None, None
    if port_text == "":
        return host, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None, None
    return host, int(port_text)


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    text = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large"}
    body = f"cs-executor egress: {reason}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {text[status]}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    try:
        await asyncio.gather(
            _pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer)
        )
    finally:
        upstream_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # half-close: the other way may still be talking
    except (ConnectionError, OSError):
        writer.close()
