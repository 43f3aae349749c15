import pytest
from clusternet_nats.store.keys import namespace_filter, object_key, split_key


@pytest.mark.parametrize(
    ("namespace", "name", "key"),
    [
        ("default", "app-demo", "default.app-demo"),
        ("clusternet-reserved", "deployments.foo.my-nginx", "clusternet-reserved.deployments.foo.my-nginx"),
        (None, "system:controller:foo", "system=3Acontroller=3Afoo"),
        (None, "plain", "plain"),
    ],
)
def test_object_keys_round_trip(namespace: str | None, name: str, key: str) -> None:
    assert object_key(namespace, name) == key
    assert split_key(key, namespaced=namespace is not None) == (namespace or "", name)


def test_key_needs_a_name() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        object_key("default", "")


def test_namespace_filter_selects_one_namespace() -> None:
    assert namespace_filter("clusternet-abcde") == "clusternet-abcde.>"
    assert namespace_filter(None) == ">"
