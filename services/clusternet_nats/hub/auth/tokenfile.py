"""Static bearer tokens from a CSV file, kube-apiserver's `--token-auth-file` format.

One token per line: `token,user,uid,"group1,group2"` (groups optional). Meant for development
and bootstrap (`make up` writes one with an admin token); tokens live until the file changes
and the hub restarts. Tokens are kept only as SHA-256 digests, so a heap dump does not hold them.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
from pathlib import Path

from clusternet_nats.hub.auth.user import UserInfo


class TokenFileError(ValueError):
    """The file is malformed; the message names the file and line."""


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def parse_token_file(text: str, source: str = "token file") -> dict[bytes, UserInfo]:
    """Token digest to user; raises TokenFileError naming the first bad line."""
    users: dict[bytes, UserInfo] = {}
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    for record in reader:
        line = reader.line_num
        if not record or (len(record) == 1 and not record[0].strip()) or record[0].lstrip().startswith("#"):
            continue
        if len(record) < 3:
            raise TokenFileError(
                f'{source}:{line}: expected token,user,uid[,"group1,group2"], got {len(record)} field(s)'
            )
        token, name, uid = (field.strip() for field in record[:3])
        if not token or not name:
            raise TokenFileError(f"{source}:{line}: token and user must not be empty")
        key = digest(token)
        if key in users:
            raise TokenFileError(f"{source}:{line}: duplicate token (user {name!r})")
        groups = tuple(g.strip() for g in record[3].split(",") if g.strip()) if len(record) > 3 else ()
        users[key] = UserInfo(name, uid, groups)
    return users


class TokenFileAuthenticator:
    def __init__(self, users: dict[bytes, UserInfo]) -> None:
        self._users = users

    @classmethod
    async def load(cls, path: Path) -> TokenFileAuthenticator:
        text = await asyncio.to_thread(path.read_text)
        return cls(parse_token_file(text, str(path)))

    async def authenticate_token(self, token: str) -> UserInfo | None:
        return self._users.get(digest(token))
