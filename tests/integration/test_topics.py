"""Topic lifecycle on the wire: CreateTopics and DeleteTopics (controller only, errors,
validate_only, assignments), Metadata (auto-creation, all topics, brokers, controller, topic
ids, offline partitions), checked against ZooKeeper with kazoo."""

from __future__ import annotations

import base64
import json
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session
from tests.integration.requests import DELETE_TOPICS, topic_spec
from tests.integration.wire import (
    WireClient,
    broker_address,
    controller_address,
    controller_id,
    create_topics,
    delete_topics,
    fetch,
    first_broker,
    leader_address,
    list_offsets,
    metadata,
    produce,
)

NONE, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE = 0, 3, 5
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR = 36, 37, 38
INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, NOT_CONTROLLER = 39, 40, 41
UNKNOWN_TOPIC_ID = 100
TIMEOUT_S = 60
ZERO_UUID = uuid.UUID(int=0)


# -- helpers ------------------------------------------------------------------------------


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _metadata(
    address: str,
    topics: list[str] | None,
    version: int = 9,
    allow_auto_create: bool = False,
) -> Any:
    with WireClient.to(address) as client:
        return metadata(client, topics, version, allow_auto_create)


def _topic_metadata(address: str, topic: str, version: int = 9) -> Any:
    topics = _metadata(address, [topic], version).topics
    assert [t.name for t in topics] == [topic]
    return topics[0]


def _non_controller_id(cluster: ClusterHandle) -> int:
    controller = controller_id(cluster)
    return next(b for b in cluster.broker_ids if b != controller)


def _create_topics(address: str, specs: list[dict[str, Any]], validate_only: bool = False) -> Any:
    with WireClient.to(address, timeout_s=40) as client:
        response = create_topics(client, specs, version=7, validate_only=validate_only)
    return {t.name: t for t in response.topics}


def _create_topic(cluster: ClusterHandle, name: str, partitions: int = 1, rf: int = 1) -> Any:
    result = _create_topics(controller_address(cluster), [topic_spec(name, partitions, rf)])[name]
    assert int(result.error_code) == NONE, result
    return result


def _delete_topics(address: str, names: list[str]) -> dict[str, int]:
    with WireClient.to(address, timeout_s=40) as client:
        response = delete_topics(client, names, version=6)
    return {r.name: int(r.error_code) for r in response.responses}


def _zk_topic(zk: KazooClient, topic: str) -> dict[str, Any] | None:
    path = f"/brokers/topics/{topic}"
    if zk.exists(path) is None:
        return None
    znode: dict[str, Any] = json.loads(zk.get(path)[0])
    return znode


def _kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: url-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _is_unknown(address: str, topic: str) -> bool:
    return int(_topic_metadata(address, topic).error_code) == UNKNOWN_TOPIC_OR_PARTITION


def _knows_all(address: str, topics: list[str]) -> bool:
    return not any(_is_unknown(address, t) for t in topics)


def _leader_is_none(address: str, topic: str) -> bool:
    return int(_topic_metadata(address, topic).partitions[0].leader_id) == -1


def _leaders_ready(cluster: ClusterHandle, topic: str, partitions: int) -> bool:
    """Every broker's metadata shows `partitions` partitions, each with a live leader."""
    for broker_id in cluster.broker_ids:
        metadata = _metadata(broker_address(cluster, broker_id), [topic])
        live = {int(b.node_id) for b in metadata.brokers}
        entry = metadata.topics[0]
        if int(entry.error_code) != NONE or len(entry.partitions) != partitions:
            return False
        if not all(
            int(p.error_code) == NONE and int(p.leader_id) in live for p in entry.partitions
        ):
            return False
    return True


def _partition_dirs(cluster: ClusterHandle, topic: str) -> list[Path]:
    """The live `<topic>-<partition>` directories in every broker's data dir."""
    found = []
    for broker_id in cluster.broker_ids:
        data_dir = cluster.dir / f"broker-{broker_id}" / "data"
        for path in data_dir.iterdir() if data_dir.exists() else []:
            base, _, partition = path.name.rpartition("-")
            if base == topic and partition.isdigit() and path.is_dir():
                found.append(path)
    return found


def _latest_offset(address: str, topic: str) -> tuple[int, int]:
    with WireClient.to(address) as client:
        result = list_offsets(client, topic, 0, -1)
    return int(result.error_code), int(result.offset)


