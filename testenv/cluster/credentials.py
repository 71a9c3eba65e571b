"""Certificates, tokens and kubeconfigs: a CA, the API server's serving certificate and the
service-account key; a static token per component and an admin kubeconfig for the tests.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from testenv.cluster.instance import HOST, KUBECONFIG, SERVER_URL, SERVICE_CIDR, STATE_DIR


def write_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate and the service-account signing key."""

    pki.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    later = now + dt.timedelta(days=365)

    def key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def write(name: str, data: bytes, mode: int = 0o600) -> None:
        path = pki / name
        path.write_bytes(data)
        path.chmod(mode)

    # EC keys: generated in microseconds, unlike RSA, which keeps startup fast.
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "context-service-test-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(later)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    first_service_ip = str(next(ipaddress.ip_network(SERVICE_CIDR).hosts()))
    names: list[x509.GeneralName] = [
        x509.DNSName(n)
        for n in (
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
    ]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in (HOST, first_service_ip)]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(later)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    # Service-account tokens are signed with RSA (RS256), the Kubernetes default.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write("ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    write("ca.key", key_pem(ca_key))
    write("apiserver.crt", server_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    write("apiserver.key", key_pem(server_key))
    write("sa.key", key_pem(sa_key))
    write(
        "sa.pub",
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        0o644,
    )


@dataclass(frozen=True)
class Identity:
    """A token user of the static token file."""

    name: str
    groups: tuple[str, ...]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def _identities(admin_token: str) -> dict[str, Identity]:
    # The components run as cluster admins (group system:masters): this is a throwaway test
    # cluster, and it keeps component RBAC out of the way of the RBAC the tests exercise.
    masters = ("system:masters",)
    return {
        "admin": Identity("context-service-test-admin", masters, admin_token),
        "kube-controller-manager": Identity("system:kube-controller-manager", masters),
        "kube-scheduler": Identity("system:kube-scheduler", masters),
        "kwok": Identity("system:kwok-controller", masters),
        "agent-sandbox-controller": Identity("system:agent-sandbox-controller", masters),
        "provisioner": Identity("system:testenv-provisioner", masters),
    }


def _kubeconfig(user: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "context-service-test",
                "cluster": {
                    "server": SERVER_URL,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": "context-service-test",
                "context": {"cluster": "context-service-test", "user": user},
            }
        ],
        "current-context": "context-service-test",
    }


def write_auth(admin_token: str) -> dict[str, Path]:
    """Token file for the API server plus one kubeconfig per identity."""
    ids = _identities(admin_token)
    lines = [f'{i.token},{i.name},{i.name},"{",".join(i.groups)}"' for i in ids.values()]
    tokens = STATE_DIR / "tokens.csv"
    tokens.write_text("\n".join(lines) + "\n")
    tokens.chmod(0o600)
    ca_pem = (STATE_DIR / "pki" / "ca.crt").read_bytes()
    paths = {}
    for component, ident in ids.items():
        path = KUBECONFIG if component == "admin" else STATE_DIR / f"{component}.kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(ident.name, ident.token, ca_pem)))
        path.chmod(0o600)
        paths[component] = path
    return paths
