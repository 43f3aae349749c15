"""The sim's object table tells listeners of every change, stamped as etcd would."""

from __future__ import annotations

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.backends.sim.store import ObjectTable, SimObject

REF = ObjectRef("v1", "ConfigMap", "default", "cfg")


def config(data: str) -> dict[str, object]:
    meta = {"name": "cfg", "namespace": "default"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": data}}


def recorder(table: ObjectTable) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []

    def listen(event: str, obj: SimObject) -> None:
        seen.append((event, obj.ref.name, obj.body["metadata"]["resourceVersion"]))

    table.on_change(listen)
    return seen


def test_every_change_is_heard_with_its_revision() -> None:
    table = ObjectTable()
    seen = recorder(table)
    table.put(REF, config("a"))
    assert not table.put(REF, config("a")), "an unchanged put is invisible"
    table.put(REF, config("b"))
    table.set_status(REF, {"x": 1})
    table.delete(REF)
    assert seen == [("ADDED", "cfg", "1"), ("MODIFIED", "cfg", "2"), ("MODIFIED", "cfg", "3"), ("DELETED", "cfg", "4")]
    assert table.revision == 4
    assert table.delete(REF) is None
    assert table.revision == 4, "deleting nothing is no change"


async def test_a_namespace_deletion_is_heard_for_everything_it_held() -> None:
    cluster = SimCluster("c1", Sizing(nodes=1))
    await cluster.start()
    seen = recorder(cluster.objects)
    owner = "clusternet-x.app"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    cm = config("a") | {"metadata": {"name": "cfg", "namespace": "apps"}}
    await cluster.apply(owner, [ns, cm])
    await cluster.prune(owner, keep=[ObjectRef("v1", "ConfigMap", "apps", "cfg")])
    expected = [("ADDED", "apps"), ("ADDED", "cfg"), ("DELETED", "apps"), ("DELETED", "cfg")]
    assert [(e, n) for e, n, _ in seen] == expected
    revisions = [int(rv) for _, _, rv in seen]
    assert revisions == sorted(revisions) and len(set(revisions)) == 4
