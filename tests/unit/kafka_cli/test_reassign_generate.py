"""kafka-reassign-partitions --generate places replicas as Kafka's tool does: rack-aware when
the listed brokers have racks (unless --disable-rack-aware), and refusing a mix of brokers with
and without one. A stand-in admin client answers Metadata and DescribeCluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from controller.assignment import NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED
from kafka_cli.common import ToolError
from kafka_cli.reassign_partitions import _generate

TOPICS_JSON = json.dumps({"version": 1, "topics": [{"topic": "t"}]})


class StandInAdmin:
    def __init__(self, racks: dict[int, str | None]) -> None:
        self.racks = racks

    def describe_cluster(self) -> dict[str, Any]:
        return {"brokers": [{"broker_id": b, "rack": r} for b, r in self.racks.items()]}

    def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
        partitions = [{"partition_index": p, "replica_nodes": [1, 2, 3]} for p in range(12)]
        return [{"name": "t", "error_code": ErrorCode.none, "partitions": partitions}]


def _proposed(output: str) -> dict[int, list[int]]:
    text = output.split("Proposed partition reassignment configuration\n", 1)[1]
    return {entry["partition"]: entry["replicas"] for entry in json.loads(text)["partitions"]}


def test_generate_places_each_partition_across_the_listed_brokers_racks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    racks: dict[int, str | None] = {b: f"rack-{(b - 1) % 3}" for b in range(1, 7)}
    _generate(StandInAdmin(racks), TOPICS_JSON, "1,2,3,4,5,6")
    proposed = _proposed(capsys.readouterr().out)
    assert len(proposed) == 12
    for replicas in proposed.values():
        assert len({racks[b] for b in replicas}) == 3


def test_generate_refuses_partial_racks_unless_rack_awareness_is_disabled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    racks: dict[int, str | None] = {1: "a", 2: "b", 3: None, 4: None}
    with pytest.raises(ToolError) as raised:
        _generate(StandInAdmin(racks), TOPICS_JSON, "1,2,3,4")
    assert str(raised.value) == NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED
    _generate(StandInAdmin(racks), TOPICS_JSON, "1,2,3,4", rack_aware=False)
    assert len(_proposed(capsys.readouterr().out)) == 12
