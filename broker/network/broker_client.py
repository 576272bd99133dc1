"""A client for broker-to-broker requests: one TCP connection to one broker, one request at a
time (a cut-down Kafka NetworkClient, as a follower's fetcher uses it).

`send` takes a kio request entity and returns the kio response entity of the same API and
version. Record sets stay opaque bytes: the fetcher appends them without looking inside.

Every response is untrusted input. A frame larger than `max_response_bytes` is refused from
its size prefix alone; the body is proven to fit its frame (`bounds.check_body`) before kio's
native parser sees it, because that parser aborts the whole process on an absurd array count.
With `sasl` set (the other broker's inter-broker listener is SASL_PLAINTEXT or SASL_SSL), each
new connection authenticates first: SaslHandshake v1 with the mechanism, then SaslAuthenticate
v1 requests carrying the SASL tokens (PLAIN, or SCRAM through `scramp`).

Any failure (timeout, lost connection, protocol violation, cancellation) drops the connection,
since a late or misread response would otherwise be taken as the answer to the next request;
the next `send` reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kio.schema.response_header.v1
import scramp
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from broker.network.sasl import SaslClientConfig, SaslClientExchange
from broker.protocol.adapter import EncodedRequest
from broker.protocol.api_keys import ApiKey
from broker.protocol.bounds import BoundsError, check_body
from broker.protocol.header import MalformedRequestError, skip_tagged_fields
from broker.protocol.registry import ApiSpec, request_class, response_class

log = logging.getLogger(__name__)

# Kafka's socket.connection.setup.timeout.ms.
DEFAULT_CONNECT_TIMEOUT_MS = 10_000
# Kafka's replica.socket.timeout.ms. A Fetch long-polls for up to its max_wait, so this must
# stay above replica.fetch.wait.max.ms (Kafka enforces the same).
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# socket.request.max.bytes (100 MiB) bounds what a broker accepts; allow a response that size
# plus room for the per-partition headers around its record sets.
DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024 + 1024 * 1024
# The stream reader pauses the socket above twice this; a larger buffer means fewer pauses
# while a big Fetch response arrives.
READ_BUFFER_BYTES = 1024 * 1024
API_VERSIONS_VERSION = 3
# What every Kafka since 2.0 serves; v2 would add only tagged fields.
SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 1
SASL_MAX_ROUNDS = 4  # PLAIN takes one, SCRAM two
CLIENT_SOFTWARE_NAME = "pykafka-classic"
CLIENT_SOFTWARE_VERSION = "0.1.0"
_MAX_CORRELATION_ID = 2**31 - 1
_MAX_CLIENT_ID_BYTES = 2**15 - 1  # int16 length prefix
_EMPTY_TAGGED_FIELDS = b"\x00"
# frame size, api key, api version, correlation id, client id length (request header v1)
_REQUEST_PREFIX = struct.Struct(">ihhih")
_FRAME_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")
_FLEXIBLE_RESPONSE_HEADER = kio.schema.response_header.v1.ResponseHeader


class BrokerClientError(Exception):
    """Base of everything `BrokerClient` raises for a failed request."""


class BrokerConnectionError(BrokerClientError):
    """Could not connect, or the connection broke before the response was complete."""


class RequestTimeoutError(BrokerClientError):
    """No complete response within request_timeout_ms."""


class BrokerClientClosedError(BrokerClientError):
    """`send` after `close`."""


class ProtocolViolationError(BrokerClientError):
    """The broker sent something that is not a valid response to our request."""


class ResponseTooLargeError(ProtocolViolationError):
    pass


class CorrelationIdMismatchError(ProtocolViolationError):
    pass


class MalformedResponseError(ProtocolViolationError):
    pass


class SaslAuthenticationFailedError(BrokerClientError):
    """The other broker refused this broker's SASL mechanism or credentials."""


class UnsupportedVersionError(BrokerClientError):
    """The broker and we share no version of an API."""


