"""Where a webhook may be sent: to public addresses, and to the private networks the
operator names in ``CS_NOTIFY_ALLOW_NETWORKS``.

A channel's URL is chosen by a dashboard admin, but the worker is the one that calls it,
from inside the cluster: without this check a channel could make the worker call the
Kubernetes API, a database, the node or a cloud metadata endpoint and record what they
answered.

Three rules make the check the connection:

- **One reading of the URL.** :func:`parse` reads it with the standard library
  (``urlsplit``, what this module judges) and with urllib3 (``parse_url``, what requests
  connects to) and refuses it unless both find the same scheme, host and port, and it is
  written plainly: no backslash, control or whitespace character, user name or password,
  a host that is a name or an address written the usual way, a port of 1..65535 in plain
  digits. (``http://10.0.0.5\\x.example/`` was a name to one and 10.0.0.5 to the other.)
- **Resolved once.** :func:`check` judges every address the host resolves to and returns
  the first as :attr:`Target.address`; :func:`session` connects to exactly that address
  (the name stays in the Host header, the TLS server name and the certificate check), so
  the name is not resolved again between the check and the connection.
- **An IPv6 address that carries an IPv4 one is that IPv4 address** (IPv4-mapped and
  -compatible, NAT64, 6to4, Teredo): ``64:ff9b::a00:5`` is judged as 10.0.0.5.

The check runs when a channel is saved and again before every try. On save only a host
written as an address is judged: the web process need not resolve the names only the
worker will use (the dashboard's "Send test" shows what the worker finds). The worker's
egress NetworkPolicy (deploy/base/networkpolicy.yaml) fences the same private ranges
behind this check.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.util import parse_url

from cs_agent.egress import public_address

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}

_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")
# A last label that resolvers read as a number: "127.1", "0x7f.1", "2130706433".
_NUMERIC_LABEL = re.compile(r"(0x[0-9a-f]*|[0-9]+)\.?")
_PORT = re.compile(r"[1-9][0-9]{0,4}")


class Refused(Exception):
    """The URL leads somewhere webhooks may not go; the message says where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unresolved(Refused):
    """The host name does not resolve (now)."""


@dataclass(frozen=True)
class Target:
    """Where a URL leads: ``host`` as written (lowercase, no brackets), ``port`` with the
    scheme's default filled in, and ``address`` the one to connect to (``None`` for a
    name not resolved)."""

    scheme: str
    host: str
    port: int
    address: Address | None

    @property
    def netloc(self) -> str:
        """The Host header, as http.client would write it for this host and port."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def allowed(address: Address) -> bool:
    """Public (``is_global``, not multicast), or inside a network the operator allows; an
    IPv6 address that carries IPv4 is judged by the IPv4 address(es) it carries. The same
    rule as the agent executor's egress proxy (cs_agent.egress.public_address)."""
    return public_address(address, settings.CS_NOTIFY_ALLOW_NETWORKS)


def _refuse_unless(condition: bool, message: str) -> None:
    if not condition:
        raise Refused(message)


def _host_and_port(netloc: str) -> tuple[str, str | None]:
    """Split ``host[:port]`` / ``[v6][:port]`` as written (``None``: no colon)."""
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
    else:
        host, colon, port = netloc.partition(":")
        rest = colon + port
    _refuse_unless(rest == "" or rest.startswith(":"), "url host is not written plainly")
    return host, (rest[1:] if rest else None)


def _judge_host(host: str, bracketed: bool) -> Address | None:
    """The address a host is written as, or ``None`` for a name; refuse anything else."""
    _refuse_unless(host != "", "url has no host")
    _refuse_unless(host.isascii(), "url host must be written in ASCII (a name's xn-- form)")
    if bracketed:
        _refuse_unless("%" not in host, "url host must not carry an IPv6 zone")
        try:
            return ipaddress.IPv6Address(host)  # a name or IPv4 in brackets fails here
        except ValueError:
            raise Refused("url host in brackets must be an IPv6 address") from None
    try:
        return ipaddress.IPv4Address(host)  # dotted quad only: no "010.0.0.1", no "127.1"
    except ValueError:
        pass
    _refuse_unless(
        _NAME.fullmatch(host) is not None,
        "url host must be a name (letters, digits, '-', '_', '.') or an address",
    )
    _refuse_unless(
        _NUMERIC_LABEL.fullmatch(host.rstrip(".").rpartition(".")[2] + ".") is None,
        "url host looks like an IPv4 address but is not written as one (a.b.c.d)",
    )
    return None


