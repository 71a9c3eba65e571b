"""Where webhooks may go (approvals/egress.py): public addresses, and the private networks
CS_NOTIFY_ALLOW_NETWORKS names; judged when a channel is saved and before every try."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from approvals import egress, notifications
from approvals.models import Delivery, DeliveryAttempt
from contextsvc.env import ConfigError, env_networks
from contextsvc.infra.errors import InvalidRequest
from tests.support.receivers import HttpReceiver
from tests.support.unchanged import kept

NOT_PUBLIC = (
    ", which is not a public address; webhooks reach private networks only when "
    "CS_NOTIFY_ALLOW_NETWORKS names them"
)
LOOPBACK = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1")]


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("93.184.215.14", True),
        ("2606:4700:4700::1111", True),
        ("::ffff:93.184.215.14", True),
        ("10.96.0.1", False),  # a cluster's kubernetes Service
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # carrier-grade NAT
        ("127.0.0.1", False),
        ("0.0.0.0", False),  # noqa: S104 - an address judged, not bound
        ("224.0.0.251", False),  # multicast (Python counts it as global)
        ("::1", False),
        ("fd00::1", False),
        ("fe80::1", False),
        ("::ffff:10.0.0.1", False),  # IPv4-mapped: judged as the IPv4 address
    ],
)
def test_only_public_addresses_pass_by_default(settings: Any, address: str, expected: bool) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = []

    assert egress.allowed(ipaddress.ip_address(address)) is expected


def test_the_operator_names_the_private_networks_webhooks_may_reach(settings: Any) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = env_networks("UNSET_IN_THIS_TEST", ["10.20.0.0/16"])

    judged = {
        address: egress.allowed(ipaddress.ip_address(address))
        for address in ("10.20.7.1", "::ffff:10.20.7.1", "10.21.0.1", "127.0.0.1")
    }

    assert judged == {
        "10.20.7.1": True,
        "::ffff:10.20.7.1": True,
        "10.21.0.1": False,
        "127.0.0.1": False,
    }


def test_a_bad_network_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CS_NOTIFY_ALLOW_NETWORKS", "10.0.0.0/8, ten-dot")

    with pytest.raises(ConfigError) as excinfo:
        env_networks("CS_NOTIFY_ALLOW_NETWORKS", [])

    assert str(excinfo.value) == (
        "CS_NOTIFY_ALLOW_NETWORKS: 'ten-dot' is not a network (e.g. 10.0.0.0/8)"
    )


def refused_on_save(url: str) -> str:
    """Why a webhook channel to ``url`` is refused when it is saved (nothing is kept)."""
    with kept(), pytest.raises(InvalidRequest) as excinfo:
        notifications.channel_create(
            name="refused",
            kind="webhook",
            url=url,
            agent_types=["*"],
            events=["approval.created"],
            actor="user:ada",
        )
    return excinfo.value.message


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://169.254.169.254/latest/meta-data/", "url host 169.254.169.254" + NOT_PUBLIC),
        ("https://10.96.0.1:443/api/v1/secrets", "url host 10.96.0.1" + NOT_PUBLIC),
        ("http://[::ffff:10.0.0.1]/", "url host ::ffff:10.0.0.1" + NOT_PUBLIC),
        ("http://[fd00::1]:8080/hook", "url host fd00::1" + NOT_PUBLIC),
        # Found by hand: the first was a 500 (urlsplit raises ValueError); the second was
        # saved, to fail on every try (its .port raises).
        ("http://[::1/hook", "url must be an http(s) URL of at most 2000 characters"),
        ("http://hooks.example.com:port/", "url must be an http(s) URL of at most 2000 characters"),
    ],
)
def test_a_channel_to_a_private_address_is_refused_on_save(
    settings: Any, url: str, message: str
) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = []

    assert refused_on_save(url) == message


@pytest.mark.django_db
def test_a_name_is_judged_by_what_it_resolves_to_before_every_try(
    settings: Any, webhook_receiver: HttpReceiver
) -> None:
    # A name passes on save (the web process does not resolve it) ...
    settings.CS_NOTIFY_ALLOW_NETWORKS = []
    channel, _ = notifications.channel_create(
        name="local",
        kind="webhook",
        url=f"http://localhost:{webhook_receiver.port}/hook",
        agent_types=["*"],
        events=["approval.created"],
        actor="user:ada",
    )
    refused = notifications.channel_test(channel=channel, actor="user:ada")

    # ... and the try finds it leads to loopback: given up at once, nothing sent.
    outcome = notifications.delivery_attempt(refused.pk)

    refused.refresh_from_db()
    # This machine's answer for localhost (127.0.0.1 here; some also give ::1).
    resolved = sorted({str(info[4][0]) for info in socket.getaddrinfo("localhost", 80)})
    error = f'url host "localhost" resolves to {", ".join(resolved)}' + NOT_PUBLIC
    assert (outcome, refused.status, refused.attempts, refused.last_error) == (
        "failed",
        Delivery.Status.FAILED,
        1,
        error,
    )
    assert list(
        DeliveryAttempt.objects.filter(delivery=refused).values_list(
            "outcome", "status_code", "error"
        )
    ) == [("failed", None, error)]
    assert webhook_receiver.received == []
    # The same channel once loopback is allowed (as this suite's settings do): delivered.
    settings.CS_NOTIFY_ALLOW_NETWORKS = LOOPBACK
    sent = notifications.channel_test(channel=channel, actor="user:ada")
    assert notifications.delivery_attempt(sent.pk) == "delivered"
    assert [received.path for received in webhook_receiver.received] == ["/hook"]


# --- Issue 31, finding 3: one reading of the URL, one resolution, IPv4 inside IPv6 ----------

PUBLIC = "93.184.215.14"
# The answers a name under attacker.example gives, one per lookup (the last one repeats).
ATTACKER_DNS: dict[str, list[str]] = {}


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """This machine's resolver is not on loopback, and nothing here may leave it: names
    under ``attacker.example`` answer as the test's ``dns`` dict says (the attacker's
    wildcard DNS, by default a public address), localhost as /etc/hosts says, any other
    name not at all; and a socket connects to loopback only. Returns the names looked up."""
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect
    looked_up: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        looked_up.append(name)
        if name.endswith("attacker.example"):
            answers = ATTACKER_DNS.get(name, [PUBLIC])
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]
        if name == "localhost" or _is_address(name):
            return real_getaddrinfo(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "not resolved in this test")

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            assert ipaddress.ip_address(address[0]).is_loopback, address
        real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    ATTACKER_DNS.clear()
    return looked_up


def _stored_channel(settings: Any, url: str) -> Any:
    """A channel whose stored URL is ``url``, as one saved before this check would be."""
    from contextsvc.infra import secrets as sealed

    allowed = settings.CS_NOTIFY_ALLOW_NETWORKS
    settings.CS_NOTIFY_ALLOW_NETWORKS = LOOPBACK
    channel, _ = notifications.channel_create(
        name="stored",
        kind="webhook",
        url="http://127.0.0.1:9/hook",
        agent_types=["*"],
        events=["approval.created"],
        actor="user:ada",
    )
    settings.CS_NOTIFY_ALLOW_NETWORKS = allowed
    channel.url_sealed = sealed.seal(url)
    channel.save(update_fields=["url_sealed"])
    return channel


def _try(channel: Any) -> tuple[str, str, int, str]:
    delivery = notifications.channel_test(channel=channel, actor="user:ada")
    outcome = notifications.delivery_attempt(delivery.pk)
    delivery.refresh_from_db()
    return outcome, delivery.status, delivery.attempts, delivery.last_error


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("64:ff9b::a00:5", False),  # NAT64: 10.0.0.5
        ("64:ff9b::a9fe:a9fe", False),  # NAT64: 169.254.169.254
        ("64:ff9b::5db8:d70e", True),  # NAT64: 93.184.215.14
        ("64:ff9b:1::5db8:d70e", False),  # NAT64 local use: never public
        ("2002:a00:5::1", False),  # 6to4: 10.0.0.5
        ("2002:5db8:d70e::1", True),  # 6to4: 93.184.215.14
        ("::a00:5", False),  # IPv4-compatible: 10.0.0.5
        ("::5db8:d70e", True),  # IPv4-compatible: 93.184.215.14
    ],
)
def test_an_ipv6_address_that_carries_ipv4_is_judged_as_that_ipv4(
    settings: Any, address: str, expected: bool
) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = []

    assert egress.allowed(ipaddress.ip_address(address)) is expected


def test_teredo_is_judged_by_its_server_and_its_client(settings: Any) -> None:
    # Server 93.184.215.14 (bits 32..64), client the inverted last 32 bits.
    def teredo(client: str) -> ipaddress.IPv6Address:
        inverted = ~int(ipaddress.IPv4Address(client)) & 0xFFFFFFFF
        return ipaddress.IPv6Address(
            (0x20010000 << 96) | (int(ipaddress.IPv4Address(PUBLIC)) << 64) | inverted
        )

    settings.CS_NOTIFY_ALLOW_NETWORKS = []
    assert egress.allowed(teredo(PUBLIC)) is False  # 2001::/32 is not global
    # Even where the operator allows Teredo, a private client is a private address.
    settings.CS_NOTIFY_ALLOW_NETWORKS = [ipaddress.ip_network("2001::/32")]
    assert (egress.allowed(teredo(PUBLIC)), egress.allowed(teredo("10.0.0.5"))) == (True, False)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "message"),
    [
        # urlsplit: host "10.0.0.5\x.attacker.example"; urllib3: host 10.0.0.5, port 80.
        ("http://10.0.0.5\\x.attacker.example/hook", "url must not contain a backslash"),
        ("http://hooks.example.com\x00.attacker.example/", "url must not contain control or "
         "whitespace characters"),
        ("http://hooks.example.com/\x7f", "url must not contain control or whitespace "
         "characters"),
        # requests drops port 0 and connects to 80.
        ("http://hooks.example.com:0/", "url port must be a number from 1 to 65535, "
         "without leading zeros"),
        ("http://hooks.example.com:0443/", "url port must be a number from 1 to 65535, "
         "without leading zeros"),
        ("http://hooks.example.com:/", "url port must be a number from 1 to 65535, "
         "without leading zeros"),
        # A resolver reads these as 127.0.0.1; on save they were names.
        ("http://127.1/", "url host looks like an IPv4 address but is not written as one "
         "(a.b.c.d)"),
        ("http://0x7f000001/", "url host looks like an IPv4 address but is not written as "
         "one (a.b.c.d)"),
        ("http://[64:ff9b::a00:5]/hook", "url host 64:ff9b::a00:5" + NOT_PUBLIC),
        ("http://[2002:a00:5::1]/hook", "url host 2002:a00:5::1" + NOT_PUBLIC),
        ("http://[::a00:5]/hook", "url host ::a00:5" + NOT_PUBLIC),
    ],
)  # fmt: skip
def test_a_url_read_two_ways_or_written_oddly_is_refused_on_save(
    settings: Any, url: str, message: str
) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = []

    assert refused_on_save(url) == message


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user@hooks.example.com/", "url must not carry a user name or a password"),
        ("http://hooks.example.com/a b", "url must not contain control or whitespace characters"),
        ("http://[fe80::1%25eth0]/", "url host must not carry an IPv6 zone"),
        ("http://bücher.example/", "url host must be written in ASCII (a name's xn-- form)"),
        ("ftp://hooks.example.com/", "url must be an http or https URL"),
    ],
)
def test_what_the_save_form_also_refuses_is_refused_at_send_time_too(
    url: str, message: str
) -> None:
    with pytest.raises(egress.Refused) as excinfo:
        egress.check(url)

    assert excinfo.value.message == message


@pytest.mark.django_db
def test_a_url_read_two_ways_is_never_sent(
    settings: Any, webhook_receiver: HttpReceiver, loopback_only: list[str]
) -> None:
    # Saved before this check: urlsplit reads host "x.attacker.example" (public, by the
    # attacker's DNS), urllib3 reads 127.0.0.1:<port> -- the receiver stands for the
    # private network. Nothing private is allowed here.
    settings.CS_NOTIFY_ALLOW_NETWORKS = []
    channel = _stored_channel(
        settings, f"http://127.0.0.1:{webhook_receiver.port}\\@x.attacker.example/hook"
    )

    assert _try(channel) == ("failed", "failed", 1, "url must not contain a backslash")
    assert webhook_receiver.received == []
    assert "x.attacker.example" not in loopback_only  # refused before any lookup


@pytest.mark.django_db
def test_a_name_is_sent_to_the_address_it_was_checked_at(
    settings: Any, webhook_receiver: HttpReceiver, loopback_only: list[str]
) -> None:
    settings.CS_NOTIFY_ALLOW_NETWORKS = LOOPBACK
    channel = _stored_channel(settings, f"http://localhost:{webhook_receiver.port}/hook")

    assert _try(channel) == ("delivered", "delivered", 1, "")
    # Resolved once (by the check), and the name kept for the Host header.
    assert loopback_only.count("localhost") == 1
    [received] = webhook_receiver.received
    assert (received.path, received.headers["Host"]) == (
        "/hook",
        f"localhost:{webhook_receiver.port}",
    )


@pytest.mark.django_db
def test_a_name_that_resolves_elsewhere_after_the_check_is_not_followed(
    settings: Any, webhook_receiver: HttpReceiver
) -> None:
    # The check sees 127.0.0.2 (allowed here); the name then answers 127.0.0.1 (not
    # allowed, where the receiver listens). The try goes to 127.0.0.2, where nothing does.
    settings.CS_NOTIFY_ALLOW_NETWORKS = [ipaddress.ip_network("127.0.0.2/32")]
    settings.CS_NOTIFY_MAX_ATTEMPTS = 1
    ATTACKER_DNS["rebind.attacker.example"] = ["127.0.0.2", "127.0.0.1"]
    channel = _stored_channel(settings, f"http://rebind.attacker.example:{webhook_receiver.port}/")

    assert _try(channel) == ("failed", "failed", 1, "could not connect")
    assert webhook_receiver.received == []


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / f"{name}.pem", directory / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def https_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[int, list[dict[str, str]]]]:
    """HTTPS on 127.0.0.1 with a certificate for the name ``request.param``, trusted by
    requests (REQUESTS_CA_BUNDLE); yields its port and the headers of each POST."""
    cert_file, key_file = _certificate(tmp_path, request.param)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert_file))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    received: list[dict[str, str]] = []
    server_names: list[str | None] = []

    def heard(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        server_names.append(name)

    context.sni_callback = heard

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append({**dict(self.headers), "SNI": str(server_names[-1])})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db
@pytest.mark.parametrize("https_receiver", ["localhost"], indirect=True)
def test_https_to_a_name_is_pinned_and_verified_by_that_name(
    settings: Any, https_receiver: tuple[int, list[dict[str, str]]]
) -> None:
    port, received = https_receiver
    settings.CS_NOTIFY_ALLOW_NETWORKS = LOOPBACK
    channel = _stored_channel(settings, f"https://localhost:{port}/hook")

    assert _try(channel) == ("delivered", "delivered", 1, "")
    [headers] = received
    assert (headers["Host"], headers["SNI"]) == (f"localhost:{port}", "localhost")


@pytest.mark.django_db
@pytest.mark.parametrize("https_receiver", ["elsewhere.example"], indirect=True)
def test_https_to_a_name_the_certificate_does_not_carry_is_not_sent(
    settings: Any, https_receiver: tuple[int, list[dict[str, str]]]
) -> None:
    port, received = https_receiver
    settings.CS_NOTIFY_ALLOW_NETWORKS = LOOPBACK
    settings.CS_NOTIFY_MAX_ATTEMPTS = 1
    channel = _stored_channel(settings, f"https://localhost:{port}/hook")

    assert _try(channel) == ("failed", "failed", 1, "could not connect")
    assert received == []
