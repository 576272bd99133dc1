"""Regressions found by running kafka-python's own admin integration tests (scripts/client_suites)
against our cluster, checked here with kafka-python's admin client and raw requests."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.admin import OffsetSpec
from kafka.errors import KafkaError
from kafka.structs import TopicPartition

from broker.handlers.metadata import INTERNAL_TOPICS
from tests.integration.conftest import ClusterHandle, wait_until, zk_session
from tests.integration.wire import WireClient, broker_address, controller_id, metadata
from zk.znodes import TopicAssignment, TopicZNode, new_kafka_uuid

# The controller is stopped (SIGSTOP) here.
pytestmark = pytest.mark.own_cluster

UNKNOWN_TOPIC_OR_PARTITION = 3
TIMEOUT_S = 60.0
# Long enough for a broker's topic watch to fire many times over (milliseconds on loopback),
# far below the ZooKeeper session timeout that would make the paused controller lose its role.
CONTROLLER_PAUSE_S = 1.5
POLL_INTERVAL_S = 0.05


def _user_topics(address: str) -> set[str]:
    with WireClient.to(address) as client:
        listed = {str(t.name) for t in metadata(client, None).topics}
    return listed - INTERNAL_TOPICS


def _assert_topic_unknown(address: str, topic: str) -> None:
    with WireClient.to(address) as client:
        entry = metadata(client, [topic]).topics[0]
    assert int(entry.error_code) == UNKNOWN_TOPIC_OR_PARTITION, entry
    assert list(entry.partitions) == []


def _latest_offset(address: str, topic: str) -> int | None:
    admin = KafkaAdminClient(bootstrap_servers=address, client_id="kafka-python-admin-test")
    try:
        partition = TopicPartition(topic, 0)
        return int(admin.list_partition_offsets({partition: OffsetSpec.LATEST})[partition].offset)
    except KafkaError:  # not ready yet; the caller retries within its bound
        return None
    finally:
        admin.close()


def test_a_topic_is_not_reported_before_its_first_leader_is_elected(
    cluster: ClusterHandle,
) -> None:
    """kafka-python's test_list_partition_offsets saw a broker list a just-created topic with
    leader -1 (it had read the topic znode but not yet the partition state) and gave up with
    UnknownBrokerIdError(-1). Kafka's brokers learn a topic together with its leaders, so until
    the controller has elected one the topic is unknown to them."""
    controller = controller_id(cluster)
    observer = next(b for b in cluster.broker_ids if b != controller)
    address = broker_address(cluster, observer)
    topic = f"no-leader-yet-{uuid.uuid4().hex[:8]}"
    before = _user_topics(address)
    # The controller elects the first leader; paused, it leaves only the topic znode behind.
    cluster.kill(controller, "STOP")
    try:
        with zk_session(cluster) as zk:
            assignment = TopicAssignment(new_kafka_uuid(), {0: [observer]})
            zk.create(TopicZNode.path(topic), TopicZNode.encode(assignment))
        deadline = time.monotonic() + CONTROLLER_PAUSE_S
        while time.monotonic() < deadline:
            _assert_topic_unknown(address, topic)
            assert _user_topics(address) == before
            time.sleep(POLL_INTERVAL_S)
    finally:
        cluster.kill(controller, "CONT")
    wait_until(lambda: _latest_offset(address, topic) == 0, TIMEOUT_S, "the topic's leader")
    assert topic in _user_topics(address)