def parse(url: str) -> Target:
    """Read ``url`` as both the judge and the HTTP client do; :class:`Refused` unless they
    agree and it is written plainly. ``address`` is the host's if it is one."""
    _refuse_unless("\\" not in url, "url must not contain a backslash")
    # Cc: C0/C1 controls (urlsplit silently drops tab and newline, urllib3 does not);
    # Cf: invisible format characters; and every kind of space.
    _refuse_unless(
        not any(char.isspace() or unicodedata.category(char) in ("Cc", "Cf") for char in url),
        "url must not contain control or whitespace characters",
    )
    try:
        ours = urlsplit(url)
    except ValueError:  # "http://[::1/"
        raise Refused("url is not a valid URL") from None
    _refuse_unless(ours.scheme in DEFAULT_PORTS, "url must be an http or https URL")
    _refuse_unless("@" not in ours.netloc, "url must not carry a user name or a password")
    host, port_text = _host_and_port(ours.netloc)
    address = _judge_host(host.lower(), ours.netloc.startswith("["))
    _refuse_unless(
        port_text is None or (_PORT.fullmatch(port_text) is not None and int(port_text) < 65536),
        "url port must be a number from 1 to 65535, without leading zeros",
    )
    target = Target(
        scheme=ours.scheme,
        host=host.lower(),
        port=int(port_text) if port_text else DEFAULT_PORTS[ours.scheme],
        address=address,
    )
    try:
        theirs = parse_url(url)  # urllib3/util/url.py; requests.models.prepare_url uses it
    except ValueError:  # urllib3's LocationParseError is a ValueError too
        raise Refused("url is not a valid URL") from None
    their_host = (theirs.host or "").lower().removeprefix("[").removesuffix("]")
    their_port = theirs.port or DEFAULT_PORTS.get(theirs.scheme or "", 0)
    _refuse_unless(
        (theirs.scheme, their_host, their_port) == (target.scheme, target.host, target.port),
        f"url is read two ways (host {target.host} port {target.port}, or host "
        f"{their_host or '(none)'} port {their_port}): write it plainly",
    )
    return target


def _resolve(host: str, port: int) -> list[Address]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Unresolved(f'url host "{host}" does not resolve') from None
    # An IPv6 answer may carry a zone ("fe80::1%eth0"): the address is what is judged.
    return sorted(
        {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found},
        key=lambda address: (address.version, int(address)),
    )


def check(url: str, *, resolve: bool = True) -> Target:
    """The :class:`Target` to connect to; :class:`Refused` unless the URL reads one way
    and every address its host resolves to is allowed (``resolve=False``: only a host
    written as an address is judged, and a name's target has no address)."""
    target = parse(url)
    if target.address is not None:
        where, addresses = f"url host {target.host}", [target.address]
    elif resolve:
        addresses = _resolve(target.host, target.port)
        where = f'url host "{target.host}" resolves to ' + ", ".join(map(str, addresses))
    else:
        return target
    if not all(allowed(address) for address in addresses):
        raise Refused(
            f"{where}, which is not a public address; webhooks reach private networks only "
            "when CS_NOTIFY_ALLOW_NETWORKS names them"
        )
    return Target(target.scheme, target.host, target.port, addresses[0])


class PinnedAdapter(HTTPAdapter):
    """Sends to ``target.address`` whatever the name resolves to now, with the name in
    the Host header, as the TLS server name (SNI) and as the name the certificate must
    carry. No proxy: a proxy would resolve the name itself."""

    def __init__(self, target: Target) -> None:
        if target.address is None:
            raise ValueError("a pinned target needs its address")
        self.target = target
        super().__init__()

    def get_connection_with_tls_context(
        self,
        request: requests.PreparedRequest,
        verify: Any,
        proxies: dict[str, str] | None = None,
        cert: Any = None,
    ) -> HTTPConnectionPool:
        # requests/adapters.py (2.32+): send() asks this for the urllib3 pool; the pool key
        # comes from build_connection_pool_key_attributes (scheme, host, port + TLS kwargs).
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        target = self.target
        port = host_params["port"] or DEFAULT_PORTS.get(host_params["scheme"], 0)
        if (host_params["scheme"], host_params["host"], port) != (
            target.scheme,
            target.host,
            target.port,
        ):
            raise requests.exceptions.InvalidURL("the request is not for the checked URL")
        if target.scheme == "https":
            # urllib3/connection.py (_ssl_wrap_socket_and_match_hostname): server_hostname
            # is sent as SNI, and the certificate is matched against assert_hostname.
            pool_kwargs = {
                **pool_kwargs,
                "server_hostname": target.host,
                "assert_hostname": target.host,
            }
        pool: HTTPConnectionPool = self.poolmanager.connection_from_host(
            host=str(target.address),
            port=target.port,
            scheme=target.scheme,
            pool_kwargs=pool_kwargs,
        )
        return pool

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        # The pool's host is the address; without this http.client writes it as the Host.
        request.headers["Host"] = self.target.netloc
        return super().send(
            request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=None
        )


def session(target: Target) -> requests.Session:
    """A session whose every request goes to ``target.address`` (see PinnedAdapter)."""
    pinned = requests.Session()
    adapter = PinnedAdapter(target)
    pinned.mount("http://", adapter)
    pinned.mount("https://", adapter)
    return pinned
