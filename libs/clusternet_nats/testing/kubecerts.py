"""The PKI one test control plane needs, generated in Python so no openssl/cfssl is required:
a CA, the API server's serving certificate, an admin client certificate (system:masters) and
the service-account signing key pair. EC P-256 keeps generation to milliseconds.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)
SERVICE_IP = "10.0.0.1"
SERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files written by `write_pki`."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _leaf(
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    sans: list[x509.GeneralName] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject, ca.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def write_pki(directory: Path, cluster: str) -> Pki:
    """Writes a fresh CA and the certificates signed by it into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{cluster}-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in SERVER_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", SERVICE_IP)]
    server, server_key = _leaf(_name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, ca, ca_key, sans)
    admin, admin_key = _leaf(_name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH, ca, ca_key)
    sa_key = ec.generate_private_key(ec.SECP256R1())
    sa_pub = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )

    files = {
        "ca.crt": _cert_pem(ca),
        "ca.key": _key_pem(ca_key),
        "apiserver.crt": _cert_pem(server),
        "apiserver.key": _key_pem(server_key),
        "admin.crt": _cert_pem(admin),
        "admin.key": _key_pem(admin_key),
        "sa.key": _key_pem(sa_key),
        "sa.pub": sa_pub,
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return Pki(*(directory / name for name in files))