def _produce(address: str, topic: str, values: list[bytes]) -> int:
    records = build_batch([SimpleRecord(None, v, (), 1_700_000_000_000) for v in values])
    with WireClient.to(address) as client:
        return int(produce(client, topic, 0, records, acks=-1, version=9).error_code)


def _fetch_from_start(address: str, topic: str) -> Any:
    with WireClient.to(address) as client:
        return fetch(client, topic, 0, 0, version=12)


# -- CreateTopics / DeleteTopics on a non-controller --------------------------------------


def test_create_and_delete_topics_on_a_non_controller_get_not_controller(
    cluster: ClusterHandle,
) -> None:
    other = broker_address(cluster, _non_controller_id(cluster))
    names = [_unique("nc-a"), _unique("nc-b")]
    results = _create_topics(other, [topic_spec(n) for n in names])
    assert {n: int(r.error_code) for n, r in results.items()} == dict.fromkeys(
        names, NOT_CONTROLLER
    )
    for name in names:
        assert _is_unknown(other, name)

    existing = _unique("nc-existing")
    _create_topic(cluster, existing)
    wait_until(
        lambda: int(_topic_metadata(other, existing).error_code) == NONE,
        TIMEOUT_S,
        "the non-controller to learn the new topic",
    )
    assert _delete_topics(other, [existing, names[0]]) == {
        existing: NOT_CONTROLLER,
        names[0]: NOT_CONTROLLER,
    }
    assert int(_topic_metadata(other, existing).error_code) == NONE
    with zk_session(cluster) as zk:
        assert zk.exists(f"/admin/delete_topics/{existing}") is None
        assert _zk_topic(zk, existing) is not None


# -- CreateTopics errors on the controller ------------------------------------------------


def test_create_topics_errors_on_the_controller(cluster: ClusterHandle) -> None:
    controller = controller_address(cluster)
    existing = _unique("exists")
    _create_topic(cluster, existing)
    cases = {
        existing: (topic_spec(existing), TOPIC_ALREADY_EXISTS),
        _unique("zero-partitions"): (topic_spec("", partitions=0), INVALID_PARTITIONS),
        _unique("rf4"): (topic_spec("", replication_factor=4), INVALID_REPLICATION_FACTOR),
        _unique("unknown-config"): (
            topic_spec("", configs={"no.such.config": "1"}),
            INVALID_CONFIG,
        ),
        _unique("bad-value"): (
            topic_spec("", configs={"retention.ms": "not-a-number"}),
            INVALID_CONFIG,
        ),
        _unique("bad-policy"): (
            topic_spec("", configs={"cleanup.policy": "shred"}),
            INVALID_CONFIG,
        ),
    }
    specs = [{**spec, "name": name} for name, (spec, _) in cases.items()]
    results = _create_topics(controller, specs)
    assert {n: int(r.error_code) for n, r in results.items()} == {
        name: expected for name, (_, expected) in cases.items()
    }
    for name in cases:
        if name != existing:
            assert _is_unknown(controller, name), name
    with zk_session(cluster) as zk:
        for name in cases:
            if name != existing:
                assert _zk_topic(zk, name) is None, name


# -- CreateTopics / CreatePartitions answered once every broker shows the leaders ---------

CREATE_PARTITIONS = 37
PROPAGATION_ROUNDS = 8


def test_every_broker_shows_new_leaders_once_create_topics_is_answered(
    cluster: ClusterHandle,
) -> None:
    """Kafka's controller tells every broker at once; ours learn from ZooKeeper one by one,
    so without waiting for them a client asking another broker right after CreateTopics was
    told the topic does not exist (aiokafka's group leader then assigned nothing)."""
    controller = controller_address(cluster)
    for _ in range(PROPAGATION_ROUNDS):
        name = _unique("propagated")
        result = _create_topics(controller, [topic_spec(name, 6, 3)])[name]
        assert int(result.error_code) == NONE, result
        assert _leaders_ready(cluster, name, 6), f"a broker did not show {name}'s leaders"