class ApiVersionsError(BrokerClientError):
    """The broker answered ApiVersions with an error code."""


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class BrokerClient:
    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        *,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientConfig | None = None,
    ) -> None:
        if connect_timeout_ms <= 0 or request_timeout_ms <= 0 or max_response_bytes <= 0:
            raise ValueError("timeouts and max_response_bytes must be positive")
        self.host = host
        self.port = port
        self.client_id = client_id
        self._client_id_bytes = client_id.encode("utf-8")
        if len(self._client_id_bytes) > _MAX_CLIENT_ID_BYTES:
            raise ValueError(f"client_id longer than {_MAX_CLIENT_ID_BYTES} bytes")
        self.connect_timeout_ms = connect_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.max_response_bytes = max_response_bytes
        self.ssl_context = ssl_context  # TLS to an SSL listener; None: plaintext
        self.sasl = sasl  # SASL authentication on each new connection; None: none
        # One request in flight: a response is matched to the only outstanding request.
        self._lock = asyncio.Lock()
        self._connection: _Connection | None = None
        self._correlation_id = 0
        self._closed = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._connection is not None

    async def __aenter__(self) -> BrokerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, request: Any) -> Any:
        """Send one kio request entity (or `EncodedRequest`); return the broker's response
        entity.

        Typed `Any` (as kio's own readers are): callers read version-specific fields that no
        common protocol declares. Raises a `BrokerClientError` subclass on any failure.
        """
        api_key, version, flexible = _request_identity(request)
        async with self._lock:
            if self._closed:
                raise BrokerClientClosedError(f"client for {self.address} is closed")
            connection = self._connection or await self._connect()
            correlation_id = self._next_correlation_id()
            data = self._encode_request(request, api_key, version, flexible, correlation_id)
            try:
                frame = await self._exchange(connection, data)
                return decode_response(api_key, version, correlation_id, frame)
            except BaseException:
                # Cancellation included: the response may still arrive and must not be read
                # as the answer to the next request.
                self._disconnect()
                raise

    async def api_versions(self) -> dict[int, tuple[int, int]]:
        """The broker's supported (min, max) version per API key (ApiVersions v3)."""
        request = request_class(ApiKey.API_VERSIONS, API_VERSIONS_VERSION)(
            client_software_name=CLIENT_SOFTWARE_NAME,
            client_software_version=CLIENT_SOFTWARE_VERSION,
        )
        response = await self.send(request)
        if response.error_code != ErrorCode.none:
            raise ApiVersionsError(
                f"{self.address} answered ApiVersions with {response.error_code}"
            )
        return {
            int(api.api_key): (int(api.min_version), int(api.max_version))
            for api in response.api_keys
        }

    async def close(self) -> None:
        """Close for good; a `send` waiting on the broker fails with BrokerConnectionError."""
        self._closed = True
        connection = self._connection
        self._disconnect()
        if connection is not None:
            # An error here was already reported to the failed send, or no longer matters.
            with contextlib.suppress(OSError):
                await connection.writer.wait_closed()

    # -- internals -------------------------------------------------------------------------

    async def _connect(self) -> _Connection:
        try:
            async with asyncio.timeout(self.connect_timeout_ms / 1000):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, limit=READ_BUFFER_BYTES, ssl=self.ssl_context
                )
        except TimeoutError:  # before OSError: TimeoutError is one
            raise BrokerConnectionError(
                f"connecting to {self.address} timed out after {self.connect_timeout_ms} ms"
            ) from None
        except OSError as error:
            raise BrokerConnectionError(f"connecting to {self.address} failed: {error}") from None
        if self._closed:  # close() ran while we were connecting
            writer.transport.abort()
            raise BrokerClientClosedError(f"client for {self.address} is closed")
        log.debug("connected to %s as %s", self.address, self.client_id)
        connection = _Connection(reader, writer)
        if self.sasl is not None:
            try:
                await self._authenticate(connection, self.sasl)
            except BaseException:
                writer.transport.abort()
                raise
        self._connection = connection
        return connection

    async def _authenticate(self, connection: _Connection, sasl: SaslClientConfig) -> None:
        handshake = await self._request(
            connection,
            request_class(ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION)(mechanism=sasl.mechanism),
        )
        if handshake.error_code != ErrorCode.none:
            raise SaslAuthenticationFailedError(
                f"{self.address} refused SASL mechanism {sasl.mechanism}"
                f" ({handshake.error_code.name}); it enables {list(handshake.mechanisms)}"
            )
        exchange = SaslClientExchange(sasl)
        token: bytes | None = exchange.first()
        for _ in range(SASL_MAX_ROUNDS):
            if token is None:
                break
            response = await self._request(
                connection,
                request_class(ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION)(
                    auth_bytes=token
                ),
            )
            if response.error_code != ErrorCode.none:
                raise SaslAuthenticationFailedError(
                    f"{self.address} refused SASL authentication as {sasl.username}:"
                    f" {response.error_message}"
                )
            try:
                token = exchange.answer(bytes(response.auth_bytes))
            except (ValueError, scramp.ScramException) as error:
                raise SaslAuthenticationFailedError(
                    f"{self.address} answered SASL {sasl.mechanism} wrongly: {error}"
                ) from None
        if not exchange.complete:
            raise SaslAuthenticationFailedError(f"SASL with {self.address} did not complete")

    async def _request(self, connection: _Connection, request: Any) -> Any:
        api_key, version, flexible = _request_identity(request)
        correlation_id = self._next_correlation_id()
        data = self._encode_request(request, api_key, version, flexible, correlation_id)
        frame = await self._exchange(connection, data)
        return decode_response(api_key, version, correlation_id, frame)

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # abort, not close: close would wait to flush a request the broker may never read.
            connection.writer.transport.abort()

    def _next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & _MAX_CORRELATION_ID
        return self._correlation_id

    def _encode_request(
        self, request: Any, api_key: int, version: int, flexible: bool, correlation_id: int
    ) -> bytes:
        """Size prefix + request header (v1, or v2 = v1 + tagged fields when flexible) + body,
        written into one buffer so the frame is built without concatenating copies."""
        buffer = io.BytesIO()
        buffer.write(
            _REQUEST_PREFIX.pack(0, api_key, version, correlation_id, len(self._client_id_bytes))
        )
        buffer.write(self._client_id_bytes)
        if flexible:
            buffer.write(_EMPTY_TAGGED_FIELDS)
        if isinstance(request, EncodedRequest):
            buffer.write(request.body)
        else:
            entity_writer(type(request))(buffer, request)
        frame_bytes = buffer.tell() - _FRAME_SIZE.size
        buffer.seek(0)
        buffer.write(_FRAME_SIZE.pack(frame_bytes))
        return buffer.getvalue()

    async def _exchange(self, connection: _Connection, data: bytes) -> bytes:
        """Write one request and read its response frame within request_timeout_ms."""
        try:
            async with asyncio.timeout(self.request_timeout_ms / 1000):
                connection.writer.write(data)
                await connection.writer.drain()
                return await self._read_frame(connection)
        except TimeoutError:  # before OSError: TimeoutError is one
            raise RequestTimeoutError(
                f"no response from {self.address} within {self.request_timeout_ms} ms"
            ) from None
        except asyncio.IncompleteReadError as error:
            raise BrokerConnectionError(
                f"{self.address} closed the connection after {len(error.partial)}"
                f" of {error.expected} bytes"
            ) from None
        except OSError as error:  # ConnectionError included
            raise BrokerConnectionError(f"connection to {self.address} failed: {error}") from None

    async def _read_frame(self, connection: _Connection) -> bytes:
        # Not FrameDecoder: with one response outstanding its size is known after 4 bytes, and
        # readexactly copies the body once out of the stream's buffer; feeding the decoder
        # from read() would copy it four times (read, feed, slice, bytes).
        (frame_bytes,) = _FRAME_SIZE.unpack(await connection.reader.readexactly(_FRAME_SIZE.size))
        if frame_bytes < 0:
            raise MalformedResponseError(f"{self.address} sent frame size {frame_bytes}")
        if frame_bytes > self.max_response_bytes:
            # Refused from the size prefix alone, before buffering any of the body.
            raise ResponseTooLargeError(
                f"{self.address} sent a {frame_bytes}-byte response frame;"
                f" max_response_bytes={self.max_response_bytes}"
            )
        return await connection.reader.readexactly(frame_bytes)


