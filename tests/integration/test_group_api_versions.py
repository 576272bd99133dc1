"""The group and admin API versions Kafka 3.9 added over Kafka 3.0, on a real broker: over the
wire for the exact fields, and through confluent-kafka (librdkafka) and kafka-python, which now
negotiate them.

OffsetCommit/OffsetFetch v9, FindCoordinator v5-v6, JoinGroup v8-v9, LeaveGroup v5, ListGroups
v5, ApiVersions v4, InitProducerId v5 and DescribeLogDirs v3-v4; each test names what its
version adds, as Kafka 3.9 answers it in ZooKeeper mode.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kio.schema.errors import ErrorCode

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, create_topics, first_broker

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = 8, 9, 10, 11
SYNC_GROUP, LEAVE_GROUP, LIST_GROUPS, API_VERSIONS = 14, 13, 16, 18
INIT_PRODUCER_ID, DESCRIBE_LOG_DIRS = 22, 35
GROUP_KEY, SHARE_KEY = 0, 2
NO_GENERATION = -1
COORDINATOR_WAIT_S = 60.0
CLIENT_TIMEOUT_S = 60.0
# Other writers share the disk: the usable bytes may move between our reading and the broker's.
USABLE_BYTES_SLACK = 1 << 30


@pytest.fixture(scope="module")
def broker(make_cluster_module: Callable[..., ClusterHandle]) -> ClusterHandle:
    return make_cluster_module(
        brokers=1,
        overrides={
            "offsets.topic.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
        },
    )


@pytest.fixture(scope="module")
def topic(broker: ClusterHandle) -> str:
    name = _unique("topic")
    with WireClient.to(first_broker(broker)) as client:
        assert (
            int(create_topics(client, [topic_spec(name, partitions=2)]).topics[0].error_code) == 0
        )
    return name


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _request(cluster: ClusterHandle, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    with WireClient.to(first_broker(cluster)) as client:
        return client.request(api_key, version, fields)


def _find_group(cluster: ClusterHandle, version: int, key_type: int, key: str) -> Any:
    fields = {"key": key, "key_type": key_type, "coordinator_keys": [key]}
    return _request(cluster, FIND_COORDINATOR, version, fields)


def _wait_for_coordinator(cluster: ClusterHandle, group: str) -> None:
    def found() -> bool:
        answer = _find_group(cluster, 6, GROUP_KEY, group).coordinators[0]
        return int(answer.error_code) == 0

    wait_until(found, COORDINATOR_WAIT_S, f"a coordinator for {group}")


def _commit(cluster: ClusterHandle, group: str, topic: str, generation: int, offset: int) -> Any:
    partition = {
        "partition_index": 0,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "committed_metadata": "meta",
    }
    fields = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [partition]}],
    }
    response = _request(cluster, OFFSET_COMMIT, 9, fields)
    return response.topics[0].partitions[0].error_code


def test_offset_commit_and_fetch_v9_check_a_classic_generation_and_ignore_member_epochs(
    broker: ClusterHandle, topic: str
) -> None:
    """v9 exists for KIP-848's consumer groups, which ZooKeeper-mode Kafka 3.9 does not run:
    the generation-or-epoch field is a classic generation, and OffsetFetch's member id and
    epoch are ignored."""
    group, memberless = _unique("v9"), _unique("v9-gen")
    _wait_for_coordinator(broker, group)
    _wait_for_coordinator(broker, memberless)
    assert _commit(broker, group, topic, NO_GENERATION, 7) == ErrorCode.none
    # A generation for a group the coordinator does not know: a stale member, not a new group.
    assert _commit(broker, memberless, topic, 3, 7) == ErrorCode.illegal_generation
    fields = {
        "groups": [
            {"group_id": group, "member_id": "not-a-member", "member_epoch": 42, "topics": None},
            {
                "group_id": memberless,
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": topic, "partition_indexes": [0]}],
            },
        ],
        "require_stable": False,
    }
    response = _request(broker, OFFSET_FETCH, 9, fields)
    answers = {
        g.group_id: (
            g.error_code,
            [
                (t.name, int(p.partition_index), int(p.committed_offset))
                for t in g.topics
                for p in t.partitions
            ],
        )
        for g in response.groups
    }
    assert answers == {
        group: (ErrorCode.none, [(topic, 0, 7)]),
        memberless: (ErrorCode.none, [(topic, 0, -1)]),
    }


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (3, ErrorCode.invalid_request),
        (4, ErrorCode.invalid_request),
        (5, ErrorCode.invalid_request),
        (6, ErrorCode.coordinator_not_available),
    ],
)
def test_find_coordinator_share_keys_are_refused_below_v6_and_unavailable_from_v6(
    broker: ClusterHandle, version: int, expected: ErrorCode
) -> None:
    """KIP-932 share groups: Kafka 3.9 knows the key type from v6 but has no share
    coordinator to name."""
    response = _find_group(broker, version, SHARE_KEY, _unique("share"))
    answer = response if version < 4 else response.coordinators[0]
    assert (answer.error_code, int(answer.node_id)) == (expected, -1)


def test_find_coordinator_v6_names_group_coordinators_for_several_keys(
    broker: ClusterHandle,
) -> None:
    groups = [_unique("find"), _unique("find")]
    for group in groups:
        _wait_for_coordinator(broker, group)
    fields = {"key_type": GROUP_KEY, "coordinator_keys": groups}
    response = _request(broker, FIND_COORDINATOR, 6, fields)
    port = broker.broker_port(1)
    assert [(c.key, c.error_code, int(c.node_id), int(c.port)) for c in response.coordinators] == [
        (group, ErrorCode.none, 1, port) for group in groups
    ]


def _join(
    cluster: ClusterHandle, version: int, group: str, member_id: str, instance_id: str | None
) -> Any:
    fields = {
        "group_id": group,
        "session_timeout": 30000,
        "rebalance_timeout": 30000,
        "member_id": member_id,
        "group_instance_id": instance_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"subscription"}],
        "reason": "joining for a test",
    }
    return _request(cluster, JOIN_GROUP, version, fields)


def _sync(cluster: ClusterHandle, group: str, joined: Any, instance_id: str | None) -> Any:
    fields = {
        "group_id": group,
        "generation_id": joined.generation_id,
        "member_id": joined.member_id,
        "group_instance_id": instance_id,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": joined.member_id, "assignment": b"assignment"}],
    }
    return _request(cluster, SYNC_GROUP, 5, fields)


def _stable_static_group(cluster: ClusterHandle, instance_id: str) -> tuple[str, Any]:
    group = _unique("static")
    _wait_for_coordinator(cluster, group)
    joined = _join(cluster, 9, group, "", instance_id)
    assert (joined.error_code, joined.leader) == (ErrorCode.none, joined.member_id)
    assert _sync(cluster, group, joined, instance_id).error_code == ErrorCode.none
    return group, joined


def test_join_group_v9_tells_a_rejoining_static_leader_to_skip_the_assignment(
    broker: ClusterHandle,
) -> None:
    """KIP-814: the leader of a Stable group rejoining under its instance id learns it leads,
    with the members, but must not assign (the group keeps its assignment)."""
    group, first = _stable_static_group(broker, "instance-a")
    rejoined = _join(broker, 9, group, "", "instance-a")
    assert rejoined.error_code == ErrorCode.none
    assert rejoined.skip_assignment is True
    assert rejoined.generation_id == first.generation_id
    assert rejoined.member_id != first.member_id
    assert rejoined.leader == rejoined.member_id
    assert [(m.member_id, m.group_instance_id) for m in rejoined.members] == [
        (rejoined.member_id, "instance-a")
    ]


def test_join_group_v8_names_the_old_leader_to_a_rejoining_static_leader(
    broker: ClusterHandle,
) -> None:
    """Before v9, the rejoining static leader is given the old leader id and no members, so it
    does not believe it leads and run an assignment."""
    group, first = _stable_static_group(broker, "instance-b")
    rejoined = _join(broker, 8, group, "", "instance-b")
    assert rejoined.error_code == ErrorCode.none
    assert rejoined.generation_id == first.generation_id
    assert rejoined.member_id != first.member_id
    assert (rejoined.leader, list(rejoined.members)) == (first.member_id, [])


def test_leave_group_v5_removes_the_member_and_logs_its_reason(broker: ClusterHandle) -> None:
    group = _unique("leave")
    _wait_for_coordinator(broker, group)
    required = _join(broker, 9, group, "", None)
    assert required.error_code == ErrorCode.member_id_required
    joined = _join(broker, 9, group, required.member_id, None)
    assert joined.error_code == ErrorCode.none
    reason = f"closing {uuid.uuid4().hex}"
    fields = {
        "group_id": group,
        "members": [{"member_id": joined.member_id, "group_instance_id": None, "reason": reason}],
    }
    response = _request(broker, LEAVE_GROUP, 5, fields)
    assert response.error_code == ErrorCode.none
    assert [(m.member_id, m.error_code) for m in response.members] == [
        (joined.member_id, ErrorCode.none)
    ]
    described = _request(broker, 15, 5, {"groups": [group], "include_authorized_operations": False})
    assert (described.groups[0].group_state, list(described.groups[0].members)) == ("Empty", [])
    log = broker.broker_log(1).read_text(errors="replace")
    assert f"client reason: {reason}" in log


def _listed(cluster: ClusterHandle, types_filter: list[str]) -> dict[str, tuple[str, str]]:
    response = _request(
        cluster, LIST_GROUPS, 5, {"states_filter": [], "types_filter": types_filter}
    )
    assert response.error_code == ErrorCode.none
    return {g.group_id: (g.group_state, g.group_type) for g in response.groups}


def test_list_groups_v5_names_every_group_classic_and_filters_by_type(
    broker: ClusterHandle, topic: str
) -> None:
    """KIP-848: a ZooKeeper-mode coordinator has only classic groups; a type filter matches
    case-insensitively, and one without `classic` lists nothing."""
    group = _unique("listed")
    _wait_for_coordinator(broker, group)
    assert _commit(broker, group, topic, NO_GENERATION, 1) == ErrorCode.none
    assert _listed(broker, [])[group] == ("Empty", "classic")
    assert _listed(broker, ["Classic"])[group] == ("Empty", "classic")
    assert _listed(broker, ["consumer", "CLASSIC"])[group] == ("Empty", "classic")
    assert _listed(broker, ["consumer"]) == {}
    assert _listed(broker, ["share"]) == {}
    assert _listed(broker, ["no-such-type"]) == {}


def test_confluent_kafka_lists_consumer_groups_by_type(broker: ClusterHandle, topic: str) -> None:
    """librdkafka sends ListGroups v5 for a type filter and reads each group's type."""
    group = _unique("typed")
    _wait_for_coordinator(broker, group)
    assert _commit(broker, group, topic, NO_GENERATION, 1) == ErrorCode.none
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def listed(types: set[ConsumerGroupType]) -> dict[str, ConsumerGroupType]:
        future = admin.list_consumer_groups(types=types, request_timeout=CLIENT_TIMEOUT_S)
        result = future.result(timeout=CLIENT_TIMEOUT_S)
        assert result.errors == []
        return {g.group_id: g.type for g in result.valid}

    assert listed({ConsumerGroupType.CLASSIC})[group] == ConsumerGroupType.CLASSIC
    assert group not in listed({ConsumerGroupType.CONSUMER})


