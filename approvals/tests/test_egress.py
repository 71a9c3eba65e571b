"""Where webhooks may go (approvals/egress.py): public addresses, and the private networks
CS_NOTIFY_ALLOW_NETWORKS names; judged when a channel is saved and before every try."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from approvals import egress, notifications
from approvals.models import Delivery, DeliveryAttempt
from contextsvc.core.errors import InvalidRequest
from contextsvc.env import ConfigError, env_networks
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

    with kept(), pytest.raises(InvalidRequest) as excinfo:
        notifications.channel_create(
            name="inside",
            kind="webhook",
            url=url,
            agent_types=["*"],
            events=["approval.created"],
            actor="user:ada",
        )

    assert excinfo.value.message == message


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