def _request_identity(request: Any) -> tuple[int, int, bool]:
    """(api key, version, flexible) of a kio request entity or an `EncodedRequest`; refuses
    what `send` cannot do."""
    if isinstance(request, EncodedRequest):
        return request.api_key, request.version, request.flexible
    cls = type(request)
    if getattr(cls, "__type__", None) is not EntityType.request:
        raise TypeError(f"{cls.__qualname__} is not a kio request entity")
    api_key, version = int(cls.__api_key__), int(cls.__version__)
    if api_key == ApiKey.PRODUCE and request.acks == 0:
        # Kafka sends no response to acks=0; waiting for one would only time out.
        raise ValueError("Produce with acks=0 gets no response; BrokerClient cannot send it")
    return api_key, version, bool(cls.__flexible__)


def decode_response(api_key: int, version: int, correlation_id: int, frame: bytes) -> Any:
    """Check the response header of `frame` and decode its body as the kio response entity."""
    if len(frame) < _CORRELATION_ID.size:
        raise MalformedResponseError(f"response frame of {len(frame)} bytes has no header")
    (received_id,) = _CORRELATION_ID.unpack_from(frame, 0)
    if received_id != correlation_id:
        raise CorrelationIdMismatchError(
            f"expected correlation id {correlation_id}, received {received_id}"
        )
    response_cls = response_class(api_key, version)
    offset = _skip_response_header(response_cls, frame)
    return _read_body(response_cls, frame, offset)