def test_api_versions_v4_answers_as_v3_does(broker: ClusterHandle) -> None:
    """v4 only lets a broker list features whose minimum version is 0 (KAFKA-17011); Kafka 3.9
    in ZooKeeper mode lists no supported features at either version."""
    software = {"client_software_name": "test", "client_software_version": "1"}
    answers = [_request(broker, API_VERSIONS, version, software) for version in (3, 4)]
    for answer in answers:
        assert answer.error_code == ErrorCode.none
        assert list(answer.supported_features) == []
    v3, v4 = (
        {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in a.api_keys}
        for a in answers
    )
    assert v3 == v4
    assert v4[API_VERSIONS] == (0, 4)


def test_init_producer_id_v5_gives_an_idempotent_producer_an_id(broker: ClusterHandle) -> None:
    fields = {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    response = _request(broker, INIT_PRODUCER_ID, 5, fields)
    assert response.error_code == ErrorCode.none
    assert (int(response.producer_id) >= 0, int(response.producer_epoch)) == (True, 0)


def _data_dir(cluster: ClusterHandle) -> str:
    return str((cluster.dir / "broker-1" / "data").absolute())


@pytest.mark.parametrize("version", [3, 4])
def test_describe_log_dirs_v3_and_v4_list_only_the_asked_partitions_with_a_top_level_error(
    broker: ClusterHandle, topic: str, version: int
) -> None:
    """v3 adds the top-level error code. Like Kafka 3.9 (KAFKA-16807), a directory lists only
    topics with a partition that was asked for."""
    fields = {
        "topics": [{"topic": topic, "partitions": [1]}, {"topic": "absent", "partitions": [0]}]
    }
    response = _request(broker, DESCRIBE_LOG_DIRS, version, fields)
    assert response.error_code == ErrorCode.none
    (result,) = response.results
    assert (result.error_code, result.log_dir) == (ErrorCode.none, _data_dir(broker))
    listed = {t.name: [int(p.partition_index) for p in t.partitions] for t in result.topics}
    assert listed == {topic: [1]}


def test_describe_log_dirs_v4_reports_the_file_system_bytes(broker: ClusterHandle) -> None:
    response = _request(broker, DESCRIBE_LOG_DIRS, 4, {"topics": []})
    (result,) = response.results
    usage = shutil.disk_usage(_data_dir(broker))
    assert list(result.topics) == []
    assert int(result.total_bytes) == usage.total
    assert abs(int(result.usable_bytes) - usage.free) <= USABLE_BYTES_SLACK
    assert 0 < int(result.usable_bytes) <= int(result.total_bytes)


def test_kafka_python_describe_log_dirs_at_v4_carries_the_bytes(
    broker: ClusterHandle, topic: str
) -> None:
    """kafka-python negotiates v4 and hands the new fields to its caller."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (described,) = admin.describe_log_dirs({topic: [0]})
    finally:
        admin.close()
    (log_dir,) = described["log_dirs"]
    assert log_dir["log_dir"] == _data_dir(broker)
    assert log_dir["total_bytes"] == shutil.disk_usage(_data_dir(broker)).total
    assert [
        (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]
    ] == [(topic, [0])]
