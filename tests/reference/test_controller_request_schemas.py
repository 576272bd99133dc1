"""Differential: our schemas of LeaderAndIsr (v0-v7), StopReplica (v0-v4) and UpdateMetadata
(v0-v8), requests and responses (broker/protocol/controller_apis.py, written from Kafka 3.9's
JSON), encode the same values to the same bytes as Kafka 3.9's own generated classes
(tests/reference/jvm/ControllerRequestBytes.java, run on `make reference`'s jars), and decode
Kafka's bytes back to those values. Only the newest versions meet a real Kafka controller in
tests/integration/test_kafka_controller.py; this covers every version."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.bounds import check_body
from broker.protocol.registry import request_class, response_class

PROBE = Path(__file__).parent / "jvm" / "ControllerRequestBytes.java"
PROBE_TIMEOUT_S = 120.0
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
REQUESTS: dict[ApiKey, dict[str, Any]] = {
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
RESPONSES: dict[ApiKey, dict[str, Any]] = {
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
CASES = [
    (kind, api_key, version)
    for kind in ("request", "response")
    for api_key, last in LAST_VERSIONS.items()
    for version in range(last + 1)
]


@pytest.fixture(scope="module")
def kafka_bytes(reference_lib: Path) -> dict[tuple[str, int, int], bytes]:
    """(kind, api key, version) -> Kafka 3.9's encoding of the probe's values."""
    result = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{reference_lib}/*", str(PROBE)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        kind, api_key, version, text = line.split()
        found[kind, int(api_key), int(version)] = bytes.fromhex(text)
    return found


def _schema(kind: str, api_key: ApiKey, version: int) -> type:
    return (request_class if kind == "request" else response_class)(api_key, version)


@pytest.mark.parametrize(("kind", "api_key", "version"), CASES)
def test_we_encode_what_kafka_encodes(
    kafka_bytes: dict[tuple[str, int, int], bytes], kind: str, api_key: ApiKey, version: int
) -> None:
    values = (REQUESTS if kind == "request" else RESPONSES)[api_key]
    ours = adapter.encode(adapter.build(_schema(kind, api_key, version), values))
    assert ours.hex() == kafka_bytes[kind, api_key, version].hex()


@pytest.mark.parametrize(("kind", "api_key", "version"), CASES)
def test_we_decode_what_kafka_encodes(
    kafka_bytes: dict[tuple[str, int, int], bytes], kind: str, api_key: ApiKey, version: int
) -> None:
    cls = _schema(kind, api_key, version)
    data = kafka_bytes[kind, api_key, version]
    assert check_body(cls, data, 0) == len(data)
    decoded: Any
    decoded, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    values = (REQUESTS if kind == "request" else RESPONSES)[api_key]
    assert decoded == adapter.build(cls, values)
