"""Znode encoding/decoding against Kafka's exact bytes, without ZooKeeper."""

from __future__ import annotations

import uuid

import pytest

from zk.client import split_chroot
from zk.delegation_token_znodes import DelegationTokenInfo, DelegationTokenInfoZNode
from zk.json_order import java_string_hash, scala_mutable_hash_map_order
from zk.znodes import (
    BrokerIdZNode,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    FeatureZNode,
    IsrChangeNotificationSequenceZNode,
    LogDirEventNotificationSequenceZNode,
    OfflineReplicasZNode,
    PartitionState,
    ProducerIdBlockZNode,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicZNode,
    ZnodeDecodeError,
    kafka_string_to_uuid,
    new_kafka_uuid,
    parse_endpoint,
    uuid_to_kafka_string,
)


def _registration(rack: str | None = None) -> BrokerRegistration:
    return BrokerRegistration.create(
        broker_id=1,
        endpoints=["PLAINTEXT://h:9092"],
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        timestamp_ms=1700000000123,
        rack=rack,
    )


def test_broker_registration_v5_bytes_in_kafka_key_order() -> None:
    assert BrokerIdZNode.encode(_registration()) == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h",'
        b'"version":5,"timestamp":"1700000000123"}'
    )


def test_broker_registration_rack_only_when_set() -> None:
    assert b'"rack"' not in BrokerIdZNode.encode(_registration())
    assert BrokerIdZNode.encode(_registration(rack="r1")) == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"rack":"r1","jmx_port":-1,"port":9092,"host":"h",'
        b'"version":5,"timestamp":"1700000000123"}'
    )


def test_broker_registration_round_trip() -> None:
    registration = _registration(rack="r1")
    assert BrokerIdZNode.decode(1, BrokerIdZNode.encode(registration)) == registration


def test_broker_registration_without_plaintext_listener_has_null_host() -> None:
    registration = BrokerRegistration.create(
        broker_id=2,
        endpoints=["SSL://h:9093"],
        listener_security_protocol_map={"SSL": "SSL"},
        timestamp_ms=1,
    )
    assert registration.host is None and registration.port == -1
    assert b'"host":null' in BrokerIdZNode.encode(registration)


def test_decodes_kafka_v4_registration_with_two_listeners() -> None:
    data = (
        b'{"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SSL"},'
        b'"endpoints":["INTERNAL://10.0.0.1:9092","EXTERNAL://ext.example:9093"],'
        b'"rack":"us-east-1a","jmx_port":9999,"host":"10.0.0.1","timestamp":"1614570663881",'
        b'"port":9092,"version":4}'
    )
    registration = BrokerIdZNode.decode(3, data)
    assert registration.version == 4
    assert registration.endpoints == ["INTERNAL://10.0.0.1:9092", "EXTERNAL://ext.example:9093"]
    assert registration.listener_security_protocol_map == {
        "INTERNAL": "PLAINTEXT",
        "EXTERNAL": "SSL",
    }
    assert registration.rack == "us-east-1a"
    assert registration.jmx_port == 9999
    assert registration.timestamp_ms == 1614570663881
    assert registration.features == {}
    assert registration.endpoint_for("EXTERNAL") == ("ext.example", 9093)


def test_decodes_v1_and_v2_registrations() -> None:
    v1 = BrokerIdZNode.decode(
        0, b'{"jmx_port":-1,"timestamp":"1","host":"old","version":1,"port":9092}'
    )
    assert v1.endpoints == ["PLAINTEXT://old:9092"]
    assert v1.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT"}
    v2 = BrokerIdZNode.decode(
        0,
        b'{"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://a:1","SSL://a:2"],'
        b'"host":"a","version":2,"port":1}',
    )
    assert v2.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}


def test_decodes_features_map() -> None:
    data = (
        b'{"features":{"metadata.version":{"min_version":1,"max_version":7}},'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h",'
        b'"version":5,"timestamp":"5"}'
    )
    registration = BrokerIdZNode.decode(1, data)
    assert registration.features == {"metadata.version": {"min_version": 1, "max_version": 7}}


def test_bad_registration_raises_decode_error() -> None:
    with pytest.raises(ZnodeDecodeError):
        BrokerIdZNode.decode(1, b"not json")
    with pytest.raises(ZnodeDecodeError):
        BrokerIdZNode.decode(1, b'{"version":0}')


_VALID_V5_KEYS = (
    b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://h:9092"],"host":"h","version":5'
)


