"""The project's fixtures are a plugin users load the same way (it is not auto-registered, so
installing clusternet-nats never changes anyone else's pytest run)."""

pytest_plugins = ["clusternet_nats.testing.pytest_plugin"]
