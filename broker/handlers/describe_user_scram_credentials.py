"""DescribeUserScramCredentials: v0 (Kafka 3.x's range in ZooKeeper mode, KIP-554).

Every user with a SCRAM credential when none is named, else each named user (an unknown one:
RESOURCE_NOT_FOUND; a user named twice: DUPLICATE_RESOURCE): the mechanisms and iteration
counts, never the keys. Read from ZooKeeper by whichever broker is asked, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from zk.errors import ZkError


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, context.api_version)
    users = None if request.users is None else [user.name for user in request.users]
    try:
        results = await context.services.scram_credentials.describe(users)
    except ZkError as error:
        return adapter.build(
            cls,
            {
                "throttle_time": 0,
                "error_code": ErrorCode.unknown_server_error,
                "error_message": f"Error processing describe user SCRAM credential configs"
                f" request: {error}",
                "results": [],
            },
        )
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "results": [
                {
                    "user": result.user,
                    "error_code": result.error_code,
                    "error_message": result.error_message,
                    "credential_infos": [
                        {"mechanism": mechanism, "iterations": iterations}
                        for mechanism, iterations in result.credentials
                    ],
                }
                for result in results
            ],
        },
    )