def test_every_broker_shows_added_partitions_once_create_partitions_is_answered(
    cluster: ClusterHandle,
) -> None:
    controller = controller_address(cluster)
    name = _unique("grown")
    _create_topic(cluster, name, partitions=1, rf=3)
    for count in range(2, 2 + PROPAGATION_ROUNDS):
        fields = {
            "topics": [{"name": name, "count": count, "assignments": None}],
            "timeout": 30000,
            "validate_only": False,
        }
        with WireClient.to(controller, timeout_s=40) as client:
            response = client.request(CREATE_PARTITIONS, 3, fields)
        assert [int(r.error_code) for r in response.results] == [NONE], response
        assert _leaders_ready(cluster, name, count), f"a broker did not show {count} partitions"


def test_validate_only_creates_nothing(cluster: ClusterHandle) -> None:
    controller = controller_address(cluster)
    name = _unique("validate-only")
    results = _create_topics(controller, [topic_spec(name, 4, 2)], validate_only=True)
    assert int(results[name].error_code) == NONE
    assert int(results[name].num_partitions) == 4
    assert int(results[name].replication_factor) == 2
    # validate_only still reports errors.
    bad = _unique("validate-only-bad")
    results = _create_topics(controller, [topic_spec(bad, 0)], validate_only=True)
    assert int(results[bad].error_code) == INVALID_PARTITIONS
    for broker_id in cluster.broker_ids:
        assert _is_unknown(broker_address(cluster, broker_id), name)
    with zk_session(cluster) as zk:
        assert _zk_topic(zk, name) is None
        assert zk.exists(f"/config/topics/{name}") is None
    assert _partition_dirs(cluster, name) == []


def test_create_topics_answers_the_new_topics_configs(cluster: ClusterHandle) -> None:
    """v5+: every topic config with its value and source, as Kafka's Java admin client (and
    so `kafka-topics --create`) expects."""
    name = _unique("with-configs")
    spec = topic_spec(name, configs={"retention.ms": "123456"})
    for validate_only in (True, False):
        result = _create_topics(controller_address(cluster), [spec], validate_only)[name]
        assert int(result.error_code) == NONE
        configs = {c.name: c for c in result.configs}
        assert configs["retention.ms"].value == "123456"
        assert int(configs["retention.ms"].config_source) == 1  # DYNAMIC_TOPIC_CONFIG
        assert configs["cleanup.policy"].value == "delete"
        assert int(configs["cleanup.policy"].config_source) == 5  # DEFAULT_CONFIG
        assert not configs["cleanup.policy"].read_only
    failed = _create_topics(controller_address(cluster), [spec])[name]
    assert int(failed.error_code) != NONE and failed.configs is None  # as Kafka: unset


def test_explicit_assignments_are_honoured(cluster: ClusterHandle) -> None:
    controller = controller_address(cluster)
    name = _unique("assigned")
    # Kafka wants the same replica count for every partition (else INVALID_REPLICA_ASSIGNMENT).
    uneven = _unique("uneven")
    spec = topic_spec(uneven, partitions=-1, replication_factor=-1, assignments={0: [1, 2], 1: [3]})
    assert int(_create_topics(controller, [spec])[uneven].error_code) == INVALID_REPLICA_ASSIGNMENT
    assignments = {0: [2, 3], 1: [3, 1], 2: [1, 2]}
    spec = topic_spec(name, partitions=-1, replication_factor=-1, assignments=assignments)
    results = _create_topics(controller, [spec])
    assert int(results[name].error_code) == NONE
    with zk_session(cluster) as zk:
        znode = _zk_topic(zk, name)
    assert znode is not None
    assert znode["partitions"] == {str(p): brokers for p, brokers in assignments.items()}
    wait_until(lambda: _leaders_ready(cluster, name, 3), TIMEOUT_S, "leaders for every partition")
    entry = _topic_metadata(controller, name)
    by_index = {int(p.partition_index): p for p in entry.partitions}
    for partition, brokers in assignments.items():
        assert list(by_index[partition].replica_nodes) == brokers
        assert int(by_index[partition].leader_id) == brokers[0]  # the preferred replica


# -- Metadata auto-creation ---------------------------------------------------------------