def _skip_response_header(response_cls: type, frame: bytes) -> int:
    offset = _CORRELATION_ID.size
    # kio knows which responses use header v1 (flexible versions except ApiVersions, which
    # stays v0 so a client can read it before it knows the broker's versions).
    if response_cls.__header_schema__ is not _FLEXIBLE_RESPONSE_HEADER:  # type: ignore[attr-defined]
        return offset
    try:
        return skip_tagged_fields(frame, offset)
    except MalformedRequestError as error:  # header.py names errors for the server side
        raise MalformedResponseError(f"response header: {error}") from None


def _read_body(response_cls: type, frame: bytes, offset: int) -> Any:
    name = f"{response_cls.__qualname__} v{response_cls.__version__}"  # type: ignore[attr-defined]
    try:
        # kio's native parser aborts the process on absurd counts: prove bounds first.
        checked_end = check_body(response_cls, frame, offset)
    except BoundsError as error:
        raise MalformedResponseError(f"{name}: {error}") from None
    try:
        response: Any
        response, size = entity_reader(response_cls)(frame, offset)
    except Exception as error:  # kio raises a range of decode errors
        raise MalformedResponseError(f"{name}: {error!r}") from None
    if offset + size != checked_end:
        # The bounds proof only holds if kio walked the same path; a mismatch is our bug.
        log.error("%s: bounds check and parser disagree", name)
        raise MalformedResponseError(f"{name} parsed inconsistently")
    if checked_end != len(frame):
        # Trailing bytes mean the broker encoded another version or schema than we decoded.
        raise MalformedResponseError(f"{name}: {len(frame) - checked_end} bytes after the body")
    return response


def highest_common_version(spec: ApiSpec, broker_versions: Mapping[int, tuple[int, int]]) -> int:
    """The highest version of `spec`'s API that we can encode and the broker supports, as
    Kafka's clients pick it (NodeApiVersions.latestUsableVersion)."""
    remote = broker_versions.get(spec.api_key)
    if remote is None:
        raise UnsupportedVersionError(f"the broker does not support {spec.name}")
    low = max(spec.min_decodable_version, remote[0])
    high = min(spec.max_version, remote[1])
    if low > high:
        raise UnsupportedVersionError(
            f"{spec.name}: we support v{spec.min_decodable_version}-v{spec.max_version},"
            f" the broker v{remote[0]}-v{remote[1]}"
        )
    return high
