"""Users from verified client certificates: CN is the user, each O a group, as kube-apiserver reads them.

The TLS handshake already verified the chain against `--client-ca-file` (a certificate that does
not verify never gets a connection); this only reads the identity and refuses one that expired
since the connection was made, which a long-lived keep-alive connection could otherwise outlive.
"""

from __future__ import annotations

import datetime
import ssl

from aiohttp import web
from clusternet_nats.hub.auth.user import UserInfo
from clusternet_nats.runtime.pki import identity
from cryptography import x509


def peer_certificate(request: web.Request) -> x509.Certificate | None:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if not isinstance(ssl_object, ssl.SSLObject):
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der) if der else None


def certificate_user(request: web.Request) -> UserInfo | None:
    cert = peer_certificate(request)
    if cert is None:
        return None
    now = datetime.datetime.now(datetime.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        return None
    name, groups = identity(cert)
    return UserInfo(name, "", tuple(groups)) if name else None
