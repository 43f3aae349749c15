"""The read buffer of asyncio's TLS connections, sized for a server holding many of them.

Python's TLS transport (asyncio.sslproto, 3.11+) allocates and zeroes a 256 KiB read buffer when a
connection opens and holds it for the connection's life: a hub serving 1,000 watches (each its own
connection) paid ~290 KiB of RSS per watch, nearly all of it that buffer (bench/proxy.py). A TLS
record carries at most 16 KiB, so 64 KiB still takes several per read; a large request body is read
in more, smaller reads, which costs little beside the decryption.
"""

from __future__ import annotations

from asyncio import sslproto

TLS_READ_BUFFER = 64 * 1024


def limit_tls_read_buffer(size: int = TLS_READ_BUFFER) -> None:
    """Every TLS connection this process opens from now on (served or dialled) reads into `size` bytes."""
    sslproto.SSLProtocol.max_size = size
