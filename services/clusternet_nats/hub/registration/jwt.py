"""NATS JWTs (`alg: ed25519-nkey`): verifying the server's auth requests, signing our answers.

The auth callout protocol exchanges NATS JWTs; the `nkeys` package encodes, signs and checks
keys, and this module does only the JSON Web Token framing around it, so nothing else needs a
JWT library. A signature proves only that the key named in `iss` signed; what makes an auth
request trustworthy is that `iss` is a server nkey (checksum and role checked), that it is the
server the request says it comes from, that it has not expired, and, where the deployment pins
them, that it is one of the hub's own servers (`authorization_request`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import nkeys
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}
AUTH_REQUEST_AUDIENCE = "nats-authorization-request"
"""The `aud` nats-server puts on every authorization request."""
CLOCK_LEEWAY = 5.0
"""Seconds of clock difference between the hub and its servers that `exp` and `iat` tolerate."""


class JwtError(ValueError):
    """A token that is malformed, whose signature does not verify, or whose claims do not hold."""


class StaleRequest(JwtError):
    """An auth request past its `exp`: the server has stopped waiting for an answer."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_account_seed() -> str:
    """A fresh account nkey seed (`SA...`), the issuer of the callout's answers."""
    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT).decode())


def new_server_seed() -> str:
    """A fresh server nkey seed (`SN...`): what nats-server signs its auth requests with."""
    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_SERVER).decode())


def public_key(seed: str) -> str:
    return str(nkeys.from_seed(seed.encode()).public_key.decode())


def _public_key_bytes(public: str, role: int | None = None) -> bytes:
    """The raw ed25519 key inside an encoded nkey, once its role byte and CRC-16 check out.

    nkeys (0.2) verifies only with a key pair built from a seed, so the public key is decoded
    here with its own checksum and role constants and handed to the same ed25519 primitive.
    The checksum is nkeys' CRC-16/XMODEM, which `binascii.crc_hqx` computes in C (nkeys' own
    `crc16` is a Python loop, a tenth of the callout's request check).
    """
    try:
        raw = base64.b32decode(public + "=" * (-len(public) % 8))
    except (binascii.Error, ValueError):
        raise JwtError(f"{public!r} is not an nkey") from None
    if len(raw) != 35 or not nkeys.valid_public_prefix_byte(raw[0]):
        raise JwtError(f"{public!r} is not a public nkey")
    if int.from_bytes(raw[33:], "little") != binascii.crc_hqx(raw[:33], 0):
        raise JwtError(f"{public!r} fails its checksum")
    if role is not None and raw[0] != role:
        raise JwtError(f"{public!r} is not the kind of nkey expected here")
    return raw[1:33]


@functools.lru_cache(maxsize=64)
def _verify_key(public: str, role: int | None) -> VerifyKey:
    """The key that checks signatures by `public`, decoded once: every auth request is signed by
    one of the few servers of the hub's cluster."""
    return VerifyKey(_public_key_bytes(public, role))


@functools.lru_cache(maxsize=8)
def _key_pair(seed: str) -> tuple[nkeys.KeyPair, str]:
    """A seed's key pair and public key, derived once: the callout signs twice per connection."""
    keys = nkeys.from_seed(seed.encode())
    return keys, str(keys.public_key.decode())


_ENCODED_HEADER = _b64(json.dumps(_HEADER).encode())


def encode(claims: dict[str, Any], seed: str) -> str:
    """Signs claims as `iss` = the seed's public key, with `iat` and a `jti`: the hash of the
    claims before it (serialised once; the callout signs four tokens per cluster connecting)."""
    keys, public = _key_pair(seed)
    body = {**claims, "iss": public, "iat": int(time.time())}
    body.pop("jti", None)
    unsigned = json.dumps(body).encode()
    jti = base64.b32encode(hashlib.sha256(unsigned).digest())
    signed_body = unsigned[:-1] + b', "jti": "' + jti + b'"}'
    signing_input = f"{_ENCODED_HEADER}.{_b64(signed_body)}"
    return f"{signing_input}.{_b64(keys.sign(signing_input.encode()))}"


def decode(token: str, issuer_role: int | None = None) -> dict[str, Any]:
    """The claims of a token signed by the key named in its `iss` (of `issuer_role`, an nkeys
    PREFIX_BYTE_*, if given); raises JwtError. Says nothing about who that key belongs to."""
    try:
        header, body, signature = token.split(".")
        if json.loads(_unb64(header)).get("alg") != _HEADER["alg"]:
            raise JwtError("unsupported JWT algorithm")
        claims = json.loads(_unb64(body))
        if not isinstance(claims, dict):
            raise JwtError("JWT claims are not an object")
        _verify_key(str(claims.get("iss", "")), issuer_role).verify(f"{header}.{body}".encode(), _unb64(signature))
    except JwtError:
        raise
    except BadSignatureError:
        raise JwtError("JWT signature does not verify") from None
    except Exception as err:
        raise JwtError(f"invalid JWT: {err!r}") from None
    return claims


@dataclass(frozen=True)
class AuthorizationRequest:
    """What the callout needs of one verified `$SYS.REQ.USER.AUTH` request."""

    server_id: str
    """The asking server's public nkey: the `aud` of our answer."""
    user_nkey: str
    """The connection's one-time user nkey: the `sub` of our answer."""
    user: str
    password: str
    host: str
    """The connecting client's (or leaf node's) address, as the server saw it."""
    expires: float


def authorization_request(
    token: str, issuer: str, now: float | None = None, servers: Collection[str] | None = None
) -> AuthorizationRequest:
    """Verifies an auth request as nats-server signs it and returns its fields; raises JwtError.

    The server addresses each request to the `auth_callout.issuer` it was configured with (its
    `sub`), so `issuer` (our public account key) ties the request to this callout. `servers`,
    when given, pins the server nkeys the hub trusts (e.g. the members of its own cluster);
    otherwise any server key that signs for itself is accepted, which is what a request arriving
    in the callout account, reachable by the callout's user only, can be.
    """
    claims = decode(token, nkeys.PREFIX_BYTE_SERVER)
    try:
        nats = claims["nats"]
        server_id, user_nkey = str(nats["server_id"]["id"]), str(nats["user_nkey"])
        opts = nats.get("connect_opts") or {}
        client = nats.get("client_info") or {}
        expires = float(claims["exp"])
        issued = float(claims.get("iat", 0))
        kind = nats.get("type")
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise JwtError(f"malformed authorization request: {err!r}") from None
    if kind != "authorization_request" or claims.get("aud") != AUTH_REQUEST_AUDIENCE:
        raise JwtError("not an authorization request")
    if claims["iss"] != server_id:
        raise JwtError(f"signed by {claims['iss']}, not by the server it names ({server_id})")
    if servers is not None and server_id not in servers:
        raise JwtError(f"server {server_id} is not one of the hub's")
    if claims.get("sub") != issuer:
        raise JwtError("addressed to another auth callout issuer")
    _public_key_bytes(user_nkey, nkeys.PREFIX_BYTE_USER)
    now = time.time() if now is None else now
    if issued > now + CLOCK_LEEWAY:
        raise JwtError("authorization request issued in the future")
    if expires + CLOCK_LEEWAY < now:
        raise StaleRequest("authorization request expired")
    return AuthorizationRequest(
        server_id=server_id,
        user_nkey=user_nkey,
        user=str(opts.get("user") or ""),
        password=str(opts.get("pass") or ""),
        host=str(client.get("host") or ""),
        expires=expires,
    )
