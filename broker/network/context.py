"""What a handler gets besides its request: the header, the peer and the services it may use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.network.tls import ANONYMOUS
from broker.protocol.header import RequestHeader

if TYPE_CHECKING:
    from broker.network.sasl import SaslServerSession
    from broker.quotas.throttle import ChannelThrottle
    from broker.services import HandlerServices


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    client_host: str
    listener_name: str
    services: HandlerServices
    # Who the client is: its SASL user, else its TLS certificate's subject, else
    # User:ANONYMOUS.
    principal: str = ANONYMOUS
    # The connection's SASL state on a SASL listener (the SASL handlers drive it), else None.
    sasl: SaslServerSession | None = None
    # Whether the connection can send file regions with sendfile (plaintext, not TLS): a
    # fetch then leaves large record sets in their segment files (see `FileRecords`).
    zero_copy: bool = False
    # The request's size as read (header and body): what a produce quota counts.
    request_size_bytes: int = 0
    # The connection's mute, for a handler whose client goes over its quota (None in tests
    # that build contexts by hand).
    throttle: ChannelThrottle | None = None

    @property
    def api_version(self) -> int:
        return self.header.api_version
