"""The harness of the byte-level schema tests: a Java probe (tests/reference/jvm/) prints Kafka
3.9's encoding of known values for each (request or response, API key, version), and our
schemas must encode those values to the same bytes and decode Kafka's bytes back to them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.bounds import check_body
from broker.protocol.registry import request_class, response_class

PROBE_TIMEOUT_S = 120.0
KafkaBytes = dict[tuple[str, int, int], bytes]
Values = dict[ApiKey, dict[str, Any]]


def cases(last_versions: dict[ApiKey, int]) -> list[tuple[str, ApiKey, int]]:
    """(kind, API key, version) for every version up to each key's last, both kinds."""
    return [
        (kind, api_key, version)
        for kind in ("request", "response")
        for api_key, last in last_versions.items()
        for version in range(last + 1)
    ]


def run_probe(reference_lib: Path, probe: Path) -> KafkaBytes:
    """(kind, API key, version) -> Kafka 3.9's encoding, from the probe's output lines."""
    result = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{reference_lib}/*", str(probe)],
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


def assert_encodes_as_kafka(
    kafka_bytes: KafkaBytes, values: dict[str, Any], kind: str, api_key: ApiKey, version: int
) -> None:
    ours = adapter.encode(adapter.build(_schema(kind, api_key, version), values))
    assert ours.hex() == kafka_bytes[kind, api_key, version].hex()


def assert_decodes_kafka(
    kafka_bytes: KafkaBytes, values: dict[str, Any], kind: str, api_key: ApiKey, version: int
) -> None:
    cls = _schema(kind, api_key, version)
    data = kafka_bytes[kind, api_key, version]
    assert check_body(cls, data, 0) == len(data)
    decoded: Any
    decoded, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    assert decoded == adapter.build(cls, values)
