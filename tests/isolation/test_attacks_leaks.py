"""Issue 7, class 6: leaks of other clusters' keys and revisions.

`STREAM.INFO` with a subjects filter lists every namespace's keys; an expected-last-subject-
sequence header naming B's key answers with B's revision; a direct get in the form granted for
A's own key may carry a body asking for another message; an error text may tell whether B's
key exists. B's records here have a distinctive revision; no answer A gets may name B's
namespace, carry B's data, or state B's revision.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from tests.isolation.attackers import (
    ALL_CLUSTER_BUCKETS,
    APIS,
    CLUSTER_WRITTEN,
    Attacker,
)
from tests.registration.harness import RegistrationHub

DISTINCT = 137
"""Each of B's records is rewritten until its revision is above this: a number no other answer has."""


async def seed_distinct(hub: RegistrationHub, namespace: str) -> dict[str, int]:
    """B's records, one per bucket, each at a revision of its own above DISTINCT."""
    js = hub.nc.jetstream()
    revisions: dict[str, int] = {}
    for bucket in ALL_CLUSTER_BUCKETS:
        kv = await js.key_value(bucket)
        revision = 0
        while revision <= DISTINCT + len(revisions):
            revision = await kv.put(f"{namespace}.precious", json.dumps({"owner": namespace}).encode())
        revisions[bucket] = revision
    return revisions


def tells(text: str, namespace: str, revisions: dict[str, int]) -> list[str]:
    found = [namespace] if namespace in text else []
    return found + [str(r) for r in revisions.values() if re.search(rf"(?<!\d){r}(?!\d)", text)]


async def test_stream_info_lists_no_other_namespace(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    revisions = await seed_distinct(hub, bystander.namespace)
    requests = [
        attacker.js_api(f"STREAM.INFO.KV_{bucket}", body, api)
        for bucket in ALL_CLUSTER_BUCKETS
        for api in APIS
        for body in (
            {"subjects_filter": ">"},
            {"subjects_filter": f"$KV.{bucket}.{bystander.namespace}.>"},
            {"subjects_filter": f"$KV.{bucket}.*.*"},
            {"deleted_details": True},
        )
    ]
    answers = [a for a in await asyncio.gather(*requests) if a is not None]
    leaks = [t for a in answers for t in tells(json.dumps(a), bystander.namespace, {})]
    assert leaks == [], f"STREAM.INFO told A of B's keys: {leaks}"
    del revisions


async def test_expected_sequence_headers_reveal_no_revision(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    revisions = await seed_distinct(hub, bystander.namespace)
    attempts = []
    for bucket in CLUSTER_WRITTEN:
        b_subject = f"$KV.{bucket}.{bystander.namespace}.precious"
        for expected in ("0", "1"):
            headers = {
                "Nats-Expected-Last-Subject-Sequence": expected,
                "Nats-Expected-Last-Subject-Sequence-Subject": b_subject,
            }
            attempts.append(attacker.store(bucket, f"{attacker.namespace}.probe", b'{"phase":"Success"}', headers))
        attempts.append(
            attacker.store(bucket, f"{attacker.namespace}.probe", b"{}", {"Nats-Expected-Last-Sequence": "1"})
        )
    answers: list[Any] = [a for found in await asyncio.gather(*attempts) for a in found]
    leaks = [t for a in answers for t in tells(json.dumps(a), bystander.namespace, revisions)]
    assert leaks == [], f"A learned B's revision from an error: {answers}"


async def test_direct_get_bodies_read_nothing_of_anothers(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    """The direct get granted for A's own keys names the key in the subject; a body asking for a
    sequence, a next-by-subject, a batch or multi-last must not return B's messages."""
    revisions = await seed_distinct(hub, bystander.namespace)
    js = hub.nc.jetstream()
    for bucket in ALL_CLUSTER_BUCKETS:
        await (await js.key_value(bucket)).put(f"{attacker.namespace}.own", b'{"own":true}')
    requests = []
    for bucket, revision in revisions.items():
        b_subject = f"$KV.{bucket}.{bystander.namespace}.precious"
        for body in (
            {"seq": revision},
            {"next_by_subj": b_subject, "seq": 1},
            {"last_by_subj": b_subject},
            {"multi_last": [b_subject, f"$KV.{bucket}.>"]},
            {"batch": 1000, "seq": 1},
            {"batch": 1000, "seq": 1, "next_by_subj": f"$KV.{bucket}.>"},
        ):
            for api in APIS:
                subject = f"{api}.DIRECT.GET.KV_{bucket}.$KV.{bucket}.{attacker.namespace}.own"
                requests.append(attacker.ask(subject, json.dumps(body).encode()))
                requests.append(attacker.ask(f"{api}.DIRECT.GET.KV_{bucket}", json.dumps(body).encode()))
    answers = [m for m in await asyncio.gather(*requests) if m is not None]
    leaks = [
        m.headers
        for m in answers
        if bystander.namespace.encode() in m.data or bystander.namespace in json.dumps(m.headers or {})
    ]
    assert leaks == [], f"A read B's records with a direct get: {leaks}"


async def test_intake_answers_do_not_tell_whether_anothers_key_exists(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    revisions = await seed_distinct(hub, bystander.namespace)

    async def ask(bucket: str, name: str) -> list[str]:
        key = f"{bystander.namespace}.{name}"
        headers = {"Clusternet-Bucket": bucket, "Clusternet-Key": key}
        answers = await asyncio.gather(
            *(
                attacker.intake("put", b"{}", {**headers, "Clusternet-Expected-Revision": str(revision)})
                for revision in (0, revisions[bucket])
            ),
            attacker.intake("delete", b"", headers),
            attacker.intake("get", b"", headers),
        )
        assert all(a is None or a.get("code") for a in answers), f"A wrote B's key: {answers}"
        return [json.dumps(a).replace(key, "KEY") for a in answers]

    for bucket in CLUSTER_WRITTEN:
        precious, absent = await asyncio.gather(ask(bucket, "precious"), ask(bucket, "absent"))
        leaks = [t for a in precious for t in tells(a, "-never-", revisions)]
        assert leaks == [], f"the intake told A B's revision: {precious}"
        assert precious == absent, f"the intake tells whether B's key exists: {precious} / {absent}"
