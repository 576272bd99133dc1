"""BrokerClient against an in-process fake broker that answers with hand-built frames.

The fake broker decodes each request with the server's own header parser and kio, so every
test also checks what the client put on the wire; its answers are whole frames (size prefix
included), so a test can send broken ones.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from kio.serial import entity_reader

from broker.network.broker_client import (
    BrokerClient,
    BrokerClientClosedError,
    BrokerClientError,
    BrokerConnectionError,
    CorrelationIdMismatchError,
    MalformedResponseError,
    RequestTimeoutError,
    ResponseTooLargeError,
    UnsupportedVersionError,
    highest_common_version,
)
from broker.protocol import adapter
from broker.protocol.framing import encode_frame
from broker.protocol.header import (
    RequestHeader,
    encode_response_header,
    read_fixed_header,
    skip_tagged_fields,
)
from broker.protocol.registry import ApiSpec, is_flexible, request_class, response_class

PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18
CLIENT_ID = "broker-1-fetcher-0"
SCENARIO_TIMEOUT_S = 10.0

# (request header, decoded request) -> a whole frame to write back, or None to stay silent
Responder = Callable[[RequestHeader, Any], Awaitable[bytes | None]]


class FakeBroker:
    def __init__(self, respond: Responder, close_after_reply: bool = False) -> None:
        self._respond = respond
        self._close_after_reply = close_after_reply
        self.connections = 0
        self.requests: list[tuple[RequestHeader, Any]] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    def client(self, **limits: int) -> BrokerClient:
        return BrokerClient("127.0.0.1", self.port, CLIENT_ID, **limits)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                header, request = await _read_request(reader)
                self.requests.append((header, request))
                reply = await self._respond(header, request)
                if reply is None:
                    continue
                writer.write(reply)
                await writer.drain()
                if self._close_after_reply:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> tuple[RequestHeader, Any]:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    frame = await reader.readexactly(size)
    header, offset = read_fixed_header(frame)
    if is_flexible(header.api_key, header.api_version):
        offset = skip_tagged_fields(frame, offset)
    request: Any
    request, used = entity_reader(request_class(header.api_key, header.api_version))(frame, offset)
    assert offset + used == len(frame), "the client wrote bytes after the request body"
    return header, request


def response_frame(
    header: RequestHeader, fields: dict[str, Any], correlation_id: int = -1
) -> bytes:
    """A well-formed response to `header`, built with the server's own header encoder."""
    body = adapter.encode(adapter.build(response_class(header.api_key, header.api_version), fields))
    flexible_header = is_flexible(header.api_key, header.api_version) and (
        header.api_key != API_VERSIONS
    )
    correlation_id = header.correlation_id if correlation_id == -1 else correlation_id
    return encode_frame(encode_response_header(correlation_id, flexible_header) + body)


def run(scenario: Coroutine[Any, Any, None]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario, SCENARIO_TIMEOUT_S)

    asyncio.run(bounded())


