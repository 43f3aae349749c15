"""The agent's end of `sockets/<cluster-id>/proxy`: performs the hub's proxied requests (api/proxy.py)."""

from clusternet_nats.agent.proxy.server import ProxyServer

__all__ = ["ProxyServer"]
