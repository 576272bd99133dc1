"""AlterClientQuotas: v0-v1 (Kafka 3.9's range). Each entry sets or removes quota keys of one
entity in its `/config/users|clients|ips` znode and notifies every broker, as Kafka's
ZkAdminManager.alterClientQuotas does (any broker writes; broker/quotas/admin.py). Each
entry succeeds or fails alone."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.quotas.admin import ClientQuotaAdmin, Entity, QuotaRequestError
from zk.errors import ZkError

log = logging.getLogger(__name__)


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_CLIENT_QUOTAS, context.api_version)
    admin = ClientQuotaAdmin(context.services.kafka_zk)
    results = []
    for entry in request.entries:
        # Kafka builds the entity as a map: a type named twice keeps its last name.
        entity: Entity = {str(e.entity_type): e.entity_name for e in entry.entity}
        ops = [(str(op.key), None if op.remove else float(op.value)) for op in entry.ops]
        error_code, message = ErrorCode.none, None
        try:
            await admin.alter(entity, ops, bool(request.validate_only))
        except QuotaRequestError as error:
            log.info("altering client quotas of %s failed: %s", entity, error.message)
            error_code, message = error.error_code, error.message
        except ZkError:
            log.warning("altering client quotas of %s failed", entity, exc_info=True)
            error_code = ErrorCode.unknown_server_error
        results.append(
            {
                "error_code": error_code,
                "error_message": message,
                "entity": [
                    {"entity_type": e.entity_type, "entity_name": e.entity_name}
                    for e in entry.entity
                ],
            }
        )
    return adapter.build(cls, {"throttle_time": 0, "entries": results})
