"""HTTPS for the hub: the operator's certificate, or a CA and serving certificate made at first start.

As kube-apiserver with `--cert-dir`: without `--tls-cert-file`, the hub keeps a CA and a serving
certificate in the cert dir, generated once and reused on every restart (reissued only when the
names asked for change or it nears expiry), so clients keep trusting `<cert-dir>/ca.crt`.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.runtime import pki

CA_NAME = "clusternet-hub-ca"
SERVING_STEM = "serving"
SERVING_NAME = "clusternet-hub"
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def default_cert_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "clusternet-nats" / "hub-certs"


@dataclass(frozen=True)
class ServingCertificate:
    files: pki.KeyPair
    ca: Path | None
    """The generated CA clients should trust; None when the operator gave the certificate."""


def serving_certificate(
    cert_file: Path | None, key_file: Path | None, cert_dir: Path, sans: tuple[str, ...], listen_host: str
) -> ServingCertificate:
    """The certificate to serve (blocking file work: call before the loop or in a thread)."""
    if cert_file is not None or key_file is not None:
        if cert_file is None or key_file is None:
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        return ServingCertificate(pki.KeyPair(cert_file, key_file), None)
    hosts = [*pki.LOCAL_HOSTS, *sans]
    if listen_host not in _WILDCARDS:
        hosts.append(listen_host)
    ca = pki.ensure_ca(cert_dir, CA_NAME)
    files = pki.ensure_server_cert(ca, cert_dir, SERVING_STEM, hosts, common_name=SERVING_NAME)
    return ServingCertificate(files, ca.files.cert)


def server_context(serving: pki.KeyPair, client_ca: Path | None) -> ssl.SSLContext:
    """TLS 1.2+; asks for (but does not require) a client certificate when a client CA is given.

    Built bare rather than with `ssl.create_default_context(Purpose.CLIENT_AUTH)`, which would also
    trust the system's public CAs for client certificates: only `client_ca` may vouch for a user.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    context.load_cert_chain(serving.cert, serving.key)
    if client_ca is not None:
        context.load_verify_locations(cafile=str(client_ca))
        context.verify_mode = ssl.CERT_OPTIONAL
    else:
        context.verify_mode = ssl.CERT_NONE
    return context
