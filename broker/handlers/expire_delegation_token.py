"""ExpireDelegationToken: v0-v2 (Kafka 3.9's range in ZooKeeper mode; v0 derived from kio's
v1). The owner or a renewer sets a token's expiry `expiry_time_period` from now (never past its
maximum lifetime); a negative period removes the token at once. Refused where Kafka's
allowTokenRequests refuses (see create_delegation_token).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._token_common import allow_token_requests, timestamp
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.delegation_tokens import ERROR_TIMESTAMP


async def handle(context: RequestContext, request: Any) -> Any:
    if not allow_token_requests(context):
        error, expiry = ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP
    else:
        error, expiry = await context.services.delegation_tokens.expire(
            context.principal, bytes(request.hmac), adapter.millis(request.expiry_time_period)
        )
    return adapter.build(
        response_class(ApiKey.EXPIRE_DELEGATION_TOKEN, context.api_version),
        {"error_code": error, "expiry_timestamp": timestamp(expiry), "throttle_time": 0},
    )
