"""`make up` stops before starting anything when a port it needs is taken, and says which and why."""

from __future__ import annotations

import socket
from pathlib import Path

from clusternet_nats.devsystem.__main__ import app, port_taken
from typer.testing import CliRunner


def test_up_fails_fast_on_a_taken_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
        workdir = tmp_path / "up"
        result = CliRunner().invoke(app, ["up", "--hub-port", str(port), "--workdir", str(workdir)])
    assert result.exit_code == 1
    assert f"port {port} for the hub (--hub-port) is already in use" in result.output
    assert "--hub-port 18080" in result.output
    assert not workdir.exists(), "nothing was started or written"
    assert not port_taken(port)
