"""Differential: our schemas of the requests Kafka brokers send the controller, AlterPartition
(v0-v3; kio ships v2-v3, v0-v1 are derived in broker/protocol/legacy.py) and AllocateProducerIds
(v0), requests and responses, encode the same values to the same bytes as Kafka 3.9's own
generated classes (tests/reference/jvm/ServedRequestBytes.java, run on `make reference`'s jars),
and decode Kafka's bytes back to those values."""

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

PROBE = Path(__file__).parent / "jvm" / "ServedRequestBytes.java"
TOPIC_ID = uuid.UUID(int=(1 << 64) | 2)  # Kafka's new Uuid(1L, 2L)
LAST_VERSIONS = {ApiKey.ALTER_PARTITION: 3, ApiKey.ALLOCATE_PRODUCER_IDS: 0}

# The values the probe sets, as the union of every version's fields (each version's class
# takes the fields it has).
REQUESTS: Values = {
    ApiKey.ALTER_PARTITION: {
        "broker_id": 1,
        "broker_epoch": 55,
        "topics": [
            {
                "topic_name": "t",
                "topic_id": TOPIC_ID,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_epoch": 4,
                        "new_isr": [1, 2],
                        "new_isr_with_epochs": [
                            {"broker_id": 1, "broker_epoch": 55},
                            {"broker_id": 2, "broker_epoch": -1},
                        ],
                        "leader_recovery_state": 1,
                        "partition_epoch": 7,
                    }
                ],
            }
        ],
    },
    ApiKey.ALLOCATE_PRODUCER_IDS: {"broker_id": 1, "broker_epoch": 55},
}
RESPONSES: Values = {
    ApiKey.ALTER_PARTITION: {
        "throttle_time": 5,
        "error_code": 0,
        "topics": [
            {
                "topic_name": "t",
                "topic_id": TOPIC_ID,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "leader_id": 1,
                        "leader_epoch": 4,
                        "isr": [1, 2],
                        "leader_recovery_state": 1,
                        "partition_epoch": 8,
                    }
                ],
            }
        ],
    },
    ApiKey.ALLOCATE_PRODUCER_IDS: {
        "throttle_time": 5,
        "error_code": 0,
        "producer_id_start": 1000,
        "producer_id_len": 1000,
    },
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
