"""A small PKI in Python: a CA, serving and client certificates, EC P-256 keys, PEM files.

The hub generates its HTTPS CA and serving certificate at first start, and tests build whole
control planes, so none of them needs openssl. EC P-256 keeps generation to milliseconds.
Client certificates carry the user in CN and groups in O, which is how kube-apiserver (and the
hub) read an identity from a certificate.

Files are `<stem>.crt` and `<stem>.key` in the directory given; keys are written mode 0600 and
every file atomically, so a crash never leaves half a key that a restart would then reuse.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
LEAF_VALIDITY = datetime.timedelta(days=365)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Names a loopback server answers to; the hub's generated certificate always includes them."""
RENEW_BEFORE = datetime.timedelta(days=1)
"""A kept certificate that expires sooner than this is issued afresh."""
_BACKDATE = datetime.timedelta(minutes=5)  # tolerates clocks a little behind ours
_LEAF_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


@dataclass(frozen=True)
class KeyPair:
    """Paths of one certificate and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class CertificateAuthority:
    """A loaded CA that can sign; `files.cert` is what clients trust."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    files: KeyPair


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_file(path: Path, data: bytes, private: bool = False) -> None:
    """Writes atomically (a temporary file renamed over `path`); `private` makes it mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600 if private else 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def subject(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    """CN then one O per group, as kube-apiserver reads a client certificate."""
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name(attrs)


def identity(cert: x509.Certificate) -> tuple[str, list[str]]:
    """(user, groups) of a client certificate: its CN and its O attributes."""
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cns[0].value) if cns else ""), [str(o.value) for o in orgs]


def _builder(
    subject_name: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, validity: datetime.timedelta
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject_name)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
    )


def _files(directory: Path, stem: str) -> KeyPair:
    return KeyPair(directory / f"{stem}.crt", directory / f"{stem}.key")


def _write(files: KeyPair, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    write_file(files.key, key_pem(key), private=True)
    write_file(files.cert, cert_pem(cert))
    return files


def create_ca(
    directory: Path, name: str, *, stem: str = "ca", validity: datetime.timedelta = CA_VALIDITY
) -> CertificateAuthority:
    """A fresh self-signed CA named `name`, written as `<stem>.crt|key` (replacing any there)."""
    key = new_key()
    name_ = subject(name)
    cert = (
        _builder(name_, name_, key, validity)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert, key, _write(_files(directory, stem), cert, key))


def load_ca(directory: Path, *, stem: str = "ca") -> CertificateAuthority:
    """The CA kept in `<stem>.crt|key`; raises OSError or ValueError when missing or unreadable."""
    files = _files(directory, stem)
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    key = serialization.load_pem_private_key(files.key.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{files.key}: expected an EC private key")
    return CertificateAuthority(cert, key, files)


def ensure_ca(directory: Path, name: str, *, stem: str = "ca") -> CertificateAuthority:
    """The CA in `directory`, created at the first call and reused after (a restart keeps trust)."""
    files = _files(directory, stem)
    if files.cert.exists() and files.key.exists():
        return load_ca(directory, stem=stem)
    return create_ca(directory, name, stem=stem)


def general_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    """Subject alternative names: IP addresses as IPAddress, everything else as DNSName."""
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _leaf(
    ca: CertificateAuthority,
    files: KeyPair,
    subject_name: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName],
    validity: datetime.timedelta,
) -> KeyPair:
    key = new_key()
    builder = (
        _builder(subject_name, ca.cert.subject, key, validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_LEAF_KEY_USAGE, critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return _write(files, builder.sign(ca.key, hashes.SHA256()), key)


def issue_server_cert(
    ca: CertificateAuthority,
    directory: Path,
    name: str,
    hosts: Sequence[str],
    *,
    common_name: str | None = None,
    validity: datetime.timedelta = LEAF_VALIDITY,
) -> KeyPair:
    """A serving certificate for `hosts` (DNS names or IPs), written as `<name>.crt|key`."""
    sans = general_names(hosts)
    return _leaf(
        ca, _files(directory, name), subject(common_name or name), ExtendedKeyUsageOID.SERVER_AUTH, sans, validity
    )


def issue_client_cert(
    ca: CertificateAuthority,
    directory: Path,
    user: str,
    groups: Sequence[str] = (),
    *,
    stem: str | None = None,
    validity: datetime.timedelta = LEAF_VALIDITY,
) -> KeyPair:
    """A client certificate for `user` in `groups` (CN and O), written as `<stem or user>.crt|key`."""
    files = _files(directory, stem or user.replace(":", "-"))
    return _leaf(ca, files, subject(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH, [], validity)


def _covers(cert: x509.Certificate, hosts: Sequence[str]) -> bool:
    try:
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return not hosts
    return all(name in present for name in general_names(hosts))


def _signed_by(cert: x509.Certificate, ca: CertificateAuthority) -> bool:
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def ensure_server_cert(
    ca: CertificateAuthority, directory: Path, name: str, hosts: Sequence[str], *, common_name: str | None = None
) -> KeyPair:
    """The serving certificate kept in `directory`, reissued only when it is not this CA's, does
    not name every host, or is about to expire; so clients that pinned it across restarts keep working."""
    files = _files(directory, name)
    if files.cert.exists() and files.key.exists():
        try:
            cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
        except ValueError:
            cert = None
        now = datetime.datetime.now(datetime.UTC)
        if (
            cert is not None
            and _signed_by(cert, ca)
            and _covers(cert, hosts)
            and cert.not_valid_after_utc - now > RENEW_BEFORE
        ):
            return files
    return issue_server_cert(ca, directory, name, hosts, common_name=common_name)
