"""Who may talk to the hub at all: HTTPS with the generated CA, bearer tokens, client certificates.

Against the real hub service on a free port (running_hub) and a real nats-server.
"""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path

import aiohttp
import pytest
from clusternet_nats.hub.auth.tls import server_context
from clusternet_nats.hub.auth.tokenfile import TokenFileError, parse_token_file
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.runtime import pki
from clusternet_nats.testing.natsserver import NatsServer
from cryptography import x509

from tests.hub.objects import UNAUTHORIZED

from .conftest import EDITOR, TEAM_A, VIEWER
from .objects import subs_path, subscription

"""kube-apiserver's answer to a request without valid credentials, to the byte (as JSON)."""


async def _status(session: aiohttp.ClientSession, method: str, path: str, **kwargs: object) -> int | str:
    """The HTTP status, or the name of the error when the connection itself was refused."""
    try:
        async with session.request(method, path, **kwargs) as resp:  # type: ignore[arg-type]
            await resp.read()
            return resp.status
    except aiohttp.ClientError as err:
        return type(err).__name__


async def test_no_credentials_is_a_401_status(served_hub: ServedHub) -> None:
    async with served_hub.session(user=None) as anonymous:
        for method, path in (("GET", subs_path(TEAM_A)), ("POST", subs_path(TEAM_A)), ("GET", "/no/such/path")):
            async with anonymous.request(method, path, json=subscription(TEAM_A)) as resp:
                assert resp.status == 401, (method, path)
                assert resp.content_type == "application/json"
                assert await resp.json() == UNAUTHORIZED


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-token",
        "Bearer {admin}x",
        "Bearer x{admin}",
        "Basic {basic}",
        "Token {admin}",
        "Bearer",
        "Bearer {admin} {admin}",
        "{admin}",
    ],
)
async def test_wrong_or_malformed_tokens_are_refused(served_hub: ServedHub, header: str) -> None:
    admin = served_hub.admin_token
    value = header.format(admin=admin, basic=base64.b64encode(f"admin:{admin}".encode()).decode())
    headers = {"Authorization": value}
    async with served_hub.session(user=None) as session, session.get(subs_path(TEAM_A), headers=headers) as resp:
        assert resp.status == 401
        assert await resp.json() == UNAUTHORIZED


async def test_bearer_scheme_is_case_insensitive_as_on_kube(served_hub: ServedHub) -> None:
    async with served_hub.session(user=None) as session:
        headers = {"Authorization": f"bearer {served_hub.admin_token}"}
        async with session.get(subs_path(TEAM_A), headers=headers) as resp:
            assert resp.status == 200


async def test_token_file_users_carry_their_groups(served_hub: ServedHub, unique_ns: str) -> None:
    async with served_hub.session(VIEWER) as viewer:  # allowed through its group `viewers`
        assert await _status(viewer, "GET", subs_path(unique_ns)) == 200
        assert await _status(viewer, "POST", subs_path(unique_ns), json=subscription(unique_ns)) == 403


async def test_probes_are_anonymous_and_metrics_is_not(served_hub: ServedHub) -> None:
    async with served_hub.session(user=None) as anonymous:
        for path in ("/healthz", "/readyz"):
            assert await _status(anonymous, "GET", path) == 200, path
        assert await _status(anonymous, "GET", "/metrics") == 401
        assert await _status(anonymous, "POST", "/healthz") == 401  # only reads of the probes are open


async def test_client_certificate_names_user_and_groups(served_hub: ServedHub, unique_ns: str) -> None:
    admin = served_hub.client_cert("cert-admin", ["system:masters"])
    async with served_hub.session(user=None, cert=admin) as session:
        assert await _status(session, "POST", subs_path(unique_ns), json=subscription(unique_ns)) == 201
    viewer = served_hub.client_cert("cert-viewer", ["viewers"])
    async with served_hub.session(user=None, cert=viewer) as session:
        assert await _status(session, "GET", subs_path(unique_ns, "demo")) == 200
        async with session.delete(subs_path(unique_ns, "demo")) as resp:
            assert resp.status == 403
            assert 'User "cert-viewer" cannot delete resource "subscriptions"' in (await resp.json())["message"]
    nobody = served_hub.client_cert("cert-nobody")
    async with served_hub.session(user=None, cert=nobody) as session, session.get(subs_path(unique_ns)) as resp:
        assert resp.status == 403
        assert 'User "cert-nobody" cannot list' in (await resp.json())["message"]


async def test_certificate_wins_over_a_token(served_hub: ServedHub, unique_ns: str) -> None:
    """As on kube-apiserver, a verified client certificate is the identity even with a token present."""
    nobody = served_hub.client_cert("cert-nobody")
    async with served_hub.session(cert=nobody) as session:  # also sends the admin token
        assert await _status(session, "GET", subs_path(unique_ns)) == 403


async def test_expired_client_certificate_is_refused(served_hub: ServedHub, unique_ns: str) -> None:
    expired = served_hub.client_cert("late-admin", ["system:masters"], validity=datetime.timedelta(minutes=-1))
    async with served_hub.session(user=None, cert=expired) as session:
        status = await _status(session, "GET", subs_path(unique_ns))
    assert isinstance(status, str) or status == 401, status  # the handshake fails (or 401): never accepted


