"""The hub's end of `sockets/<cluster-id>/proxy`: kubectl to any child through its leaf link."""

from clusternet_nats.hub.proxy.routes import ProxyRoutes

__all__ = ["ProxyRoutes"]
