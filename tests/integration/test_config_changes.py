"""Topic config changes made the way Kafka's tools make them (/config/topics/<t> plus a
/config/changes notification) take effect on the brokers without a restart."""

from __future__ import annotations

import json

from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    leader_address,
    produce,
)

TOPIC = "config-changes"
MESSAGE_TOO_LARGE = 10


def _batch(value_bytes: int) -> bytes:
    return build_batch([SimpleRecord(None, b"x" * value_bytes, (), 1_700_000_000_000)])


def test_changed_max_message_bytes_applies_to_the_next_produce(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(TOPIC)])
        assert int(created.topics[0].error_code) == 0
    with WireClient.to(leader_address(cluster, TOPIC)) as client:
        assert int(produce(client, TOPIC, 0, _batch(2000)).error_code) == 0

        zk.set(
            f"/config/topics/{TOPIC}",
            json.dumps({"version": 1, "config": {"max.message.bytes": "1000"}}).encode(),
        )
        zk.create(
            "/config/changes/config_change_",
            json.dumps({"version": 2, "entity_path": f"topics/{TOPIC}"}).encode(),
            sequence=True,
        )

        def refused() -> bool:
            return int(produce(client, TOPIC, 0, _batch(2000)).error_code) == MESSAGE_TOO_LARGE

        wait_until(refused, 30, "the new max.message.bytes to apply")
        assert int(produce(client, TOPIC, 0, _batch(100)).error_code) == 0