async def test_certificate_of_another_ca_is_refused(served_hub: ServedHub, tmp_path: Path, unique_ns: str) -> None:
    rogue_ca = pki.create_ca(tmp_path, "rogue-ca")
    forged = pki.issue_client_cert(rogue_ca, tmp_path, "cert-admin", ["system:masters"])
    async with served_hub.session(user=None, cert=forged) as session:
        status = await _status(session, "POST", subs_path(unique_ns), json=subscription(unique_ns))
    assert isinstance(status, str) or status == 401, status
    async with served_hub.session() as admin:
        assert await _status(admin, "GET", subs_path(unique_ns, "demo")) == 404


async def test_https_verifies_with_the_generated_ca(served_hub: ServedHub) -> None:
    assert served_hub.url.startswith("https://")
    port = served_hub.url.rsplit(":", 1)[1]
    untrusting = aiohttp.TCPConnector(ssl=ssl.create_default_context())
    async with aiohttp.ClientSession(connector=untrusting, headers=served_hub.headers()) as session:
        assert await _status(session, "GET", served_hub.url + "/healthz") == "ClientConnectorCertificateError"
    for host in ("127.0.0.1", "localhost"):  # both are names of the certificate
        trusting = aiohttp.TCPConnector(ssl=served_hub.ssl_context())
        async with aiohttp.ClientSession(connector=trusting, headers=served_hub.headers()) as session:
            assert await _status(session, "GET", f"https://{host}:{port}/metrics") == 200, host
    async with aiohttp.ClientSession() as plain:
        assert await _status(plain, "GET", f"http://127.0.0.1:{port}/healthz") != 200
    assert served_hub.server.security is not None
    serving = x509.load_pem_x509_certificate(served_hub.server.security.serving_files.cert.read_bytes())
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(n.value) for n in names} >= {"localhost", "127.0.0.1", "::1"}


async def test_generated_ca_is_kept_across_restarts(nats_server: NatsServer, tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    async with running_hub(nats_server.url, cert_dir=certs) as first:
        ca, serving = (certs / "ca.crt").read_bytes(), (certs / "serving.crt").read_bytes()
        first_ca = first.ca_file
    async with running_hub(nats_server.url, cert_dir=certs) as second:
        assert (certs / "ca.crt").read_bytes() == ca and (certs / "serving.crt").read_bytes() == serving
        async with second.session() as session:
            assert await _status(session, "GET", "/metrics") == 200
    async with running_hub(nats_server.url, cert_dir=certs, tls_sans=("hub.example", "10.1.2.3")) as third:
        assert (certs / "ca.crt").read_bytes() == ca
        reissued = x509.load_pem_x509_certificate((certs / "serving.crt").read_bytes())
        names = reissued.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {str(n.value) for n in names} >= {"localhost", "127.0.0.1", "::1", "hub.example", "10.1.2.3"}
        context = ssl.create_default_context(cafile=str(first_ca))  # a client that kept the first CA
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context), headers=third.headers()
        ) as session:
            assert await _status(session, "GET", third.url + "/metrics") == 200


async def test_operator_certificate_is_served(nats_server: NatsServer, tmp_path: Path) -> None:
    ca = pki.create_ca(tmp_path, "operator-ca")
    files = pki.issue_server_cert(ca, tmp_path, "hub", ["127.0.0.1"])
    async with running_hub(
        nats_server.url, tls_cert_file=files.cert, tls_private_key_file=files.key, cert_dir=tmp_path / "unused"
    ) as hub:
        context = ssl.create_default_context(cafile=str(ca.files.cert))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), headers=hub.headers()) as s:
            assert await _status(s, "GET", hub.url + "/metrics") == 200
    assert not (tmp_path / "unused").exists()


def test_token_file_format_is_kube_apiservers() -> None:
    users = parse_token_file(
        '# comment\n\nt1,alice,uid-1,"ops,system:masters"\n t2, bob, uid-2\nt3,carol,,dev\n', "tokens.csv"
    )
    by_name = {u.name: u for u in users.values()}
    assert by_name["alice"].groups == ("ops", "system:masters") and by_name["alice"].uid == "uid-1"
    assert by_name["bob"].groups == () and by_name["bob"].uid == "uid-2"
    assert by_name["carol"].groups == ("dev",)
    assert b"t1" not in b"".join(users)  # kept as digests only
    with pytest.raises(TokenFileError, match=r"tokens.csv:2: expected"):
        parse_token_file("t1,alice,uid\nt2,bob\n", "tokens.csv")
    with pytest.raises(TokenFileError, match=r"tokens.csv:2: duplicate token"):
        parse_token_file("t1,alice,uid\nt1,bob,uid\n", "tokens.csv")


async def test_editor_token_is_not_an_admin(served_hub: ServedHub) -> None:
    async with served_hub.session(EDITOR) as editor:
        assert await _status(editor, "GET", "/metrics") == 403


def test_only_the_client_ca_vouches_for_users(tmp_path: Path) -> None:
    """The system's public CAs must not be able to issue hub users; without a client CA none is asked for."""
    ca = pki.create_ca(tmp_path, "clients-ca")
    serving = pki.issue_server_cert(ca, tmp_path, "serving", ["127.0.0.1"])
    context = server_context(serving, ca.files.cert)
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert [dict(x[0] for x in c["subject"])["commonName"] for c in context.get_ca_certs()] == ["clients-ca"]
    without = server_context(serving, None)
    assert without.verify_mode == ssl.CERT_NONE and without.get_ca_certs() == []
