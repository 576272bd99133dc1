"""CreateDelegationToken: v0-v3 (Kafka 3.9's range in ZooKeeper mode; kio ships v1-v3, v0 has
v1's schema and is derived in broker/protocol/legacy.py). `kafka-delegation-tokens --create`.

As Kafka 3.9's KafkaApis: refused with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on PLAINTEXT, on
one-way SSL and to a token-authenticated connection; a token for another owner (v3) needs
CREATE_TOKENS on that user; renewers must be users (INVALID_PRINCIPAL_TYPE); without
`delegation.token.secret.key`, DELEGATION_TOKEN_AUTH_DISABLED. Any broker creates it
(broker.security.delegation_tokens).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._token_common import (
    allow_token_requests,
    principal,
    split_principal,
    timestamp,
)
from broker.handlers.authorization import access_of
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import Operation, ResourceType
from broker.security.delegation_tokens import ERROR_TIMESTAMP, CreatedToken


async def handle(context: RequestContext, request: Any) -> Any:
    requester = context.principal
    owner_name = getattr(request, "owner_principal_name", None)
    owner = (
        requester if not owner_name else principal(request.owner_principal_type or "", owner_name)
    )
    renewers = [principal(r.principal_type, r.principal_name) for r in request.renewers]
    access = access_of(context)
    if not allow_token_requests(context):
        result = CreatedToken(ErrorCode.delegation_token_request_not_allowed)
    elif owner != requester and not (
        access is None or access.allowed(Operation.CREATE_TOKENS, ResourceType.USER, owner)
    ):
        result = CreatedToken(ErrorCode.delegation_token_authorization_failed)
    elif any(r.principal_type != "User" for r in request.renewers):
        result = CreatedToken(ErrorCode.invalid_principal_type)
    else:
        max_lifetime_ms = adapter.millis(request.max_lifetime)
        result = await context.services.delegation_tokens.create(
            owner, requester, renewers, max_lifetime_ms
        )
    return _response(context, result, owner, requester)


def _response(context: RequestContext, result: CreatedToken, owner: str, requester: str) -> Any:
    """Kafka's CreateDelegationTokenResponse.prepareResponse: the owner and requester always,
    the token's fields only when it was made."""
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    info = result.info
    return adapter.build(
        response_class(ApiKey.CREATE_DELEGATION_TOKEN, context.api_version),
        {
            "error_code": result.error_code,
            "principal_type": owner_type,
            "principal_name": owner_name,
            "token_requester_principal_type": requester_type,
            "token_requester_principal_name": requester_name,
            "issue_timestamp": timestamp(
                ERROR_TIMESTAMP if info is None else info.issue_timestamp_ms
            ),
            "expiry_timestamp": timestamp(
                ERROR_TIMESTAMP if info is None else info.expiry_timestamp_ms
            ),
            "max_timestamp": timestamp(ERROR_TIMESTAMP if info is None else info.max_timestamp_ms),
            "token_id": "" if info is None else info.token_id,
            "hmac": result.hmac,
            "throttle_time": 0,
        },
    )
