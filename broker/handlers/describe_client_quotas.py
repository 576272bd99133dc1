"""DescribeClientQuotas: v0-v1 (Kafka 3.9's range). The quotas of the users, client ids,
(user, client id) pairs and IPs the filter matches, read from ZooKeeper by whichever broker
is asked (Kafka's ZkAdminManager.describeClientQuotas; broker/quotas/admin.py)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.quotas.admin import ClientQuotaAdmin, QuotaRequestError, component_of
from zk.errors import ZkError


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_CLIENT_QUOTAS, context.api_version)
    admin = ClientQuotaAdmin(context.services.kafka_zk)
    try:
        components = [
            component_of(c.entity_type, int(c.match_type), c.match) for c in request.components
        ]
        found = await admin.describe(components, bool(request.strict))
    except QuotaRequestError as error:
        return _error(cls, error.error_code, error.message)
    except ZkError:
        return _error(cls, ErrorCode.unknown_server_error, None)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": "",  # Kafka's default for a success, not null
            "entries": [
                {
                    "entity": [
                        {"entity_type": entity_type, "entity_name": name}
                        for entity_type, name in entity.items()
                    ],
                    "values": [{"key": key, "value": value} for key, value in values.items()],
                }
                for entity, values in found
            ],
        },
    )


def _error(cls: type, error_code: ErrorCode, message: str | None) -> Any:
    return adapter.build(
        cls,
        {"throttle_time": 0, "error_code": error_code, "error_message": message, "entries": None},
    )
