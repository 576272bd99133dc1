"""A minimal Kafka wire client for tests: exact requests, raw bytes, and clean-close checks."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.registry import is_flexible, request_class, response_class

API_VERSIONS = 18


class WireClient:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self._correlation_id = 0

    @classmethod
    def to(cls, address: str, timeout_s: float = 10.0) -> WireClient:
        host, port = address.rsplit(":", 1)
        return cls(host, int(port), timeout_s)

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

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> Any:
        body = adapter.encode(adapter.build(request_class(api_key, version), fields))
        self.send_frame(self.header(api_key, version) + body)
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
