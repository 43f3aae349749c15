"""NATS JWTs (`alg: ed25519-nkey`): decoding the server's auth requests, signing our answers.

The auth callout protocol exchanges NATS JWTs; the `nkeys` package signs and verifies, and this
module does only the JSON Web Token framing around it, so nothing else needs a JWT library.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

import nkeys
from nacl.signing import VerifyKey

_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}


class JwtError(ValueError):
    """A token that is malformed or whose signature does not verify."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_account_seed() -> str:
    """A fresh account nkey seed (`SA...`), the issuer of the callout's answers."""
    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT).decode())


def public_key(seed: str) -> str:
    return str(nkeys.from_seed(seed.encode()).public_key.decode())


def _verify_key(public: str) -> VerifyKey:
    raw = base64.b32decode(public + "=" * (-len(public) % 8))
    if len(raw) != 35 or not nkeys.valid_public_prefix_byte(raw[0]):
        raise JwtError(f"issuer {public!r} is not an nkey")
    return VerifyKey(raw[1:33])


def encode(claims: dict[str, Any], seed: str) -> str:
    """Signs claims as `iss` = the seed's public key, with `iat` and a `jti` content hash."""
    keys = nkeys.from_seed(seed.encode())
    body = {**claims, "iss": keys.public_key.decode(), "iat": int(time.time())}
    body["jti"] = base64.b32encode(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()).decode()
    signing_input = f"{_b64(json.dumps(_HEADER).encode())}.{_b64(json.dumps(body).encode())}"
    return f"{signing_input}.{_b64(keys.sign(signing_input.encode()))}"


def decode(token: str) -> dict[str, Any]:
    """The claims of a token signed by the key named in its `iss`; raises JwtError."""
    try:
        header, body, signature = token.split(".")
        claims: dict[str, Any] = json.loads(_unb64(body))
        if json.loads(_unb64(header)).get("alg") != _HEADER["alg"]:
            raise JwtError("unsupported JWT algorithm")
        _verify_key(str(claims["iss"])).verify(f"{header}.{body}".encode(), _unb64(signature))
    except JwtError:
        raise
    except Exception as err:
        raise JwtError(f"invalid JWT: {err!r}") from None
    return claims
