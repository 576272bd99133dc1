"""What a handler gets besides its request: the header, the peer and the broker's parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.network.tls import ANONYMOUS
from broker.protocol.header import RequestHeader

if TYPE_CHECKING:
    from broker.server import KafkaServer


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    client_host: str
    listener_name: str
    server: KafkaServer
    # Who the client is: its TLS certificate's subject, else User:ANONYMOUS.
    principal: str = ANONYMOUS

    @property
    def api_version(self) -> int:
        return self.header.api_version
