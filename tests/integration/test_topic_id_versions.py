"""Kafka 3.9's data-path versions on the wire: Fetch v13-v17 name topics by id (unknown ids,
sessions keyed by id), Metadata v12 looks topics up by id, Produce v11 and Fetch v16 name the
current leader on NOT_LEADER_OR_FOLLOWER (KIP-951), and ListOffsets v8/v9 answer -4/-5."""

from __future__ import annotations

import time
import uuid
from typing import Any

from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import FETCH, METADATA, PRODUCE, produce_request, topic_spec
from tests.integration.wire import (
    LATEST,
    WireClient,
    broker_address,
    controller_address,
    create_topics,
    leader_address,
    list_offsets,
    metadata,
)

NONE, NOT_LEADER_OR_FOLLOWER, UNSUPPORTED_VERSION = 0, 6, 35
UNKNOWN_TOPIC_ID, FETCH_SESSION_TOPIC_ID_ERROR = 100, 106
EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -4, -5
WAIT_S = 30
LONG_POLL_MS = 2000


def _create_topic(cluster: ClusterHandle, replication_factor: int = 1) -> tuple[str, int]:
    """A one-partition topic; its name and leader id once the leader serves it."""
    name = f"ids-{uuid.uuid4().hex[:8]}"
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(name, 1, replication_factor)])
    assert int(created.topics[0].error_code) == NONE, created
    address = leader_address(cluster, name)
    return name, _broker_id(cluster, address)


def _broker_id(cluster: ClusterHandle, address: str) -> int:
    return next(b for b in cluster.broker_ids if broker_address(cluster, b) == address)


def _topic_id(address: str, topic: str) -> uuid.UUID:
    with WireClient.to(address) as client:
        (found,) = metadata(client, [topic], version=12).topics
    assert int(found.error_code) == NONE and found.topic_id is not None
    return uuid.UUID(str(found.topic_id))


def _produce(address: str, topic: str, values: list[bytes], version: int = 11) -> Any:
    batch = build_batch([SimpleRecord(None, v) for v in values])
    with WireClient.to(address) as client:
        return client.request(PRODUCE, version, produce_request(topic, 0, batch))


def _fetch_fields(
    topics: list[tuple[uuid.UUID | str, int]],
    session_id: int = 0,
    session_epoch: int = -1,
    forgotten: list[tuple[uuid.UUID | str, int]] | None = None,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
) -> dict[str, Any]:
    """A consumer's Fetch; each topic is named by id (v13+) or name (v12-) as given."""

    def topic_fields(topic: uuid.UUID | str) -> dict[str, Any]:
        return {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"topic": topic}

    return {
        "replica_id": -1,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": 1_000_000,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": session_epoch,
        "topics": [
            {
                **topic_fields(topic),
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1_000_000,
                    }
                ],
            }
            for topic, offset in topics
        ],
        "forgotten_topics_data": [
            {**topic_fields(topic), "partitions": [partition]}
            for topic, partition in forgotten or []
        ],
        "rack_id": "",
    }


def _values(partition: Any) -> list[bytes | None]:
    return [record.value for record in decode_records(partition.records or b"")]