def test_metadata_auto_creates_topics_with_num_partitions(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(overrides={"num.partitions": "3"})
    address = first_broker(cluster)
    name = _unique("auto")
    first = _metadata(address, [name], version=9, allow_auto_create=True).topics[0]
    assert first.name == name
    assert int(first.error_code) in (LEADER_NOT_AVAILABLE, NONE)
    wait_until(lambda: _leaders_ready(cluster, name, 3), TIMEOUT_S, "the auto-created topic")
    with zk_session(cluster) as zk:
        znode = _zk_topic(zk, name)
    assert znode is not None
    assert sorted(znode["partitions"]) == ["0", "1", "2"]


def test_metadata_without_allow_auto_create_does_not_create(cluster: ClusterHandle) -> None:
    address = first_broker(cluster)
    name = _unique("no-auto")
    entry = _metadata(address, [name], version=9, allow_auto_create=False).topics[0]
    assert int(entry.error_code) == UNKNOWN_TOPIC_OR_PARTITION
    assert list(entry.partitions) == []
    # Ask again so any (wrong) creation started by the first request would have shown up.
    assert _is_unknown(address, name)
    with zk_session(cluster) as zk:
        assert _zk_topic(zk, name) is None


def test_auto_create_disabled_in_broker_config_does_not_create(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"auto.create.topics.enable": "false"})
    address = first_broker(cluster)
    name = _unique("auto-off")
    for version in (3, 9, 11):
        entry = _metadata(address, [name], version=version, allow_auto_create=True).topics[0]
        assert int(entry.error_code) == UNKNOWN_TOPIC_OR_PARTITION, version
    assert _is_unknown(address, name)
    with zk_session(cluster) as zk:
        assert _zk_topic(zk, name) is None


# -- DeleteTopics -------------------------------------------------------------------------


def test_delete_topics_removes_metadata_and_logs_and_recreate_starts_empty(
    cluster: ClusterHandle,
) -> None:
    name = _unique("deleted")
    created = _create_topic(cluster, name, partitions=2, rf=3)
    old_id = created.topic_id
    assert old_id not in (None, ZERO_UUID)
    wait_until(lambda: _leaders_ready(cluster, name, 2), TIMEOUT_S, "leaders of the new topic")
    leader = leader_address(cluster, name)
    assert _produce(leader, name, [b"old-1", b"old-2"]) == NONE
    wait_until(
        lambda: len(_partition_dirs(cluster, name)) == 6,
        TIMEOUT_S,
        "2 partition directories on each of the 3 brokers",
    )

    controller = controller_address(cluster)
    assert _delete_topics(controller, [name]) == {name: NONE}
    for broker_id in cluster.broker_ids:
        address = broker_address(cluster, broker_id)
        wait_until(partial(_is_unknown, address, name), TIMEOUT_S, f"{name} gone at {address}")
    wait_until(
        lambda: _partition_dirs(cluster, name) == [],
        TIMEOUT_S,
        "partition directories removed from every broker",
    )
    with zk_session(cluster) as zk:
        wait_until(
            lambda: (
                _zk_topic(zk, name) is None and zk.exists(f"/admin/delete_topics/{name}") is None
            ),
            TIMEOUT_S,
            "the deletion to finish in ZooKeeper",
        )
    # Deleting it again: it no longer exists.
    assert _delete_topics(controller, [name]) == {name: UNKNOWN_TOPIC_OR_PARTITION}

    recreated = _create_topic(cluster, name, partitions=1, rf=3)
    assert recreated.topic_id not in (None, ZERO_UUID, old_id)
    wait_until(lambda: _leaders_ready(cluster, name, 1), TIMEOUT_S, "leaders of the new topic")
    assert _topic_metadata(controller, name, version=11).topic_id == recreated.topic_id
    leader = leader_address(cluster, name)

    def empty_log_served() -> bool:
        return _latest_offset(leader, name) == (NONE, 0)

    wait_until(empty_log_served, TIMEOUT_S, "the re-created topic's leader to serve it")
    data = _fetch_from_start(leader, name)
    assert int(data.error_code) == NONE
    assert decode_records(data.records or b"") == []
    assert int(data.high_watermark) == 0