@pytest.mark.parametrize(
    "data",
    [
        b"{" + _VALID_V5_KEYS + b',"jmx_port":"x"}',
        b"{" + _VALID_V5_KEYS + b',"jmx_port":[1]}',
        b"{" + _VALID_V5_KEYS + b',"timestamp":"soon"}',
        b"{" + _VALID_V5_KEYS + b',"port":"p"}',
        b"{" + _VALID_V5_KEYS + b',"features":{"f":{"min_version":"one"}}}',
        b"{" + _VALID_V5_KEYS + b',"features":{"f":{"min_version":null}}}',
        b"{" + _VALID_V5_KEYS + b',"features":{"f":3}}',
        b"{" + _VALID_V5_KEYS + b',"features":[]}',
        b'{"version":2,"endpoints":["PLAINTEXT://h:--5"]}',
        b'{"version":2,"endpoints":["PLAINTEXT://h"]}',
    ],
    ids=[
        "jmx_port-not-a-number",
        "jmx_port-a-list",
        "timestamp-not-a-number",
        "port-not-a-number",
        "feature-version-not-a-number",
        "feature-version-null",
        "feature-not-an-object",
        "features-not-an-object",
        "endpoint-port-not-a-number",
        "endpoint-without-port",
    ],
)
def test_malformed_registration_raises_only_decode_error(data: bytes) -> None:
    # ClusterWatch skips a znode on ZnodeDecodeError; a bare TypeError would escape it.
    with pytest.raises(ZnodeDecodeError):
        BrokerIdZNode.decode(1, data)


def test_registration_without_optional_numbers_gets_defaults() -> None:
    registration = BrokerIdZNode.decode(1, b"{" + _VALID_V5_KEYS + b',"jmx_port":null}')
    assert (registration.jmx_port, registration.timestamp_ms, registration.port) == (-1, -1, -1)


def test_parse_endpoint_handles_ipv6() -> None:
    assert parse_endpoint("PLAINTEXT://[::1]:9092") == ("PLAINTEXT", "::1", 9092)
    assert parse_endpoint("CLIENT://h:1") == ("CLIENT", "h", 1)


def test_topic_znode_v3_bytes() -> None:
    assignment = TopicAssignment(
        topic_id="AAAAAAAAAAAAAAAAAAAAAQ", partitions={0: [1, 2, 3], 1: [2, 3, 1]}
    )
    assert TopicZNode.encode(assignment) == (
        b'{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )


def test_topic_znode_partitions_follow_scala_hash_map_order_beyond_eleven() -> None:
    # Twelve entries grow Scala's table to 32 slots; "11" (hash 1568) then lands in slot 0.
    partitions = {p: [1] for p in range(12)}
    encoded = TopicZNode.encode(TopicAssignment(topic_id=None, partitions=partitions))
    assert encoded == (
        b'{"partitions":{"11":[1],"0":[1],"1":[1],"2":[1],"3":[1],"4":[1],"5":[1],"6":[1],'
        b'"7":[1],"8":[1],"9":[1],"10":[1]},"adding_replicas":{},"removing_replicas":{},'
        b'"version":3}'
    )
    decoded = TopicZNode.decode("t", encoded)
    assert decoded.partitions == partitions and decoded.topic_id is None


def test_decodes_kafka_topic_znodes_of_every_version() -> None:
    v1 = TopicZNode.decode("t", b'{"version":1,"partitions":{"1":[101,103],"0":[103,102]}}')
    assert v1 == TopicAssignment(topic_id=None, partitions={0: [103, 102], 1: [101, 103]})
    v2 = TopicZNode.decode(
        "t",
        b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[2]},'
        b'"removing_replicas":{}}',
    )
    assert v2.adding_replicas == {0: [2]} and v2.removing_replicas == {}
    v3 = TopicZNode.decode(
        "t",
        b'{"partitions":{"0":[0]},"topic_id":"Xs7dUbUmQNmzoPhM9ycgQA","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}',
    )
    assert v3.topic_id == "Xs7dUbUmQNmzoPhM9ycgQA" and v3.partitions == {0: [0]}


def test_partition_state_bytes_and_kafka_sample() -> None:
    state = PartitionState(leader=1, leader_epoch=0, isr=[1, 2, 3], controller_epoch=5)
    assert TopicPartitionStateZNode.encode(state) == (
        b'{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
    )
    kafka_written = (
        b'{"controller_epoch":33,"leader":102,"version":1,"leader_epoch":8,"isr":[102,103]}'
    )
    assert TopicPartitionStateZNode.decode(kafka_written) == PartitionState(102, 8, [102, 103], 33)
    assert TopicPartitionStateZNode.path("t", 3) == "/brokers/topics/t/partitions/3/state"


def test_partition_state_with_no_leader() -> None:
    state = PartitionState(leader=-1, leader_epoch=4, isr=[2], controller_epoch=1)
    assert TopicPartitionStateZNode.decode(TopicPartitionStateZNode.encode(state)) == state