def test_fetch_v13_to_v17_by_topic_id_reads_what_produce_v11_wrote(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    produced = _produce(address, topic, [b"one", b"two"])
    (result,) = produced.responses[0].partition_responses
    assert (int(result.error_code), int(result.base_offset)) == (NONE, 0)
    assert produced.node_endpoints == ()  # only leadership errors name a leader
    topic_id = _topic_id(address, topic)
    for version in range(13, 18):
        with WireClient.to(address) as client:
            response = client.request(FETCH, version, _fetch_fields([(topic_id, 0)]))
        assert int(response.error_code) == NONE
        (answered,) = response.responses
        assert answered.topic_id == topic_id, version
        (partition,) = answered.partitions
        assert int(partition.error_code) == NONE
        assert int(partition.high_watermark) == 2
        assert _values(partition) == [b"one", b"two"], version


def test_fetch_by_an_unknown_topic_id_answers_unknown_topic_id_beside_known_ones(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    _produce(address, topic, [b"known"])
    known, unknown = _topic_id(address, topic), uuid.uuid4()
    for version in (13, 17):
        with WireClient.to(address) as client:
            response = client.request(FETCH, version, _fetch_fields([(unknown, 0), (known, 0)]))
        by_id = {answered.topic_id: answered.partitions[0] for answered in response.responses}
        assert set(by_id) == {unknown, known}
        assert int(by_id[unknown].error_code) == UNKNOWN_TOPIC_ID
        assert int(by_id[unknown].high_watermark) == -1
        assert int(by_id[known].error_code) == NONE
        assert _values(by_id[known]) == [b"known"]
    # As in Kafka, an unknown id does not cut a long poll short: the fetch waits for the
    # known partition (at its end here) until max_wait; with only unknown ids it answers at once.
    at_end = _fetch_fields([(unknown, 0), (known, 1)], max_wait_ms=LONG_POLL_MS, min_bytes=1)
    assert _fetch_seconds(address, at_end) >= LONG_POLL_MS / 1000 * 0.9
    only_unknown = _fetch_fields([(unknown, 0)], max_wait_ms=60_000, min_bytes=1)
    assert _fetch_seconds(address, only_unknown) < 30


def _fetch_seconds(address: str, fields: dict[str, Any]) -> float:
    with WireClient.to(address, timeout_s=90) as client:
        started = time.monotonic()
        client.request(FETCH, 13, fields)
        return time.monotonic() - started


def test_a_fetch_session_by_topic_id_answers_new_records_and_refuses_v12(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    topic_id = _topic_id(address, topic)
    with WireClient.to(address) as client:
        full = client.request(FETCH, 13, _fetch_fields([(topic_id, 0)], session_epoch=0))
        session_id = int(full.session_id)
        assert session_id != 0 and int(full.error_code) == NONE
        assert [a.topic_id for a in full.responses] == [topic_id]
        # Nothing new: an incremental fetch of the session answers no partition.
        quiet = client.request(FETCH, 13, _fetch_fields([], session_id, 1))
        assert int(quiet.error_code) == NONE and quiet.responses == ()
        _produce(address, topic, [b"later"])
        moved = client.request(FETCH, 13, _fetch_fields([], session_id, 2))
        (answered,) = moved.responses
        assert answered.topic_id == topic_id
        assert _values(answered.partitions[0]) == [b"later"]
        # A session keyed by topic id cannot serve a request that names topics.
        by_name = client.request(FETCH, 12, _fetch_fields([], session_id, 3))
        assert int(by_name.error_code) == FETCH_SESSION_TOPIC_ID_ERROR


def test_metadata_v12_looks_topics_up_by_id(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    topic_id, unknown = _topic_id(address, topic), uuid.uuid4()
    request = {
        "topics": [{"name": None, "topic_id": unknown}, {"name": None, "topic_id": topic_id}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    with WireClient.to(address) as client:
        response = client.request(METADATA, 12, request)
    by_id = {t.topic_id: t for t in response.topics}
    assert set(by_id) == {unknown, topic_id}
    assert (int(by_id[unknown].error_code), by_id[unknown].name) == (UNKNOWN_TOPIC_ID, None)
    assert by_id[unknown].partitions == ()
    found = by_id[topic_id]
    assert (int(found.error_code), found.name) == (NONE, topic)
    assert [int(p.leader_id) for p in found.partitions] == [leader]


def test_produce_v11_and_fetch_v16_name_the_leader_and_its_endpoint(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    other = broker_address(cluster, next(b for b in cluster.broker_ids if b != leader))
    wait_until(
        lambda: _knows_leader(other, topic, leader), WAIT_S, "the other broker to see the leader"
    )
    leader_host, leader_port = broker_address(cluster, leader).rsplit(":", 1)
    expected_endpoint = (leader, leader_host, int(leader_port))

    produced = _produce(other, topic, [b"misdirected"])
    (result,) = produced.responses[0].partition_responses
    assert int(result.error_code) == NOT_LEADER_OR_FOLLOWER
    assert (int(result.current_leader.leader_id), int(result.current_leader.leader_epoch)) == (
        leader,
        0,
    )
    assert [_endpoint(e) for e in produced.node_endpoints] == [expected_endpoint]

    with WireClient.to(other) as client:
        response = client.request(FETCH, 16, _fetch_fields([(_topic_id(other, topic), 0)]))
    (partition,) = response.responses[0].partitions
    assert int(partition.error_code) == NOT_LEADER_OR_FOLLOWER
    assert int(partition.current_leader.leader_id) == leader
    assert int(partition.current_leader.leader_epoch) == 0
    assert [_endpoint(e) for e in response.node_endpoints] == [expected_endpoint]


def _knows_leader(address: str, topic: str, leader: int) -> bool:
    with WireClient.to(address) as client:
        topics = metadata(client, [topic], version=12).topics
    return bool(topics[0].partitions) and int(topics[0].partitions[0].leader_id) == leader


def _endpoint(endpoint: Any) -> tuple[int, str, int]:
    return int(endpoint.node_id), endpoint.host, int(endpoint.port)


def test_list_offsets_v9_earliest_local_is_earliest_and_latest_tiered_is_none(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    _produce(address, topic, [b"a", b"b", b"c"])
    with WireClient.to(address) as client:
        earliest = list_offsets(client, topic, 0, EARLIEST, version=9)
        local = list_offsets(client, topic, 0, EARLIEST_LOCAL, version=9)
        tiered = list_offsets(client, topic, 0, LATEST_TIERED, version=9)
        latest = list_offsets(client, topic, 0, LATEST, version=9)
        too_old = [
            list_offsets(client, topic, 0, EARLIEST_LOCAL, version=7),
            list_offsets(client, topic, 0, LATEST_TIERED, version=8),
        ]

    def answer(found: Any) -> tuple[int, int, int, int]:
        return (
            int(found.error_code),
            int(found.offset),
            int(found.timestamp),
            int(found.leader_epoch),
        )

    assert answer(local) == answer(earliest) == (NONE, 0, -1, 0)
    assert answer(tiered) == (NONE, -1, -1, -1)
    assert answer(latest)[:2] == (NONE, 3)
    assert [int(found.error_code) for found in too_old] == [UNSUPPORTED_VERSION] * 2
