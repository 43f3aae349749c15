"""Bootstrap tokens from a file (`--bootstrap-token-file`), stored when the hub starts.

A first start must be able to admit an agent before anyone can call the hub's API to create a
token (deploy/compose's demo agent, a child installed beside the parent): `clusternet-nats-init`
writes a token into a file that both the hub and the agent are given. The hub stores each token
as `cnet token create` does, as a hash only, and idempotently: a token already stored with the
same secret is left as it is (with whatever its use has recorded), so restarts change nothing.

The file is the source of truth for its tokens, as kube-apiserver's `--token-auth-file` is for
its users: a token removed from the file is deleted at the next start, and `cnet token revoke`
of a token still in the file lasts only until then. Tokens made through the API are never
touched.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog
from clusternet_nats.api.registration import BOOTSTRAP_TOKEN_PATTERN, credential_hash
from clusternet_nats.hub.registration.records import BootstrapToken, token_store
from clusternet_nats.store.errors import ConflictError
from clusternet_nats.store.kv import StatusStore
from nats.js import JetStreamContext

FROM_FILE = "from --bootstrap-token-file"
"""The description that marks a stored token as the file's, so the file may delete it."""

log = structlog.get_logger(__name__)


def read_token_file(path: Path) -> list[str]:
    """Tokens, one a line (`[a-z0-9]{6}.[a-z0-9]{16}`); blank lines and `#` comments skipped.
    A malformed line is a ValueError naming its line number, never its text (it may be a secret)."""
    tokens: list[str] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not BOOTSTRAP_TOKEN_PATTERN.match(line):
            raise ValueError(f"{path}:{number}: not a bootstrap token ([a-z0-9]{{6}}.[a-z0-9]{{16}})")
        tokens.append(line)
    return tokens


async def store_token_file(js: JetStreamContext, path: Path) -> list[str]:
    """Stores the file's tokens and deletes the file's former ones; returns the stored ids."""
    tokens = await asyncio.to_thread(read_token_file, path)
    store = token_store(js)
    wanted: dict[str, str] = {}
    for token in tokens:
        match = BOOTSTRAP_TOKEN_PATTERN.match(token)
        assert match is not None  # read_token_file checked every line
        wanted[match.group(1)] = credential_hash(token)
    for token_id, secret_hash in wanted.items():
        await _store(store, token_id, secret_hash)
    for token_id, data, _revision in await store.bucket.entries():
        if token_id not in wanted and store.decode(data).description == FROM_FILE:
            await store.delete(token_id)
            log.info("bootstrap_token.removed_from_file", token_id=token_id)
    log.info("bootstrap_token.file_loaded", path=str(path), tokens=len(wanted))
    return list(wanted)


async def _store(store: StatusStore[BootstrapToken], token_id: str, secret_hash: str) -> None:
    record = BootstrapToken(token_id=token_id, secret_hash=secret_hash, description=FROM_FILE)
    for _ in range(5):  # another hub replica may be storing the same file at the same time
        current = await store.get(token_id)
        if current is not None and current.value.secret_hash == secret_hash:
            return
        if current is not None and current.value.description != FROM_FILE:
            log.warning("bootstrap_token.id_taken", token_id=token_id, reason="a token made through the API has it")
            return
        try:
            await store.put(token_id, record, current.revision if current else 0)
        except ConflictError:
            continue
        log.info("bootstrap_token.stored_from_file", token_id=token_id)
        return
    raise RuntimeError(f"bootstrap token {token_id!r}: kept losing the compare-and-set")
