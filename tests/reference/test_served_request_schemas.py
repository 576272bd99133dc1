"""Differential: our schemas of the requests Kafka brokers send the controller, AlterPartition
(v0-v3; kio ships v2-v3, v0-v1 are derived in broker/protocol/legacy.py) and AllocateProducerIds
(v0), requests and responses, encode the same values to the same bytes as Kafka 3.9's own
generated classes (tests/reference/jvm/ServedRequestBytes.java, run on `make reference`'s jars),
and decode Kafka's bytes back to those values."""

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

PROBE = Path(__file__).parent / "jvm" / "ServedRequestBytes.java"
PROBE_TIMEOUT_S = 120.0
TOPIC_ID = uuid.UUID(int=(1 << 64) | 2)  # Kafka's new Uuid(1L, 2L)
LAST_VERSIONS = {ApiKey.ALTER_PARTITION: 3, ApiKey.ALLOCATE_PRODUCER_IDS: 0}

# The values the probe sets, as the union of every version's fields (each version's class
# takes the fields it has).
REQUESTS: dict[ApiKey, dict[str, Any]] = {
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
RESPONSES: dict[ApiKey, dict[str, Any]] = {
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
