"""AlterUserScramCredentials: v0 (Kafka 3.x's range in ZooKeeper mode, KIP-554). Answered
only by the controller (NOT_CONTROLLER for every user otherwise), as Kafka's ZooKeeper-mode
brokers do.

Upsertions carry the salt and the salted password (the client hashes the password); the
broker derives the stored and server keys and writes `/config/users/<user>` and a
`/config/changes` notification, so every broker's credential cache picks the change up.
Kafka's checks: an empty user name or iterations outside 4096-16384 are
UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, the same
user and mechanism twice DUPLICATE_RESOURCE, deleting a missing credential RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.credentials import Deletion, Upsertion, UserResult

NOT_CONTROLLER = "This is not the correct controller for this cluster."


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, context.api_version)
    if not context.services.controller.is_active:
        users = dict.fromkeys(
            [u.name for u in request.upsertions] + [d.name for d in request.deletions]
        )
        results = [UserResult(user, ErrorCode.not_controller, NOT_CONTROLLER) for user in users]
    else:
        results = await context.services.scram_credentials.alter(
            [
                Upsertion(
                    u.name,
                    int(u.mechanism),
                    int(u.iterations),
                    bytes(u.salt),
                    bytes(u.salted_password),
                )
                for u in request.upsertions
            ],
            [Deletion(d.name, int(d.mechanism)) for d in request.deletions],
        )
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "results": [
                {
                    "user": result.user,
                    "error_code": result.error_code,
                    "error_message": result.error_message,
                }
                for result in results
            ],
        },
    )
