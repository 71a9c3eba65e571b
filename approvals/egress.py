"""Where a webhook may be sent: to public addresses, and to the private networks the
operator names in ``CS_NOTIFY_ALLOW_NETWORKS``.

A channel's URL is chosen by a dashboard admin, but the worker is the one that calls it,
from inside the cluster: without this check a channel could make the worker call the
Kubernetes API, a database, the node or a cloud metadata endpoint and record what they
answered. The check runs when a channel is saved and again before every try (a name may
resolve elsewhere by then). What remains — a name that resolves to a public address for the
check and a private one a moment later — is for the worker's egress NetworkPolicy
(deploy/base/networkpolicy.yaml), which is the fence this check is in front of.

On save only a host written as an address is judged: the web process need not resolve the
names only the worker will use (the dashboard's "Send test" shows what the worker finds).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL leads somewhere webhooks may not go; the message says where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unresolved(Refused):
    """The host name does not resolve (now)."""


def allowed(address: Address) -> bool:
    """Public (``is_global``, not multicast), or inside a network the operator allows."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:10.0.0.1 is 10.0.0.1 to the kernel; judge it as that.
        address = address.ipv4_mapped
    if any(address in network for network in settings.CS_NOTIFY_ALLOW_NETWORKS):
        return True
    return address.is_global and not address.is_multicast


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


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


def check(url: str, *, resolve: bool = True) -> None:
    """Raise :class:`Refused` unless every address the URL's host resolves to is allowed
    (``resolve=False``: only a host written as an address is judged)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    literal = _literal(host)
    if literal is not None:
        where, addresses = f"url host {host}", [literal]
    elif resolve:
        addresses = _resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        where = f'url host "{host}" resolves to ' + ", ".join(map(str, addresses))
    else:
        return
    if all(allowed(address) for address in addresses):
        return
    raise Refused(
        f"{where}, which is not a public address; webhooks reach private networks only "
        "when CS_NOTIFY_ALLOW_NETWORKS names them"
    )
