"""The test harness's own promises, which every fixture that starts a server relies on."""

from clusternet_nats.testing.natsserver import free_port


def test_free_port_never_hands_out_the_same_port_twice() -> None:
    # The kernel readily hands a just-released ephemeral port out again; a server asking for its
    # client and leaf ports in a row once got the same one and failed to bind.
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
