"""One client connection: read a frame, dispatch it, write the response, in order.

Anything we cannot parse ends the connection with a log line (as Kafka does); it never
reaches the handlers and never affects other connections.

On a SASL listener the connection is unauthenticated until its `SaslServerSession` completes:
until then only the requests the session allows are served (anything else closes the
connection with a log line), frames are bounded by Kafka's sasl.server.max.receive.size, and
after a failed authentication the connection closes once the answer is written.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from kio.serial import entity_reader

from broker.handlers import authorization
from broker.log.file_records import FileRecords, FileRecordsTruncatedError, records_bytes
from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError
from broker.network.sasl import (
    MAX_RECEIVE_BYTES_BEFORE_AUTHENTICATION,
    ListenerSasl,
    SaslAuthenticationError,
    SaslServerSession,
)
from broker.network.sendfile import ZeroCopySender
from broker.network.tls import ANONYMOUS
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.bounds import check_body
from broker.protocol.framing import (
    SIZE_PREFIX_BYTES,
    FrameTooLargeError,
    InvalidFrameSizeError,
    frame_parts,
    read_frame_size,
)
from broker.protocol.header import (
    MalformedRequestError,
    RequestHeader,
    encode_response_header,
    read_fixed_header,
    skip_tagged_fields,
)
from broker.protocol.registry import ApiSpec, is_flexible, request_class
from broker.quotas.throttle import ChannelThrottle

if TYPE_CHECKING:
    from broker.services import HandlerServices

log = logging.getLogger(__name__)

# A response frame as written: bytes, and on a plaintext connection record sets in files.
Frame = list[adapter.BodyPart]


class Connection:
    def __init__(
        self,
        services: HandlerServices,
        listener_name: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        principal: str = ANONYMOUS,
        sasl: ListenerSasl | None = None,
    ) -> None:
        self._services = services
        self._listener_name = listener_name
        self._principal = principal
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        self._peer = f"{peer[0]}:{peer[1]}"
        self._client_host = str(peer[0])
        self._max_frame_bytes: int = services.config["socket.request.max.bytes"]
        self._idle_timeout_s = services.config["connections.max.idle.ms"] / 1000
        self._sasl = None if sasl is None else SaslServerSession(sasl)
        self._zero_copy = ZeroCopySender(writer) if ZeroCopySender.usable(writer) else None
        self._throttle = ChannelThrottle()
        # Between reading a request and writing its answer. Stopping a listener lets such a
        # connection finish that answer (an acks=all produce answered NOT_LEADER_OR_FOLLOWER
        # as leadership moves away at a controlled shutdown) and then close.
        self.busy = False
        self._stopping = False

    def stop_after_current(self) -> None:
        self._stopping = True

    async def serve(self) -> None:
        try:
            await self._serve_frames()
        except (
            FrameTooLargeError,
            InvalidFrameSizeError,
            CloseConnectionError,
            FileRecordsTruncatedError,
        ) as error:
            log.warning("closing connection from %s: %s", self._peer, error)
        except TimeoutError:
            log.info("closing idle connection from %s", self._peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writer.close()
            if self._zero_copy is not None:
                self._zero_copy.close()

    async def _serve_frames(self) -> None:
        while not self._stopping:
            frame = await self._read_frame()
            self.busy = True
            response = await self._dispatch(frame)
            if response is not None:
                await self._write(response)
            self.busy = False
            # A client over its quota got its answer at once; its connection stays muted for
            # the throttle time (Kafka 2.0+), even when no answer was due (acks=0).
            await self._throttle.wait()
            self._after_sasl_step()
            # A client that pipelines (librdkafka keeps up to a million requests in flight)
            # has the next frames buffered already, and reading, handling and draining them
            # may never suspend: without this, one connection holds the loop for as long as
            # its backlog lasts (seconds of Metadata and Produce answers during a failover).
            await asyncio.sleep(0)

    async def _write(self, response: Frame) -> None:
        if any(isinstance(part, FileRecords) for part in response):
            if self._zero_copy is not None:
                await self._zero_copy.send(response)
                return
            buffers = [records_bytes(part) for part in response]  # never made on TLS
        else:
            buffers = cast(list[bytes], response)
        # Gathered, not joined: a fetch response's record sets go out uncopied.
        if len(buffers) == 1:
            self._writer.write(buffers[0])
        else:
            self._writer.writelines(buffers)
        await self._writer.drain()

    def _after_sasl_step(self) -> None:
        session = self._sasl
        if session is None:
            return
        if session.failure is not None:
            raise CloseConnectionError(session.failure)
        if session.complete and session.principal is not None:
            self._principal = session.principal

    def _authenticating(self) -> bool:
        return self._sasl is not None and not self._sasl.complete

    async def _read_frame(self) -> bytes:
        # readexactly copies a frame once out of the stream's buffer; read() plus a decoder
        # buffer cost three copies of every produce payload. The size check happens before
        # any of the body is read, so an oversized frame is refused unbuffered.
        async with asyncio.timeout(self._idle_timeout_s):
            prefix = await self._reader.readexactly(SIZE_PREFIX_BYTES)
        limit = (
            MAX_RECEIVE_BYTES_BEFORE_AUTHENTICATION
            if self._authenticating()
            else self._max_frame_bytes
        )
        size = read_frame_size(prefix, limit)
        async with asyncio.timeout(self._idle_timeout_s):
            return await self._reader.readexactly(size)

    async def _dispatch(self, frame: bytes) -> Frame | None:
        if self._sasl is not None and self._sasl.bare_tokens and not self._sasl.complete:
            return self._bare_token(self._sasl, frame)
        try:
            header, offset = read_fixed_header(frame)
        except MalformedRequestError as error:
            raise CloseConnectionError(f"malformed request header: {error}") from None
        spec = self._services.registry.get(header.api_key)
        if spec is None:
            raise CloseConnectionError(f"unknown API key {header.api_key}")
        if not spec.is_advertised(header.api_version):
            if header.api_key == ApiKey.API_VERSIONS:
                return self._unsupported_api_versions(header)
            raise CloseConnectionError(
                f"unsupported version {header.api_version} of {spec.name}"
                f" (supported {spec.min_version}-{spec.max_version})"
            )
        if not spec.is_decodable(header.api_version):
            raise CloseConnectionError(
                f"{spec.name} v{header.api_version} is advertised for client feature detection"
                f" but not implemented (lowest implemented: v{spec.min_decodable_version})"
            )
        if self._sasl is not None:
            refusal = self._sasl.refusal(header.api_key, spec.name)
            if refusal is not None:
                raise CloseConnectionError(refusal)
        request = self._decode_body(spec, header, frame, offset)
        context = RequestContext(
            header,
            self._client_host,
            self._listener_name,
            self._services,
            self._principal,
            self._sasl,
            zero_copy=self._zero_copy is not None,
            request_size_bytes=len(frame),
            throttle=self._throttle,
        )
        try:
            decision = authorization.check(context, header.api_key, request)
        except CloseConnectionError:
            raise
        except Exception:
            log.exception(
                "authorizing %s v%d from %s failed", spec.name, header.api_version, self._peer
            )
            raise CloseConnectionError("authorization failed; see the log above") from None
        merge = None
        if isinstance(decision, authorization.Answered):
            return self._encode(header, decision.response)
        if isinstance(decision, authorization.Filtered):
            request, merge = decision.request, decision.merge
        try:
            response = await spec.handler(context, request)
            if merge is not None:
                response = merge(response)
        except CloseConnectionError:
            raise
        except Exception:
            log.exception("%s v%d from %s failed", spec.name, header.api_version, self._peer)
            raise CloseConnectionError("handler failed; see the log above") from None
        if response is None:
            return None
        return self._encode(header, response)

    def _encode(self, header: RequestHeader, response: Any) -> Frame:
        flexible_header = is_flexible(header.api_key, header.api_version) and (
            header.api_key != ApiKey.API_VERSIONS
        )
        return frame_parts(
            encode_response_header(header.correlation_id, flexible_header),
            adapter.encode_parts(response),
        )

    def _decode_body(self, spec: ApiSpec, header: RequestHeader, frame: bytes, offset: int) -> Any:
        try:
            if is_flexible(header.api_key, header.api_version):
                offset = skip_tagged_fields(frame, offset)
            cls = request_class(header.api_key, header.api_version)
            # kio's native parser aborts the process on absurd counts: prove bounds first.
            checked_end = check_body(cls, frame, offset)
            request: Any
            request, size = entity_reader(cls)(frame, offset)
        except Exception as error:  # kio raises a range of decode errors
            raise CloseConnectionError(
                f"malformed {spec.name} v{header.api_version} body: {error!r}"
            ) from None
        if offset + size != checked_end:
            # The bounds proof only holds if kio walked the same path; a mismatch is our bug.
            log.error("%s v%d: bounds check and parser disagree", spec.name, header.api_version)
            raise CloseConnectionError("request body parsed inconsistently")
        return request

    def _bare_token(self, session: SaslServerSession, token: bytes) -> Frame:
        """After SaslHandshake v0 a frame is a bare SASL token, answered the same way; a
        failure gets no answer, only the closed connection (as in Kafka)."""
        try:
            answer = session.evaluate(token)
        except SaslAuthenticationError as error:
            raise CloseConnectionError(f"SASL authentication failed: {error}") from None
        return frame_parts(b"", [answer])

    def _unsupported_api_versions(self, header: RequestHeader) -> Frame:
        # Kafka answers an ApiVersions request of an unknown version with a v0 body carrying
        # UNSUPPORTED_VERSION and our ranges, so the client can retry with a version we know.
        from broker.handlers.api_versions import unsupported_version_response

        body = adapter.encode(unsupported_version_response(self._services.registry))
        return frame_parts(encode_response_header(header.correlation_id, False), [body])
