import io

from kio.schema.api_versions.v0.response import ApiVersionsResponse as V0Response
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from broker.handlers import build_registry
from broker.handlers.api_versions import unsupported_version_response
from broker.protocol import adapter
from broker.protocol.registry import request_class, response_class

KAFKA_39_RANGES = {  # Kafka 3.9's, in ZooKeeper mode
    0: (0, 11),
    1: (0, 17),
    2: (0, 9),
    3: (0, 12),
    4: (0, 7),
    5: (0, 4),
    6: (0, 8),
    7: (0, 3),
    8: (0, 9),
    9: (0, 9),
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 5),
    16: (0, 5),
    18: (0, 4),
    19: (0, 7),
    20: (0, 6),
    21: (0, 2),
    22: (0, 5),
    23: (0, 4),
    32: (0, 4),
    33: (0, 2),
    34: (0, 2),
    35: (0, 4),
    42: (0, 2),
    43: (0, 2),
    37: (0, 3),
    38: (0, 3),
    39: (0, 2),
    40: (0, 2),
    41: (0, 3),
    44: (0, 1),
    57: (0, 1),
    60: (0, 1),
    68: (0, 0),
    69: (0, 0),
    45: (0, 0),
    46: (0, 0),
    47: (0, 0),
}


def test_advertised_ranges_match_kafka_3_9() -> None:
    registry = build_registry()
    for api_key, (low, high) in KAFKA_39_RANGES.items():
        spec = registry.get(api_key)
        assert spec is not None
        assert (spec.min_version, spec.max_version) == (low, high)


def test_every_decodable_version_has_kio_classes() -> None:
    for spec in build_registry().all():
        for version in range(spec.min_decodable_version, spec.max_version + 1):
            assert request_class(spec.api_key, version).__version__ == version  # type: ignore[attr-defined]
            assert response_class(spec.api_key, version).__version__ == version  # type: ignore[attr-defined]


def test_unsupported_api_versions_answer_is_v0_with_ranges() -> None:
    registry = build_registry()
    body = adapter.encode(unsupported_version_response(registry))
    decoded, _ = entity_reader(V0Response)(body, 0)
    assert decoded.error_code == ErrorCode.unsupported_version
    assert {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys} == {
        s.api_key: (s.min_version, s.max_version) for s in registry.all()
    }


def test_adapter_drops_fields_the_version_lacks() -> None:
    v0 = response_class(3, 0)
    entity = adapter.build(
        v0,
        {
            "throttle_time": 0,
            "brokers": [{"node_id": 1, "host": "h", "port": 1, "rack": "r"}],
            "cluster_id": "c",
            "controller_id": 1,
            "topics": [],
        },
    )
    assert not adapter.has_field(v0, "cluster_id")
    buffer = io.BytesIO(adapter.encode(entity))
    assert buffer.getvalue()[:4] == b"\x00\x00\x00\x01"
