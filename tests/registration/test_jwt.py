"""The NATS JWT framing: what we sign verifies, and a changed byte does not."""

from __future__ import annotations

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
