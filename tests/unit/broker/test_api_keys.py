"""ApiKey names Kafka's API keys as kio numbers its schemas, and the registry uses it."""

from __future__ import annotations

from kio.schema.index import api_key_map

from broker.handlers import build_registry
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class, response_class

# ZooKeeper-mode only, which kio no longer ships: our own schemas serve them.
ZOOKEEPER_MODE_KEYS = {
    ApiKey.LEADER_AND_ISR,
    ApiKey.STOP_REPLICA,
    ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN,
}


def test_each_key_is_the_api_kio_has_under_that_number() -> None:
    for key in ApiKey:
        if key in ZOOKEEPER_MODE_KEYS:
            assert key not in api_key_map  # ZooKeeper-mode only: our own schema serves it
            continue
        assert api_key_map[key] == key.name.lower(), key


def test_each_served_version_has_schemas_under_its_key() -> None:
    for spec in build_registry().all():
        for version in (spec.min_decodable_version, spec.max_version):
            request = request_class(spec.api_key, version)
            response = response_class(spec.api_key, version)
            assert request.__api_key__ == response.__api_key__ == spec.api_key  # type: ignore[attr-defined]


def test_the_registry_serves_exactly_the_named_apis() -> None:
    specs = build_registry().all()
    assert all(isinstance(spec.api_key, ApiKey) for spec in specs)
    assert {spec.api_key for spec in specs} == set(ApiKey)


def test_each_registered_name_is_kafkas_name_of_its_key() -> None:
    for spec in build_registry().all():
        camel_case = "".join(word.capitalize() for word in spec.api_key.name.split("_"))
        assert spec.name == camel_case
