"""A minimal Kafka wire client for tests: exact requests, raw bytes, and clean-close checks;
plus the few one-request operations (Metadata, CreateTopics, Produce, Fetch, ...) and address
look-ups the wire tests share. Request bodies are built in `requests.py`."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.registry import is_flexible, request_class, response_class
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import (
    CREATE_TOPICS,
    DELETE_TOPICS,
    FETCH,
    HUGE,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    create_topics_request,
    delete_topics_request,
    fetch_request,
    list_offsets_request,
    metadata_request,
    produce_request,
    topic_spec,
)

API_VERSIONS = 18
LATEST = -1  # ListOffsets timestamp: the log end
LEADER_WAIT_S = 30


class WireClient:
    def __init__(
        self, host: str, port: int, timeout_s: float = 10.0, source_host: str | None = None
    ) -> None:
        source = None if source_host is None else (source_host, 0)
        self.sock = socket.create_connection((host, port), timeout=timeout_s, source_address=source)
        self._correlation_id = 0

    @classmethod
    def to(
        cls, address: str, timeout_s: float = 10.0, source_host: str | None = None
    ) -> WireClient:
        """Connect to `address`; from `source_host` (another loopback address, say) if given."""
        host, port = address.rsplit(":", 1)
        return cls(host, int(port), timeout_s, source_host)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.send_raw(struct.pack(">i", len(payload)) + payload)

    def header(self, api_key: int, version: int, client_id: str = "wire-test") -> bytes:
        self._correlation_id += 1
        raw_id = client_id.encode()
        fixed = struct.pack(">hhih", api_key, version, self._correlation_id, len(raw_id)) + raw_id
        return fixed + (b"\x00" if is_flexible(api_key, version) else b"")

    def send(self, api_key: int, version: int, fields: dict[str, Any]) -> None:
        """Send one request without reading its response (acks=0, long polls)."""
        body = adapter.encode(adapter.build(request_class(api_key, version), fields))
        self.send_frame(self.header(api_key, version) + body)

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> Any:
        self.send(api_key, version, fields)
        return self.read_response(api_key, version)

    def read_response(self, api_key: int, version: int) -> Any:
        payload = self.read_frame()
        if payload is None:
            raise ConnectionError("broker closed the connection instead of answering")
        (correlation_id,) = struct.unpack_from(">i", payload, 0)
        assert correlation_id == self._correlation_id
        offset = 4
        if is_flexible(api_key, version) and api_key != API_VERSIONS:
            offset += 1  # empty tagged fields of response header v1
        response: Any
        response, _ = entity_reader(response_class(api_key, version))(payload, offset)
        return response

    def read_frame(self) -> bytes | None:
        size_bytes = self._read_exactly(4)
        if size_bytes is None:
            return None
        (size,) = struct.unpack(">i", size_bytes)
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < count:
            try:
                chunk = self.sock.recv(count - len(chunks))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    def is_closed_by_peer(self) -> bool:
        """True if the broker closes the connection (within the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def api_versions_ok(address: str) -> bool:
    with WireClient.to(address) as client:
        response = client.request(
            API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        return int(response.error_code) == 0 and len(response.api_keys) > 0


# -- one-request operations ---------------------------------------------------------------


def metadata(
    client: WireClient, topics: list[str] | None = None, version: int = 9, auto_create: bool = False
) -> Any:
    """Metadata for `topics` (None: every topic; []: none, or every topic at v0)."""
    return client.request(METADATA, version, metadata_request(topics, auto_create))


def create_topics(
    client: WireClient,
    specs: list[dict[str, Any]],
    version: int = 7,
    timeout_ms: int = 30000,
    validate_only: bool = False,
) -> Any:
    """CreateTopics for `specs` (see `requests.topic_spec`); returns the whole response."""
    return client.request(
        CREATE_TOPICS, version, create_topics_request(specs, timeout_ms, validate_only)
    )


def create_topic(cluster: ClusterHandle, name: str, partitions: int, replication: int) -> None:
    """Create one topic through the controller; fails unless it was created."""
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(name, partitions, replication)])
    assert all(int(t.error_code) == 0 for t in created.topics), created


def delete_topics(
    client: WireClient, names: list[str], version: int = 6, timeout_ms: int = 30000
) -> Any:
    return client.request(DELETE_TOPICS, version, delete_topics_request(names, timeout_ms))


def produce(
    client: WireClient,
    topic: str,
    partition: int,
    records: bytes,
    acks: int = 1,
    version: int = 9,
    transactional_id: str | None = None,
) -> Any:
    """Produce one batch to one partition (acks 1 or -1); returns that partition's result.
    Transactional batches need a `transactional_id`, as in Kafka."""
    fields = produce_request(topic, partition, records, acks, transactional_id=transactional_id)
    response = client.request(PRODUCE, version, fields)
    return response.responses[0].partition_responses[0]


def fetch(
    client: WireClient,
    topic: str,
    partition: int,
    offset: int,
    version: int = 12,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = HUGE,
    partition_max_bytes: int = HUGE,
) -> Any:
    """Fetch one partition from `offset` (no waiting by default); returns its data."""
    fields = fetch_request(
        topic,
        partition,
        offset,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        partition_max_bytes=partition_max_bytes,
    )
    return client.request(FETCH, version, fields).responses[0].partitions[0]


def list_offsets(
    client: WireClient, topic: str, partition: int, timestamp: int, version: int = 7
) -> Any:
    """ListOffsets for one partition; returns that partition's result."""
    response = client.request(
        LIST_OFFSETS, version, list_offsets_request(topic, partition, timestamp)
    )
    return response.topics[0].partitions[0]


# -- addresses ----------------------------------------------------------------------------


def broker_address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


def first_broker(cluster: ClusterHandle) -> str:
    return cluster.bootstrap.split(",")[0]


def controller_id(cluster: ClusterHandle, timeout_s: float = 30.0) -> int:
    """The controller, as the first broker's Metadata names it, once it names one (a broker
    that has just started may not know the controller yet: -1)."""
    found = [-1]

    def known() -> bool:
        with WireClient.to(first_broker(cluster)) as client:
            found[0] = int(metadata(client, []).controller_id)
        return found[0] >= 0

    wait_until(known, timeout_s, f"a controller known to {first_broker(cluster)}")
    return found[0]


def controller_address(cluster: ClusterHandle) -> str:
    return broker_address(cluster, controller_id(cluster))


def leader_address(
    cluster: ClusterHandle, topic: str, partition: int = 0, via: str | None = None
) -> str:
    """The leader of `topic`-`partition` as broker `via` (default: the first) reports it, once
    that leader serves the partition. Other brokers may learn the leader from ZooKeeper before
    the leader itself has taken over (and answers NOT_LEADER_OR_FOLLOWER until then)."""
    leader: list[int] = []

    def serving() -> bool:
        with WireClient.to(via or first_broker(cluster)) as client:
            topics = metadata(client, [topic]).topics
        partitions = {int(p.partition_index): p for p in topics[0].partitions}
        found = partitions.get(partition)
        leader[:] = [] if found is None else [int(found.leader_id)]
        if not leader or leader[0] < 0:
            return False
        try:
            with WireClient.to(broker_address(cluster, leader[0])) as client:
                return int(list_offsets(client, topic, partition, LATEST).error_code) == 0
        except OSError:
            return False  # not reachable yet (e.g. just restarted)

    wait_until(serving, LEADER_WAIT_S, f"a serving leader for {topic}-{partition}")
    return broker_address(cluster, leader[0])
