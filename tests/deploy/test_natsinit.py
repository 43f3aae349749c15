"""`clusternet-nats-init` makes the first start's secrets once: private files, each consumer only
its own, a second run changes nothing; and the hub stores the bootstrap tokens of its
`--bootstrap-token-file` idempotently, the file owning its tokens."""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clusternet_nats.hub.natsinit import PUBLIC, Layout, init_directory
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import ensure_registration_buckets, new_token, token_store
from clusternet_nats.hub.registration.tokenfile import FROM_FILE, read_token_file, store_token_file
from clusternet_nats.runtime import natsconf
from clusternet_nats.runtime.pki import load_ca
from cryptography import x509
from nats.js import JetStreamContext

from tests.deploy.shipped import read_env, run_init


def _snapshot(root: Path) -> dict[Path, tuple[bytes, int, float]]:
    return {p: (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime) for p in root.rglob("*") if p.is_file()}


async def test_init_is_idempotent_and_writes_secrets_private(tmp_path: Path) -> None:
    out = tmp_path / "out"
    await run_init(out, "--leaf-host=hub.example.com")
    first = _snapshot(out)
    await run_init(out, "--leaf-host=hub.example.com")
    assert _snapshot(out) == first, "a second run changed something"
    for path, (_data, mode, _mtime) in first.items():
        expected = 0o644 if path.name in PUBLIC else 0o600
        assert stat.S_IMODE(mode) == expected, path
    for directory in (p for p in out.rglob("*") if p.is_dir()):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


async def test_each_consumer_gets_only_its_own_secrets(tmp_path: Path) -> None:
    out = tmp_path / "out"
    await run_init(out, "--nats-host=nats", "--mount-path=/run/clusternet")
    passwords = {u: (out / "init" / f"password-{u}").read_text() for u in natsconf.ALL_USERS}
    assert len(set(passwords.values())) == len(passwords), "every user has its own password"
    for service in natsconf.SERVICE_USERS:
        env = read_env(out / service / "env")
        assert env["CNET_NATS_URL"] == f"nats://{service}:{passwords[service]}@nats:4222"
        others = [
            p for u, p in passwords.items() if u != service and not (service == "hub" and u in ("callout", "sys"))
        ]
        text = (out / service / "env").read_text()
        assert not [p for p in others if p in text], f"{service} holds another user's password"
    hub = read_env(out / "hub" / "env")
    seed = (out / "init" / "issuer-seed").read_text()
    assert hub["CNET_HUB_ISSUER_SEED"] == seed
    assert hub["CNET_HUB_BOOTSTRAP_TOKEN_FILE"] == "/run/clusternet/bootstrap-tokens"
    auth = (out / "nats" / "auth.conf").read_text()
    assert jwt.public_key(seed) in auth and seed not in auth, "NATS gets the issuer's public key only"
    assert sorted(p.name for p in (out / "nats").iterdir()) == ["auth.conf", "leaf.crt", "leaf.key"]
    agent = read_env(out / "agent" / "env")
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", agent["CNET_AGENT_BOOTSTRAP_TOKEN"])
    assert agent["CNET_AGENT_HUB_LEAF_URL"] == "tls://nats:7422"
    assert agent["CNET_AGENT_HUB_CA"] == "/run/clusternet/hub-ca.crt"
    assert sorted(p.name for p in (out / "agent").iterdir()) == ["env", "hub-ca.crt"]


async def test_leaf_certificate_names_every_host_and_keeps_its_ca(tmp_path: Path) -> None:
    out = tmp_path / "out"
    await run_init(out)
    ca = (out / "init" / "ca.crt").read_bytes()
    await run_init(out, "--leaf-host=203.0.113.7,hub.example.com")
    assert (out / "init" / "ca.crt").read_bytes() == ca, "children keep trusting the same CA"
    cert = x509.load_pem_x509_certificate((out / "nats" / "leaf.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"nats", "nats-leaf", "hub.example.com"} <= set(sans.get_values_for_type(x509.DNSName))
    assert "203.0.113.7" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    cert.verify_directly_issued_by(load_ca(out / "init").cert)


def test_token_file_is_read_without_revealing_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# first agent\n\nabcdef.0123456789abcdef\nNOT-A-TOKEN-secret\n")
    with pytest.raises(ValueError, match=r"tokens:4") as err:
        read_token_file(path)
    assert "secret" not in str(err.value)
    path.write_text("# first agent\n\nabcdef.0123456789abcdef\n")
    assert read_token_file(path) == ["abcdef.0123456789abcdef"]


async def test_hub_stores_file_tokens_idempotently_and_the_file_owns_them(
    private_js: JetStreamContext, tmp_path: Path
) -> None:
    await ensure_registration_buckets(private_js)
    store = token_store(private_js)
    _, api_record = new_token(timedelta(hours=1), "made with cnet token create")
    await store.put(api_record.token_id, api_record, 0)
    one, two = new_token(None)[0], new_token(None)[0]
    path = tmp_path / "tokens"
    path.write_text(f"{one}\n{two}\n")

    assert sorted(await store_token_file(private_js, path)) == sorted([one[:6], two[:6]])
    stored = await store.get(one[:6])
    assert stored is not None and stored.value.description == FROM_FILE
    assert stored.value.refusal(one, datetime.now(UTC)) is None, "the file's token registers"
    assert one not in stored.value.model_dump_json(), "only its hash is stored"

    await store_token_file(private_js, path)
    again = await store.get(one[:6])
    assert again is not None and again.revision == stored.revision, "a restart changed nothing"

    path.write_text(f"{two}\n")
    await store_token_file(private_js, path)
    assert await store.get(one[:6]) is None, "a token removed from the file is gone"
    assert await store.get(two[:6]) is not None
    assert await store.get(api_record.token_id) is not None, "tokens made through the API are not the file's"


def test_no_group_or_world_access_in_a_fresh_umask(tmp_path: Path) -> None:
    """Modes hold whatever the umask: files are made private, not left to it."""
    old = os.umask(0)
    try:
        init_directory(tmp_path / "out", Layout(), [])
    finally:
        os.umask(old)
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.name not in PUBLIC:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
