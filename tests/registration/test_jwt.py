"""The NATS JWT framing: what we sign verifies, a changed byte does not, and an auth request is
accepted only as nats-server signs it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

import nkeys
import pytest
from clusternet_nats.hub.registration import jwt


def test_signed_claims_round_trip_with_issuer() -> None:
    seed = jwt.new_account_seed()
    claims = jwt.decode(jwt.encode({"sub": "UABC", "nats": {"type": "user"}}, seed))
    assert claims["iss"] == jwt.public_key(seed) and claims["iss"].startswith("A")
    assert claims["sub"] == "UABC" and claims["nats"] == {"type": "user"}


def test_tampered_or_malformed_tokens_are_rejected() -> None:
    token = jwt.encode({"sub": "UABC"}, jwt.new_account_seed())
    header, _body, signature = token.split(".")
    other = jwt.encode({"sub": "UXYZ"}, jwt.new_account_seed()).split(".")[1]
    for bad in (f"{header}.{other}.{signature}", "not.a.jwt", token + "x"):
        with pytest.raises(jwt.JwtError):
            jwt.decode(bad)


def auth_request(server_seed: str, issuer: str, named: str | None = None, **changes: Any) -> str:
    """An authorization request as nats-server builds one (server_id.id = its own key, unless
    `named`)."""
    server = named or jwt.public_key(server_seed)
    user = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    claims: dict[str, Any] = {
        "sub": issuer,
        "aud": jwt.AUTH_REQUEST_AUDIENCE,
        "exp": int(time.time()) + 2,
        "nats": {
            "server_id": {"id": server, "name": "hub"},
            "user_nkey": str(nkeys.from_seed(user).public_key.decode()),
            "client_info": {"host": "192.0.2.7", "kind": "Client"},
            "connect_opts": {"user": "u", "pass": "p"},
            "type": "authorization_request",
            "version": 2,
        },
    }
    return jwt.encode({**claims, **changes}, server_seed)


def test_authorization_request_from_a_server_verifies() -> None:
    server, issuer = jwt.new_server_seed(), jwt.public_key(jwt.new_account_seed())
    request = jwt.authorization_request(auth_request(server, issuer), issuer)
    assert (request.server_id, request.user, request.password, request.host) == (
        jwt.public_key(server),
        "u",
        "p",
        "192.0.2.7",
    )
    assert request.user_nkey.startswith("U")
    assert jwt.authorization_request(auth_request(server, issuer), issuer, servers={request.server_id})


def test_authorization_requests_that_are_not_the_servers_are_rejected() -> None:
    server, issuer = jwt.new_server_seed(), jwt.public_key(jwt.new_account_seed())
    account = jwt.new_account_seed()
    forged = {
        "not the kind of nkey": auth_request(account, issuer),  # signed by an account, not a server
        "another auth callout issuer": auth_request(server, jwt.public_key(jwt.new_account_seed())),
        "not an authorization request": auth_request(server, issuer, aud="someone-else"),
        "not by the server it names": auth_request(server, issuer, named=jwt.public_key(jwt.new_server_seed())),
    }
    for reason, token in forged.items():
        with pytest.raises(jwt.JwtError, match=reason):
            jwt.authorization_request(token, issuer)
    with pytest.raises(jwt.JwtError, match="not one of the hub's"):
        jwt.authorization_request(auth_request(server, issuer), issuer, servers={"NOTHUB"})
    with pytest.raises(jwt.StaleRequest):
        jwt.authorization_request(auth_request(server, issuer, exp=int(time.time()) - 60), issuer)


def test_an_issuer_must_be_a_well_formed_nkey() -> None:
    token = jwt.encode({"sub": "UABC"}, jwt.new_account_seed())
    header, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    public = claims["iss"]
    broken = public[:-1] + ("A" if public[-1] != "A" else "B")  # the CRC-16 no longer matches
    for iss, reason in ((broken, "fails its checksum"), ("not-an-nkey", "not an nkey"), ("", "not a public nkey")):
        forged = base64.urlsafe_b64encode(json.dumps({**claims, "iss": iss}).encode()).rstrip(b"=").decode()
        with pytest.raises(jwt.JwtError, match=reason):
            jwt.decode(f"{header}.{forged}.{signature}")


def test_a_user_nkey_with_a_wrong_checksum_is_not_answered() -> None:
    server, issuer = jwt.new_server_seed(), jwt.public_key(jwt.new_account_seed())
    user = jwt.authorization_request(auth_request(server, issuer), issuer).user_nkey
    broken = user[:-1] + ("A" if user[-1] != "A" else "B")
    nats = json.loads(base64.urlsafe_b64decode(auth_request(server, issuer).split(".")[1] + "==="))["nats"]
    with pytest.raises(jwt.JwtError, match="fails its checksum"):
        jwt.authorization_request(auth_request(server, issuer, nats={**nats, "user_nkey": broken}), issuer)


def test_each_token_carries_one_jti_hashing_its_claims() -> None:
    token = jwt.encode({"sub": "UABC", "jti": "chosen-by-the-caller"}, jwt.new_account_seed())
    body = base64.urlsafe_b64decode(token.split(".")[1] + "===").decode()
    assert body.count('"jti"') == 1
    claims = json.loads(body)
    unsigned = json.dumps({k: v for k, v in claims.items() if k != "jti"}).encode()
    assert claims["jti"] == base64.b32encode(hashlib.sha256(unsigned).digest()).decode()
