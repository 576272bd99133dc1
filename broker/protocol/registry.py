"""The API registry: one entry per Kafka API, from which ApiVersions is built.

`min_version`/`max_version` are what we advertise (Kafka 3.9's ranges in ZooKeeper mode). kio
has no classes for some old versions; `legacy.py` derives the ones whose schemas differ only by
fields (OffsetCommit v0-1, OffsetFetch v0, Produce v0-2, Fetch v0-3, ...; their handlers convert
old record formats and semantics). `min_decodable_version` marks where
decoding starts: an old client asking for an advertised version below it (ControlledShutdown
v0) gets its connection closed with a log line (see DEVIATIONS.md).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.index import load_request_schema, load_response_schema

from broker.protocol.api_keys import ApiKey
from broker.protocol.legacy import legacy_request_class, legacy_response_class
from broker.protocol.zk_broker_apis import zk_broker_request_class, zk_broker_response_class

if TYPE_CHECKING:
    from broker.network.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any | None]]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: ApiKey
    name: str
    min_version: int
    max_version: int
    min_decodable_version: int
    handler: Handler

    def is_advertised(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_decodable(self, version: int) -> bool:
        return self.min_decodable_version <= version <= self.max_version


@functools.cache
def request_class(api_key: int, version: int) -> type:
    return (
        legacy_request_class(api_key, version)
        or zk_broker_request_class(api_key, version)
        or load_request_schema(api_key, version)
    )


@functools.cache
def response_class(api_key: int, version: int) -> type:
    return (
        legacy_response_class(api_key, version)
        or zk_broker_response_class(api_key, version)
        or load_response_schema(api_key, version)
    )


def is_flexible(api_key: int, version: int) -> bool:
    return bool(request_class(api_key, version).__flexible__)  # type: ignore[attr-defined]


class Registry:
    def __init__(self, specs: list[ApiSpec]) -> None:
        self._specs: dict[int, ApiSpec] = {spec.api_key: spec for spec in specs}
        if len(self._specs) != len(specs):
            raise ValueError("two handlers registered for one API key")

    def get(self, api_key: int) -> ApiSpec | None:
        return self._specs.get(api_key)

    def all(self) -> list[ApiSpec]:
        return sorted(self._specs.values(), key=lambda spec: spec.api_key)
