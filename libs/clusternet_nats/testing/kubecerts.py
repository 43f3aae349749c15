"""The PKI one test control plane needs, built on `runtime.pki`: a CA, the API server's serving
certificate, an admin client certificate (system:masters) and the service-account key pair.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.runtime import pki as rpki

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


def write_pki(directory: Path, cluster: str) -> Pki:
    """Writes a fresh CA and the certificates signed by it into `directory`."""
    ca = rpki.create_ca(directory, f"{cluster}-ca", validity=VALIDITY)
    server = rpki.issue_server_cert(
        ca,
        directory,
        "apiserver",
        [*SERVER_NAMES, "127.0.0.1", SERVICE_IP],
        common_name="kube-apiserver",
        validity=VALIDITY,
    )
    admin = rpki.issue_client_cert(ca, directory, "admin", ["system:masters"], validity=VALIDITY)
    sa_key = rpki.new_key()
    rpki.write_file(directory / "sa.key", rpki.key_pem(sa_key), private=True)
    rpki.write_file(directory / "sa.pub", rpki.public_key_pem(sa_key))
    return Pki(
        ca.files.cert,
        ca.files.key,
        server.cert,
        server.key,
        admin.cert,
        admin.key,
        directory / "sa.key",
        directory / "sa.pub",
    )