def metadata_request(version: int = 9) -> Any:
    return adapter.build(
        request_class(METADATA, version),
        {
            "topics": [{"name": "orders"}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )


METADATA_FIELDS = {
    "throttle_time": 0,
    "brokers": [{"node_id": 2, "host": "broker-2.example", "port": 9092, "rack": None}],
    "cluster_id": "abcdefghijklmnopqrstuv",
    "controller_id": 2,
    "topics": [],
    "cluster_authorized_operations": -2147483648,
}


async def answer_metadata(header: RequestHeader, request: Any) -> bytes:
    return response_frame(header, METADATA_FIELDS)


# -- well-formed exchanges ----------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 9], ids=["header-v1-v0", "header-v2-v1"])
def test_metadata_response_is_decoded_for_legacy_and_flexible_headers(version: int) -> None:
    async def scenario() -> None:
        async with FakeBroker(answer_metadata) as broker, broker.client() as client:
            request = metadata_request(version)
            response = await client.send(request)
        assert (response.__api_key__, response.__version__) == (METADATA, version)
        assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
            (2, "broker-2.example", 9092)
        ]
        assert response.controller_id == 2
        header, received = broker.requests[0]
        assert (header.api_key, header.api_version, header.client_id) == (
            METADATA,
            version,
            CLIENT_ID,
        )
        assert received == request

    run(scenario())


def test_api_versions_response_uses_header_v0_and_becomes_a_range_table() -> None:
    async def answer(header: RequestHeader, request: Any) -> bytes:
        api_keys = [
            {"api_key": FETCH, "min_version": 0, "max_version": 12},
            {"api_key": API_VERSIONS, "min_version": 0, "max_version": 3},
        ]
        return response_frame(header, {"error_code": 0, "api_keys": api_keys, "throttle_time": 0})

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            versions = await client.api_versions()
        assert versions == {FETCH: (0, 12), API_VERSIONS: (0, 3)}
        header, request = broker.requests[0]
        assert (header.api_key, header.api_version) == (API_VERSIONS, 3)
        assert request.client_software_name == "pykafka-classic"

    run(scenario())


def test_fetch_records_stay_opaque_bytes() -> None:
    opaque = bytes(range(256)) * 3  # not a record batch: the client must not look inside

    async def answer(header: RequestHeader, request: Any) -> bytes:
        partition = {
            "partition_index": 0,
            "error_code": 0,
            "high_watermark": 7,
            "aborted_transactions": None,
            "records": opaque,
        }
        fields = {
            "throttle_time": 0,
            "error_code": 0,
            "responses": [{"topic": "orders", "partitions": [partition]}],
        }
        return response_frame(header, fields)

    request = adapter.build(
        request_class(FETCH, 12),
        {
            "replica_id": 1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            response = await client.send(request)
        assert response.responses[0].partitions[0].records == opaque

    run(scenario())


# -- protocol violations ------------------------------------------------------------------


def test_wrong_correlation_id_raises_and_next_send_reconnects() -> None:
    async def answer(header: RequestHeader, request: Any) -> bytes:
        first = header.correlation_id == 1
        wrong = header.correlation_id + 1000
        return response_frame(header, METADATA_FIELDS, wrong if first else -1)

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            with pytest.raises(CorrelationIdMismatchError, match="expected correlation id 1"):
                await client.send(metadata_request())
            assert not client.connected
            response = await client.send(metadata_request())
            assert response.controller_id == 2
            assert broker.connections == 2

    run(scenario())


def test_absurd_compact_array_count_raises_instead_of_aborting_the_process() -> None:
    async def answer(header: RequestHeader, request: Any) -> bytes:
        throttle_time_ms = struct.pack(">i", 0)
        brokers_count = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # uvarint 0xffffffff
        body = throttle_time_ms + brokers_count + bytes(32)
        return encode_frame(encode_response_header(header.correlation_id, True) + body)

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            with pytest.raises(MalformedResponseError, match="elements"):
                await client.send(metadata_request(9))
            assert not client.connected

    run(scenario())


def test_bytes_after_the_response_body_are_refused() -> None:
    async def answer(header: RequestHeader, request: Any) -> bytes:
        good = response_frame(header, METADATA_FIELDS)
        return encode_frame(good[4:] + b"\x00\x00")

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            with pytest.raises(MalformedResponseError, match="2 bytes after the body"):
                await client.send(metadata_request())

    run(scenario())


def test_response_frame_larger_than_limit_is_refused_before_reading_it() -> None:
    limit_bytes = 1024

    async def answer(header: RequestHeader, request: Any) -> bytes:
        # Claim one byte too many and send only a little: the client must not wait for more.
        return struct.pack(">i", limit_bytes + 1) + struct.pack(">i", header.correlation_id)

    async def scenario() -> None:
        async with FakeBroker(answer) as broker:
            client = broker.client(max_response_bytes=limit_bytes, request_timeout_ms=30_000)
            started = time.monotonic()
            with pytest.raises(ResponseTooLargeError, match="1025-byte"):
                await client.send(metadata_request())
            assert time.monotonic() - started < 2.0
            assert not client.connected
            await client.close()

    run(scenario())


def test_negative_frame_size_is_malformed() -> None:
    async def answer(header: RequestHeader, request: Any) -> bytes:
        return struct.pack(">i", -5)

    async def scenario() -> None:
        async with FakeBroker(answer) as broker, broker.client() as client:
            with pytest.raises(MalformedResponseError, match="frame size -5"):
                await client.send(metadata_request())
            assert not client.connected

    run(scenario())


def test_silent_broker_times_out_within_request_timeout() -> None:
    async def never_answer(header: RequestHeader, request: Any) -> None:
        return None

    async def scenario() -> None:
        async with FakeBroker(never_answer) as broker:
            client = broker.client(request_timeout_ms=200)
            started = time.monotonic()
            with pytest.raises(RequestTimeoutError, match="200 ms"):
                await client.send(metadata_request())
            elapsed_s = time.monotonic() - started
            assert 0.19 <= elapsed_s < 2.0
            assert not client.connected
            await client.close()

    run(scenario())


def test_broker_closing_mid_frame_raises_connection_error() -> None:
    async def half_frame(header: RequestHeader, request: Any) -> bytes:
        return struct.pack(">ii", 100, header.correlation_id) + bytes(6)

    async def scenario() -> None:
        async with (
            FakeBroker(half_frame, close_after_reply=True) as broker,
            broker.client() as client,
        ):
            with pytest.raises(BrokerConnectionError, match="after 10 of 100 bytes"):
                await client.send(metadata_request())
            assert not client.connected

    run(scenario())


def test_cancelled_send_drops_the_connection_so_a_late_response_is_never_misread() -> None:
    async def slow_then_fast(header: RequestHeader, request: Any) -> bytes:
        if header.correlation_id == 1:
            await asyncio.sleep(0.3)  # arrives after the caller gave up on it
        return response_frame(header, METADATA_FIELDS)

    async def scenario() -> None:
        async with FakeBroker(slow_then_fast) as broker, broker.client() as client:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.send(metadata_request()), 0.05)
            assert not client.connected
            response = await client.send(metadata_request())
            assert response.controller_id == 2
            assert broker.connections == 2

    run(scenario())


def test_every_failure_is_a_broker_client_error() -> None:
    for error in (
        BrokerConnectionError,
        RequestTimeoutError,
        ResponseTooLargeError,
        CorrelationIdMismatchError,
        MalformedResponseError,
        BrokerClientClosedError,
        UnsupportedVersionError,
    ):
        assert issubclass(error, BrokerClientError)


# -- connecting and closing ---------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_refused_connection_raises_connection_error() -> None:
    async def scenario() -> None:
        client = BrokerClient("127.0.0.1", _closed_port(), CLIENT_ID)
        with pytest.raises(BrokerConnectionError, match="failed"):
            await client.send(metadata_request())

    run(scenario())


def test_send_after_close_is_refused() -> None:
    async def scenario() -> None:
        async with FakeBroker(answer_metadata) as broker:
            client = broker.client()
            await client.send(metadata_request())
            await client.close()
            with pytest.raises(BrokerClientClosedError):
                await client.send(metadata_request())

    run(scenario())


def test_close_fails_a_send_waiting_for_its_response() -> None:
    async def never_answer(header: RequestHeader, request: Any) -> None:
        return None

    async def scenario() -> None:
        async with FakeBroker(never_answer) as broker:
            client = broker.client()
            pending = asyncio.create_task(client.send(metadata_request()))
            while not broker.requests:
                await asyncio.sleep(0.01)
            await client.close()
            with pytest.raises(
                BrokerConnectionError, match="closed the connection after 0 of 4 bytes"
            ):
                await pending

    run(scenario())


def test_produce_with_acks_zero_is_refused_because_no_response_comes() -> None:
    request = adapter.build(
        request_class(PRODUCE, 8),
        {"transactional_id": None, "acks": 0, "timeout": 1000, "topic_data": []},
    )

    async def scenario() -> None:
        client = BrokerClient("127.0.0.1", _closed_port(), CLIENT_ID)
        with pytest.raises(ValueError, match="acks=0"):
            await client.send(request)

    run(scenario())


# -- version negotiation ------------------------------------------------------------------


async def _no_handler(context: Any, request: Any) -> None:
    return None


FETCH_SPEC = ApiSpec(FETCH, "Fetch", 0, 12, 4, _no_handler)


def test_highest_common_version_is_the_lower_of_both_maxima() -> None:
    assert highest_common_version(FETCH_SPEC, {FETCH: (0, 13)}) == 12
    assert highest_common_version(FETCH_SPEC, {FETCH: (0, 11)}) == 11


def test_highest_common_version_never_picks_a_version_we_cannot_encode() -> None:
    with pytest.raises(UnsupportedVersionError, match="v4-v12"):
        highest_common_version(FETCH_SPEC, {FETCH: (0, 3)})


def test_highest_common_version_of_an_api_the_broker_lacks_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="does not support Fetch"):
        highest_common_version(FETCH_SPEC, {METADATA: (0, 9)})
