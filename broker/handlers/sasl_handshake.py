"""SaslHandshake: v0-v1 (Kafka 3.x's range).

On a SASL listener before authentication: picks the client's mechanism, answering the enabled
list, or UNSUPPORTED_SASL_MECHANISM with that list (the connection then closes). v1 means
SaslAuthenticate requests follow (KIP-152); v0 means bare SASL tokens (broker.network.sasl).
Anywhere else (a listener without SASL, or an authenticated connection) it answers
ILLEGAL_SASL_STATE, as Kafka's KafkaApis does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.SASL_HANDSHAKE, context.api_version)
    session = context.sasl
    if session is None or session.complete:
        return adapter.build(cls, {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []})
    error_code = session.handshake(request.mechanism, context.api_version)
    return adapter.build(
        cls, {"error_code": error_code, "mechanisms": list(session.enabled_mechanisms)}
    )
