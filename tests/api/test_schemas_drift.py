"""The committed proto-schemas/ are exactly what the models generate (regenerate on change)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
from clusternet_nats.api import schemas
from clusternet_nats.api.events import Event, EventType
from clusternet_nats.api.loader import load_path
from clusternet_nats.testing import compat
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "proto-schemas"


def test_regenerated_schemas_equal_committed(tmp_path: Path) -> None:
    assert schemas.main([str(tmp_path)]) == 0
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.json"))
    assert len(generated) == len(schemas.wire_messages()) >= 12  # every kind, the Event, registered messages
    for relpath in generated:
        committed = COMMITTED / relpath
        assert committed.exists(), f"{relpath} is not committed; run python -m clusternet_nats.api.schemas"
        assert committed.read_text() == (tmp_path / relpath).read_text(), f"{relpath} drifted"


def test_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert schemas.main(["--check", str(COMMITTED)]) == 0
    assert schemas.main(["--check", str(tmp_path)]) == 1
    assert "drifted: " in capsys.readouterr().err
    schemas.main([str(tmp_path)])
    target = tmp_path / "apps.clusternet.io" / "v1alpha1" / "Subscription.json"
    target.write_text(target.read_text().replace('"Replication"', '"Replicate"'))
    assert schemas.main(["--check", str(tmp_path)]) == 1
    assert str(target) in capsys.readouterr().err


def test_layout_and_format() -> None:
    paths = {m.path().as_posix() for m in schemas.wire_messages()}
    assert "apps.clusternet.io/v1alpha1/Subscription.json" in paths
    assert "clusters.clusternet.io/v1beta1/ClusterRegistrationRequest.json" in paths
    assert "core/v1/Event.json" in paths
    text = (COMMITTED / "apps.clusternet.io/v1alpha1/Subscription.json").read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "$defs"')
    schema = json.loads(text)
    assert schema["$defs"]["SchedulingStrategy"]["enum"] == ["Replication", "Dividing"]
    assert schema["$defs"]["SubscriptionSpec"]["properties"]["schedulingStrategy"]["default"] == "Replication"


def test_serialized_examples_satisfy_the_published_schemas() -> None:
    """A non-Python consumer validating against proto-schemas/ accepts what we send."""
    objects = load_path(compat.compat_path(compat.EXAMPLES))
    for obj in objects:
        schema = json.loads((COMMITTED / obj.GROUP / obj.VERSION / f"{obj.KIND}.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(obj.to_json_dict())


def test_register_message_hook() -> None:
    class Heartbeat(BaseModel):
        cluster_id: str

    schemas.register_message(Heartbeat, "messages.clusternet.io", "v1")
    try:
        (message,) = [m for m in schemas.wire_messages() if m.model is Heartbeat]
        assert message.path() == Path("messages.clusternet.io/v1/Heartbeat.json")
        assert message.path() in schemas.generate()
    finally:
        schemas._registered.remove(message)


def test_event_is_a_core_v1_event() -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    event = Event.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "app-demo.17a3b2c1", "namespace": "default"},
            "involvedObject": {
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "kind": "Subscription",
                "namespace": "default",
                "name": "app-demo",
                "uid": None,
            },
            "reason": "Scheduled",
            "message": "bound to 2 clusters",
            "type": "Normal",
            "source": {"component": "clusternet-scheduler"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": "clusternet-scheduler",
        }
    )
    assert event.type is EventType.NORMAL
    data = event.to_json_dict()
    assert data["involvedObject"] == {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "namespace": "default",
        "name": "app-demo",
    }
    assert data["firstTimestamp"] == "2024-01-01T00:00:00Z"
    assert Event.model_validate_json(event.to_json()) == event
    with pytest.raises(ValueError, match="Normal"):
        Event.model_validate({**data, "type": "Error"})
