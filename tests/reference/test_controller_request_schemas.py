"""Differential: our schemas of LeaderAndIsr (v0-v7), StopReplica (v0-v4) and UpdateMetadata
(v0-v8), requests and responses (broker/protocol/controller_apis.py, written from Kafka 3.9's
JSON), encode the same values to the same bytes as Kafka 3.9's own generated classes
(tests/reference/jvm/ControllerRequestBytes.java, run on `make reference`'s jars), and decode
Kafka's bytes back to those values. Only the newest versions meet a real Kafka controller in
tests/integration/test_kafka_controller.py; this covers every version."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from broker.protocol.api_keys import ApiKey
from tests.reference.schema_bytes import (
    KafkaBytes,
    Values,
    assert_decodes_kafka,
    assert_encodes_as_kafka,
    cases,
    run_probe,
)

PROBE = Path(__file__).parent / "jvm" / "ControllerRequestBytes.java"
TOPIC_ID = uuid.UUID(int=(1 << 64) | 2)  # Kafka's new Uuid(1L, 2L)
LAST_VERSIONS = {ApiKey.LEADER_AND_ISR: 7, ApiKey.STOP_REPLICA: 4, ApiKey.UPDATE_METADATA: 8}

# The values the probe sets, as the union of every version's fields (each version's class
# takes the fields it has).
_LEADER_AND_ISR_STATE = {
    "topic_name": "t",
    "partition_index": 0,
    "controller_epoch": 3,
    "leader": 2,
    "leader_epoch": 4,
    "isr": [2, 3],
    "partition_epoch": 7,
    "replicas": [1, 2, 3],
    "adding_replicas": [3],
    "removing_replicas": [1],
    "is_new": True,
    "leader_recovery_state": 1,
}
_UPDATE_METADATA_STATE = {
    "topic_name": "t",
    "partition_index": 0,
    "controller_epoch": 3,
    "leader": 2,
    "leader_epoch": 4,
    "isr": [2, 3],
    "zk_version": 7,
    "replicas": [1, 2, 3],
    "offline_replicas": [3],
}
REQUESTS: Values = {
    ApiKey.LEADER_AND_ISR: {
        "controller_id": 1,
        "controller_epoch": 3,
        "broker_epoch": 55,
        "type": 0,
        "ungrouped_partition_states": [_LEADER_AND_ISR_STATE],
        "topic_states": [
            {"topic_name": "t", "topic_id": TOPIC_ID, "partition_states": [_LEADER_AND_ISR_STATE]}
        ],
        "live_leaders": [{"broker_id": 2, "host_name": "h", "port": 9092}],
    },
    ApiKey.STOP_REPLICA: {
        "controller_id": 1,
        "controller_epoch": 3,
        "broker_epoch": 55,
        "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "t", "partition_index": 0}],
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [
                    {"partition_index": 0, "leader_epoch": 4, "delete_partition": True}
                ],
            }
        ],
    },
    ApiKey.UPDATE_METADATA: {
        "controller_id": 1,
        "type": 2,
        "controller_epoch": 3,
        "broker_epoch": 55,
        "ungrouped_partition_states": [_UPDATE_METADATA_STATE],
        "topic_states": [
            {"topic_name": "t", "topic_id": TOPIC_ID, "partition_states": [_UPDATE_METADATA_STATE]}
        ],
        "live_brokers": [
            {
                "id": 1,
                "v0_host": "h",
                "v0_port": 9092,
                "endpoints": [
                    {"port": 9092, "host": "h", "listener": "PLAINTEXT", "security_protocol": 0}
                ],
                "rack": "r",
            }
        ],
    },
}
_PARTITION_ERROR = {"topic_name": "t", "partition_index": 0, "error_code": 11}
RESPONSES: Values = {
    ApiKey.LEADER_AND_ISR: {
        "error_code": 0,
        "partition_errors": [_PARTITION_ERROR],
        "topics": [{"topic_id": TOPIC_ID, "partition_errors": [_PARTITION_ERROR]}],
    },
    ApiKey.STOP_REPLICA: {
        "error_code": 0,
        "partition_errors": [{**_PARTITION_ERROR, "error_code": 79}],
    },
    ApiKey.UPDATE_METADATA: {"error_code": 0},
}
CASES = cases(LAST_VERSIONS)


@pytest.fixture(scope="module")
def kafka_bytes(reference_lib: Path) -> KafkaBytes:
    """(kind, api key, version) -> Kafka 3.9's encoding of the probe's values."""
    return run_probe(reference_lib, PROBE)


@pytest.mark.parametrize(("kind", "api_key", "version"), CASES)
def test_we_encode_what_kafka_encodes(
    kafka_bytes: KafkaBytes, kind: str, api_key: ApiKey, version: int
) -> None:
    values = (REQUESTS if kind == "request" else RESPONSES)[api_key]
    assert_encodes_as_kafka(kafka_bytes, values, kind, api_key, version)


@pytest.mark.parametrize(("kind", "api_key", "version"), CASES)
def test_we_decode_what_kafka_encodes(
    kafka_bytes: KafkaBytes, kind: str, api_key: ApiKey, version: int
) -> None:
    values = (REQUESTS if kind == "request" else RESPONSES)[api_key]
    assert_decodes_kafka(kafka_bytes, values, kind, api_key, version)
