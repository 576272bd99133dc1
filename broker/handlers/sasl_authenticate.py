"""SaslAuthenticate: v0-v2 (Kafka 3.x's range; KIP-152).

Carries one SASL token each way after SaslHandshake v1. A failure answers
SASL_AUTHENTICATION_FAILED with Kafka's message and the connection closes after the answer.
`session_lifetime_ms` (v1+) is 0: connections are not re-authenticated (no
connections.max.reauth.ms, KIP-368; DEVIATIONS.md). On an authenticated connection, or a
listener without SASL, it answers ILLEGAL_SASL_STATE as Kafka's KafkaApis does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.network.sasl import SaslAuthenticationError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.SASL_AUTHENTICATE, context.api_version)
    session = context.sasl
    if session is None or session.complete:
        return _response(
            cls,
            ErrorCode.illegal_sasl_state,
            "SaslAuthenticate request received after successful authentication",
        )
    try:
        answer = session.evaluate(bytes(request.auth_bytes))
    except SaslAuthenticationError as error:
        return _response(cls, ErrorCode.sasl_authentication_failed, str(error))
    return _response(cls, ErrorCode.none, None, answer)


def _response(cls: type, error_code: ErrorCode, message: str | None, answer: bytes = b"") -> Any:
    return adapter.build(
        cls,
        {
            "error_code": error_code,
            "error_message": message,
            "auth_bytes": answer,
            "session_lifetime": 0,
        },
    )