def test_controller_and_epoch() -> None:
    # As Kafka 3.9 writes it (Kafka 3.4+ added the KRaft epoch, -1 in ZooKeeper mode).
    assert ControllerZNode.encode(1, 1700000000000) == (
        b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    )
    assert (
        ControllerZNode.decode(b'{"version":1,"brokerid":101,"timestamp":"1614570663255"}') == 101
    )
    assert ControllerEpochZNode.encode(5) == b"5"
    assert ControllerEpochZNode.decode(b"5") == 5
    with pytest.raises(ZnodeDecodeError):
        ControllerEpochZNode.decode(b"five")


def test_cluster_id() -> None:
    assert ClusterIdZNode.encode("abc") == b'{"version":"1","id":"abc"}'
    assert ClusterIdZNode.decode(b'{"version":"1","id":"x7Yz"}') == "x7Yz"


def test_topic_config_string_values() -> None:
    encoded = ConfigEntityZNode.encode({"retention.ms": "1000"})
    assert encoded == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert ConfigEntityZNode.decode(encoded) == {"retention.ms": "1000"}
    assert ConfigEntityZNode.decode(b"") == {}
    assert ConfigEntityZNode.decode(b'{"version":1,"config":{}}') == {}


def test_notifications() -> None:
    assert ConfigEntityChangeNotificationSequenceZNode.encode("topics/t") == (
        b'{"version":2,"entity_path":"topics/t"}'
    )
    assert IsrChangeNotificationSequenceZNode.encode([("t", 0)]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    )
    assert IsrChangeNotificationSequenceZNode.decode(
        b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
    ) == [("t", 0), ("u", 3)]


def test_producer_id_block() -> None:
    assert ProducerIdBlockZNode.encode(1, 0, 999) == (
        b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}'
    )
    assert ProducerIdBlockZNode.decode(ProducerIdBlockZNode.encode(2, 1000, 1999)) == (
        2,
        1000,
        1999,
    )


def test_kafka_uuid_strings() -> None:
    assert uuid_to_kafka_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    generated = new_kafka_uuid()
    assert len(generated) == 22 and not generated.startswith("-") and "=" not in generated
    assert uuid_to_kafka_string(kafka_string_to_uuid(generated)) == generated


def test_java_string_hash_matches_java() -> None:
    # Known values of "".hashCode(), "a".hashCode(), "hello".hashCode().
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322


def test_scala_order_of_sixteen_slot_table() -> None:
    assert scala_mutable_hash_map_order(["2", "0", "1"]) == ["0", "1", "2"]


def test_split_chroot() -> None:
    assert split_chroot("a:1,b:2/kafka/x") == ("a:1,b:2", "/kafka/x")
    assert split_chroot("a:1") == ("a:1", None)
    assert split_chroot("a:1/") == ("a:1", None)


def test_feature_znode_as_kafka_3_9_writes_it() -> None:
    assert FeatureZNode.encode(FeatureZNode.STATUS_ENABLED, {}) == (
        b'{"features":{},"version":2,"status":1}'
    )
    assert FeatureZNode.decode(b'{"features":{},"version":2,"status":1}') == (2, 1, {})
    # Version 1 (Kafka 2.7-3.2) also carried min_version_level.
    version_1 = (
        b'{"features":{"f":{"min_version_level":1,"max_version_level":3}},"version":1,"status":0}'
    )
    assert FeatureZNode.decode(version_1) == (1, 0, {"f": 3})


def test_log_dir_event_notification_is_kafkas_json() -> None:
    event = LogDirEventNotificationSequenceZNode
    assert event.create_path() == "/log_dir_event_notification/log_dir_event_"
    assert event.encode(3) == b'{"version":1,"broker":3,"event":1}'
    assert event.decode(event.encode(3)) == 3
    with pytest.raises(ZnodeDecodeError):
        event.decode(b'{"version":1,"event":1}')


def test_offline_replicas_znode_round_trip() -> None:
    assert OfflineReplicasZNode.path(3) == "/brokers/offline_replicas/3"
    data = OfflineReplicasZNode.encode([("t", 0), ("u.v", 2)])
    assert data == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u.v","partition":2}]}'
    )
    assert OfflineReplicasZNode.decode(data) == [("t", 0), ("u.v", 2)]


def test_delegation_token_znode_as_kafka_3_9_writes_it() -> None:
    """Kafka's key order is its 8-entry Scala immutable HashMap's (read off Scala 2.13.15's
    HashMap with these keys); principals sanitized, version 3."""
    token = DelegationTokenInfo(
        "tid", "User:alice", "User:ops", ("User:bob", "User:a b"), 1000, 3000, 2000
    )
    assert DelegationTokenInfoZNode.encode(token) == (
        b'{"issueTimestamp":1000,"renewers":["User%3Abob","User%3Aa%20b"],'
        b'"tokenRequester":"User%3Aops","tokenId":"tid","owner":"User%3Aalice",'
        b'"expiryTimestamp":2000,"maxTimestamp":3000,"version":3}'
    )
    assert DelegationTokenInfoZNode.decode(DelegationTokenInfoZNode.encode(token)) == token
