"""A group driven with the old request versions sarama 1.x still sends (FindCoordinator v0,
JoinGroup v1, SyncGroup v0, Heartbeat v0, OffsetCommit v1, OffsetFetch v1), and the other old
versions kio no longer ships (derived in broker/protocol/legacy.py)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.wire import (
    WireClient,
    controller_address,
    first_broker,
    leader_address,
    metadata,
)

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS = 8, 9, 15
CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 19, 20, 23
NONE = 0
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def old_cluster(cluster: ClusterHandle) -> ClusterHandle:
    """The worker's shared cluster: its groups and topics have names of their own."""
    return cluster


def _coordinator(cluster: ClusterHandle, group: str) -> str:
    """The group's coordinator, once it serves the group: FindCoordinator names the offsets
    partition's leader as soon as the controller has chosen it, and until that broker has
    taken the leadership it answers NOT_COORDINATOR (as Kafka's does; clients retry)."""
    found: dict[str, str] = {}

    def serving() -> bool:
        with WireClient.to(first_broker(cluster)) as client:
            response = client.request(FIND_COORDINATOR, 0, {"key": group})
        if int(response.error_code) != NONE:
            return False
        found["address"] = f"{response.host}:{response.port}"
        with WireClient.to(found["address"]) as coordinator:
            described = coordinator.request(DESCRIBE_GROUPS, 0, {"groups": [group]})
        return int(described.groups[0].error_code) == NONE

    wait_until(serving, TIMEOUT_S, f"a coordinator serving {group}")
    return found["address"]


def _create_topic_known_to(cluster: ClusterHandle, topic: str, address: str) -> None:
    """Create `topic` and wait until the broker at `address` knows it: OffsetCommit answers
    UNKNOWN_TOPIC_OR_PARTITION for a topic missing from the coordinator's metadata."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT_S)

    def known() -> bool:
        with WireClient.to(address) as client:
            (found,) = metadata(client, [topic]).topics
        return int(found.error_code) == NONE and len(found.partitions) == 1

    wait_until(known, TIMEOUT_S, f"{address} to know topic {topic}")


def test_group_with_sarama_1_request_versions_joins_syncs_commits_and_leaves(
    old_cluster: ClusterHandle,
) -> None:
    group, topic = f"old-{uuid.uuid4().hex[:8]}", f"old-versions-{uuid.uuid4().hex[:8]}"
    address = _coordinator(old_cluster, group)
    _create_topic_known_to(old_cluster, topic, address)
    with WireClient.to(address) as coordinator:
        joined = coordinator.request(
            JOIN_GROUP,
            1,
            {
                "group_id": group,
                "session_timeout": 10_000,
                "rebalance_timeout": 10_000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"subscription"}],
            },
        )
        assert int(joined.error_code) == NONE  # v1 < v4: no MEMBER_ID_REQUIRED round trip
        member, generation = joined.member_id, int(joined.generation_id)
        assert joined.leader == member and generation >= 1
        synced = coordinator.request(
            SYNC_GROUP,
            0,
            {
                "group_id": group,
                "generation_id": generation,
                "member_id": member,
                "assignments": [{"member_id": member, "assignment": b"partitions"}],
            },
        )
        assert (int(synced.error_code), bytes(synced.assignment)) == (NONE, b"partitions")
        beat = coordinator.request(
            HEARTBEAT, 0, {"group_id": group, "generation_id": generation, "member_id": member}
        )
        assert int(beat.error_code) == NONE
        committed = coordinator.request(
            OFFSET_COMMIT,
            1,
            {
                "group_id": group,
                "generation_id_or_member_epoch": generation,
                "member_id": member,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "commit_timestamp": -1,
                                "committed_metadata": "sarama",
                            }
                        ],
                    }
                ],
            },
        )
        assert int(committed.topics[0].partitions[0].error_code) == NONE
        for version in (0, 1):
            fetched = coordinator.request(
                OFFSET_FETCH,
                version,
                {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]},
            )
            partition = fetched.topics[0].partitions[0]
            assert (int(partition.committed_offset), partition.metadata) == (5, "sarama")
        left = coordinator.request(LEAVE_GROUP, 0, {"group_id": group, "member_id": member})
        assert int(left.error_code) == NONE
        described = coordinator.request(DESCRIBE_GROUPS, 0, {"groups": [group]})
        assert described.groups[0].group_state == "Empty"
        # A v0 commit (Kafka kept these in ZooKeeper) to the now empty group.
        v0 = coordinator.request(
            OFFSET_COMMIT,
            0,
            {
                "group_id": group,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 9, "committed_metadata": ""}
                        ],
                    }
                ],
            },
        )
        assert int(v0.topics[0].partitions[0].error_code) == NONE


def test_create_and_delete_topics_v0_and_offset_for_leader_epoch_v0(
    old_cluster: ClusterHandle,
) -> None:
    topic = f"old-{uuid.uuid4().hex[:8]}"
    with WireClient.to(controller_address(old_cluster)) as controller:
        created = controller.request(
            CREATE_TOPICS,
            0,
            {
                "topics": [
                    {
                        "name": topic,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 30_000,
            },
        )
        assert [(t.name, int(t.error_code)) for t in created.topics] == [(topic, NONE)]
    with WireClient.to(leader_address(old_cluster, topic)) as leader:
        epochs = leader.request(
            OFFSET_FOR_LEADER_EPOCH,
            0,
            {"topics": [{"topic": topic, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
        )
        result = epochs.topics[0].partitions[0]
        assert (int(result.error_code), int(result.end_offset)) == (NONE, 0)
    with WireClient.to(controller_address(old_cluster)) as controller:
        deleted = controller.request(DELETE_TOPICS, 0, {"topic_names": [topic], "timeout": 30_000})
        assert [(r.name, int(r.error_code)) for r in deleted.responses] == [(topic, NONE)]
