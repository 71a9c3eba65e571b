"""HTTP checks of the components' health endpoints, on loopback only (anything else is
refused before a connection is made).
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from testenv.cluster.instance import STATE_DIR


def https_get(url: str, *, token: str | None = None, verify: bool = True) -> tuple[int, bytes]:
    if not url.startswith(("https://127.0.0.1:", "http://127.0.0.1:")):
        raise ValueError(f"refusing to connect outside loopback: {url}")
    if verify:
        ctx = ssl.create_default_context(cafile=str(STATE_DIR / "pki" / "ca.crt"))
    else:
        # Only for the components' own self-signed health endpoints on 127.0.0.1.
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url)  # noqa: S310 - loopback URL checked above
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    # No proxy, whatever the environment says: this is loopback traffic.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx)
    )
    try:
        with opener.open(request, timeout=2) as resp:
            return int(resp.status), bytes(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def healthy(url: str, *, verify: bool = False, token: str | None = None) -> bool:
    status, _ = https_get(url, token=token, verify=verify)
    return status == 200