def test_delete_topics_by_topic_id(cluster: ClusterHandle) -> None:
    """DeleteTopics v6 names topics by id (KIP-516), as Kafka 3.9's Java admin client can: a
    known id deletes its topic, an unknown one is UNKNOWN_TOPIC_ID."""
    name = _unique("by-id")
    topic_id = _create_topic(cluster, name, partitions=1, rf=3).topic_id
    controller = controller_address(cluster)
    wait_until(partial(_knows_all, controller, [name]), TIMEOUT_S, f"{name} in the metadata")
    unknown = uuid.uuid4()
    request = {
        "topic_names": [],
        "topics": [{"name": None, "topic_id": topic_id}, {"name": None, "topic_id": unknown}],
        "timeout": 30000,
    }
    with WireClient.to(controller, timeout_s=40) as client:
        response = client.request(DELETE_TOPICS, 6, request)
    results = [(r.name, r.topic_id, int(r.error_code)) for r in response.responses]
    assert results == [(name, topic_id, NONE), (None, unknown, UNKNOWN_TOPIC_ID)]
    for broker_id in cluster.broker_ids:
        address = broker_address(cluster, broker_id)
        wait_until(partial(_is_unknown, address, name), TIMEOUT_S, f"{name} gone at {address}")


# -- Metadata contents --------------------------------------------------------------------


def test_metadata_lists_all_topics_brokers_controller_and_topic_ids(
    cluster: ClusterHandle,
) -> None:
    names = [_unique("listed-a"), _unique("listed-b")]
    results = {name: _create_topic(cluster, name, partitions=2) for name in names}
    for broker_id in cluster.broker_ids:
        address = broker_address(cluster, broker_id)
        wait_until(
            partial(_knows_all, address, names),
            TIMEOUT_S,
            f"the topics at {address}",
        )
        v0 = _metadata(address, [], version=0)
        assert set(names) <= {t.name for t in v0.topics}
        v1_all = _metadata(address, None, version=1)
        assert set(names) <= {t.name for t in v1_all.topics}
        assert {t.name for t in v1_all.topics} == {t.name for t in v0.topics}
        v1_none = _metadata(address, [], version=1)  # v1+: an empty list means no topics
        assert list(v1_none.topics) == []

        for version in (1, 9, 11):
            metadata = _metadata(address, None, version=version)
            brokers = {int(b.node_id): (b.host, int(b.port)) for b in metadata.brokers}
            assert brokers == {
                b: ("127.0.0.1", cluster.broker_port(b)) for b in cluster.broker_ids
            }, version
            with zk_session(cluster) as zk:
                controller = json.loads(zk.get("/controller")[0])["brokerid"]
            assert int(metadata.controller_id) == controller

    with zk_session(cluster) as zk:
        for name in names:
            znode = _zk_topic(zk, name)
            assert znode is not None
            for version in (10, 11):
                entry = _topic_metadata(first_broker(cluster), name, version)
                assert entry.topic_id not in (None, ZERO_UUID)
                assert _kafka_uuid(entry.topic_id) == znode["topic_id"]
                assert len(znode["topic_id"]) == 22
            assert results[name].topic_id == entry.topic_id


# -- offline partitions -------------------------------------------------------------------


def test_metadata_reports_offline_partition_when_its_only_replica_dies(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": "6000"})
    controller = controller_id(cluster)
    victim = next(b for b in cluster.broker_ids if b != controller)
    survivor = broker_address(cluster, controller)
    name = _unique("offline")
    spec = topic_spec(name, partitions=-1, replication_factor=-1, assignments={0: [victim]})
    assert int(_create_topics(survivor, [spec])[name].error_code) == NONE
    wait_until(lambda: _leaders_ready(cluster, name, 1), TIMEOUT_S, "the topic's leader")
    assert int(_topic_metadata(survivor, name).partitions[0].leader_id) == victim

    cluster.kill(victim, "KILL")

    def offline() -> bool:
        partition = _topic_metadata(survivor, name).partitions[0]
        return int(partition.leader_id) == -1

    wait_until(offline, TIMEOUT_S, "the partition to lose its leader")
    for broker_id in cluster.broker_ids:
        if broker_id == victim:
            continue
        address = broker_address(cluster, broker_id)
        wait_until(
            partial(_leader_is_none, address, name),
            TIMEOUT_S,
            f"{address} to see the partition offline",
        )
        metadata = _metadata(address, [name])
        assert victim not in {int(b.node_id) for b in metadata.brokers}
        entry = metadata.topics[0]
        assert int(entry.error_code) == NONE
        partition = entry.partitions[0]
        assert int(partition.error_code) == LEADER_NOT_AVAILABLE
        assert int(partition.leader_id) == -1
        assert list(partition.replica_nodes) == [victim]
        assert list(partition.offline_replicas) == [victim]
