"""Incremental fetch sessions (KIP-227) on the wire: a full fetch opens a session, incremental
fetches answer only partitions with news, and stale or unknown sessions get Kafka's errors.
Followers and kafka-python's consumer use sessions too, so the replication and consumer tests
exercise them under load."""

from __future__ import annotations

import uuid
from typing import Any

from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import FETCH, HUGE, topic_spec
from tests.integration.wire import (
    WireClient,
    broker_address,
    controller_address,
    create_topics,
    list_offsets,
    produce,
)

NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 0, 70, 71
FETCH_VERSION = 12
LEADER = 1
TIMEOUT_S = 30.0


def _partition(partition: int, offset: int) -> dict[str, int]:
    return {
        "partition": partition,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": HUGE,
    }


def _fetch(
    client: WireClient,
    session_id: int,
    epoch: int,
    topic: str,
    offsets: dict[int, int],
    forgotten: list[int] | None = None,
) -> Any:
    fields = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": HUGE,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [{"topic": topic, "partitions": [_partition(p, o) for p, o in offsets.items()]}]
        if offsets
        else [],
        "forgotten_topics_data": [{"topic": topic, "partitions": forgotten}] if forgotten else [],
        "rack_id": "",
    }
    return client.request(FETCH, FETCH_VERSION, fields)


def _answered(response: Any) -> dict[int, int]:
    """Partition -> number of records, for each partition the response holds."""
    assert int(response.error_code) == NONE, response
    return {
        int(p.partition_index): len(decode_records(p.records or b""))
        for t in response.responses
        for p in t.partitions
    }


def _topic_on_leader(cluster: ClusterHandle) -> str:
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    spec = topic_spec(topic, -1, -1, assignments={0: [LEADER], 1: [LEADER]})
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [spec]).topics[0].error_code) == NONE

    def served() -> bool:
        with WireClient.to(broker_address(cluster, LEADER)) as client:
            return all(int(list_offsets(client, topic, p, -1).error_code) == NONE for p in (0, 1))

    wait_until(served, TIMEOUT_S, f"broker {LEADER} leading both partitions of {topic}")
    return topic


def _produce(client: WireClient, topic: str, partition: int, count: int) -> None:
    batch = build_batch([SimpleRecord(None, b"v%d" % i) for i in range(count)])
    assert int(produce(client, topic, partition, batch).error_code) == NONE


def test_incremental_fetches_answer_only_partitions_with_news(cluster: ClusterHandle) -> None:
    topic = _topic_on_leader(cluster)
    with WireClient.to(broker_address(cluster, LEADER)) as client:
        _produce(client, topic, 0, 3)
        full = _fetch(client, 0, 0, topic, {0: 0, 1: 0})
        session_id = int(full.session_id)
        assert session_id != 0, "a full fetch with epoch 0 opens a session"
        assert _answered(full) == {0: 3, 1: 0}
        # The consumer moved on in partition 0 and names only that; nothing else is new.
        assert _answered(_fetch(client, session_id, 1, topic, {0: 3})) == {}
        _produce(client, topic, 1, 2)
        news = _fetch(client, session_id, 2, topic, {})
        assert int(news.session_id) == session_id
        assert _answered(news) == {1: 2}
        # Partition 1, forgotten, is no longer read; partition 0 has nothing new.
        _produce(client, topic, 1, 1)
        assert _answered(_fetch(client, session_id, 3, topic, {}, forgotten=[1])) == {}
        _produce(client, topic, 0, 4)
        assert _answered(_fetch(client, session_id, 4, topic, {})) == {0: 4}


def test_a_stale_epoch_or_unknown_session_is_refused(cluster: ClusterHandle) -> None:
    topic = _topic_on_leader(cluster)
    with WireClient.to(broker_address(cluster, LEADER)) as client:
        session_id = int(_fetch(client, 0, 0, topic, {0: 0}).session_id)
        assert session_id != 0
        stale = _fetch(client, session_id, 7, topic, {})
        assert (int(stale.error_code), int(stale.session_id)) == (INVALID_FETCH_SESSION_EPOCH, 0)
        # A refused request does not use up the epoch the session expects.
        assert int(_fetch(client, session_id, 1, topic, {}).error_code) == NONE
        unknown = _fetch(client, session_id ^ 0x5A5A5A5, 1, topic, {})
        assert int(unknown.error_code) == FETCH_SESSION_ID_NOT_FOUND
        # Epoch -1 closes the session: it is unknown afterwards.
        closing = _fetch(client, session_id, -1, topic, {0: 0})
        assert (int(closing.error_code), int(closing.session_id)) == (NONE, 0)
        gone = _fetch(client, session_id, 2, topic, {})
        assert int(gone.error_code) == FETCH_SESSION_ID_NOT_FOUND
