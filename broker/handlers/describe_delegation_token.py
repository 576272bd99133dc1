"""DescribeDelegationToken: v0-v3 (Kafka 3.9's range in ZooKeeper mode; v0 derived from kio's
v1). The tokens of the requested owners (null: all; an empty list: none), each shown to its
owner and renewers, and to others allowed DESCRIBE on the token or DESCRIBE_TOKENS on its
owner (Kafka's DelegationTokenManager.filterToken), with their HMACs. Refused where Kafka's
allowTokenRequests refuses, and DELEGATION_TOKEN_AUTH_DISABLED without a secret key.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._token_common import allow_token_requests, principal, split_principal
from broker.handlers.authorization import access_of
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import Operation, ResourceType
from broker.security.delegation_tokens import owner_or_renewer
from zk.delegation_token_znodes import DelegationTokenInfo


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_DELEGATION_TOKEN, context.api_version)
    manager = context.services.delegation_tokens
    if not allow_token_requests(context):
        return _response(cls, ErrorCode.delegation_token_request_not_allowed, [], manager)
    if not manager.enabled:
        return _response(cls, ErrorCode.delegation_token_auth_disabled, [], manager)
    if request.owners is not None and not request.owners:
        return _response(cls, ErrorCode.none, [], manager)
    owners = (
        None
        if request.owners is None
        else [principal(o.principal_type, o.principal_name) for o in request.owners]
    )
    requester = context.principal
    access = access_of(context)

    def eligible(token: DelegationTokenInfo) -> bool:
        if owners is not None and not any(owner_or_renewer(token, o) for o in owners):
            return False
        if owner_or_renewer(token, requester) or access is None:
            return True
        return access.allowed(
            Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id
        ) or access.allowed(Operation.DESCRIBE_TOKENS, ResourceType.USER, token.owner)

    tokens = [token for token in manager.tokens() if eligible(token)]
    return _response(cls, ErrorCode.none, tokens, manager)


def _response(cls: type, error: ErrorCode, tokens: list[DelegationTokenInfo], manager: Any) -> Any:
    return adapter.build(
        cls,
        {
            "error_code": error,
            "tokens": [_token(token, manager.hmac_of(token.token_id)) for token in tokens],
            "throttle_time": 0,
        },
    )


def _token(token: DelegationTokenInfo, token_hmac: bytes) -> dict[str, Any]:
    owner_type, owner_name = split_principal(token.owner)
    requester_type, requester_name = split_principal(token.token_requester)
    return {
        "principal_type": owner_type,
        "principal_name": owner_name,
        "token_requester_principal_type": requester_type,
        "token_requester_principal_name": requester_name,
        "issue_timestamp": token.issue_timestamp_ms,
        "expiry_timestamp": token.expiry_timestamp_ms,
        "max_timestamp": token.max_timestamp_ms,
        "token_id": token.token_id,
        "hmac": token_hmac,
        "renewers": [
            dict(zip(("principal_type", "principal_name"), split_principal(r), strict=True))
            for r in token.renewers
        ],
    }
