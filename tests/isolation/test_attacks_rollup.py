"""Issue 7, class 2: one write wipes every cluster's records (rollup and purge).

A KV stream that allows rollups purges a whole subject space on `Nats-Rollup: all`, and `sub`
a subject; KV purge is a publish with `KV-Operation: PURGE`. A tries them on its own keys in
every bucket clusters write (and the one they follow), through every write path it has or had
(a publish into the stream, the domain path `$JS.hub.API.$KV...`, the hub's intake), and the
JetStream purge/delete APIs on B's keys. Each attempt is answered, refused or timed out before
the check, so no wait is needed: B's records are all still there, unchanged.
"""

from __future__ import annotations

import asyncio

from tests.isolation.attackers import (
    ALL_CLUSTER_BUCKETS,
    APIS,
    Attacker,
    seed_records,
    unchanged,
)
from tests.registration.harness import RegistrationHub

DESTRUCTIVE_HEADERS = (
    {"Nats-Rollup": "all"},
    {"Nats-Rollup": "sub"},
    {"KV-Operation": "PURGE", "Nats-Rollup": "all"},
)


async def test_rollup_headers_on_own_keys_leave_others_records(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    seeded = await seed_records(hub, bystander.namespace)
    await asyncio.gather(
        *(
            attacker.store(bucket, f"{attacker.namespace}.x", b'{"phase":"Success"}', headers)
            for bucket in ALL_CLUSTER_BUCKETS
            for headers in DESTRUCTIVE_HEADERS
        )
    )
    assert await unchanged(hub, seeded) == {}, "A's rollup purged B's records"


async def test_intake_delete_with_rollup_headers_leaves_others_records(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    seeded = await seed_records(hub, bystander.namespace)
    await asyncio.gather(
        *(
            attacker.intake("delete", b"", {**headers, "Clusternet-Bucket": bucket, "Clusternet-Key": key})
            for bucket in ALL_CLUSTER_BUCKETS
            for headers in DESTRUCTIVE_HEADERS
            for key in (f"{attacker.namespace}.x", f"{bystander.namespace}.precious")
        )
    )
    assert await unchanged(hub, seeded) == {}, "A's intake delete removed B's records"


async def test_purge_and_delete_apis_leave_others_records(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    seeded = await seed_records(hub, bystander.namespace)
    attempts = []
    for (bucket, key), (_, revision) in seeded.items():
        stream = f"KV_{bucket}"
        for api in APIS:
            attempts += [
                attacker.js_api(f"STREAM.PURGE.{stream}", {"filter": f"$KV.{bucket}.{key}"}, api),
                attacker.js_api(f"STREAM.PURGE.{stream}", {"filter": f"$KV.{bucket}.{bystander.namespace}.>"}, api),
                attacker.js_api(f"STREAM.PURGE.{stream}", {}, api),
                attacker.js_api(f"STREAM.MSG.DELETE.{stream}", {"seq": revision, "no_erase": True}, api),
                attacker.js_api(f"STREAM.DELETE.{stream}", None, api),
                attacker.js_api(f"STREAM.UPDATE.{stream}", {"name": stream, "subjects": [], "max_msgs": 1}, api),
            ]
    await asyncio.gather(*attempts)
    assert await unchanged(hub, seeded) == {}, "A's purge or delete request removed B's records"
    await attacker.settle()
    assert attacker.violations() > 0, "the server reported no permission violation"
